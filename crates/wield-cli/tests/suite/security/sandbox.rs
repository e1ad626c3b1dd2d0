//! The process sandbox: Unix sockets, the private temp dir, protected paths against renames, wield's own memory, the kill-tree.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::support::{Mcp, Ws, call_json, output, require_backends};

const BACKENDS: [&str; 2] = ["landlock", "bwrap"];

/// The arguments that pick a backend ("off": no sandbox, approvals on).
fn backend_args(backend: &str) -> Vec<String> {
    if backend == "off" {
        return vec!["-y".into(), "--set".into(), "sandbox.enabled=false".into()];
    }
    vec![
        "--set".into(),
        "sandbox.enabled=true".into(),
        "--set".into(),
        format!("sandbox.backend=\"{backend}\""),
    ]
}

/// `ws.wield()` run as the unprivileged user `nobody` (uid and gid
/// 65534), the workspace layout handed to it first.
pub(super) fn wield_as_nobody(ws: &Ws) -> Command {
    let base = ws.ws.parent().unwrap();
    let status = Command::new("chown")
        .arg("-R")
        .arg("65534:65534")
        .arg(base)
        .status()
        .unwrap();
    assert!(status.success(), "cannot hand {} to nobody", base.display());
    let mut cmd = ws.wield_env().command_as_nobody();
    cmd.stdin(std::process::Stdio::null());
    cmd
}

/// `bash` with a backend, as root (`nobody = false`) or as nobody, with
/// extra variables in wield's own environment.
fn bash_with(ws: &Ws, backend: &str, nobody: bool, env: &[(&str, &str)], args: &Value) -> (i32, Value) {
    let mut cmd = if nobody { wield_as_nobody(ws) } else { ws.wield() };
    cmd.envs(env.iter().copied())
        .args(backend_args(backend))
        .args(["call", "bash", &args.to_string(), "--json"]);
    call_json(cmd)
}

/// Item 7: as root under Landlock, a command read `/proc/<wield>/environ`
/// and got every variable the scrubber had removed. Now wield is not
/// dumpable and no sandboxed command keeps a capability: neither its
/// environment nor its memory map can be read, under both backends, as
/// root or not.
#[test]
fn commands_cannot_read_wields_environment_or_memory() {
    let ws = Ws::new();
    require_backends(&ws);
    let secret = "s3cr3t-value-7f1e";
    // Every process named wield that the command can see: its environment
    // and its memory map. The helper's own capabilities are printed too.
    let probe = format!(
        "seen=0; for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = wield ] || continue; seen=$((seen+1)); \
         if tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -q {secret}; then echo LEAK-environ $d; fi; \
         if head -c 64 $d/maps >/dev/null 2>&1 && [ -n \"$(head -c 64 $d/maps 2>/dev/null)\" ]; then echo LEAK-maps $d; fi; \
         done; echo seen=$seen; grep CapEff /proc/self/status"
    );
    for nobody in [false, true] {
        for backend in BACKENDS {
            let (_, v) = bash_with(
                &ws,
                backend,
                nobody,
                &[("WIELD_TEST_TOKEN", secret)],
                &json!({ "command": probe }),
            );
            let text = output(&v);
            let who = if nobody { "nobody" } else { "root" };
            assert!(!text.contains("LEAK"), "{backend} as {who}: {text}");
            assert!(text.contains("CapEff:\t0000000000000000"), "{backend} as {who}: {text}");
            if backend == "landlock" {
                // Without a PID namespace wield is in sight: the check saw it.
                assert!(!text.contains("seen=0"), "{backend} as {who}: wield not found: {text}");
            }
        }
    }
}

