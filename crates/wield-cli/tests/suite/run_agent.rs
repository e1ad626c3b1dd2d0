//! `wield run` headless through the real binary, against a scripted local
//! provider that replays Chat Completions turns and checks, on every
//! request, that each tool call has exactly one result (as the real APIs
//! demand); and against a real local model (llama.cpp's `llama-server`).
// The scripted server and the local model's start are helpers outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::Env;
use crate::scripted_provider::{Scripted, Turn};

/// A provider answering request N with turn N; the requests it got.
pub(crate) fn scripted(turns: Vec<Turn>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let provider = Scripted::start(turns);
    (provider.url, provider.requests)
}

fn project(url: &str) -> Env {
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!("[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n"),
    );
    env.put("notes.txt", "the answer is 42\n");
    env
}

/// The saved sessions' files (beside them, the directory's `.gitignore`).
fn session_files(env: &Env) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(env.ws(".wield/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

fn run(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = env.wield().args(["run", "--headless"]).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_headless_run_reads_a_file_and_answers() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("The note says the answer is 42."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "What does notes.txt say?", "-o", "answer.txt"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "The note says the answer is 42.\n");
    assert!(stderr.contains("→ read {\"path\":\"notes.txt\"}"), "{stderr}");
    assert!(stderr.contains("[done: 2 steps, 1 tool call"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(env.ws("answer.txt")).unwrap(),
        "The note says the answer is 42.\n"
    );
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let last = requests[1]["messages"].as_array().unwrap();
    let tool = last.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool["content"].as_str().unwrap().contains("the answer is 42"), "{tool}");
    assert!(
        requests[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("coding agent")
    );
}

#[test]
fn at_max_steps_the_last_turn_goes_without_tools_and_the_run_exits_3() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Out of steps: the note says 42."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read everything.", "--max-steps", "1"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stdout, "Out of steps: the note says 42.\n");
    assert!(stderr.contains("[max_steps: 2 steps"), "{stderr}");
    let requests = requests.lock().unwrap();
    assert!(requests[0].get("tools").is_some());
    assert!(requests[1].get("tools").is_none(), "{}", requests[1]);
    assert!(requests[1].to_string().contains("Do not call tools any more"));
}

#[test]
fn a_refused_call_is_pruned_once_the_model_has_seen_it() {
    let (url, requests) = scripted(vec![
        Turn::Call("no_such_tool", json!({})),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Done."),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Go."]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    // The second request shows the model its mistake...
    assert!(requests[1].to_string().contains("no_such_tool"));
    // ...the third no longer carries the pair; the call that ran stays.
    assert!(!requests[2].to_string().contains("no_such_tool"), "{}", requests[2]);
    assert!(requests[2].to_string().contains("the answer is 42"));
}

#[test]
fn a_call_that_needs_approval_is_refused_headless_and_the_model_is_told() {
    let (url, requests) = scripted(vec![
        Turn::Call("write", json!({ "path": "out.txt", "content": "x" })),
        Turn::Text("I could not write it."),
    ]);
    let env = project(&url);
    env.put(
        ".wield/config.toml",
        &format!(
            "[approval]\nauto_approve = [\"$readonly\"]\n\n[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n"
        ),
    );
    let (code, _, stderr) = run(&env, &["-p", "Write out.txt."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!env.ws("out.txt").exists());
    let requests = requests.lock().unwrap();
    let tool = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert!(
        tool["content"].as_str().unwrap().to_lowercase().contains("approv"),
        "{tool}"
    );
}

/// What wield keeps in a workspace (the saved session, cut outputs) never
/// shows in the repository's `git status`.
#[test]
fn wield_s_own_state_stays_out_of_git_status() {
    let (url, _requests) = scripted(vec![
        Turn::Call("bash", json!({ "command": "seq 1 40000" })),
        Turn::Text("Counted."),
    ]);
    let env = project(&url);
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .current_dir(env.ws(""))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "project"]);
    let (code, _, stderr) = run(&env, &["-p", "Count.", "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        env.ws(".wield/sessions").is_dir() && env.ws(".wield/outputs").is_dir(),
        "{stderr}"
    );
    assert_eq!(git(&["status", "--porcelain", "--untracked-files=all"]), "");
}

#[test]
fn a_provider_failure_mid_run_exits_1_with_its_message() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Go.", "--set", "providers.fake.max_retries=0"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("fake: cannot reach"), "{stderr}");
    // The cause is named, with what to check.
    assert!(stderr.contains("connection refused: nothing listens there"), "{stderr}");

    // A retry says so as it waits.
    let (code, _, stderr) = run(&env, &["-p", "Go.", "--set", "providers.fake.max_retries=1"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("[retrying in ") && stderr.contains("(attempt 2 of 2)"),
        "{stderr}"
    );

    // With --json, the stream still ends with its final event, saying why.
    let (code, stdout, _) = run(&env, &["-p", "Go.", "--json", "--set", "providers.fake.max_retries=1"]);
    assert_eq!(code, 1);
    assert!(stdout.contains(r#""type":"provider.retrying""#), "{stdout}");
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "session.finished", "{stdout}");
    assert_eq!(last["stop"], "error");
    assert!(last["error"].as_str().unwrap().contains("fake: cannot reach"), "{last}");
}

use crate::local_model;

#[test]
fn a_real_local_model_runs_one_step_and_answers() {
    let model = local_model::start();
    let env = Env::new();
    env.put("notes.txt", "the answer is 42\n");
    env.put(
        ".wield/config.toml",
        &format!(
            "[providers.local]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"smollm2-135m\"\n\
             max_tokens = 60\ntemperature = 0.0\ntool_choice = \"required\"\n",
            model.url
        ),
    );
    let (code, stdout, stderr) = run(
        &env,
        &[
            "--include-tools",
            "read",
            "-p",
            "Read the file notes.txt",
            "--max-steps",
            "1",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("→ read "), "{stderr}");
    assert!(stderr.contains("[max_steps: 2 steps, 1 tool call"), "{stderr}");
    assert!(!stdout.trim().is_empty(), "no answer: {stderr}");
}

#[test]
fn json_lines_events_follow_the_documented_schema() {
    let (url, _) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("It says 42."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read notes.txt", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let events: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session.started",
            "step.started",
            "tool.started",
            "tool.finished",
            "step.finished",
            "step.started",
            "text.delta",
            "step.finished",
            "session.finished"
        ]
    );
    assert_eq!(
        (events[0]["provider"].as_str(), events[0]["model"].as_str()),
        (Some("fake"), Some("m"))
    );
    assert!(events[0]["tools"].as_array().unwrap().iter().any(|t| t == "read"));
    assert_eq!(events[2]["name"], "read");
    assert_eq!(events[2]["input"], json!({ "path": "notes.txt" }));
    assert!(
        events[2]["preview"].as_str().unwrap().contains("notes.txt"),
        "{}",
        events[2]
    );
    assert_eq!(events[3]["success"], true);
    assert!(events[3]["output"].as_str().unwrap().contains("the answer is 42"));
    assert!(events[3]["duration_ms"].is_u64());
    assert_eq!(events[4]["usage"]["input"], 100);
    let last = &events[8];
    assert_eq!((last["stop"].as_str(), last["steps"].as_u64()), (Some("done"), Some(2)));
    assert_eq!(last["answer"], "It says 42.");
    assert_eq!(last["usage"]["output"], 20);
}

#[test]
fn a_session_is_saved_and_resumed_unless_ephemeral() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("It says 42."),
        Turn::Text("You asked what notes.txt says."),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Read notes.txt"]);
    assert_eq!(code, 0, "{stderr}");
    let sessions = session_files(&env);
    let [file] = sessions.as_slice() else {
        panic!("{sessions:?}")
    };
    assert!(stderr.contains("[saved "), "{stderr}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(env.ws(".wield/sessions"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    assert_eq!(saved["stop"], "done");
    assert_eq!(saved["messages"].as_array().unwrap().len(), 4, "{saved}");

    // Resumed: the earlier conversation goes with the next task.
    let (code, stdout, stderr) = run(&env, &["--resume", "-p", "What did I ask?"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "You asked what notes.txt says.\n");
    let last = requests.lock().unwrap().last().cloned().unwrap();
    let text = last.to_string();
    assert!(
        text.contains("Read notes.txt") && text.contains("What did I ask?"),
        "{text}"
    );
    assert_eq!(session_files(&env).len(), 1, "resumed into the same file");

    // Ephemeral: nothing more is written.
    let env = project(&url);
    let (_, _, stderr) = run(&env, &["-p", "Again", "--ephemeral"]);
    assert!(!env.ws(".wield/sessions").exists(), "{stderr}");
    let (code, _, stderr) = run(&env, &["--resume", "-p", "x"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no saved session to resume"), "{stderr}");
}

/// A provider whose settings add `extra` lines to `[providers.fake]`.
pub(crate) fn project_with(url: &str, extra: &str) -> Env {
    let env = project(url);
    env.put(
        ".wield/config.toml",
        &format!("[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n{extra}"),
    );
    env
}

/// The `tool` messages of a request, in order.
pub(crate) fn tool_messages(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

/// The JSON Lines events of a run's stdout.
pub(crate) fn events(stdout: &str) -> Vec<Value> {
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn compaction_asks_for_a_summary_and_goes_on_with_the_new_history() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "big.txt" })),
        Turn::Text("Goal: count the lines. Progress: big.txt read. Remaining: answer. Todo list: (none)"),
        Turn::Text("It has 100 lines."),
    ]);
    let env = project_with(&url, "context_window = 2000\n");
    env.put("big.txt", &"the quick brown fox jumps over the lazy dog\n".repeat(100));
    let audit = env.base.join("audit.jsonl");
    let (code, stdout, stderr) = run(
        &env,
        &[
            "--audit",
            audit.to_str().unwrap(),
            "--include-tools",
            "read",
            "--set",
            "context.compact_at=50",
            "-p",
            "How many lines has big.txt?",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let events = events(&stdout);
    let compacted = events.iter().find(|e| e["type"] == "compacted").unwrap();
    let (before, after) = (
        compacted["before_tokens"].as_u64().unwrap(),
        compacted["after_tokens"].as_u64().unwrap(),
    );
    assert!(before > 1_000 && after < before / 2, "{compacted}");
    assert_eq!(events.last().unwrap()["answer"], "It has 100 lines.");
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 3);
    // The summary request: the whole conversation, no tools, the hand-off
    // instructions (the todo list among them) last.
    let summary = &requests[1];
    assert!(summary.get("tools").is_none(), "{summary}");
    assert_eq!(tool_messages(summary).len(), 1);
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
#[test]
fn a_todo_list_survives_compaction() {
    let (url, requests) = scripted(vec![
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
    let env = project_with(&url, "context_window = 2000\n");
    env.put("big.txt", &"the quick brown fox jumps over the lazy dog\n".repeat(100));
    let (code, stdout, stderr) = run(
        &env,
        &[
            "--include-tools",
            "read,todo_*",
            "--set",
            "context.compact_at=50",
            "-p",
            "How many lines has big.txt?",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(events(&stdout).iter().any(|e| e["type"] == "compacted"), "{stdout}");
    let requests = requests.lock().unwrap();
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
    let listed = tool_messages(&requests[4]);
    let listed = listed.last().unwrap()["content"].as_str().unwrap();
    assert!(
        listed.contains("1 in progress, 1 pending") && listed.contains(item),
        "{listed}"
    );
}

/// The todo list is saved with the session and a resumed run has it again;
/// marking the item in progress done promotes the next one.
#[test]
fn a_todo_list_is_saved_with_the_session_and_resumed() {
    let (url, requests) = scripted(vec![
        Turn::Call(
            "todo_write",
            json!({"items": [
                {"content": "read notes", "status": "in_progress"},
                {"content": "answer", "status": "pending"}
            ]}),
        ),
        Turn::Text("Noted."),
        Turn::Call("todo_progress", json!({"updates": [{"index": 1, "status": "done"}]})),
        Turn::Text("Next: answer."),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Plan it"]);
    assert_eq!(code, 0, "{stderr}");
    let file = session_files(&env).remove(0);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        saved["todo"],
        json!([
            {"content": "read notes", "status": "in_progress"},
            {"content": "answer", "status": "pending"}
        ]),
        "{saved}"
    );
    let (code, _, stderr) = run(&env, &["--resume", "-p", "Go on"]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    let progressed = tool_messages(&requests[3]);
    let progressed = progressed.last().unwrap()["content"].as_str().unwrap();
    assert!(
        progressed.contains("1. [x] read notes") && progressed.contains("2. [~] answer"),
        "{progressed}"
    );
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["todo"][1]["status"], "in_progress", "{saved}");

    // A session saved before todo lists were kept still resumes.
    let mut old = saved.clone();
    old.as_object_mut().unwrap().remove("todo");
    std::fs::write(&file, old.to_string()).unwrap();
    let (url, _) = scripted(vec![Turn::Text("ok")]);
    let env2 = project(&url);
    std::fs::create_dir_all(env2.ws(".wield/sessions")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(env2.ws(".wield/sessions"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(
        env2.ws(".wield/sessions").join(file.file_name().unwrap()),
        old.to_string(),
    )
    .unwrap();
    let (code, stdout, stderr) = run(&env2, &["--resume", "-p", "Go on"]);
    assert_eq!((code, stdout.as_str()), (0, "ok\n"), "{stderr}");
}

#[test]
fn an_overflow_the_provider_reports_compacts_once_dropping_the_oldest_when_the_summary_overflows() {
    let overflow = || {
        Turn::Error(
            400,
            json!({ "error": { "message": "This model's maximum context length is 8192 tokens.",
                               "type": "invalid_request_error", "code": "context_length_exceeded" } }),
        )
    };
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        overflow(),
        overflow(),
        Turn::Text("Goal: read notes.txt. Progress: it says 42."),
        Turn::Text("It says 42."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read notes.txt", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(events(&stdout).iter().any(|e| e["type"] == "compacted"), "{stdout}");
    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 5);
    // The first summary request overflowed; the second went without the
    // oldest message (the task), every call still answered.
    let (first, second) = (&requests[2], &requests[3]);
    assert!(first.get("tools").is_none() && second.get("tools").is_none());
    assert!(first.to_string().contains("Read notes.txt"));
    assert!(!second.to_string().contains("Read notes.txt"), "{second}");
    assert_eq!(tool_messages(second).len(), 1);
    let last = requests[4]["messages"].as_array().unwrap();
    assert!(last.last().unwrap()["content"].as_str().unwrap().contains("it says 42"));
    assert_eq!(last[1]["content"], "Read notes.txt");

    // A second overflow right after compacting is the run's error.
    let (url, _) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        overflow(),
        Turn::Text("Summary."),
        overflow(),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Read notes.txt"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("longer than the model's context window"), "{stderr}");
    // The person is told of the compaction.
    assert!(stderr.contains("[compacted: about "), "{stderr}");
}

#[test]
fn a_running_command_s_output_streams_as_tool_output_events() {
    let (url, _) = scripted(vec![
        Turn::Call("bash", json!({ "command": "echo first line; echo second line" })),
        Turn::Text("It printed two lines."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["--yes", "-p", "Print two lines", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let events = events(&stdout);
    let outputs: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool.output").collect();
    assert!(!outputs.is_empty(), "{stdout}");
    assert!(outputs.iter().all(|e| e["id"] == "call_0"));
    let text: String = outputs.iter().map(|e| e["delta"].as_str().unwrap()).collect();
    assert!(text.contains("first line\nsecond line"), "{text}");
    // Between the call's start and its end.
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    let first_output = at("tool.output");
    assert!(at("tool.started") < first_output && first_output < at("tool.finished"));
}

#[test]
fn an_agent_gets_its_provider_prompt_steps_and_tools_and_the_project_instructions() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Reviewed."),
    ]);
    let env = Env::new();
    env.put("notes.txt", "the answer is 42\n");
    env.put("AGENTS.md", "Always cite line numbers.\n");
    env.put("CLAUDE.md", "Not read: AGENTS.md is there.\n");
    env.put(
        ".wield/config.toml",
        &format!(
            "default_provider = \"other\"\n\n\
             [providers.other]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"x\"\n\n\
             [providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\n\
             [agent]\ninstructions = \"Answer in one line.\"\nmax_steps = 20\n\n\
             [agents.rev]\nprovider = \"fake\"\nmodel = \"reviewer-model\"\n\
             system_prompt = \"You review code; you change nothing.\"\nmax_steps = 1\n\n\
             [agents.rev.tools]\nenabled = [\"read\", \"grep\"]\n"
        ),
    );
    let (code, stdout, stderr) = run(&env, &["--agent", "rev", "-p", "Review notes.txt"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stdout, "Reviewed.\n");
    assert!(stderr.contains("[max_steps: 2 steps"), "{stderr}");
    let requests = requests.lock().unwrap();
    assert_eq!(requests[0]["model"], "reviewer-model");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You review code; you change nothing."), "{system}");
    assert!(
        !system.contains("coding agent") && !system.contains("Not read"),
        "{system}"
    );
    assert!(system.contains("# Project instructions (AGENTS.md)\n\nAlways cite line numbers."));
    assert!(system.ends_with("Answer in one line."), "{system}");
    let mut tools: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, ["grep", "read"]);

    // Without an agent: the built-in prompt, CLAUDE.md when there is no
    // AGENTS.md, and agent.system_prompt would replace it.
    std::fs::remove_file(env.ws("AGENTS.md")).unwrap();
    let (url, requests) = scripted(vec![Turn::Text("Hi.")]);
    let config = format!(
        "[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\n[agent]\ninstructions = \"Be terse.\"\n"
    );
    env.put(".wield/config.toml", &config);
    let (code, _, stderr) = run(&env, &["-p", "Hello"]);
    assert_eq!(code, 0, "{stderr}");
    let system = requests.lock().unwrap()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("coding agent") && system.contains(std::env::consts::OS));
    assert!(
        system.contains(&env.ws("").canonicalize().unwrap().display().to_string()),
        "{system}"
    );
    assert!(system.contains("(CLAUDE.md)\n\nNot read: AGENTS.md is there.") && system.ends_with("Be terse."));
    let (url, requests) = scripted(vec![Turn::Text("Hi.")]);
    env.put(
        ".wield/config.toml",
        &format!("[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\n[agent]\nsystem_prompt = \"Only say hi.\"\n"),
    );
    let (code, _, stderr) = run(&env, &["-p", "Hello"]);
    assert_eq!(code, 0, "{stderr}");
    let system = requests.lock().unwrap()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.starts_with("Only say hi.") && !system.contains("coding agent"),
        "{system}"
    );

    // A wrong value is a usage error naming the key.
    env.put(".wield/config.toml", &format!("{config}\n[context]\ncompact_at = 0\n"));
    let (code, _, stderr) = run(&env, &["-p", "Hello"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("context.compact_at: expected a whole number from 1 to 100"),
        "{stderr}"
    );
}

#[test]
fn each_model_turn_is_audited_beside_the_calls_it_caused() {
    let (url, _) = scripted(vec![
        Turn::Calls(vec![
            ("read", json!({ "path": "notes.txt" })),
            ("grep", json!({ "pattern": "answer" })),
        ]),
        Turn::Text("42."),
    ]);
    let env = project(&url);
    let audit = env.base.join("audit.jsonl");
    let (code, _, stderr) = run(&env, &["--audit", audit.to_str().unwrap(), "-p", "Find the answer"]);
    assert_eq!(code, 0, "{stderr}");
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

#[test]
fn a_headless_run_reads_greps_edits_and_tests_a_small_project() {
    let (url, requests) = scripted(vec![
        Turn::Call("grep", json!({ "pattern": "def add" })),
        Turn::Call("read", json!({ "path": "calc.sh" })),
        Turn::Call(
            "edit",
            json!({ "path": "calc.sh", "old_text": "echo $(($1 - $2))", "new_text": "echo $(($1 + $2))" }),
        ),
        Turn::Call("bash", json!({ "command": "sh test.sh" })),
        Turn::Text("Fixed add in calc.sh; the test passes."),
    ]);
    let env = project(&url);
    env.put("calc.sh", "# def add: the sum of two numbers\necho $(($1 - $2))\n");
    env.put(
        "test.sh",
        "if [ \"$(sh calc.sh 2 3)\" = 5 ]; then echo TEST PASSED; else echo TEST FAILED; exit 1; fi\n",
    );
    let (code, stdout, stderr) = run(&env, &["--yes", "-p", "Fix add in calc.sh and run test.sh"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "Fixed add in calc.sh; the test passes.\n");
    assert!(stderr.contains("[done: 5 steps, 4 tool calls"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(env.ws("calc.sh")).unwrap(),
        "# def add: the sum of two numbers\necho $(($1 + $2))\n"
    );
    let requests = requests.lock().unwrap();
    let answers: Vec<String> = tool_messages(&requests[4])
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert!(answers[0].contains("calc.sh"), "{}", answers[0]);
    assert!(answers[1].contains("echo $(($1 - $2))"), "{}", answers[1]);
    assert!(answers[2].contains("+echo $(($1 + $2))"), "{}", answers[2]);
    assert!(
        answers[3].contains("TEST PASSED") && answers[3].contains("exit code: 0"),
        "{}",
        answers[3]
    );
}

#[test]
fn parallel_calls_in_one_turn_are_all_answered_in_call_order() {
    let (url, requests) = scripted(vec![
        Turn::Calls(vec![
            ("bash", json!({ "command": "sleep 0.3; echo slow" })),
            ("read", json!({ "path": "notes.txt" })),
            ("bash", json!({ "command": "echo fast" })),
        ]),
        Turn::Text("Done."),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["--yes", "-p", "Three things at once"]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    let answers = tool_messages(&requests[1]);
    let ids: Vec<&str> = answers.iter().map(|m| m["tool_call_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["call_0_0", "call_0_1", "call_0_2"]);
    let text = |i: usize| answers[i]["content"].as_str().unwrap().to_owned();
    assert!(text(0).contains("slow") && text(1).contains("the answer is 42") && text(2).contains("fast"));
}

#[test]
fn the_token_budget_stops_the_run_with_exit_3() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Never sent."),
    ]);
    let env = project(&url);
    // Each request uses 110 tokens: the second one reaches 200.
    let (code, stdout, stderr) = run(&env, &["-p", "Read a lot", "--token-budget", "200", "--json"]);
    assert_eq!(code, 3, "{stderr}");
    let last = events(&stdout).pop().unwrap();
    assert_eq!(
        (last["stop"].as_str(), last["steps"].as_u64()),
        (Some("token_budget"), Some(2))
    );
    assert_eq!(last["usage"]["input"], 200);
    assert_eq!(requests.lock().unwrap().len(), 2);
}

#[test]
fn a_result_over_the_guard_s_limit_is_replaced_by_an_error_saying_what_to_do() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "huge.txt" })),
        Turn::Text("Too big; I will read less."),
    ]);
    let env = project(&url);
    env.put("huge.txt", &"a line of the huge file\n".repeat(200));
    let (code, _, stderr) = run(&env, &["-p", "Read huge.txt", "--set", "result.max_tokens=200"]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    let answer = tool_messages(&requests[1])[0]["content"].as_str().unwrap().to_owned();
    assert!(!answer.contains("a line of the huge file"), "{answer}");
    assert!(
        answer.contains("too large to show: the limit for one result is 200 tokens")
            && answer.contains("offset and limit"),
        "{answer}"
    );
}

/// `wield run --json` started in the background; SIGINT once an event
/// of `kind` is on its stdout. Its exit code, and the saved session.
pub(crate) fn interrupted_at(env: &Env, args: &[&str], kind: &str) -> (i32, Value) {
    use std::io::BufRead;
    let mut cmd = env.wield_env().command();
    cmd.args(["run", "--headless", "--json"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut lines = stdout.lines();
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == kind {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let rest: Vec<Value> = lines.map(|l| serde_json::from_str(&l.unwrap()).unwrap()).collect();
    let code = child.wait().unwrap().code().unwrap_or(-1);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "slow to stop");
    assert_eq!(rest.last().unwrap()["stop"], "cancelled", "{rest:?}");
    let file = session_files(env).remove(0);
    (
        code,
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap(),
    )
}

/// Every tool use of a saved conversation has exactly one result.
pub(crate) fn assert_every_call_answered(saved: &Value) {
    let blocks: Vec<&Value> = saved["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().unwrap())
        .collect();
    let mut uses: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let mut results: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    uses.sort_unstable();
    results.sort_unstable();
    assert!(!uses.is_empty());
    assert_eq!(uses, results, "{saved}");
}

#[test]
fn sigint_during_a_stream_saves_a_valid_session_and_exits_130() {
    let (url, _) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Hang("I am thinking about"),
    ]);
    let env = project(&url);
    let (code, saved) = interrupted_at(&env, &["-p", "Read notes.txt"], "text.delta");
    assert_eq!(code, 130);
    assert_eq!(saved["stop"], "cancelled");
    assert_every_call_answered(&saved);
}

#[test]
fn sigint_during_a_running_tool_answers_the_call_saves_and_exits_130() {
    let (url, requests) = scripted(vec![
        Turn::Calls(vec![
            ("bash", json!({ "command": "sleep 30" })),
            ("read", json!({ "path": "notes.txt" })),
        ]),
        Turn::Text("Never sent."),
    ]);
    let env = project(&url);
    let (code, saved) = interrupted_at(&env, &["--yes", "-p", "Wait"], "tool.started");
    assert_eq!(code, 130);
    assert_every_call_answered(&saved);
    let text = saved.to_string();
    assert!(text.contains("cancelled"), "{text}");
    assert_eq!(requests.lock().unwrap().len(), 1);
}

#[test]
fn deferred_tools_are_listed_by_name_and_offered_once_loaded() {
    let (url, requests) = scripted(vec![
        Turn::Call("load_tools", json!({ "tools": ["grep"] })),
        Turn::Call("grep", json!({ "pattern": "answer" })),
        Turn::Text("Found it."),
    ]);
    let env = project_with(&url, "\n[tools]\ndeferred = [\"grep\"]\n");
    let (code, _, stderr) = run(&env, &["-p", "Find the answer"]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    let offered = |n: usize| -> Vec<String> {
        requests[n]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<available-deferred-tools>") && system.contains("\ngrep\n"),
        "{system}"
    );
    assert!(!offered(0).contains(&"grep".to_owned()));
    assert!(offered(1).contains(&"grep".to_owned()));
    let found = tool_messages(&requests[2]);
    assert!(
        found[1]["content"].as_str().unwrap().contains("the answer is 42"),
        "{found:?}"
    );
}

#[test]
fn done_ends_the_run_with_its_summary_and_its_status_sets_the_exit_code() {
    for (status, code) in [("success", 0), ("partial", 3), ("failed", 1)] {
        let (url, requests) = scripted(vec![
            Turn::Call(
                "done",
                json!({ "summary": format!("Finished: {status}."), "status": status }),
            ),
            Turn::Text("never asked for"),
        ]);
        let env = project(&url);
        let (got, stdout, stderr) = run(&env, &["-p", "Do it."]);
        assert_eq!(got, code, "{status}: {stderr}");
        assert_eq!(stdout, format!("Finished: {status}.\n"));
        assert_eq!(requests.lock().unwrap().len(), 1, "the run went on after done");
    }
    let (url, _) = scripted(vec![Turn::Call(
        "done",
        json!({ "summary": "All good.", "status": "success" }),
    )]);
    let env = project(&url);
    let out = env.wield().args(["run", "--json", "-p", "Do it."]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = events(&stdout).pop().unwrap();
    assert_eq!(last["type"], "session.finished");
    assert_eq!(last["status"], "success");
    assert_eq!(last["answer"], "All good.");
}

#[test]
fn ask_headless_tells_the_model_to_go_on_with_stated_assumptions() {
    let (url, requests) = scripted(vec![
        Turn::Call(
            "ask",
            json!({ "question": "Which file?", "options": [{ "label": "a.txt" }] }),
        ),
        Turn::Text("I assumed notes.txt."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read the file."]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "I assumed notes.txt.\n");
    let requests = requests.lock().unwrap();
    let result = tool_messages(&requests[1]).pop().unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("go on with the task on reasonable assumptions"),
        "{result}"
    );
    // Neither is a tool of `wield call`: they only mean something in a run.
    let out = env
        .wield()
        .args(["call", "done", r#"{"summary":"x","status":"success"}"#])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tool"), "{out:?}");
}

pub(crate) use crate::scripted_provider::offered;

#[test]
fn task_runs_a_subagent_under_the_parent_s_rules_and_counts_its_tokens() {
    let (url, requests) = scripted(vec![
        Turn::Call(
            "task",
            json!({ "description": "read notes", "prompt": "What does notes.txt say?" }),
        ),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("It says 42."),
        Turn::Text("The subagent found 42."),
    ]);
    let env = project(&url);
    let out = env
        .wield()
        .args(["--exclude-tools", "bash", "run", "--json", "-p", "Delegate it."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let finished = events(&String::from_utf8_lossy(&out.stdout)).pop().unwrap();
    assert_eq!(finished["answer"], "The subagent found 42.");
    // The subagent's two requests count in the run's usage.
    assert_eq!(finished["usage"]["input"], 400, "{finished}");
    let requests = requests.lock().unwrap();
    assert!(offered(&requests[0]).contains(&"task".to_owned()));
    let child = offered(&requests[1]);
    assert!(child.contains(&"read".to_owned()), "{child:?}");
    for absent in ["task", "ask", "bash"] {
        assert!(
            !child.contains(&absent.to_owned()),
            "the subagent was offered {absent}: {child:?}"
        );
    }
    assert!(requests[1].to_string().contains("What does notes.txt say?"));
    assert!(
        !requests[1].to_string().contains("Delegate it."),
        "the subagent saw the parent's conversation"
    );
    let result = tool_messages(&requests[3]).pop().unwrap();
    let text = result["content"].as_str().unwrap();
    assert!(
        text.contains("It says 42.") && text.contains("[subagent `read notes`: 2 steps, read ×1]"),
        "{text}"
    );
}

#[test]
fn a_named_subagent_gets_its_own_steps_and_an_unknown_one_is_refused() {
    let (url, requests) = scripted(vec![
        Turn::Call(
            "task",
            json!({ "description": "d", "prompt": "Look.", "agent": "nobody" }),
        ),
        Turn::Call(
            "task",
            json!({ "description": "d", "prompt": "Look.", "agent": "reader" }),
        ),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Only got as far as notes.txt."),
        Turn::Text("Done."),
    ]);
    let env = project_with(
        &url,
        "[agents.reader]\nsubagent = true\ndescription = \"Reads files\"\nmax_steps = 1\n",
    );
    let (code, _, stderr) = run(&env, &["-p", "Go."]);
    assert_eq!(code, 0, "{stderr}");
    let requests = requests.lock().unwrap();
    let description = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .unwrap()["function"]["description"]
        .to_string();
    assert!(description.contains("`reader`: Reads files"), "{description}");
    let refused = tool_messages(&requests[1]).pop().unwrap();
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .contains("unknown subagent `nobody`; the configured ones: reader")
    );
    // max_steps = 1: one step with tools, then the last turn without.
    assert!(requests[3].get("tools").is_none(), "{}", requests[3]);
    let result = tool_messages(&requests[4]).pop().unwrap();
    let text = result["content"].as_str().unwrap();
    assert!(
        text.contains("Only got as far") && text.contains("[stopped by the step limit after 2 steps]"),
        "{text}"
    );
}

#[test]
fn a_failed_run_is_saved_with_its_error_and_resume_takes_the_newest_that_ended() {
    let (url, requests) = scripted(vec![Turn::Text("First answer."), Turn::Text("Second answer.")]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Remember the word kiwi"]);
    assert_eq!(code, 0, "{stderr}");
    // The provider unreachable: the run fails, and is saved saying so.
    let refused = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    let base = format!("providers.fake.base_url={refused}");
    let (code, _, stderr) = run(
        &env,
        &[
            "-p",
            "This one fails",
            "--set",
            &base,
            "--set",
            "providers.fake.max_retries=0",
        ],
    );
    assert_eq!(code, 1, "{stderr}");

    let out = env.wield().args(["sessions", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    assert_eq!(sessions[0]["task"], "This one fails", "newest first: {listed}");
    assert_eq!(sessions[0]["resumable"], false);
    assert!(
        sessions[0]["error"].as_str().unwrap().contains("cannot reach"),
        "{listed}"
    );
    assert_eq!(sessions[1]["stop"], "done");
    assert!(sessions[1]["bytes"].as_u64().unwrap() > 0);
    let good = sessions[1]["id"].as_str().unwrap().to_owned();
    let out = env.wield().args(["sessions", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error: ") && text.contains("1 step"), "{text}");
    assert!(
        text.contains(&format!("`wield run --resume` goes on with {good}")),
        "{text}"
    );

    // `--resume` passes over the failed run, and says which it took.
    let (code, stdout, stderr) = run(&env, &["--resume", "-p", "Which word?"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "Second answer.\n");
    assert!(
        stderr.contains(&format!("[resuming {good} (done, 2 messages")),
        "{stderr}"
    );
    let last = requests.lock().unwrap().last().cloned().unwrap().to_string();
    assert!(last.contains("kiwi") && !last.contains("This one fails"), "{last}");
}
