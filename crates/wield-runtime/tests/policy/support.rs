//! A temporary workspace (and global configuration directory) for each
//! test, and the runtime loaded on it with the debug tools.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;
use wield_core::config::GlobalDir;
use wield_core::policy::{PolicyOptions, RuleList};
use wield_runtime::RuntimeOptions;
use wield_test_support::pipeline::Loaded;

pub struct Env {
    /// The global configuration directory (`~/.config/wield`).
    pub global: TempDir,
    pub ws: TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            global: TempDir::new().unwrap(),
            ws: TempDir::new().unwrap(),
        }
    }

    /// With the project config `.wield/config.toml`.
    pub fn with_config(text: &str) -> Self {
        let e = Self::new();
        let dir = e.ws.path().join(".wield");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
        e
    }

    pub fn ws(&self) -> &Path {
        self.ws.path()
    }

    pub fn global_dir(&self) -> PathBuf {
        self.global.path().to_path_buf()
    }

    /// The runtime `wield` loads here with the debug tools and `policy`
    /// (its `--profile`, `--agent`, `--include-tools`… selections), or the
    /// error it fails with.
    pub fn try_load(&self, policy: PolicyOptions) -> Result<Loaded, wield_runtime::Error> {
        Loaded::with_debug_tools(
            self.ws(),
            RuntimeOptions::builder()
                .policy(policy)
                .global_dir(GlobalDir::At(self.global_dir()))
                .build(),
        )
    }

    pub fn load(&self, policy: PolicyOptions) -> Loaded {
        self.try_load(policy).unwrap()
    }

    /// The runtime with no selections on top of the configuration.
    pub fn plain(&self) -> Loaded {
        self.load(PolicyOptions::default())
    }

    pub fn project_approvals(&self) -> String {
        std::fs::read_to_string(self.ws().join(".wield/approvals.toml")).unwrap_or_default()
    }

    pub fn global_approvals(&self) -> String {
        std::fs::read_to_string(self.global.path().join("approvals.toml")).unwrap_or_default()
    }
}

/// A rule list named `source` (how `wield` passes `--include-tools`,
/// `WIELD_EXCLUDE_TOOLS`…).
pub fn rules(source: &str, entries: &[&str]) -> RuleList {
    RuleList::parse(source, entries).unwrap()
}

pub fn args(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}