/// A script in the workspace that keeps forking a copy of itself (its
/// environment cleared, in a new session) and letting its parent exit,
/// each copy appending its pid to `src/pids`. Returns the script's path,
/// which every copy carries on its command line.
fn hopper(ws: &Ws) -> PathBuf {
    let script = ws.ws.join("src/hop.sh");
    std::fs::write(
        &script,
        "echo $$ >> \"$1\"\nsleep 0.01\nenv -i setsid sh \"$0\" \"$1\" &\n",
    )
    .unwrap();
    script
}

/// Processes of the machine whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            out.push(format!("{pid}: {cmdline}"));
        }
    }
    out
}

/// Nothing of the hopper runs, and its pid list has stopped growing.
fn assert_hopper_gone(ws: &Ws, script: &Path, what: &str) {
    let pids = ws.ws.join("src/pids");
    let count = || std::fs::read_to_string(&pids).unwrap_or_default().lines().count();
    let before = count();
    assert!(before > 2, "{what}: the hopper did not hop ({before} pids)");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let left = processes_mentioning(&script.display().to_string());
    // Stop a survivor's next hop, so a failing test leaves nothing behind.
    std::fs::write(script, "exit 0\n").unwrap();
    assert!(left.is_empty(), "{what}: the hopper survived: {left:?}");
    assert_eq!(count(), before, "{what}: the hopper is still hopping");
}

/// Item 8: a process that keeps forking and letting its parent exit (its
/// environment cleared, in a new session) survived the timeout under
/// bubblewrap. Under both backends, and with the sandbox off, it now dies
/// with its call: when the timeout kills the call, and when the command
/// exits leaving it behind.
#[test]
fn a_pid_hopping_process_dies_with_its_call() {
    let ws = Ws::new();
    require_backends(&ws);
    for backend in ["landlock", "bwrap", "off"] {
        let script = hopper(&ws);
        let start = format!("env -i sh {} $PWD/src/pids", script.display());
        for (case, command, timeout) in [
            ("timeout", format!("{start}; sleep 100"), 1),
            ("left behind", format!("{start}; sleep 0.3"), 30),
        ] {
            hopper(&ws);
            let _ = std::fs::remove_file(ws.ws.join("src/pids"));
            let (_, v) = bash_with(
                &ws,
                backend,
                false,
                &[],
                &json!({ "command": command, "timeout": timeout }),
            );
            if case == "timeout" {
                assert_eq!(v["metadata"]["timed_out"], true, "{backend}: {v}");
            }
            assert_hopper_gone(&ws, &script, &format!("{backend}, {case}: {v}"));
        }
    }
}

/// Item 8, background processes: a hopper started with `process_start`
/// dies when the MCP session ends, under both backends and unsandboxed.
#[test]
fn a_pid_hopping_background_process_dies_with_the_session() {
    let ws = Ws::new();
    require_backends(&ws);
    for backend in ["landlock", "bwrap", "off"] {
        let script = hopper(&ws);
        let _ = std::fs::remove_file(ws.ws.join("src/pids"));
        let command = format!("env -i sh {} $PWD/src/pids; sleep 100", script.display());
        let pre = backend_args(backend);
        let pre: Vec<&str> = pre.iter().map(String::as_str).collect();
        let mut mcp = Mcp::start(&ws, &pre);
        let (err, text) = mcp.call("process_start", json!({ "command": command }));
        assert!(!err, "{backend}: {text}");
        std::thread::sleep(std::time::Duration::from_millis(400));
        assert_eq!(mcp.finish(), 0, "{backend}");
        assert_hopper_gone(&ws, &script, backend);
    }
}

/// A Unix socket server answering `hello` to every client, at a path or
/// (with a leading `@`) an abstract name, for as long as the test runs.
fn unix_server(name: &str) -> std::os::unix::net::UnixListener {
    use std::os::linux::net::SocketAddrExt;
    let listener = match name.strip_prefix('@') {
        Some(abstract_name) => {
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name).unwrap();
            std::os::unix::net::UnixListener::bind_addr(&addr).unwrap()
        }
        None => std::os::unix::net::UnixListener::bind(name).unwrap(),
    };
    let serving = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        for stream in serving.incoming().flatten() {
            let mut stream = stream;
            let _ = std::io::Write::write_all(&mut stream, b"hello");
        }
    });
    listener
}

