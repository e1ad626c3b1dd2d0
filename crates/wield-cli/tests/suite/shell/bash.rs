//! The bash tool through `wield call`: results, timeouts and kill-tree,
//! bounded output, truncation, environment, rewrite, workdir.

use serde_json::json;

use super::support::{Ws, assert_gone, output, pids, read, run_measured};

#[test]
fn exit_codes_stdout_and_labelled_stderr() {
    let ws = Ws::new();
    let (code, v) = ws.bash("off", "echo out; echo err >&2; exit 3");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["success"], false);
    assert_eq!(output(&v), "out\n[stderr]\nerr\nexit code: 3");
    assert_eq!(v["error"], "exit code: 3");
    assert_eq!(v["metadata"]["exit_code"], 3);
    let (code, v) = ws.bash("off", "echo fine");
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "fine\nexit code: 0");
    assert_eq!(v["metadata"]["sandbox"], "none");
}

#[test]
fn plain_output_mode_prints_the_output_and_exits_1_on_failure() {
    let ws = Ws::new();
    let out = ws
        .wield()
        .args(["-y", "--set", "sandbox.enabled=false", "call", "bash"])
        .arg(json!({"command": "echo hello; exit 2"}).to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nexit code: 2\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: exit code: 2"));
}

/// Under bubblewrap a command has its own PID namespace, so the pids it
/// prints are not the host's: every process of this test is named after a
/// token (`exec -a`), and the host's process list is searched for it.
#[test]
fn timeout_kills_background_jobs_and_double_forked_processes() {
    let ws = Ws::new();
    for backend in ["off", "bwrap", "landlock"] {
        let token = format!("sleeper-{}-{backend}", std::process::id());
        let started = std::time::Instant::now();
        let args = json!({
            "command": format!("T={token}; (exec -a $T sleep 100) & echo $!; setsid -f bash -c 'echo $$; exec -a $0 sleep 100' $T; sleep 0.3; (exec -a $T sleep 100) & echo $!; wait"),
            "timeout": 1
        });
        let pre: Vec<String> = match backend {
            "off" => vec!["-y".into(), "--set".into(), "sandbox.enabled=false".into()],
            b => vec!["--set".into(), format!("sandbox.backend=\"{b}\"")],
        };
        let pre: Vec<&str> = pre.iter().map(String::as_str).collect();
        let (code, v) = ws.call(&pre, "bash", &args);
        assert_eq!(code, 1, "{backend}: {v}");
        assert!(output(&v).ends_with("timed out after 1s"), "{backend}: {v}");
        assert_eq!(v["error"], "timed out after 1s");
        assert_eq!(v["metadata"]["timed_out"], true);
        assert!(
            started.elapsed().as_secs() < 8,
            "{backend}: took {:?}",
            started.elapsed()
        );
        let found = pids(output(&v));
        assert_eq!(found.len(), 3, "{backend}: {v}");
        if backend != "bwrap" {
            assert_gone(&found);
        }
        let left: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).into_owned())
            .filter(|c| c.contains(&token))
            .collect();
        assert!(left.is_empty(), "{backend}: survivors {left:?}");
    }
}

#[test]
fn the_timeout_is_capped_by_max_timeout() {
    let ws = Ws::new();
    let flags = [
        "-y",
        "--set",
        "sandbox.enabled=false",
        "--set",
        "bash.max_timeout=\"500ms\"",
    ];
    let args = json!({"command": "sleep 5", "timeout": 60});
    let (_, v) = ws.call(&flags, "bash", &args);
    assert!(output(&v).ends_with("timed out after 500ms"), "{v}");

    // A timeout too long for any clock is the longest allowed, not a crash.
    for huge in [json!(1e300), json!(f64::MAX), json!(1.8e19)] {
        let args = json!({"command": "sleep 5", "timeout": huge});
        let (code, v) = ws.call(&flags, "bash", &args);
        assert_eq!(code, 1, "{huge}: {v}");
        assert!(output(&v).ends_with("timed out after 500ms"), "{huge}: {v}");
    }

    // Zero or less is a mistake the model is told about, not the default.
    for bad in [json!(0), json!(-5)] {
        let args = json!({"command": "echo ran", "timeout": bad});
        let (code, v) = ws.call(&flags, "bash", &args);
        assert_eq!(code, 1, "{bad}: {v}");
        assert!(
            v["error"].as_str().unwrap().contains("positive number of seconds"),
            "{bad}: {v}"
        );
        assert!(!output(&v).contains("ran"), "{bad}: {v}");
    }
}

#[test]
fn leftover_background_processes_are_killed_and_reported() {
    let ws = Ws::new();
    let (code, v) = ws.bash(
        "off",
        "(setsid sh -c 'echo $$; exec sleep 100' &); sleep 0.2; echo done",
    );
    assert_eq!(code, 0, "{v}");
    assert!(output(&v).contains("background process(es) still running"), "{v}");
    assert_gone(&pids(output(&v)));
}

#[test]
fn two_hundred_megabytes_complete_with_bounded_memory() {
    let ws = Ws::new();
    let mut cmd = ws.wield();
    cmd.args(["-y", "--set", "sandbox.enabled=false", "call", "bash", "--json"])
        .arg(json!({"command": "yes | head -c 200000000"}).to_string());
    let (code, stdout, peak_kib) = run_measured(&mut cmd);
    assert_eq!(code, 0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["metadata"]["stdout_bytes"], 200_000_000);
    assert_eq!(v["metadata"]["truncated"], true, "{}", v["metadata"]);
    let text = output(&v);
    assert!(text.starts_with("y\ny\n"), "{text:.100}");
    assert!(
        text.contains("[stdout was 200000000 bytes; only the first 1048576 bytes were kept (bash.max_output_bytes)]"),
        "the capture limit is not reported: {text:.300}"
    );
    let saved = v["metadata"]["full_output"].as_str().unwrap();
    assert!(text.contains(&format!("Full output: {saved}")), "{text:.300}");
    let full = std::fs::metadata(saved).unwrap().len();
    assert!(
        ((1 << 20) - 1024..=(1 << 20) + 1024).contains(&full),
        "saved {full} bytes"
    );
    assert!(text.ends_with("exit code: 0"));
    assert!(peak_kib < 48 * 1024, "wield's peak RSS was {peak_kib} KiB");
}

