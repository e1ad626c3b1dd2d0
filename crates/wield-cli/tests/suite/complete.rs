//! `wield complete` and `wield providers` through the real binary: against
//! a local server replaying a provider's documented stream, and against a
//! real OpenAI-compatible server (llama.cpp's `llama-server` with a 135M
//! model, installed by `scripts/test-deps.sh`).
// The replay server and the local model's start are helpers outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;

use serde_json::Value;

use crate::common::Env;
use crate::http_request;

/// A server that answers every request with `status` and `body` (an event
/// stream when `status` is 200), and hands the request bodies back.
fn replay(status: u16, body: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let request = http_request::read_body(&stream);
            let _ = tx.send(String::from_utf8_lossy(&request).into_owned());
            let kind = if status == 200 {
                "text/event-stream"
            } else {
                "application/json"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, rx)
}

const STREAM: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"}}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\n\
data: [DONE]\n\n";

fn with_provider(url: &str) -> Env {
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!("[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m-1\"\n"),
    );
    env
}

#[test]
fn a_streamed_reply_goes_to_stdout_and_its_calls_are_listed_not_run() {
    let (url, requests) = replay(200, STREAM);
    let env = with_provider(&url);
    let out = env
        .wield()
        .args(["complete", "Read a.txt", "--tools"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("Hello there\n"), "{stdout}");
    assert!(stdout.contains("[tool call c1] read {\"path\":\"a.txt\"}"), "{stdout}");
    let body: Value = serde_json::from_str(&requests.recv().unwrap()).unwrap();
    assert_eq!(body["messages"][0]["content"], "Read a.txt");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"read") && tools.contains(&"bash"), "{tools:?}");
}

#[test]
fn json_output_and_a_conversation_from_a_file() {
    let (url, requests) = replay(200, STREAM);
    let env = with_provider(&url);
    env.put(
        "conv.json",
        r#"{"system": "Be brief.", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}"#,
    );
    let out = env
        .wield()
        .args(["complete", "--input", "conv.json", "--json", "--model", "m-2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["provider"].as_str(), v["model"].as_str()),
        (Some("fake"), Some("m-2"))
    );
    assert_eq!(v["stop"], "tool_use");
    assert_eq!(v["tool_calls"][0]["name"], "read");
    assert_eq!(v["usage"]["output"], 4);
    assert_eq!(v["content"][0]["text"], "Hello there");
    let body: Value = serde_json::from_str(&requests.recv().unwrap()).unwrap();
    assert_eq!(body["model"], "m-2");
    assert_eq!(
        body["messages"][0],
        serde_json::json!({"role": "system", "content": "Be brief."})
    );
}

#[test]
fn a_provider_error_exits_1_with_its_message() {
    let (url, _) = replay(
        400,
        r#"{"error":{"message":"model 'm-1' not found","type":"invalid_request_error"}}"#,
    );
    let env = with_provider(&url);
    let out = env.wield().args(["complete", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fake: HTTP 400: model 'm-1' not found"), "{stderr}");
}

#[test]
fn settings_mistakes_are_usage_errors_and_missing_keys_failures_that_say_what_to_do() {
    let env = Env::new();
    env.put(".wield/config.toml", "[providers.a]\nkind = \"anthropic\"\n");
    let out = env.wield().args(["complete", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ANTHROPIC_API_KEY, which is not set"), "{stderr}");

    env.put(
        ".wield/config.toml",
        "[providers.a]\nkind = \"anthropic\"\nmodle = \"x\"\n",
    );
    let out = env.wield().args(["complete", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("providers.a.modle"), "{stderr}");

    // Nothing configured and no SDK variable set.
    let env = Env::new();
    let out = env.wield().args(["complete", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model provider is configured"));
}

#[test]
fn providers_list_shows_whether_the_key_is_set_never_the_key() {
    let env = Env::new();
    let out = env
        .wield()
        .env("OPENAI_API_KEY", "sk-very-secret")
        .args(["providers", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("sk-very-secret"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    let p = &v["providers"][0];
    assert_eq!(
        (p["kind"].as_str(), p["key_set"].as_bool()),
        (Some("openai-responses"), Some(true))
    );
}

use crate::local_model;

#[test]
fn a_real_local_model_answers_and_calls_a_tool_when_it_must() {
    let model = local_model::start();
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!(
            "[providers.local]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"smollm2-135m\"\n\
             max_tokens = 60\ntemperature = 0.0\n",
            model.url
        ),
    );
    let out = env.wield().args(["complete", "Say hello.", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["content"][0]["text"].as_str().is_some_and(|t| !t.trim().is_empty()),
        "{v}"
    );
    assert!(v["usage"]["output"].as_u64().is_some_and(|n| n > 0), "{v}");

    // With the tools offered and a call required, one comes back, under its
    // registry name, and nothing runs.
    let out = env
        .wield()
        .args([
            "--include-tools",
            "read",
            "--set",
            "providers.local.tool_choice=\"required\"",
            "complete",
            "Read the file notes.txt",
            "--tools",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stop"], "tool_use", "{v}");
    assert_eq!(v["tool_calls"][0]["name"], "read", "{v}");
    assert!(v["tool_calls"][0]["input"]["path"].is_string(), "{v}");
}

/// `wield complete` against each provider kind's documented stream,
/// replayed: the reply's text on stdout, whatever the wire format.
#[test]
fn every_provider_kind_answers_through_wield_complete() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wield-llm/tests/fixtures");
    for (kind, fixture, text, key_var) in [
        ("anthropic", "anthropic_text.sse", "Hello, wörld ✓", "ANTHROPIC_API_KEY"),
        ("openai", "chat_text.sse", "Hi there", "OPENAI_API_KEY"),
        (
            "openai-responses",
            "responses_reasoning_tool.sse",
            "Reading it.",
            "OPENAI_API_KEY",
        ),
        ("gemini", "gemini_tools.sse", "", "GEMINI_API_KEY"),
    ] {
        let body: &'static str = Box::leak(
            std::fs::read_to_string(fixtures.join(fixture))
                .unwrap()
                .into_boxed_str(),
        );
        let (url, requests) = replay(200, body);
        let env = Env::new();
        env.put(
            ".wield/config.toml",
            &format!("[providers.p]\nkind = \"{kind}\"\nbase_url = \"{url}\"\nmodel = \"m-1\"\n"),
        );
        let out = env
            .wield()
            .env(key_var, "sk-test")
            .args(["complete", "hi", "--json"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let got: String = v["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert_eq!(got, text, "{kind}: {v}");
        assert!(requests.recv().is_ok(), "{kind}: no request");
    }
}
