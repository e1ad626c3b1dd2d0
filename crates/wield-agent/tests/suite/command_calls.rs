//! Commands the model runs in a run of an `AgentSession` built as `wield
//! run --yes` builds it: the calls of one turn all answered in call order
//! however long each takes, and a running command's output coming as
//! events between the call's start and its end. The commands run under
//! bubblewrap (Landlock's helper is the `wield` binary, which this process
//! is not); `.config/nextest.toml` runs this module in the `sandboxed`
//! group.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;
use wield_agent::StopReason;
use wield_test_support::agent::{Build, Event, Flags, project, run_once};
use wield_test_support::scripted::{Scripted, Turn, tool_results};

const SANDBOX: &str = "[sandbox]\nbackend = \"bwrap\"\n";

const YES: Build<'static> = Build {
    agent: None,
    yes: true,
    max_steps: None,
    token_budget: None,
    resume: None,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_calls_in_one_turn_are_all_answered_in_call_order() {
    let provider = Scripted::start(vec![
        Turn::Calls(vec![
            ("bash", json!({ "command": "sleep 0.3; echo slow" })),
            ("read", json!({ "path": "notes.txt" })),
            ("bash", json!({ "command": "echo fast" })),
        ]),
        Turn::Text("Done."),
    ]);
    let dir = project(&provider, SANDBOX);
    let ran = run_once(dir.path(), Flags::default(), YES, "Three things at once").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let answers = tool_results(&provider.requests()[1]);
    let ids: Vec<&str> = answers.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["call_0_0", "call_0_1", "call_0_2"]);
    let text = |i: usize| answers[i].1.clone();
    assert!(text(0).contains("slow") && text(1).contains("the answer is 42") && text(2).contains("fast"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_command_s_output_comes_as_events_between_its_start_and_end() {
    let provider = Scripted::start(vec![
        Turn::Call("bash", json!({ "command": "echo first line; echo second line" })),
        Turn::Text("It printed two lines."),
    ]);
    let dir = project(&provider, SANDBOX);
    let ran = run_once(dir.path(), Flags::default(), YES, "Print two lines").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let outputs: Vec<(&str, &str)> = ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolOutput { id, delta } => Some((id.as_str(), delta.as_str())),
            _ => None,
        })
        .collect();
    assert!(!outputs.is_empty(), "{:?}", ran.events);
    assert!(outputs.iter().all(|(id, _)| *id == "call_0"));
    let text: String = outputs.iter().map(|(_, delta)| *delta).collect();
    assert!(text.contains("first line\nsecond line"), "{text}");
    let at = |f: &dyn Fn(&Event) -> bool| ran.events.iter().position(f).unwrap();
    let first_output = at(&|e| matches!(e, Event::ToolOutput { .. }));
    assert!(
        at(&|e| matches!(e, Event::ToolStarted { .. })) < first_output
            && first_output < at(&|e| matches!(e, Event::ToolFinished { .. }))
    );
}
