//! `wield run` headless through the real binary, against a scripted local
//! provider that replays Chat Completions turns and checks, on every
//! request, that each tool call has exactly one result (as the real APIs
//! demand); and against a real local model (llama.cpp's `llama-server`).
// The scripted server and the local model's start are helpers outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
#[path = "support/wield_cmd.rs"]
mod wield_cmd;

use common::Env;

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
            let mut reader = BufReader::new(s.try_clone().unwrap());
            let mut len = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = reader.read_exact(&mut body);
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

/// The local model server, on a free port; stopped when dropped.
struct LocalModel {
    child: Child,
    url: String,
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn local_model() -> LocalModel {
    let deps = std::env::var_os("WIELD_TEST_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps"));
    let dir = deps.join("llm");
    assert!(
        dir.join("bin/llama-server").is_file(),
        "the local model server is not installed in {}: run scripts/test-deps.sh",
        dir.display()
    );
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(dir.join("bin/llama-server"))
        .arg("-m")
        .arg(dir.join("model.gguf"))
        .args([
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--jinja",
            "--chat-template-file",
        ])
        .arg(dir.join("tools.jinja"))
        .args(["-a", "smollm2-135m", "-c", "4096", "-np", "1", "-t", "1", "--no-webui"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = LocalModel {
        child,
        url: format!("http://127.0.0.1:{port}/v1"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(s, "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                return server;
            }
        }
        assert!(
            Instant::now() < deadline,
            "llama-server did not become healthy within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A real model must call a tool (`tool_choice = "required"`), the tool
/// runs, the last turn goes without tools, and the run ends with an answer
/// and exit 3.
#[test]
fn a_real_local_model_runs_one_step_and_answers() {
    let model = local_model();
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