/// A command that connects to each socket and prints `reached NAME` or
/// `refused NAME`.
fn connect_all(sockets: &[String]) -> String {
    let list = serde_json::to_string(sockets).unwrap();
    format!(
        "/usr/bin/python3 -c '\nimport socket, json, sys\nfailed = 0\nfor name in json.loads({list:?}):\n    s = socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(\"\\0\" + name[1:] if name.startswith(\"@\") else name)\n        print(\"reached\" if s.recv(5) == b\"hello\" else \"silent\", name)\n    except OSError as e:\n        failed = 1\n        print(\"refused\", name, \"connect:\", e.strerror, file=sys.stderr)\nsys.exit(failed)\n'"
    )
}

/// Item 2: with the network off, a command connected to Unix sockets
/// outside the sandbox (a tmux server in /tmp, DBus, ssh-agent in
/// `$XDG_RUNTIME_DIR` or `$HOME`) and drove programs running unconfined.
/// Now no socket can be connected to, pathname or abstract, wherever it
/// is, under both backends; `sandbox.allow_unix_sockets` opens named ones.
#[test]
fn commands_cannot_connect_to_unix_sockets_outside_the_sandbox() {
    let ws = Ws::new();
    require_backends(&ws);
    let host_tmp = tempfile::Builder::new()
        .prefix("wield-sock")
        .tempdir_in("/tmp")
        .unwrap();
    let sockets: Vec<String> = [
        ws.outside.join("daemon.sock"),
        host_tmp.path().join("tmux.sock"),
        ws.home.join("agent.sock"),
        ws.ws.join("src/own.sock"),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .chain([format!("@wield-test-{}", std::process::id())])
    .collect();
    let _servers: Vec<_> = sockets.iter().map(|s| unix_server(s)).collect();
    let command = connect_all(&sockets);
    // Unconfined, every socket answers: the servers work.
    let (_, v) = ws.bash("off", &command);
    assert_eq!(output(&v).matches("reached").count(), sockets.len(), "{v}");
    for backend in BACKENDS {
        let (_, v) = bash_with(&ws, backend, false, &[], &json!({ "command": command }));
        let text = output(&v);
        assert!(!text.contains("reached"), "{backend}: {text}");
        assert_eq!(text.matches("refused").count(), sockets.len(), "{backend}: {text}");
        assert!(
            text.contains("nor connect to Unix sockets"),
            "{backend}: the hint is missing: {text}"
        );
        // A named socket opens.
        let allowed = format!("sandbox.allow_unix_sockets=[{:?}]", sockets[0]);
        let mut cmd = ws.wield();
        cmd.args(backend_args(backend))
            .args(["--set", &allowed, "call", "bash"])
            .arg(json!({ "command": connect_all(&sockets[..1]) }).to_string())
            .arg("--json");
        let (_, v) = call_json(cmd);
        assert!(
            output(&v).contains(&format!("reached {}", sockets[0])),
            "{backend}: {v}"
        );
    }
}

/// Item 3: the temp dir was a write root shared by every project and
/// session: commands and file tools could write all of it (replace an
/// executable kept there, plant files for another project). Now each
/// session has its own, mode 0700, as `TMPDIR`, removed when it ends; the
/// shared temp dir is no write root (and under bubblewrap the host's /tmp
/// is not even seen).
#[test]
fn each_session_has_a_private_temp_dir_and_the_shared_one_is_closed() {
    let ws = Ws::new();
    require_backends(&ws);
    let shared = ws.tmp.join("tool-kept-here");
    std::fs::write(&shared, "original\n").unwrap();
    let host_tmp = tempfile::Builder::new()
        .prefix("wield-shared")
        .tempdir_in("/tmp")
        .unwrap();
    let planted = host_tmp.path().join("planted");
    for backend in BACKENDS {
        let command = format!(
            "echo private=$TMPDIR; stat -c 'mode=%a uid=%u' $TMPDIR; echo mine > $TMPDIR/f && cat $TMPDIR/f; \
             echo evil > {} ; echo evil > {}; ls {} >/dev/null 2>&1 && echo host-tmp-visible; true",
            shared.display(),
            planted.display(),
            host_tmp.path().display()
        );
        let (_, v) = bash_with(&ws, backend, false, &[], &json!({ "command": command }));
        let text = output(&v);
        let private = text
            .lines()
            .find_map(|l| l.strip_prefix("private="))
            .unwrap_or_else(|| panic!("{backend}: {text}"));
        assert_ne!(Path::new(private), ws.tmp, "{backend}: {text}");
        assert!(Path::new(private).starts_with(&ws.tmp), "{backend}: {text}");
        assert!(text.contains("mode=700 uid=0"), "{backend}: {text}");
        assert!(text.contains("\nmine\n"), "{backend}: {text}");
        assert!(
            !Path::new(private).exists(),
            "{backend}: {private} outlived its session"
        );
        assert_eq!(
            std::fs::read_to_string(&shared).unwrap(),
            "original\n",
            "{backend}: {text}"
        );
        assert!(!planted.exists(), "{backend}: wrote the host's /tmp: {text}");
        if backend == "bwrap" {
            assert!(!text.contains("host-tmp-visible"), "{backend}: {text}");
        }
    }
    // The file tools' temp root is the private dir too.
    let (_, v) = ws.call(
        &["-y"],
        "write",
        &json!({"path": shared.display().to_string(), "content": "evil\n"}),
    );
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "original\n");
}

