//! Compaction as a run of an `AgentSession` meets it, built as `wield run`
//! builds it: past `compact_at` of the context window the run asks for a
//! summary and goes on with the new history (the todo list surviving it);
//! an overflow the provider reports compacts once, dropping the oldest
//! messages when the summary request overflows too, and a second overflow
//! is the run's error. (`compact.rs` tests `/compact`, on demand.)
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use wield_agent::StopReason;
use wield_test_support::agent::{Build, Flags, project, run_once, tool_contents, write};
use wield_test_support::scripted::{Scripted, Turn};

const BIG: &str = "the quick brown fox jumps over the lazy dog\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_asks_for_a_summary_and_goes_on_with_the_new_history() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "big.txt" })),
        Turn::Text("Goal: count the lines. Progress: big.txt read. Remaining: answer. Todo list: (none)"),
        Turn::Text("It has 100 lines."),
    ]);
    let dir = project(&provider, "context_window = 2000\n");
    write(dir.path(), "big.txt", &BIG.repeat(100));
    let logs = tempfile::tempdir().unwrap();
    let audit = logs.path().join("audit.jsonl");
    let flags = Flags {
        audit: Some(&audit),
        include_tools: Some("read"),
        set: &["context.compact_at=50"],
        ..Flags::default()
    };
    let ran = run_once(dir.path(), flags, Build::default(), "How many lines has big.txt?").await;
    let (before, after) = ran.compactions()[0];
    assert!(before > 1_000 && after < before / 2, "{before} → {after}");
    let outcome = ran.ok();
    assert_eq!(outcome.stop, StopReason::Done);
    assert_eq!(outcome.answer.trim_end(), "It has 100 lines.");
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    // The summary request: the whole conversation, no tools, the hand-off
    // instructions (the todo list among them) last.
    let summary = &requests[1];
    assert!(summary.get("tools").is_none(), "{summary}");
    assert_eq!(tool_contents(summary).len(), 1);
    let asked = summary["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(
        asked.contains("hand-off summary") && asked.contains("Todo list"),
        "{asked}"
    );
    // The new history: the system prompt, the user's task and the summary.
    let next = requests[2]["messages"].as_array().unwrap();
    assert_eq!(next.len(), 3, "{next:?}");
    assert_eq!(next[0]["role"], "system");
    assert_eq!(next[1]["content"], "How many lines has big.txt?");
    let handed = next[2]["content"].as_str().unwrap();
    assert!(
        handed.starts_with("[Context compacted]") && handed.ends_with("Todo list: (none)"),
        "{handed}"
    );
    assert!(requests[2].get("tools").is_some());
    assert!(!requests[2].to_string().contains("quick brown fox"));
    // The summary request is a model turn of the audit log too.
    let turns: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "model_turn")
        .collect();
    let marks: Vec<(Value, Value)> = turns
        .iter()
        .map(|t| (t["step"].clone(), t["compaction"].clone()))
        .collect();
    assert_eq!(
        marks,
        [
            (json!(1), Value::Null),
            (Value::Null, json!(true)),
            (json!(2), Value::Null)
        ]
    );
}

/// The todo list the model wrote goes into the summary request and comes
/// back, as it is, after the summary in the new history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_todo_list_survives_compaction() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "todo_write",
            json!({"items": [
                {"content": "count the lines of big.txt", "status": "in_progress"},
                {"content": "report the count", "status": "pending"}
            ]}),
        ),
        Turn::Call("read", json!({ "path": "big.txt" })),
        Turn::Text("Goal: count the lines. Progress: big.txt read."),
        Turn::Call("todo_list", json!({})),
        Turn::Text("It has 100 lines."),
    ]);
    let dir = project(&provider, "context_window = 2000\n");
    write(dir.path(), "big.txt", &BIG.repeat(100));
    let flags = Flags {
        include_tools: Some("read,todo_*"),
        set: &["context.compact_at=50"],
        ..Flags::default()
    };
    let ran = run_once(dir.path(), flags, Build::default(), "How many lines has big.txt?").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    assert!(!ran.compactions().is_empty(), "{:?}", ran.events);
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);
    let item = "1. [~] count the lines of big.txt";
    // The summary request carries the list.
    let summary = &requests[2];
    assert!(summary.get("tools").is_none(), "{summary}");
    let asked = summary["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(asked.contains("[Session state]") && asked.contains(item), "{asked}");
    // The new history has it after the summary, and the list is still the
    // session's: todo_list answers with it.
    let next = requests[3]["messages"].as_array().unwrap().to_owned();
    assert!(!requests[3].to_string().contains("quick brown fox"));
    let handed = next.last().unwrap().to_string();
    assert!(
        handed.contains("[Context compacted]") && handed.contains("## Todo list") && handed.contains(item),
        "{handed}"
    );
    let listed = tool_contents(&requests[4]).pop().unwrap();
    assert!(
        listed.contains("1 in progress, 1 pending") && listed.contains(item),
        "{listed}"
    );
}

fn overflow() -> Turn {
    Turn::Error(
        400,
        json!({ "error": { "message": "This model's maximum context length is 8192 tokens.",
                           "type": "invalid_request_error", "code": "context_length_exceeded" } }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overflow_the_provider_reports_compacts_once_dropping_the_oldest_when_the_summary_overflows() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        overflow(),
        overflow(),
        Turn::Text("Goal: read notes.txt. Progress: it says 42."),
        Turn::Text("It says 42."),
    ]);
    let dir = project(&provider, "");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Read notes.txt").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    assert!(!ran.compactions().is_empty(), "{:?}", ran.events);
    let requests = provider.requests();
    assert_eq!(requests.len(), 5);
    // The first summary request overflowed; the second went without the
    // oldest message (the task), every call still answered.
    let (first, second) = (&requests[2], &requests[3]);
    assert!(first.get("tools").is_none() && second.get("tools").is_none());
    assert!(first.to_string().contains("Read notes.txt"));
    assert!(!second.to_string().contains("Read notes.txt"), "{second}");
    assert_eq!(tool_contents(second).len(), 1);
    let last = requests[4]["messages"].as_array().unwrap();
    assert!(last.last().unwrap()["content"].as_str().unwrap().contains("it says 42"));
    assert_eq!(last[1]["content"], "Read notes.txt");
}

/// A second overflow right after compacting is the run's error; the
/// compaction was told first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_overflow_right_after_compacting_is_the_run_s_error() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        overflow(),
        Turn::Text("Summary."),
        overflow(),
    ]);
    let dir = project(&provider, "");
    let ran = run_once(dir.path(), Flags::default(), Build::default(), "Read notes.txt").await;
    let Err(e) = &ran.outcome else {
        panic!("the run did not fail: {:?}", ran.events)
    };
    assert!(e.to_string().contains("longer than the model's context window"), "{e}");
    assert_eq!(ran.compactions().len(), 1, "{:?}", ran.events);
}
