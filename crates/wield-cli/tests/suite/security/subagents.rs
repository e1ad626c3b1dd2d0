//! Attacks through `task`: a subagent must never have more than the run
//! that started it — neither a tool its agent's layer leaves out, nor steps,
//! tokens or time past the run's limits. Each runs the real binary against
//! the scripted provider, which records what every request offered.
// The scripted server's requests are read with unwraps outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Env;
use crate::run_agent::{
    assert_every_call_answered, events, interrupted_at, offered, project_with, scripted, tool_messages,
};
use crate::scripted_provider::Turn;

/// `wield run --headless --json ARGS`: its exit code, its events and stderr.
fn run_json(env: &Env, args: &[&str]) -> (i32, Vec<Value>, String) {
    let out = env
        .wield()
        .args(["run", "--headless", "--json"])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        events(&String::from_utf8_lossy(&out.stdout)),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `tool.finished` event of the run's `task` calls.
fn task_results(events: &[Value]) -> Vec<String> {
    let ids: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool.started" && e["name"] == "task")
        .filter_map(|e| e["id"].as_str())
        .collect();
    events
        .iter()
        .filter(|e| e["type"] == "tool.finished" && e["id"].as_str().is_some_and(|id| ids.contains(id)))
        .map(|e| {
            format!(
                "{} {}",
                e["output"].as_str().unwrap_or(""),
                e["error"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The parent's `task` call (to `agent`, else a general subagent), then
/// the subagent's turns, then the parent's answer.
fn delegated(agent: Option<&str>, child: Vec<Turn>) -> Vec<Turn> {
    let mut input = json!({ "description": "review", "prompt": "Review the notes." });
    if let Some(agent) = agent {
        input["agent"] = json!(agent);
    }
    let mut turns = vec![Turn::Call("task", input)];
    turns.extend(child);
    turns.push(Turn::Text("Done."));
    turns
}

const REVIEWER: &str = "[agents.review]\nsubagent = true\ndescription = \"Reviews code\"\n\
                        tools.enabled = [\"read\", \"grep\"]\n";

/// The reviewer was offered the parent's whole tool set and, asked by its
/// model, wrote a file and ran bash (everything approved: only the policy
/// stands in the way).
#[test]
fn a_named_subagent_is_offered_and_runs_only_its_agents_tools() {
    let (url, requests) = scripted(delegated(
        Some("review"),
        vec![
            Turn::Calls(vec![
                (
                    "write",
                    json!({ "path": "pwned.txt", "content": "written by the reviewer" }),
                ),
                ("bash", json!({ "command": "echo ran > ran.txt" })),
                ("read", json!({ "path": "notes.txt" })),
            ]),
            Turn::Text("Reviewed: the note says 42."),
        ],
    ));
    let env = project_with(&url, REVIEWER);
    let (code, events, stderr) = run_json(&env, &["--yes", "-p", "Have it reviewed."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!env.ws("pwned.txt").exists(), "the reviewer wrote a file");
    assert!(!env.ws("ran.txt").exists(), "the reviewer ran bash");
    let requests = requests.lock().unwrap();
    assert!(offered(&requests[0]).contains(&"bash".to_owned()));
    let child: BTreeSet<String> = offered(&requests[1]).into_iter().collect();
    assert_eq!(child, BTreeSet::from(["grep".to_owned(), "read".to_owned()]));
    let answers = tool_messages(&requests[2]);
    let text = |i: usize| answers[i]["content"].as_str().unwrap().to_owned();
    for i in [0, 1] {
        assert!(
            text(i).contains("hidden by the agent stage of the tool policy"),
            "{}",
            text(i)
        );
    }
    assert!(text(2).contains("the answer is 42"), "{}", text(2));
    let result = task_results(&events).pop().unwrap();
    assert!(result.contains("Reviewed: the note says 42."), "{result}");
}

/// `batch` ran its calls through the runtime's whole policy: a subagent
/// allowed `batch` reached every tool through it.
#[test]
fn a_subagents_batch_runs_only_what_the_subagent_may_call() {
    let (url, requests) = scripted(delegated(
        Some("batcher"),
        vec![
            Turn::Call(
                "batch",
                json!({ "calls": [
                    { "name": "write", "arguments": { "path": "pwned.txt", "content": "x" } },
                    { "name": "bash", "arguments": { "command": "echo ran > ran.txt" } },
                    { "name": "read", "arguments": { "path": "notes.txt" } }
                ] }),
            ),
            Turn::Text("Batched."),
        ],
    ));
    let env = project_with(
        &url,
        "[agents.batcher]\nsubagent = true\ntools.enabled = [\"read\", \"batch\"]\n",
    );
    let (code, _, stderr) = run_json(&env, &["--yes", "-p", "Batch it."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!env.ws("pwned.txt").exists() && !env.ws("ran.txt").exists());
    let requests = requests.lock().unwrap();
    let doc = tool_messages(&requests[2])[0]["content"].as_str().unwrap().to_owned();
    assert!(doc.contains("1 of 3 calls succeeded"), "{doc}");
    assert_eq!(doc.matches("hidden by the agent stage").count(), 2, "{doc}");
}

/// With `--max-steps 1 --token-budget 50`, one `task` ran 50 steps and
/// made 51 requests. The parent's first request already spends the budget:
/// the subagent stops without a request, and its result says why.
#[test]
fn a_subagent_stops_at_the_run_s_token_budget_and_step_limit() {
    let looping = vec![Turn::Call("read", json!({ "path": "notes.txt" })); 60];
    let (url, requests) = scripted(delegated(None, looping));
    let env = project_with(&url, "");
    let started = Instant::now();
    let (code, events, stderr) = run_json(&env, &["-p", "Delegate.", "--max-steps", "1", "--token-budget", "50"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(requests.lock().unwrap().len(), 1);
    let finished = events.last().unwrap();
    assert_eq!(finished["stop"], "token_budget", "{finished}");
    let result = task_results(&events).pop().unwrap();
    assert!(
        result.contains("[stopped by the run's token budget before its first step]"),
        "{result}"
    );
}

/// The requests a provider saw, and a run's exit code, events and stderr.
type Delegated = (Arc<Mutex<Vec<Value>>>, (i32, Vec<Value>, String));

/// A run whose first step makes two `task` calls, under `limits`, whose
/// subagents then read the same file for as long as they may.
fn delegated_twice(limits: &[&str]) -> Delegated {
    let task = |d: &'static str| {
        (
            "task",
            json!({ "description": d, "prompt": "Read notes.txt again and again." }),
        )
    };
    let mut turns = vec![Turn::Calls(vec![task("a"), task("b")])];
    turns.extend(vec![Turn::Call("read", json!({ "path": "notes.txt" })); 120]);
    let (url, requests) = scripted(turns);
    let env = project_with(&url, "");
    let mut args = vec!["-p", "Delegate twice."];
    args.extend(limits);
    let ran = run_json(&env, &args);
    (requests, ran)
}

/// Several `task` calls in one step each got the run's whole budget. Now
/// they share it: whatever the order they run in, the requests offering
/// tools are exactly the run's `--max-steps`, and each agent has at most
/// one last turn without tools.
#[test]
fn two_subagents_of_one_step_share_the_run_s_steps() {
    let (requests, (code, events, stderr)) = delegated_twice(&["--max-steps", "3"]);
    assert_eq!(code, 3, "{stderr}");
    let requests = requests.lock().unwrap();
    let with_tools = requests.iter().filter(|r| !offered(r).is_empty()).count();
    assert_eq!(with_tools, 3, "{} requests", requests.len());
    assert!(requests.len() <= 6, "{} requests", requests.len());
    let results = task_results(&events);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r.contains("[stopped by the step limit"), "{r}");
    }
}

/// Two subagents of one step draw on one token budget: each request uses
/// 110 tokens, so with 300 the run stops after a few, not after hundreds.
#[test]
fn two_subagents_of_one_step_share_the_run_s_tokens() {
    let (requests, (code, events, stderr)) = delegated_twice(&["--token-budget", "300"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(events.last().unwrap()["stop"], "token_budget");
    // The parent's request, then the subagents' until 300 is reached: one
    // more at most for the subagent that was already asking.
    let n = requests.lock().unwrap().len();
    assert!((3..=4).contains(&n), "{n} requests");
    for r in task_results(&events) {
        assert!(r.contains("[stopped by the run's token budget"), "{r}");
    }
}

/// The run's `--timeout` did not reach a subagent's calls: its `sleep`
/// ran to the end. Now the subagent stops at the run's deadline.
#[test]
fn a_subagent_stops_at_the_run_s_deadline() {
    let (url, _) = scripted(delegated(
        None,
        vec![
            Turn::Call("bash", json!({ "command": "sleep 30" })),
            Turn::Text("Slept."),
        ],
    ));
    let env = project_with(&url, "");
    let started = Instant::now();
    let (code, events, stderr) = run_json(&env, &["--yes", "-p", "Wait.", "--timeout", "2s"]);
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(events.last().unwrap()["stop"], "timeout");
    let result = task_results(&events).pop().unwrap();
    assert!(
        result.contains("[stopped by the run's time limit after 1 step]"),
        "{result}"
    );
}

/// Cancelling the run cancels its subagent: wield stops at once, with
/// every call answered.
#[test]
fn cancelling_the_run_cancels_its_subagent() {
    let (url, requests) = scripted(delegated(None, vec![Turn::Hang("Thinking about")]));
    let env = project_with(&url, "");
    let (code, saved) = interrupted_at(&env, &["-p", "Delegate."], "tool.started");
    assert_eq!(code, 130);
    assert_every_call_answered(&saved);
    // The executor answers the call at once, or the subagent's own answer
    // (it stopped too) gets there first.
    let result = &saved["messages"][2]["content"][0];
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        result["is_error"] == json!(true) && text.contains("cancelled"),
        "{saved}"
    );
    assert_eq!(requests.lock().unwrap().len(), 2);
}
