//! `wield run` headless through the real binary: the command-line contract
//! of the agent (its exit codes, the JSON Lines events of `--json`, what
//! it says on stderr, SIGINT, `--resume` and `--ephemeral`, `.wield/` out
//! of `git status`), against a scripted local provider that replays Chat
//! Completions turns and checks, on every request, that each tool call has
//! exactly one result (as the real APIs demand); and against a real local
//! model (llama.cpp's `llama-server`). What the agent does in a run is
//! wield-agent's suite, on `AgentSession` in-process.
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

/// The step limit is a limit: exit 3, with the answer of the last turn
/// (wield-agent's `limits` tests what the agent does at the limit).
#[test]
fn at_max_steps_the_run_exits_3() {
    let (url, _) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Out of steps: the note says 42."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read everything.", "--max-steps", "1"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stdout, "Out of steps: the note says 42.\n");
    assert!(stderr.contains("[max_steps: 2 steps"), "{stderr}");
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

/// A run says where it saved the session, and `--resume` (no id, before
/// `-p`) goes on with it; `--ephemeral` saves nothing, so there is then
/// nothing to resume (exit 2). wield-agent's `saved` tests what is saved
/// and resumed.
#[test]
fn a_session_is_saved_and_resumed_unless_ephemeral() {
    let (url, requests) = scripted(vec![
        Turn::Text("It says 42."),
        Turn::Text("You asked what notes.txt says."),
    ]);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Read notes.txt"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(session_files(&env).len(), 1);
    assert!(stderr.contains("[saved "), "{stderr}");
    let (code, stdout, stderr) = run(&env, &["--resume", "-p", "What did I ask?"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "You asked what notes.txt says.\n");
    let last = requests.lock().unwrap().last().cloned().unwrap().to_string();
    assert!(last.contains("Read notes.txt"), "{last}");
    assert_eq!(session_files(&env).len(), 1, "resumed into the same file");

    // Ephemeral: nothing is written.
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

/// A run that fails after compacting exits 1 saying why, and the person
/// was told of the compaction on stderr (wield-agent's `compaction` tests
/// the compaction itself).
#[test]
fn a_run_failing_after_compaction_exits_1_and_said_it_compacted() {
    let overflow = || {
        Turn::Error(
            400,
            json!({ "error": { "message": "This model's maximum context length is 8192 tokens.",
                               "type": "invalid_request_error", "code": "context_length_exceeded" } }),
        )
    };
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

/// `--agent NAME` picks the agent's settings, its step limit among them
/// (exit 3 at it); a wrong value of an agent setting is a usage error
/// naming the key (exit 2). wield-agent's `agents` tests what an agent
/// brings to the run.
#[test]
fn an_agent_s_settings_apply_and_a_wrong_one_is_a_usage_error_exit_2() {
    let (url, requests) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Reviewed."),
    ]);
    let env = project_with(
        &url,
        "\n[agents.rev]\nmodel = \"reviewer-model\"\nmax_steps = 1\n\n[agents.rev.tools]\nenabled = [\"read\", \"grep\"]\n",
    );
    let (code, stdout, stderr) = run(&env, &["--agent", "rev", "-p", "Review notes.txt"]);
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stdout, "Reviewed.\n");
    assert!(stderr.contains("[max_steps: 2 steps"), "{stderr}");
    let requests = requests.lock().unwrap();
    assert_eq!(requests[0]["model"], "reviewer-model");
    let mut tools = offered(&requests[0]);
    tools.sort_unstable();
    assert_eq!(tools, ["grep", "read"]);

    env.put(
        ".wield/config.toml",
        &format!(
            "[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\n\n[context]\ncompact_at = 0\n"
        ),
    );
    let (code, _, stderr) = run(&env, &["-p", "Hello"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("context.compact_at: expected a whole number from 1 to 100"),
        "{stderr}"
    );
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

/// The token budget is a limit: exit 3, and `session.finished` says so
/// (wield-agent's `limits` tests where the budget stops the run).
#[test]
fn the_token_budget_stops_the_run_with_exit_3() {
    let (url, _) = scripted(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Never sent."),
    ]);
    let env = project(&url);
    let (code, stdout, stderr) = run(&env, &["-p", "Read a lot", "--token-budget", "200", "--json"]);
    assert_eq!(code, 3, "{stderr}");
    let last = events(&stdout).pop().unwrap();
    assert_eq!(
        (last["stop"].as_str(), last["steps"].as_u64()),
        (Some("token_budget"), Some(2))
    );
    assert_eq!(last["usage"]["input"], 200);
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

/// `done`'s status sets the exit code (success 0, partial 3, failed 1) and
/// is `session.finished`'s `status`; its summary is the answer.
/// wield-agent's `calls` tests that `done` ends the run.
#[test]
fn done_s_status_sets_the_exit_code() {
    for (status, code) in [("success", 0), ("partial", 3), ("failed", 1)] {
        let (url, _) = scripted(vec![Turn::Call(
            "done",
            json!({ "summary": format!("Finished: {status}."), "status": status }),
        )]);
        let env = project(&url);
        let (got, stdout, stderr) = run(&env, &["-p", "Do it."]);
        assert_eq!(got, code, "{status}: {stderr}");
        assert_eq!(stdout, format!("Finished: {status}.\n"));
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

/// `done` and `ask` only mean something in a run: neither is a tool of
/// `wield call` (wield-agent's `calls` tests them in a run).
#[test]
fn done_and_ask_are_not_tools_of_wield_call() {
    let env = Env::new();
    for (tool, args) in [
        ("done", r#"{"summary":"x","status":"success"}"#),
        ("ask", r#"{"question":"Which file?"}"#),
    ] {
        let out = env.wield().args(["call", tool, args]).output().unwrap();
        assert!(!out.status.success(), "{tool}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("unknown tool"), "{out:?}");
    }
}

pub(crate) use crate::scripted_provider::offered;

/// A run that fails is saved saying why: `wield sessions list` shows it,
/// newest first, and names the one `--resume` goes on with, which the
/// resumed run's note names too. wield-agent's `saved` tests what is
/// saved and which session is resumed.
#[test]
fn a_failed_run_is_listed_with_its_error_and_resume_says_which_it_took() {
    let (url, _) = scripted(vec![Turn::Text("First answer."), Turn::Text("Second answer.")]);
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
}
