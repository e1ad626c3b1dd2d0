//! The bash tool: results, timeouts and kill-tree, bounded output,
//! truncation, environment, rewrite, workdir, approval and its preview.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;
use wield_core::approval::{ApprovalAnswer, ApprovalRequest, Approver, HeadlessApprover};
use wield_test_support::pipeline::usage_error;

use super::harness::{Ws, assert_gone, backend_set, error, output, pids, read};

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
        let (code, v) = match backend {
            "off" => ws.yes(&["sandbox.enabled=false"], "bash", args),
            b => ws.headless(&[&backend_set(b)], "bash", args),
        };
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
    let sets = ["sandbox.enabled=false", "bash.max_timeout=\"500ms\""];
    let args = json!({"command": "sleep 5", "timeout": 60});
    let (_, v) = ws.yes(&sets, "bash", args);
    assert!(output(&v).ends_with("timed out after 500ms"), "{v}");

    // A timeout too long for any clock is the longest allowed, not a crash.
    for huge in [json!(1e300), json!(f64::MAX), json!(1.8e19)] {
        let args = json!({"command": "sleep 5", "timeout": huge});
        let (code, v) = ws.yes(&sets, "bash", args);
        assert_eq!(code, 1, "{huge}: {v}");
        assert!(output(&v).ends_with("timed out after 500ms"), "{huge}: {v}");
    }

    // Zero or less is a mistake the model is told about, not the default.
    for bad in [json!(0), json!(-5)] {
        let args = json!({"command": "echo ran", "timeout": bad});
        let (code, v) = ws.yes(&sets, "bash", args);
        assert_eq!(code, 1, "{bad}: {v}");
        assert!(error(&v).contains("positive number of seconds"), "{bad}: {v}");
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

/// This process's peak resident set in KiB since [`reset_peak_rss`].
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Start this process's peak resident set over from what it holds now.
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// The runtime runs in this process, so the peak measured is this
/// process's while the call runs: nextest runs each test in a process of
/// its own, as `wield call` is one.
#[test]
fn two_hundred_megabytes_complete_with_bounded_memory() {
    let ws = Ws::new();
    let loaded = ws.load(&["sandbox.enabled=false"]);
    reset_peak_rss();
    let (code, v) = loaded.call(
        Arc::new(wield_core::approval::YesApprover),
        "bash",
        json!({"command": "yes | head -c 200000000"}),
    );
    let peak_kib = peak_rss_kib();
    assert_eq!(code, 0, "{v}");
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
    assert!(peak_kib < 48 * 1024, "the peak RSS was {peak_kib} KiB");
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

/// The environment this process was given is the one wield's commands
/// inherit from: `CARGO_MANIFEST_DIR` (which cargo and nextest set for a
/// test) stands for a variable outside the core set. The CLI's suite checks
/// secrets in wield's environment, which a test cannot give this process.
#[test]
fn environment_is_scrubbed_to_the_core_unless_the_settings_say_otherwise() {
    let ws = Ws::new();
    let plain = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR for tests");
    let run = |extra: &[&str]| {
        let sets: Vec<&str> = std::iter::once("sandbox.enabled=false")
            .chain(extra.iter().copied())
            .collect();
        let (code, v) = ws.yes(&sets, "bash", json!({"command": "env"}));
        assert_eq!(code, 0, "{v}");
        output(&v).to_owned()
    };
    let core = run(&[]);
    assert!(core.contains("PATH="), "{core}");
    if let Ok(home) = std::env::var("HOME") {
        assert!(core.contains(&format!("HOME={home}")), "{core}");
    }
    assert!(core.contains(&format!("TMPDIR={}", ws.tmp.display())), "{core}");
    assert!(!core.contains("CARGO_MANIFEST_DIR"), "leaked: {core}");
    let all = run(&["bash.env.inherit=\"all\""]);
    assert!(all.contains(&format!("CARGO_MANIFEST_DIR={plain}")), "{all}");
    let kept = run(&["bash.env.keep=[\"CARGO_MANIFEST_DIR\"]", "bash.env.set.EXTRA=\"x1\""]);
    assert!(kept.contains(&format!("CARGO_MANIFEST_DIR={plain}")), "{kept}");
    assert!(kept.contains("EXTRA=x1"), "{kept}");
}

#[test]
fn rewrite_template_and_custom_shell() {
    let ws = Ws::new();
    let (code, v) = ws.yes(
        &[
            "sandbox.enabled=false",
            "bash.rewrite=\"echo pre:{{ command | length }} && {{ command }}\"",
        ],
        "bash",
        json!({"command": "echo main"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "pre:9\nmain\nexit code: 0");
    let (code, v) = ws.yes(
        &["sandbox.enabled=false", "bash.shell=[\"sh\", \"-c\"]"],
        "bash",
        json!({"command": "echo $0"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), "sh\nexit code: 0");
    // A broken template is a configuration error (which `wield` exits 2
    // on) naming the key.
    let err = usage_error(&ws.ws, &["bash.rewrite=\"{{ command\""]);
    assert!(err.contains("bash.rewrite"), "{err}");
}

#[test]
fn workdir_must_be_inside_the_roots() {
    let ws = Ws::new();
    let args = json!({"command": "pwd", "workdir": "src"});
    let (code, v) = ws.yes(&["sandbox.enabled=false"], "bash", args);
    assert_eq!(code, 0, "{v}");
    assert_eq!(output(&v), format!("{}\nexit code: 0", ws.ws.join("src").display()));
    let args = json!({"command": "pwd", "workdir": ws.outside.display().to_string()});
    let (code, v) = ws.yes(&["sandbox.enabled=false"], "bash", args);
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).starts_with("workdir:"), "{v}");
}

#[test]
fn sandboxed_bash_is_approved_automatically_and_unsandboxed_needs_approval() {
    let ws = Ws::new();
    let (code, v) = ws.headless(&[], "bash", json!({"command": "echo auto"}));
    assert_eq!(code, 0, "sandboxed bash should not need approval: {v}");
    assert_eq!(v["metadata"]["sandbox"], "bwrap");
    let (code, v) = ws.headless(&["sandbox.enabled=false"], "bash", json!({"command": "echo x"}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("approval required"), "{v}");
    // The sandbox resolver can be turned off: sandboxed bash is gated again.
    let (code, v) = ws.headless(
        &["approval.auto_approve_sandboxed=false"],
        "bash",
        json!({"command": "echo gated"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("approval required"), "{v}");
}

/// Denies every request, keeping what it was asked.
#[derive(Default)]
struct Denier {
    asked: Mutex<Vec<(String, String)>>,
}

#[async_trait]
impl Approver for Denier {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked
            .lock()
            .unwrap()
            .push((request.tool.clone(), request.shown_preview()));
        HeadlessApprover.ask(request).await
    }
}

/// What the person asked is shown.
#[test]
fn the_preview_shows_the_command_and_label() {
    let ws = Ws::new();
    let denier = Arc::new(Denier::default());
    let (code, v) = ws.call_as(
        Arc::clone(&denier) as Arc<dyn Approver>,
        &["sandbox.enabled=false"],
        "bash",
        json!({"command": "make test", "label": "running tests"}),
    );
    assert_eq!(code, 1, "{v}");
    let asked = denier.asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [("bash".to_owned(), "bash: $ make test # running tests".to_owned())],
        "{v}"
    );
}
