//! The process sandbox for each backend: writes outside the roots and into
//! `.wield`/`.git` fail and say why, writes inside work, the network is cut
//! (and reachable without the sandbox), signals stay inside.

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;
use wield_test_support::pipeline::usage_error;

use super::harness::{Ws, backend_set, output, read, require_backends};

const BACKENDS: [&str; 2] = ["landlock", "bwrap"];

/// The CLI's suite checks `wield sandbox check` and a backend that is not
/// on `PATH`: an unknown one is a configuration error naming the choices.
#[test]
fn an_unknown_backend_is_a_configuration_error() {
    let ws = Ws::new();
    let err = usage_error(&ws.ws, &["sandbox.backend=\"firejail\""]);
    assert!(err.contains("\"landlock\", \"bwrap\""), "{err}");
}

#[test]
fn writes_outside_the_roots_fail_with_a_hint() {
    let ws = Ws::new();
    require_backends();
    for backend in BACKENDS {
        let target = ws.outside.join(format!("{backend}.txt"));
        let cmd = format!("touch /etc/wield-sandbox-test; echo x > {}", target.display());
        let (code, v) = ws.bash(backend, &cmd);
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(
            !std::path::Path::new("/etc/wield-sandbox-test").exists(),
            "{backend} wrote /etc"
        );
        assert!(!target.exists(), "{backend} wrote outside the roots");
        let text = output(&v);
        assert!(
            text.contains("write denied by sandbox: /etc/wield-sandbox-test is outside the write roots"),
            "{backend}: {text}"
        );
        assert!(
            text.contains(&format!(
                "write denied by sandbox: {} is outside the write roots",
                target.display()
            )),
            "{backend}: {text}"
        );
        assert_eq!(v["metadata"]["sandbox"], backend);
    }
}

#[test]
fn writes_inside_the_workspace_and_temp_dir_work() {
    let ws = Ws::new();
    require_backends();
    std::fs::write(ws.ws.join("existing.txt"), "old\n").unwrap();
    for backend in BACKENDS {
        let cmd = format!(
            "mkdir -p src/{backend} && echo ok > src/{backend}/a.txt && echo new > existing.txt && echo t > $TMPDIR/{backend}.tmp && cat $TMPDIR/{backend}.tmp"
        );
        let (code, v) = ws.bash(backend, &cmd);
        assert_eq!(code, 0, "{backend}: {v}");
        assert_eq!(read(&ws.ws.join(format!("src/{backend}/a.txt"))), "ok\n");
        assert_eq!(read(&ws.ws.join("existing.txt")), "new\n");
        // The temp dir is a write root.
        assert!(output(&v).starts_with("t\n"), "{backend}: {v}");
        assert_eq!(read(&ws.tmp.join(format!("{backend}.tmp"))), "t\n");
    }
    // New entries at the workspace's top level: bubblewrap allows them;
    // Landlock cannot without opening .wield and .git, and says so.
    let (code, v) = ws.bash("bwrap", "echo top > top.txt");
    assert_eq!(code, 0, "{v}");
    assert_eq!(read(&ws.ws.join("top.txt")), "top\n");
    let (code, v) = ws.bash("landlock", "echo top > top-ll.txt");
    assert_eq!(code, 1, "{v}");
    assert!(output(&v).contains("which the Landlock backend cannot allow"), "{v}");
}

#[test]
fn wield_config_and_git_internals_are_never_writable() {
    let ws = Ws::new();
    require_backends();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    std::fs::write(ws.ws.join(".wield/config.toml"), "# project config\n").unwrap();
    std::fs::create_dir_all(ws.ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.ws.join(".git/config"), "[core]\n").unwrap();
    for backend in BACKENDS {
        for cmd in [
            "echo 'approval.require = false' >> .wield/config.toml",
            "rm -f .wield/config.toml",
            "mv .wield .wield-moved",
            "echo evil > .wield/approvals.toml",
            "echo 'exit 0' > .git/hooks/pre-commit",
            "echo x >> .git/config",
            // As root too: no capability is left to take the binds away.
            "umount .git; umount .wield; echo x >> .git/config && echo 'x = 1' > .wield/config.toml",
        ] {
            let (code, v) = ws.bash(backend, cmd);
            assert_eq!(code, 1, "{backend}: `{cmd}` succeeded: {v}");
            assert!(output(&v).contains("write denied by sandbox"), "{backend} `{cmd}`: {v}");
        }
        assert_eq!(read(&ws.ws.join(".wield/config.toml")), "# project config\n");
        assert!(!ws.ws.join(".wield/approvals.toml").exists());
        assert!(!ws.ws.join(".git/hooks/pre-commit").exists());
        assert_eq!(read(&ws.ws.join(".git/config")), "[core]\n");
    }
}