/// Item 3: saved full outputs went to the shared temp dir, a root of every
/// project's file tools: another project's session read them. Now they are
/// kept in the project's own `.wield/outputs` (0700, files 0600, ignored by
/// git), out of other projects' roots.
#[test]
fn saved_outputs_stay_with_their_project() {
    let a = Ws::new();
    let (_, v) = a.bash("off", "seq 1 5000");
    let text = output(&v);
    let saved = text
        .split("Full output: ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no saved output: {text}"));
    let saved = Path::new(saved);
    assert!(saved.starts_with(a.ws.join(".wield/outputs")), "{}", saved.display());
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(saved), 0o600);
    assert_eq!(mode(saved.parent().unwrap()), 0o700);
    assert_eq!(
        std::fs::read_to_string(a.ws.join(".wield/outputs/.gitignore")).unwrap(),
        "*\n"
    );
    // Another project, even one sharing the temp dir, cannot read it.
    let b = Ws::new();
    let mut cmd = b.wield();
    cmd.env("TMPDIR", &a.tmp)
        .args(["-y", "call", "read"])
        .arg(json!({"path": saved.display().to_string()}).to_string())
        .arg("--json");
    let (_, v) = call_json(cmd);
    assert_eq!(v["success"], false, "{v}");
    assert!(!output(&v).contains("4999"), "{v}");
}

/// `bash` in `dir` (a workspace) with a backend, HOME and the global
/// config in the workspace, and extra `--set`s.
fn bash_at_home(ws: &Ws, dir: &Path, backend: &str, sets: &[&str], command: &str) -> Value {
    let mut cmd = ws.wield();
    cmd.env("HOME", &ws.ws)
        .env("XDG_CONFIG_HOME", ws.ws.join(".config"))
        .arg("-C")
        .arg(dir)
        .args(backend_args(backend));
    for set in sets {
        cmd.args(["--set", set]);
    }
    cmd.args(["call", "bash"])
        .arg(json!({ "command": command }).to_string())
        .arg("--json");
    call_json(cmd).1
}

