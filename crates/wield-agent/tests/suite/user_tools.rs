//! The tools a workspace defines, called by the agent: an `AgentSession`
//! on a runtime loaded on the workspace offers them to the scripted
//! provider, runs the call it asks for and hands the result back.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_agent::{AgentSession, AgentTools};
use wield_runtime::{Runtime, RuntimeOptions};
use wield_test_support::command_tools;
use wield_test_support::scripted::{Scripted, Turn};

/// The example of a Lua tool, as written there.
const WORD_COUNT: &str = include_str!("../../../wield-lua/examples/word_count.lua");

/// One headless turn on `dir` with `prompt` → (the answer, the requests
/// the provider got).
async fn turn(dir: &tempfile::TempDir, provider: &Scripted, prompt: &str) -> (String, Vec<Value>) {
    let tools = AgentTools::new();
    let options = RuntimeOptions {
        tools: tools.tools(),
        config_keys: [wield_llm::settings::CONFIG_KEYS, wield_agent::CONFIG_KEYS].concat(),
        global_dir: wield_core::config::GlobalDir::Nowhere,
        ..RuntimeOptions::default()
    };
    let rt = Runtime::load(dir.path(), options).await.unwrap();
    let mut session = AgentSession::builder(&rt).tools(&tools).build().unwrap();
    let outcome = session.run(prompt, &CancellationToken::new(), |_| {}).await.unwrap();
    (outcome.answer.trim().to_owned(), provider.requests())
}

/// What the tool message of `request` says.
fn tool_result(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    result["content"].as_str().unwrap().to_owned()
}

/// A workspace talking to `provider`, approving `tool`, with `extra`
/// configuration and `files` (relative path, content).
fn project(provider: &Scripted, tool: &str, extra: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}\n[approval]\nauto_approve = [\"$standard\", \"{tool}\"]\n{extra}",
        provider.config()
    );
    for (path, text) in [(".wield/config.toml", config.as_str())].iter().chain(files) {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_calls_a_lua_tool() {
    let provider = Scripted::start(vec![
        Turn::Call("word_count", json!({ "path": "notes.txt" })),
        Turn::Text("notes.txt has 4 words."),
    ]);
    let files = [
        (".wield/tools/word_count.lua", WORD_COUNT),
        ("notes.txt", "one two three four\n"),
    ];
    let dir = project(&provider, "word_count", "", &files);
    let (answer, requests) = turn(&dir, &provider, "How many words?").await;
    assert_eq!(answer, "notes.txt has 4 words.");
    let offered = requests[0]["tools"].to_string();
    assert!(offered.contains("word_count"), "{offered}");
    assert_eq!(tool_result(&requests[1]), "4");
}

/// The command runs under bubblewrap: Landlock's helper is the `wield`
/// binary, which this process is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_calls_a_command_tool() {
    let provider = Scripted::start(vec![
        Turn::Call("greet", json!({ "who": "`whoami`" })),
        Turn::Text("Greeted."),
    ]);
    let sandbox = "[sandbox]\nbackend = \"bwrap\"\n";
    let dir = project(
        &provider,
        "greet",
        sandbox,
        &[(".wield/tools/greet.toml", command_tools::GREET)],
    );
    let (answer, requests) = turn(&dir, &provider, "Greet `whoami`").await;
    assert_eq!(answer, "Greeted.");
    assert_eq!(requests.len(), 2, "{requests:?}");
    let tools = requests[0]["tools"].to_string();
    assert!(tools.contains("Greet someone by name"), "{tools}");
    let result = tool_result(&requests[1]);
    assert!(result.contains("hello `whoami`\n"), "{result}");
}
