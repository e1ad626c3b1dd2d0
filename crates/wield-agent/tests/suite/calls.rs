//! What becomes of the model's calls in a run of an `AgentSession` built as
//! `wield run` headless builds it: a refused call is pruned once the model
//! has seen it, a call that needs approval is refused and the model told,
//! deferred tools are listed then offered once loaded, `done` ends the run
//! with its report, `ask` with nobody to ask tells the model to go on, and
//! each model turn is audited beside the calls it caused.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use wield_agent::StopReason;
use wield_agent::tools::DoneStatus;
use wield_test_support::agent::{Build, Flags, project, run_once, tool_contents};
use wield_test_support::scripted::{Scripted, Turn, offered};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_is_pruned_once_the_model_has_seen_it() {
    let provider = Scripted::start(vec![
        Turn::Call("no_such_tool", json!({})),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Done."),
    ]);
    let dir = project(&provider, "");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Go.").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    // The second request shows the model its mistake...
    assert!(requests[1].to_string().contains("no_such_tool"));
    // ...the third no longer carries the pair; the call that ran stays.
    assert!(!requests[2].to_string().contains("no_such_tool"), "{}", requests[2]);
    assert!(requests[2].to_string().contains("the answer is 42"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_approval_is_refused_headless_and_the_model_is_told() {
    let provider = Scripted::start(vec![
        Turn::Call("write", json!({ "path": "out.txt", "content": "x" })),
        Turn::Text("I could not write it."),
    ]);
    let dir = project(&provider, "[approval]\nauto_approve = [\"$readonly\"]\n");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Write out.txt.").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    assert!(!dir.path().join("out.txt").exists());
    let tool = tool_contents(&provider.requests()[1]).remove(0);
    assert!(tool.to_lowercase().contains("approv"), "{tool}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tools_are_listed_by_name_and_offered_once_loaded() {
    let provider = Scripted::start(vec![
        Turn::Call("load_tools", json!({ "tools": ["grep"] })),
        Turn::Call("grep", json!({ "pattern": "answer" })),
        Turn::Text("Found it."),
    ]);
    let dir = project(&provider, "\n[tools]\ndeferred = [\"grep\"]\n");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Find the answer").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let requests = provider.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<available-deferred-tools>") && system.contains("\ngrep\n"),
        "{system}"
    );
    assert!(!offered(&requests[0]).contains(&"grep".to_owned()));
    assert!(offered(&requests[1]).contains(&"grep".to_owned()));
    let found = tool_contents(&requests[2]);
    assert!(found[1].contains("the answer is 42"), "{found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_ends_the_run_with_its_summary_and_its_status() {
    for (status, reported) in [
        ("success", DoneStatus::Success),
        ("partial", DoneStatus::Partial),
        ("failed", DoneStatus::Failed),
    ] {
        let provider = Scripted::start(vec![
            Turn::Call(
                "done",
                json!({ "summary": format!("Finished: {status}."), "status": status }),
            ),
            Turn::Text("never asked for"),
        ]);
        let dir = project(&provider, "");
        let ran = run_once(dir.path(), Flags::default(), Build::default(), "Do it.").await;
        let outcome = ran.ok();
        assert_eq!(outcome.stop, StopReason::Done, "{status}");
        assert_eq!(outcome.answer.trim_end(), format!("Finished: {status}."));
        let done = outcome.done.as_ref().unwrap();
        assert_eq!((done.status, done.status.as_str()), (reported, status));
        assert_eq!(provider.requests().len(), 1, "the run went on after done");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_headless_tells_the_model_to_go_on_with_stated_assumptions() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "ask",
            json!({ "question": "Which file?", "options": [{ "label": "a.txt" }] }),
        ),
        Turn::Text("I assumed notes.txt."),
    ]);
    let dir = project(&provider, "");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Read the file.").await;
    let outcome = ran.ok();
    assert_eq!(outcome.stop, StopReason::Done);
    assert_eq!(outcome.answer.trim_end(), "I assumed notes.txt.");
    let result = tool_contents(&provider.requests()[1]).pop().unwrap();
    assert!(
        result.contains("go on with the task on reasonable assumptions"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_model_turn_is_audited_beside_the_calls_it_caused() {
    let provider = Scripted::start(vec![
        Turn::Calls(vec![
            ("read", json!({ "path": "notes.txt" })),
            ("grep", json!({ "pattern": "answer" })),
        ]),
        Turn::Text("42."),
    ]);
    let dir = project(&provider, "");
    let logs = tempfile::tempdir().unwrap();
    let audit = logs.path().join("audit.jsonl");
    let flags = Flags {
        audit: Some(&audit),
        ..Flags::default()
    };
    let ran = run_once(dir.path(), flags, Build::default(), "Find the answer").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let turns: Vec<&Value> = records.iter().filter(|r| r["event"] == "model_turn").collect();
    assert_eq!(turns.len(), 2, "{records:?}");
    let first = turns[0];
    assert_eq!(
        (first["provider"].as_str(), first["model"].as_str()),
        (Some("fake"), Some("m"))
    );
    assert_eq!(
        (first["step"].as_u64(), first["stop"].as_str()),
        (Some(1), Some("tool_use"))
    );
    assert_eq!(first["usage"]["input"], 100);
    assert!(first["time"].is_string() && first["session"].as_str().unwrap().starts_with("run-"));
    assert_eq!(first["call_ids"], json!(["call_0_0", "call_0_1"]));
    assert_eq!(turns[1]["call_ids"], json!([]));
    assert_eq!(turns[1]["stop"], "end_turn");
    // The calls' own records carry the same ids, after the turn that asked.
    let mut calls: Vec<&str> = records.iter().filter_map(|r| r["call_id"].as_str()).collect();
    calls.sort_unstable();
    assert_eq!(calls, ["call_0_0", "call_0_1"]);
    let at = |pred: &dyn Fn(&Value) -> bool| records.iter().position(pred).unwrap();
    assert!(at(&|r| r["event"] == "model_turn") < at(&|r| r["call_id"] == "call_0_0"));
}