/// Item 6: under bubblewrap the read-only bind of a protected path moved
/// with its parent: with the workspace at $HOME, `mv .config .config.bak &&
/// mkdir -p .config/wield && …` planted a global config (an unsandboxed
/// hook, the sandbox off); the same for `sandbox.protected` entries and a
/// workspace two levels below a write root. Now every directory from the
/// outermost write root down to a protected path is a mount point (which
/// cannot be renamed), a missing protected path gets a read-only stand-in,
/// and no rename replaces a protected path under either backend.
#[test]
fn renaming_an_ancestor_cannot_replace_a_protected_path() {
    let ws = Ws::new();
    require_backends(&ws);
    let global = ws.ws.join(".config/wield/config.toml");
    let secret = ws.ws.join("src/keep/secret.txt");
    let nested = ws.ws.join("src/a/proj");
    let nested_config = nested.join(".wield/config.toml");
    let protect = "sandbox.protected=[\"src/keep/secret.txt\"]";
    let outer_root = format!("sandbox.write=[{:?}]", ws.ws.display().to_string());
    for backend in BACKENDS {
        for global_exists in [true, false] {
            let _ = std::fs::remove_dir_all(ws.ws.join(".config"));
            if global_exists {
                std::fs::create_dir_all(global.parent().unwrap()).unwrap();
                std::fs::write(&global, "# mine\n").unwrap();
            }
            let v = bash_at_home(
                &ws,
                &ws.ws,
                backend,
                &[],
                "mv .config .config.bak; mkdir -p .config/wield && echo 'sandbox.enabled = false' > .config/wield/config.toml; true",
            );
            let what = format!("{backend}, global config existing: {global_exists}: {v}");
            let text = std::fs::read_to_string(&global).unwrap_or_default();
            assert!(!text.contains("sandbox.enabled"), "{what}");
            assert!(!ws.ws.join(".config.bak").exists(), "{what}");
            assert_eq!(ws.ws.join(".config").exists(), global_exists, "{what}");
        }
        std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
        std::fs::write(&secret, "mine\n").unwrap();
        let v = bash_at_home(
            &ws,
            &ws.ws,
            backend,
            &[protect],
            "mv src src.bak; mv src/keep src/keep.bak; mkdir -p src/keep && echo planted > src/keep/secret.txt; true",
        );
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "mine\n", "{backend}: {v}");
        std::fs::create_dir_all(&nested).unwrap();
        let v = bash_at_home(
            &ws,
            &nested,
            backend,
            &[&outer_root],
            &format!(
                "cd {} && mv src src.bak; mv src/a src/a.bak; mkdir -p src/a/proj/.wield && echo planted > src/a/proj/.wield/config.toml; true",
                ws.ws.display()
            ),
        );
        assert!(
            !std::fs::read_to_string(&nested_config)
                .unwrap_or_default()
                .contains("planted"),
            "{backend}: {v}"
        );
        assert!(
            !ws.ws.join("src.bak").exists() && !ws.ws.join("src/a.bak").exists(),
            "{backend}: {v}"
        );
    }
}

