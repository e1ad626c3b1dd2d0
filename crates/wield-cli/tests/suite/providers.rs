//! `wield providers add` and `wield providers check` through the real
//! binary: against nothing listening, a scripted server, and a real local
//! model server (llama.cpp's `llama-server`, started with a 4,096-token
//! context that wield's first request does not fit).
// The helpers are outside #[test] fns.
#![allow(clippy::unwrap_used)]

use std::net::TcpListener;

use crate::common::Env;
use crate::local_model;
use crate::scripted_provider::{Scripted, Turn};

fn config(env: &Env) -> toml::Table {
    std::fs::read_to_string(env.ws(".wield/config.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

/// A workspace whose provider `fake` is at `url`, with its context window.
fn fake_with_context(url: &str, context: u32) -> Env {
    let env = Env::new();
    env.put(
        ".wield/config.toml",
        &format!(
            "[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{url}\"\nmodel = \"m\"\ncontext_window = {context}\n"
        ),
    );
    env
}

fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}/v1", listener.local_addr().unwrap())
}

#[test]
fn add_writes_a_provider_the_next_command_uses_and_refuses_to_write_one_twice() {
    let env = Env::new();
    env.put(".wield/config.toml", "# my settings\nbash.timeout = \"20s\"\n");
    let url = refused_url();
    let (code, stdout, stderr) = env.run(&["providers", "add", "local", "--base-url", &url, "--model", "qwen3"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("(the default provider)"), "{stdout}");
    // Nothing listens there yet: said, with what to do.
    assert!(
        stdout.contains("nothing answers at") && stdout.contains("wield providers check local"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(env.ws(".wield/config.toml")).unwrap();
    assert!(text.contains("# my settings"), "comments stay: {text}");
    let parsed = config(&env);
    assert_eq!(parsed["default_provider"].as_str(), Some("local"));
    assert_eq!(parsed["providers"]["local"]["kind"].as_str(), Some("openai-compatible"));
    assert_eq!(parsed["providers"]["local"]["model"].as_str(), Some("qwen3"));
    // The next command reads it.
    let (code, stdout, _) = env.run(&["providers", "list"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("local (default)  openai-compatible  qwen3"), "{stdout}");

    // Twice: refused, the file unchanged.
    let (code, _, stderr) = env.run(&["providers", "add", "local", "--base-url", &url]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("exists already"), "{stderr}");
    assert_eq!(std::fs::read_to_string(env.ws(".wield/config.toml")).unwrap(), text);

    // A cloud kind: not probed, not made the default, and the key named.
    let (code, stdout, stderr) = env.run(&["providers", "add", "claude", "--kind", "anthropic"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("next: set ANTHROPIC_API_KEY"), "{stdout}");
    assert_eq!(config(&env)["default_provider"].as_str(), Some("local"));
    let (code, _, stderr) = env.run(&["providers", "add", "x", "--kind", "claude"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("not a provider kind"), "{stderr}");
}

#[test]
fn check_names_a_model_that_does_not_call_tools_and_what_to_change() {
    // Answers, takes the first request, then answers the tool test in text.
    let provider = Scripted::start(vec![Turn::Text("OK"), Turn::Text("Sure."), Turn::Text("pong, I think")]);
    let env = fake_with_context(&provider.url, 100000);
    let (code, stdout, stderr) = env.run(&["providers", "check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("fake: m (openai-compatible at"), "{stdout}");
    assert!(
        stdout.contains("wield's first request (about ") && stdout.contains("was accepted"),
        "{stdout}"
    );
    assert!(
        stdout.contains("problem: the model answered without calling the tool"),
        "{stdout}"
    );
    assert!(
        stdout.contains("--jinja") && stdout.contains("tool_protocol = \"xml\""),
        "{stdout}"
    );
    // The first request checked is the one `wield run` sends: its system
    // prompt and its tools.
    let requests = provider.requests.lock().unwrap();
    let first = requests[1].to_string();
    assert!(first.contains("\"read\"") && first.contains("\"bash\""), "{first}");
    assert!(requests[1]["messages"][0]["role"] == "system", "{}", requests[1]);
}

#[test]
fn check_says_when_wield_s_first_request_does_not_fit_the_configured_context() {
    let provider = Scripted::start(vec![Turn::Text("OK"), Turn::Call("ping", serde_json::json!({}))]);
    let env = fake_with_context(&provider.url, 2048);
    let (code, stdout, stderr) = env.run(&["providers", "check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("does not fit the model's context (2048 tokens)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("llama-server -c 16384") && stdout.contains("--profile minimal"),
        "{stdout}"
    );
    assert!(stdout.contains("fake: tool calling works"), "{stdout}");
    assert!(stdout.contains("fake: 1 problem"), "{stdout}");
}

/// A new user's path with a real server started as the tests start it
/// (`-c 4096`): `add` asks it for its model and context, `check` finds
/// that wield's first request does not fit, says how to start it instead,
/// and that tool calling works.
#[test]
fn add_and_check_against_a_real_local_server() {
    let model = local_model::start();
    let env = Env::new();
    let (code, stdout, stderr) = env.run(&["providers", "add", "local", "--base-url", &model.url]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("next: `wield providers check local`"), "{stdout}");
    let parsed = config(&env);
    assert_eq!(
        parsed["providers"]["local"]["model"].as_str(),
        Some("smollm2-135m"),
        "{parsed}"
    );
    assert_eq!(
        parsed["providers"]["local"]["context_window"].as_integer(),
        Some(4096),
        "{parsed}"
    );

    let (code, stdout, stderr) = env.run(&["providers", "check"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("local: smollm2-135m (openai-compatible at"), "{stdout}");
    assert!(
        stdout.contains("does not fit the model's context (4096 tokens)"),
        "{stdout}"
    );
    assert!(stdout.contains("local: tool calling works"), "{stdout}");

    // With fewer tools, the first request fits, and the server takes it.
    let (code, stdout, stderr) = env.run(&["--include-tools", "read,ls", "providers", "check"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("was accepted; the context is 4096 tokens"), "{stdout}");
    assert!(stdout.contains("local: ready"), "{stdout}");
}
