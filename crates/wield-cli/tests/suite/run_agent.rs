//! `wield run` headless through the real binary, against a scripted local
//! provider that replays Chat Completions turns and checks, on every
//! request, that each tool call has exactly one result (as the real APIs
//! demand); and against a real local model (llama.cpp's `llama-server`).
// The scripted server and the local model's start are helpers outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::common::Env;
use crate::http_request;

/// One scripted model turn.
enum Turn {
    Call(&'static str, Value),
    Text(&'static str),
}

fn stream(turn: &Turn, n: usize) -> String {
    let chunk = |delta: Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
        )
    };
    let mut s = match turn {
        Turn::Call(name, args) => chunk(
            json!({ "tool_calls": [{ "index": 0, "id": format!("call_{n}"), "type": "function",
                     "function": { "name": name, "arguments": args.to_string() } }] }),
            Some("tool_calls"),
        ),
        Turn::Text(text) => chunk(json!({ "content": text }), Some("stop")),
    };
    s.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10}}\n\n");
    s.push_str("data: [DONE]\n\n");
    s
}

/// Every tool call of an assistant message is answered by exactly one
/// `tool` message right after it.
fn check_pairing(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().ok_or("no messages")?;
    for (k, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        let mut answers: Vec<&str> = messages[k + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        let mut ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
        answers.sort_unstable();
        ids.sort_unstable();
        if answers != ids {
            return Err(format!("calls {ids:?} answered by {answers:?}"));
        }
    }
    Ok(())
}

/// A provider answering request N with turn N; the requests it got.
fn scripted(turns: Vec<Turn>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::clone(&seen);
    std::thread::spawn(move || {
        for (n, stream_in) in listener.incoming().enumerate() {
            let Ok(mut s) = stream_in else { return };
            let body = http_request::read_body(&s);
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let answer = match check_pairing(&body) {
                Err(why) => {
                    let e = json!({ "error": { "message": format!("unpaired tool calls: {why}") } }).to_string();
                    format!(
                        "HTTP/1.1 400 X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{e}",
                        e.len()
                    )
                }
                Ok(()) => {
                    let text = turns
                        .get(n)
                        .map_or_else(|| stream(&Turn::Text("(no more turns)"), n), |t| stream(t, n));
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                        text.len()
                    )
                }
            };
            requests.lock().unwrap().push(body);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    (url, seen)
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

#[test]
fn a_provider_failure_mid_run_exits_1_with_its_message() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let env = project(&url);
    let (code, _, stderr) = run(&env, &["-p", "Go.", "--set", "providers.fake.max_retries=0"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("fake: cannot reach"), "{stderr}");
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
    let sessions: Vec<std::path::PathBuf> = std::fs::read_dir(env.ws(".wield/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
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
    assert_eq!(
        std::fs::read_dir(env.ws(".wield/sessions")).unwrap().count(),
        1,
        "resumed into the same file"
    );

    // Ephemeral: nothing more is written.
    let env = project(&url);
    let (_, _, stderr) = run(&env, &["-p", "Again", "--ephemeral"]);
    assert!(!env.ws(".wield/sessions").exists(), "{stderr}");
    let (code, _, stderr) = run(&env, &["--resume", "-p", "x"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no saved session to resume"), "{stderr}");
}
