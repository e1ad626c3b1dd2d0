//! The run's limits, on an `AgentSession` built as `wield run` builds it:
//! at the step limit the last turn goes without tools, the token budget
//! stops the run, and the result guard replaces a result too large to show.
//! (The exit code 3 a limit gives is the CLI's contract, tested there.)
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::json;
use wield_agent::StopReason;
use wield_test_support::agent::{Build, Flags, project, run_once, tool_contents, write};
use wield_test_support::scripted::{Scripted, Turn};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_steps_the_last_turn_goes_without_tools() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Out of steps: the note says 42."),
    ]);
    let dir = project(&provider, "");
    let build = Build {
        max_steps: Some(1),
        ..Build::default()
    };
    let ran = run_once(dir.path(), Flags::default(), build, "Read everything.").await;
    let outcome = ran.ok();
    assert_eq!((outcome.stop, outcome.steps), (StopReason::MaxSteps, 2));
    assert_eq!(outcome.answer.trim_end(), "Out of steps: the note says 42.");
    let requests = provider.requests();
    assert!(requests[0].get("tools").is_some());
    assert!(requests[1].get("tools").is_none(), "{}", requests[1]);
    assert!(requests[1].to_string().contains("Do not call tools any more"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_budget_stops_the_run() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Never sent."),
    ]);
    let dir = project(&provider, "");
    // Each request uses 110 tokens: the second one reaches 200.
    let build = Build {
        token_budget: Some(200),
        ..Build::default()
    };
    let ran = run_once(dir.path(), Flags::default(), build, "Read a lot").await;
    let outcome = ran.ok();
    assert_eq!((outcome.stop, outcome.steps), (StopReason::TokenBudget, 2));
    assert_eq!(outcome.usage.input, 200);
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_guard_s_limit_is_replaced_by_an_error_saying_what_to_do() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "huge.txt" })),
        Turn::Text("Too big; I will read less."),
    ]);
    let dir = project(&provider, "");
    write(dir.path(), "huge.txt", &"a line of the huge file\n".repeat(200));
    let flags = Flags {
        set: &["result.max_tokens=200"],
        ..Flags::default()
    };
    let ran = run_once(dir.path(), flags, Build::default(), "Read huge.txt").await;
    assert_eq!(ran.ok().stop, StopReason::Done);
    let answer = tool_contents(&provider.requests()[1])[0].clone();
    assert!(!answer.contains("a line of the huge file"), "{answer}");
    assert!(
        answer.contains("too large to show: the limit for one result is 200 tokens")
            && answer.contains("offset and limit"),
        "{answer}"
    );
}