#[test]
fn long_output_keeps_the_first_100_and_last_80_lines_and_saves_the_rest() {
    let ws = Ws::new();
    let (code, v) = ws.bash("off", "seq 1 300");
    assert_eq!(code, 0, "{v}");
    let text = output(&v);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "1");
    assert_eq!(lines[99], "100");
    assert!(lines[100].contains("120 lines omitted"), "{}", lines[100]);
    assert_eq!(lines[101], "221");
    assert_eq!(lines[180], "300");
    assert_eq!(lines[181], "exit code: 0");
    let saved = v["metadata"]["full_output"].as_str().unwrap();
    assert_eq!(read(saved.as_ref()).lines().count(), 300);
    // 200 lines are kept whole.
    let (_, v) = ws.bash("off", "seq 1 200");
    assert_eq!(output(&v).lines().count(), 201);
    assert_eq!(v["metadata"]["truncated"], false);
}

#[test]
fn environment_is_scrubbed() {
    let ws = Ws::new();
    let run = |extra: &[&str]| {
        let mut cmd = ws.wield();
        cmd.env("FOO_TOKEN", "hunter2")
            .env("MY_API_KEY", "k")
            .env("PLAIN_VAR", "visible-if-all")
            .args(["-y", "--set", "sandbox.enabled=false"])
            .args(extra)
            .args(["call", "bash", &json!({"command": "env"}).to_string(), "--json"]);
        let (_, v) = super::support::call_json(cmd);
        output(&v).to_owned()
    };
    let core = run(&[]);
    assert!(core.contains("PATH="), "{core}");
    assert!(core.contains(&format!("HOME={}", ws.home.display())), "{core}");
    for hidden in ["FOO_TOKEN", "MY_API_KEY", "PLAIN_VAR", "hunter2"] {
        assert!(!core.contains(hidden), "{hidden} leaked: {core}");
    }
    let all = run(&["--set", "bash.env.inherit=\"all\""]);
    assert!(all.contains("PLAIN_VAR=visible-if-all"), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
    let kept = run(&[
        "--set",
        "bash.env.keep=[\"FOO_TOKEN\"]",
        "--set",
        "bash.env.set.EXTRA=\"x1\"",
    ]);
    assert!(kept.contains("FOO_TOKEN=hunter2"), "{kept}");
    assert!(kept.contains("EXTRA=x1"), "{kept}");
}

#[test]
fn rewrite_template_and_custom_shell() {
    let ws = Ws::new();
    let (code, v) = ws.call(
        &[
            "-y",
            "--set",
            "sandbox.enabled=false",
            "--set",
            "bash.rewrite=\"echo pre:{{ command | length }} && {{ command }}\"",
        ],
        "bash",
        &json!({"command": "echo main"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "pre:9\nmain\nexit code: 0");
    let (code, v) = ws.call(
        &[
            "-y",
            "--set",
            "sandbox.enabled=false",
            "--set",
            "bash.shell=[\"sh\", \"-c\"]",
        ],
        "bash",
        &json!({"command": "echo $0"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "sh\nexit code: 0");
    // A broken template is a configuration error (exit 2) naming the key.
    let out = ws
        .wield()
        .args([
            "--set",
            "bash.rewrite=\"{{ command\"",
            "call",
            "bash",
            "{\"command\":\"true\"}",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash.rewrite"));
}

#[test]
fn workdir_must_be_inside_the_roots() {
    let ws = Ws::new();
    let args = json!({"command": "pwd", "workdir": "src"});
    let (code, v) = ws.call(&["-y", "--set", "sandbox.enabled=false"], "bash", &args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), format!("{}\nexit code: 0", ws.ws.join("src").display()));
    let args = json!({"command": "pwd", "workdir": ws.outside.display().to_string()});
    let (code, v) = ws.call(&["-y", "--set", "sandbox.enabled=false"], "bash", &args);
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().starts_with("workdir:"), "{v}");
}

#[test]
fn sandboxed_bash_is_approved_automatically_and_unsandboxed_needs_approval() {
    let ws = Ws::new();
    let (code, v) = ws.call(&[], "bash", &json!({"command": "echo auto"}));
    assert_eq!(code, 0, "sandboxed bash should not need approval: {v}");
    assert_eq!(v["metadata"]["sandbox"], "bwrap");
    let (code, v) = ws.call(
        &["--set", "sandbox.enabled=false"],
        "bash",
        &json!({"command": "echo x"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    // The sandbox resolver can be turned off: sandboxed bash is gated again.
    let (code, v) = ws.call(
        &["--set", "approval.auto_approve_sandboxed=false"],
        "bash",
        &json!({"command": "echo gated"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
}

#[test]
fn the_preview_shows_the_command_and_label() {
    let ws = Ws::new();
    let out = ws
        .wield()
        .env("WIELD_TEST_APPROVER", "deny")
        .args(["--set", "sandbox.enabled=false", "call", "bash"])
        .arg(json!({"command": "make test", "label": "running tests"}).to_string())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bash: $ make test # running tests"), "{err}");
}