#[test]
fn a_missing_wield_directory_cannot_be_created_by_a_command() {
    let ws = Ws::new();
    require_backends();
    for backend in BACKENDS {
        let (code, v) = ws.bash(backend, "mkdir -p .wield && echo 'x = 1' > .wield/config.toml");
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(!ws.ws.join(".wield/config.toml").exists(), "{backend}");
    }
}

#[test]
fn a_command_cannot_make_a_git_repository_where_there_is_none() {
    let ws = Ws::new();
    require_backends();
    for backend in BACKENDS {
        let (code, v) = ws.bash(
            backend,
            "git init -q . && git config core.fsmonitor 'touch pwned' && echo made",
        );
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(!output(&v).contains("made"), "{backend}: {v}");
        assert!(!ws.ws.join(".git").exists(), "{backend}: a .git was left behind: {v}");
        let (code, v) = ws.bash(backend, "mkdir -p .git/hooks && echo made");
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(!ws.ws.join(".git").exists(), "{backend}: {v}");
    }
    // Two runtimes at once (as two wield processes): the one whose run ends
    // first leaves the other's protection in place (the stand-in's lock is
    // taken per open file, so it is shared within a process as across
    // processes).
    std::thread::scope(|s| {
        // The short run makes the stand-in; the long one finds it.
        let short = s.spawn(|| ws.bash("bwrap", "sleep 1"));
        std::thread::sleep(Duration::from_millis(300));
        let long = s.spawn(|| {
            ws.bash(
                "bwrap",
                "sleep 2; git init -q . && git config core.fsmonitor 'touch pwned' && echo made",
            )
        });
        assert_eq!(short.join().unwrap().0, 0);
        let (code, v) = long.join().unwrap();
        assert_eq!(code, 1, "{v}");
        assert!(!output(&v).contains("made"), "{v}");
    });
    assert!(!ws.ws.join(".git").exists());
}

/// Accept connections in the background; what each one sent.
fn listener() -> (u16, std::sync::mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in l.incoming() {
            let mut s = String::new();
            if let Ok(mut stream) = stream {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.read_to_string(&mut s);
            }
            if tx.send(s).is_err() {
                break;
            }
        }
    });
    (port, rx)
}

#[test]
fn the_network_is_cut_inside_the_sandbox_and_reachable_outside() {
    let ws = Ws::new();
    require_backends();
    let (port, received) = listener();
    let cmd = format!("echo hello-{port} > /dev/tcp/127.0.0.1/{port}");
    for backend in BACKENDS {
        let (code, v) = ws.bash(backend, &cmd);
        assert_eq!(code, 1, "{backend} reached the listener: {v}");
        assert!(
            output(&v).contains("network access denied by sandbox"),
            "{backend}: {v}"
        );
        assert!(received.try_recv().is_err(), "{backend}: a connection got through");
    }
    let (code, v) = ws.bash("off", &cmd);
    assert_eq!(code, 0, "{v}");
    let got = received.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(got, format!("hello-{port}\n"));
    // sandbox.network = true opens it again, inside the sandbox.
    for backend in BACKENDS {
        let (code, v) = ws.headless(
            &["sandbox.enabled=true", &backend_set(backend), "sandbox.network=true"],
            "bash",
            json!({"command": cmd}),
        );
        assert_eq!(code, 0, "{backend}: {v}");
        assert!(received.recv_timeout(Duration::from_secs(5)).is_ok(), "{backend}");
    }
}

#[test]
fn curl_is_refused_too() {
    let ws = Ws::new();
    require_backends();
    assert!(
        which_curl().is_some(),
        "curl is needed for this test (apt-get install curl)"
    );
    let (port, received) = listener();
    for backend in BACKENDS {
        let (code, v) = ws.bash(backend, &format!("curl -sS -m 5 http://127.0.0.1:{port}/"));
        assert_ne!(code, 0, "{backend}: {v}");
        assert!(received.try_recv().is_err(), "{backend}: curl got through");
    }
}

fn which_curl() -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join("curl"))
        .find(|p| p.exists())
}

/// Regression: under bubblewrap (no PID namespace) a command could signal
/// any process of the user's, wield included; Landlock already scoped
/// signals. Under both, a command may signal its own processes only.
#[test]
fn commands_cannot_signal_processes_outside_the_sandbox() {
    let ws = Ws::new();
    require_backends();
    let mut outside = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    for backend in BACKENDS {
        let cmd = format!(
            "kill -TERM {}; echo outside=$?; sleep 5 & kill $!; echo own=$?",
            outside.id()
        );
        let (_, v) = ws.bash(backend, &cmd);
        let text = output(&v);
        assert!(
            text.contains("outside=1") && text.contains("own=0"),
            "{backend}: {text}"
        );
        assert!(
            outside.try_wait().unwrap().is_none(),
            "{backend}: the process outside was killed"
        );
    }
    outside.kill().unwrap();
    outside.wait().unwrap();
}
