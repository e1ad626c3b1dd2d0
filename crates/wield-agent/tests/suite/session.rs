//! `AgentSession` on a real runtime against the scripted provider: a whole
//! turn, saving and resuming, and the subagents `task` starts (never wider
//! than their agent's layer; never past the run's limits). Here the library
//! is the boundary; the CLI's suite attacks the same through the binary.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_agent::{AgentSession, AgentTools, StopReason};
use wield_runtime::Runtime;
use wield_test_support::agent::{self, Flags, project};
use wield_test_support::scripted::{Scripted, Turn};

async fn load(dir: &tempfile::TempDir, tools: &AgentTools) -> Runtime {
    agent::load(dir.path(), tools, Flags::default()).await
}

/// The names of the tools a request offered.
fn offered(request: &Value) -> BTreeSet<String> {
    wield_test_support::scripted::offered(request).into_iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_runs_a_call_answers_and_is_saved_and_resumed() {
    let provider = Scripted::start(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("The note says 42."),
        Turn::Text("Still 42."),
    ]);
    let dir = project(&provider, "");
    let tools = AgentTools::new();
    let rt = load(&dir, &tools).await;
    let mut session = AgentSession::builder(&rt).tools(&tools).id("s-1").build().unwrap();
    assert_eq!(session.provider().name, "fake");
    let cancel = CancellationToken::new();
    let mut started = Vec::new();
    let outcome = session
        .run("What does the note say?", &cancel, |e| {
            if let wield_agent::AgentEvent::ToolStarted { name, .. } = e {
                started.push(name.to_owned());
            }
        })
        .await
        .unwrap();
    assert_eq!(outcome.stop, StopReason::Done);
    assert_eq!(outcome.answer.trim(), "The note says 42.");
    assert_eq!(started, ["read"]);
    let requests = provider.requests();
    let system = requests[0]["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(
        system.contains(&dir.path().canonicalize().unwrap().display().to_string()),
        "{system}"
    );
    let result = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(result["content"].as_str().unwrap().contains("the answer is 42"));

    let path = session
        .save(
            wield_agent::session::Ended::Stopped("done"),
            outcome.steps,
            outcome.usage,
        )
        .unwrap();
    assert!(path.ends_with(".wield/sessions/s-1.json"), "{}", path.display());
    let saved = wield_agent::session::load(rt.workspace(), "s-1").unwrap();
    let mut resumed = AgentSession::builder(&rt).resume(Some(saved)).build().unwrap();
    assert_eq!(resumed.id(), "s-1");
    resumed.run("And now?", &cancel, |_| {}).await.unwrap();
    // The resumed conversation went with the next request.
    let last = provider.requests().pop().unwrap();
    let said: Vec<&str> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.iter().any(|t| t.contains("What does the note say?")), "{said:?}");
}

/// A named subagent is offered, and runs, only its agent's tools, however
/// much its parent has; its steps come out of the parent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_gets_only_its_agents_tools() {
    let provider = Scripted::start(vec![
        Turn::Call(
            "task",
            json!({ "description": "review", "prompt": "Review the note.", "agent": "review" }),
        ),
        Turn::Calls(vec![
            ("write", json!({ "path": "pwned.txt", "content": "x" })),
            ("read", json!({ "path": "notes.txt" })),
        ]),
        Turn::Text("Reviewed: 42."),
        Turn::Text("Done."),
    ]);
    let dir = project(
        &provider,
        "[agents.review]\nsubagent = true\ndescription = \"Reviews\"\ntools.enabled = [\"read\", \"grep\"]\n",
    );
    let tools = AgentTools::new();
    let rt = load(&dir, &tools).await;
    let mut session = AgentSession::builder(&rt)
        .tools(&tools)
        .approver(Arc::new(wield_core::approval::YesApprover))
        .build()
        .unwrap();
    let outcome = session
        .run("Have it reviewed.", &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    assert_eq!(outcome.answer.trim(), "Done.");
    assert!(!dir.path().join("pwned.txt").exists(), "the reviewer wrote a file");
    let requests = provider.requests();
    assert!(offered(&requests[0]).contains("write"));
    assert_eq!(
        offered(&requests[1]),
        BTreeSet::from(["grep".to_owned(), "read".to_owned()])
    );
}

/// Without the agent tools tied to it, a session's `task` says it is not
/// available rather than starting anything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_without_its_session_starts_nothing() {
    let provider = Scripted::start(vec![
        Turn::Call("task", json!({ "description": "x", "prompt": "y" })),
        Turn::Text("Done."),
    ]);
    let dir = project(&provider, "");
    let tools = AgentTools::new();
    let rt = load(&dir, &tools).await;
    let mut session = AgentSession::builder(&rt).build().unwrap();
    session
        .run("Delegate.", &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let answer = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("task is not available here")
    );
}

/// `/model NAME` for a model of the current provider switches only once
/// the provider shows it serves the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_to_a_model_the_provider_does_not_serve_changes_nothing() {
    let not_found = |what: &str| Turn::Error(404, json!({ "error": { "message": format!("{what} not found") } }));
    let provider = Scripted::start(vec![
        // `GET /models` is not served here; the one-token request fails.
        not_found("/v1/models"),
        not_found("model 'nosuch'"),
        // Another model: not listed, but it answers.
        not_found("/v1/models"),
        Turn::Text("OK"),
    ]);
    let dir = project(&provider, "");
    let tools = AgentTools::new();
    let rt = load(&dir, &tools).await;
    let mut session = AgentSession::builder(&rt).tools(&tools).build().unwrap();
    let err = session.switch_checked("nosuch").await.unwrap_err().to_string();
    assert!(
        err.contains("model 'nosuch' not found") && err.contains("the model is unchanged"),
        "{err}"
    );
    assert_eq!(session.provider().model, "m");
    session.switch_checked("m2").await.unwrap();
    assert_eq!(session.provider().model, "m2");
    assert_eq!(provider.requests()[3]["model"], "m2");
}
