//! The processes of `wield mcp serve`'s calls: none is left behind, not
//! even as a zombie.

use std::time::Duration;

use super::support::{RawServe, Ws};

/// The zombie children of process `pid`, by their stat lines.
#[allow(clippy::unwrap_used)]
fn zombie_children(pid: u32) -> Vec<String> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace() {
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat"))
                && stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'))
            {
                // With its namespace pids: what tells whose it was.
                let nspid = std::fs::read_to_string(format!("/proc/{child}/status"))
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.starts_with("NSpid") || l.starts_with("NSsid"))
                    .collect::<Vec<_>>()
                    .join(" ");
                out.push(format!("{} [{nspid}]", stat.trim_end()));
            }
        }
    }
    out
}

/// Regression: under bubblewrap, a cancelled call could leave a
/// zombie child of wield for the life of the server. Killing bwrap kills
/// the processes of its PID namespace, which are handed to wield and die at
/// once: zombies whose marker can no longer be read, so they were reaped
/// only if a walk of the tree had seen them alive, and the first walk came
/// after bwrap's group was signalled; and a sandbox's namespace init that
/// died after every reaper had stopped looking (a killed process finishes
/// faulting in its binary first: seconds, from a cold disk) stayed too.
#[test]
fn cancelled_sandboxed_calls_leave_no_zombie() {
    let ws = Ws::new("[sandbox]\nenabled = true\nbackend = \"bwrap\"\n\n[approval]\nauto_approve = [\"bash\"]\n");
    let mut serve = RawServe::initialized(&ws);
    for id in 1..=12 {
        serve.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"sleep 100 | cat; echo x"}}}}}}"#
        ));
        std::thread::sleep(Duration::from_millis(400));
        serve.send(&format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#
        ));
        std::thread::sleep(Duration::from_millis(200));
    }
    // Answered once every cancelled call's processes are gone.
    serve.send(r#"{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo done"}}}"#);
    let done = serve.reply(Duration::from_secs(30));
    assert_eq!(done["id"], 100, "{done}");
    // Reaping trails a sandbox's death, which may come seconds after its
    // cancellation on a busy machine; the zombies this guards against
    // stayed for good.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut zombies = zombie_children(serve.child.id());
    while !zombies.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        zombies = zombie_children(serve.child.id());
    }
    assert!(zombies.is_empty(), "zombies left: {zombies:#?}");
}
