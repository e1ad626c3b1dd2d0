//! Background processes in one session, as an MCP session (`wield mcp
//! serve`) holds them for as long as its connection: start, status,
//! output, list, kill, and everything killed when the session ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wield_core::Session;
use wield_core::approval::HeadlessApprover;
use wield_test_support::pipeline::Loaded;

use super::harness::{Ws, assert_gone, backend_set, error, output, pids, read, require_backends};

/// A runtime and one session of it, as `wield mcp serve` has for a client
/// (no one to approve a call that needs a person).
struct Served {
    loaded: Loaded,
    session: Arc<Session>,
}

impl Served {
    fn start(ws: &Ws, sets: &[&str]) -> Self {
        let loaded = ws.load(sets);
        let session = loaded.session();
        Self { loaded, session }
    }

    /// A tool call in the session → (whether it failed, the result).
    fn call(&self, tool: &str, args: Value) -> (bool, Value) {
        let (code, v) = self
            .loaded
            .call_in(&self.session, Arc::new(HeadlessApprover), tool, args);
        (code != 0, v)
    }

    /// The output of a call that succeeded.
    fn ok(&self, tool: &str, args: Value) -> String {
        let (failed, v) = self.call(tool, args);
        assert!(!failed, "{tool} failed: {v}");
        output(&v).to_owned()
    }

    /// Poll `process_output` until `want` lines have been written.
    fn wait_for_lines(&self, id: &str, want: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.ok("process_output", json!({"id": id}));
            let lines = text.lines().filter(|l| !l.starts_with('[')).count();
            if lines >= want || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The session ends, as when an MCP client disconnects: its processes
    /// are killed at once, though the session itself is still held.
    fn finish(&self) {
        self.loaded.end_session(&self.session);
    }
}

/// The pid of process `n`'s leader in `process_start`'s answer.
fn leader(text: &str, n: usize) -> i32 {
    text[format!("started p{n} (pid ").len()..]
        .split(')')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The pids these tests print are checked on the host: under bubblewrap a
/// command has its own PID namespace, so they run under Landlock (the
/// CLI's security suite checks bubblewrap's background processes die too).
fn host_pids() -> String {
    backend_set("landlock")
}

#[test]
fn lifecycle_start_status_output_list_kill() {
    let ws = Ws::new();
    let mcp = Served::start(&ws, &[&host_pids()]);
    let text = mcp.ok(
        "process_start",
        json!({"command": "echo started; sleep 100 & echo $!; for i in 1 2 3; do echo line$i; done; wait", "label": "sleeper"}),
    );
    assert!(text.starts_with("started p1 (pid "), "{text}");
    assert!(text.contains("$ echo started;") && text.contains("# sleeper"), "{text}");
    let leader = leader(&text, 1);

    let out = mcp.wait_for_lines("p1", 5);
    assert!(out.starts_with("started\n"), "{out}");
    assert!(out.contains("line3\n"), "{out}");
    assert!(out.contains("[lines 1-5 of 5; the process is still running]"), "{out}");
    let sleeper = pids(&out);
    assert_eq!(sleeper.len(), 1, "{out}");

    let page = mcp.ok("process_output", json!({"id": "p1", "offset": 3, "limit": 2}));
    assert!(page.starts_with("line1\nline2\n"), "{page}");
    assert!(page.contains("call again with offset 5"), "{page}");

    let status = mcp.ok("process_status", json!({"id": "p1"}));
    assert!(status.starts_with("p1: running after "), "{status}");
    assert!(status.contains("line3"), "{status}");

    let list = mcp.ok("process_list", json!({}));
    assert!(list.starts_with("p1  running  "), "{list}");

    let killed = mcp.ok("process_kill", json!({"id": "p1"}));
    assert!(
        killed.starts_with("p1 stopped: killed by signal 15 (SIGTERM)"),
        "{killed}"
    );
    assert_gone(&[leader]);
    assert_gone(&sleeper);
    let status = mcp.ok("process_status", json!({"id": "p1"}));
    assert!(
        status.starts_with("p1: exited (killed by signal 15 (SIGTERM))"),
        "{status}"
    );

    let (failed, v) = mcp.call("process_status", json!({"id": "p9"}));
    assert!(failed, "{v}");
    assert!(error(&v).contains("this session has: p1"), "{v}");
    mcp.finish();
}

#[test]
fn a_command_that_fails_at_once_is_reported_at_start() {
    let ws = Ws::new();
    let mcp = Served::start(&ws, &[]);
    let text = mcp.ok("process_start", json!({"command": "echo oops >&2; exit 7"}));
    assert!(text.contains("it already exited (exit code: 7)"), "{text}");
    assert!(text.contains("oops"), "{text}");
    let (_, v) = mcp.call("process_kill", json!({"id": "p1", "signal": "KILL"}));
    assert!(output(&v).contains("had already exited (exit code: 7)"), "{v}");
    mcp.finish();
}

#[test]
fn every_process_dies_with_the_session() {
    let ws = Ws::new();
    let mcp = Served::start(&ws, &[&host_pids()]);
    let mut all = Vec::new();
    for n in 1..=2 {
        let text = mcp.ok(
            "process_start",
            json!({"command": "sleep 100 & echo $!; setsid -f sh -c 'echo $$; exec sleep 100'; wait"}),
        );
        let leader = leader(&text, n);
        let out = mcp.wait_for_lines(&format!("p{n}"), 2);
        let found = pids(&out);
        assert_eq!(found.len(), 2, "{out}");
        all.push(leader);
        all.extend(found);
    }
    let list = mcp.ok("process_list", json!({}));
    assert_eq!(list.lines().count(), 2, "{list}");
    mcp.finish();
    assert_gone(&all);
    drop(mcp);
}

#[test]
fn background_processes_follow_the_sandbox() {
    let ws = Ws::new();
    require_backends();
    let mcp = Served::start(&ws, &[]);
    let target = ws.outside.join("bg.txt");
    mcp.ok(
        "process_start",
        json!({"command": format!("echo x > {}; echo in > src/bg.txt", target.display())}),
    );
    let out = mcp.wait_for_lines("p1", 1);
    assert!(out.contains("Read-only file system"), "{out}");
    assert!(!target.exists());
    assert_eq!(read(&ws.ws.join("src/bg.txt")), "in\n");
    mcp.finish();
}