/// Item 6, loading: a project nested in another wield project's workspace
/// has a `.wield/config.toml` that the outer project's sandboxed commands
/// could have written (only the outer `.wield/` is protected from them):
/// wield refuses to load it on its own, saying why; `--config` loads it.
#[test]
fn a_config_file_a_sandboxed_command_could_have_written_is_refused() {
    let ws = Ws::new();
    std::fs::create_dir_all(ws.ws.join(".wield")).unwrap();
    let pkg = ws.ws.join("src/pkg");
    let config = pkg.join(".wield/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[sandbox]\nenabled = false\n").unwrap();
    let out = ws
        .wield()
        .arg("-C")
        .arg(&pkg)
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("refusing to load {}", config.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("wield project {}", ws.ws.display())),
        "{stderr}"
    );
    assert!(stderr.contains("--config"), "{stderr}");
    assert!(
        stderr.contains(&format!("wield -C {} config trust", pkg.display())),
        "{stderr}"
    );
    // Trusted by a person, it loads while its content stays the same...
    let check = || {
        ws.wield()
            .arg("-C")
            .arg(&pkg)
            .args(["sandbox", "check"])
            .output()
            .unwrap()
    };
    let trusted = ws
        .wield()
        .arg("-C")
        .arg(&pkg)
        .args(["config", "trust"])
        .output()
        .unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let out = check();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configured none"));
    // ... and is refused again once something changed it.
    std::fs::write(&config, "[sandbox]\nenabled = false\n[approval]\nrequire = false\n").unwrap();
    let out = check();
    assert_eq!(out.status.code(), Some(2), "a changed file loaded");
    // A sandboxed command cannot trust it: the list is in the global
    // config directory, read-only to every sandbox even when the workspace
    // holds it.
    let list = ws.home.join(".config/wield/trusted.toml");
    let before = std::fs::read_to_string(&list).unwrap();
    for backend in ["bwrap", "landlock"] {
        let plant = format!(
            "printf '[[trusted]]\\npath = \"{}\"\\nsha256 = \"0\"\\n' >> {}",
            config.display(),
            list.display()
        );
        let (_, v) = ws.call(
            &[
                "-C",
                ws.home.to_str().unwrap(),
                "--set",
                "sandbox.enabled=true",
                "--set",
                &format!("sandbox.backend=\"{backend}\""),
            ],
            "bash",
            &serde_json::json!({ "command": plant }),
        );
        assert_ne!(v["success"], true, "{backend}: {v}");
        assert_eq!(
            std::fs::read_to_string(&list).unwrap(),
            before,
            "{backend}: the list changed"
        );
    }
    let untrusted = ws
        .wield()
        .arg("-C")
        .arg(&pkg)
        .args(["config", "trust", "--remove"])
        .output()
        .unwrap();
    assert!(untrusted.status.success());
    assert!(!std::fs::read_to_string(&list).unwrap().contains("pkg"));
    std::fs::write(&config, "[sandbox]\nenabled = false\n").unwrap();
    // Named explicitly, it is the person's choice.
    let out = ws
        .wield()
        .arg("-C")
        .arg(&pkg)
        .arg("--config")
        .arg(&config)
        .args(["sandbox", "check"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("configured none"));
    // The outer project's own config loads as ever.
    std::fs::write(ws.ws.join(".wield/config.toml"), "[sandbox]\nnetwork = false\n").unwrap();
    let out = ws.wield().args(["sandbox", "check"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `wield sandbox check` says which of these protections this machine can
/// enforce; this machine enforces them all.
#[test]
fn check_reports_the_protections_this_machine_enforces() {
    let ws = Ws::new();
    let v = require_backends(&ws);
    let p = &v["protections"];
    for key in [
        "/non_dumpable",
        "/capabilities_dropped",
        "/unix_sockets/connect_refused",
        "/unix_sockets/abstract_scoped",
        "/unix_sockets/host_run_hidden",
        "/signal_scoping",
        "/pid_namespace",
        "/keeper",
        "/private_tmp/host_tmp_hidden",
        "/protected_paths_rename_safe",
    ] {
        assert_eq!(p.pointer(key), Some(&Value::Bool(true)), "{key}: {v}");
    }
    let dir = p["private_tmp"]["dir"].as_str().unwrap();
    assert!(Path::new(dir).starts_with(&ws.tmp), "{v}");
    assert!(!Path::new(dir).exists(), "the session's temp dir outlived it: {v}");
    let out = ws.wield().args(["sandbox", "check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "memory     wield is non-dumpable",
        "sockets    with the network off, connect is refused",
        "processes  each command runs under a keeper",
        "temp       private session dir ",
        "protected  read-only against writes and renames",
    ] {
        assert!(text.contains(line), "{line}: {text}");
    }
}
