//! Background processes over an MCP session (`wield mcp serve`), whose
//! session lives as long as the connection: start, status, output, list,
//! kill, and everything killed when the session ends.

use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{Mcp, Ws, assert_gone, pids};

/// Poll `process_output` until `want` lines have been written.
fn wait_for_lines(mcp: &mut Mcp, id: &str, want: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = mcp.call("process_output", json!({"id": id}));
        let lines = text.lines().filter(|l| !l.starts_with('[')).count();
        if lines >= want || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pids these tests print are checked on the host: under bubblewrap a
/// command has its own PID namespace, so they run under Landlock (the
/// security suite checks bubblewrap's background processes die too).
const HOST_PIDS: &[&str] = &["--set", "sandbox.backend=\"landlock\""];

#[test]
fn lifecycle_start_status_output_list_kill() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, HOST_PIDS);
    let (err, text) = mcp.call(
        "process_start",
        json!({"command": "echo started; sleep 100 & echo $!; for i in 1 2 3; do echo line$i; done; wait", "label": "sleeper"}),
    );
    assert!(!err, "{text}");
    assert!(text.starts_with("started p1 (pid "), "{text}");
    assert!(text.contains("$ echo started;") && text.contains("# sleeper"), "{text}");
    let leader: i32 = text["started p1 (pid ".len()..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    let out = wait_for_lines(&mut mcp, "p1", 5);
    assert!(out.starts_with("started\n"), "{out}");
    assert!(out.contains("line3\n"), "{out}");
    assert!(out.contains("[lines 1-5 of 5; the process is still running]"), "{out}");
    let sleeper = pids(&out);
    assert_eq!(sleeper.len(), 1, "{out}");

    let (_, page) = mcp.call("process_output", json!({"id": "p1", "offset": 3, "limit": 2}));
    assert!(page.starts_with("line1\nline2\n"), "{page}");
    assert!(page.contains("call again with offset 5"), "{page}");

    let (err, status) = mcp.call("process_status", json!({"id": "p1"}));
    assert!(!err, "{status}");
    assert!(status.starts_with("p1: running after "), "{status}");
    assert!(status.contains("line3"), "{status}");

    let (_, list) = mcp.call("process_list", json!({}));
    assert!(list.starts_with("p1  running  "), "{list}");

    let (err, killed) = mcp.call("process_kill", json!({"id": "p1"}));
    assert!(!err, "{killed}");
    assert!(
        killed.starts_with("p1 stopped: killed by signal 15 (SIGTERM)"),
        "{killed}"
    );
    assert_gone(&[leader]);
    assert_gone(&sleeper);
    let (_, status) = mcp.call("process_status", json!({"id": "p1"}));
    assert!(
        status.starts_with("p1: exited (killed by signal 15 (SIGTERM))"),
        "{status}"
    );

    let (err, text) = mcp.call("process_status", json!({"id": "p9"}));
    assert!(err, "{text}");
    assert!(text.contains("this session has: p1"), "{text}");
    assert_eq!(mcp.finish(), 0);
}

#[test]
fn a_command_that_fails_at_once_is_reported_at_start() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, &[]);
    let (err, text) = mcp.call("process_start", json!({"command": "echo oops >&2; exit 7"}));
    assert!(!err, "{text}");
    assert!(text.contains("it already exited (exit code: 7)"), "{text}");
    assert!(text.contains("oops"), "{text}");
    let (_, killed) = mcp.call("process_kill", json!({"id": "p1", "signal": "KILL"}));
    assert!(killed.contains("had already exited (exit code: 7)"), "{killed}");
    mcp.finish();
}

#[test]
fn every_process_dies_with_the_session() {
    let ws = Ws::new();
    let mut mcp = Mcp::start(&ws, HOST_PIDS);
    let mut all = Vec::new();
    for n in 1..=2 {
        let (err, text) = mcp.call(
            "process_start",
            json!({"command": "sleep 100 & echo $!; setsid -f sh -c 'echo $$; exec sleep 100'; wait"}),
        );
        assert!(!err, "{text}");
        let leader: i32 = text[format!("started p{n} (pid ").len()..]
            .split(')')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let out = wait_for_lines(&mut mcp, &format!("p{n}"), 2);
        let found = pids(&out);
        assert_eq!(found.len(), 2, "{out}");
        all.push(leader);
        all.extend(found);
    }
    let (_, list) = mcp.call("process_list", json!({}));
    assert_eq!(list.lines().count(), 2, "{list}");
    assert_eq!(mcp.finish(), 0);
    assert_gone(&all);
}

#[test]
fn background_processes_follow_the_sandbox() {
    let ws = Ws::new();
    super::support::require_backends(&ws);
    let mut mcp = Mcp::start(&ws, &[]);
    let target = ws.outside.join("bg.txt");
    let (err, text) = mcp.call(
        "process_start",
        json!({"command": format!("echo x > {}; echo in > src/bg.txt", target.display())}),
    );
    assert!(!err, "{text}");
    let out = wait_for_lines(&mut mcp, "p1", 1);
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(!target.exists());
    assert_eq!(super::support::read(&ws.ws.join("src/bg.txt")), "in\n");
    mcp.finish();
}
