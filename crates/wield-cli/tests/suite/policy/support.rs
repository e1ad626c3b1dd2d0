//! A temporary workspace and home for each test, so no user config leaks in.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

use crate::wield_cmd::wield_bin;

pub struct Env {
    pub home: TempDir,
    pub ws: TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            home: TempDir::new().unwrap(),
            ws: TempDir::new().unwrap(),
        }
    }

    /// With the project config `.wield/config.toml`.
    pub fn with_config(text: &str) -> Self {
        let e = Self::new();
        e.project_config(text);
        e
    }

    pub fn wield(&self) -> Command {
        Command::from_std(self.running(wield_bin()))
    }

    /// `program` (wield, or a program that starts it) in the environment
    /// `wield` gets: the debug tool on, no colours.
    pub fn running(&self, program: impl AsRef<OsStr>) -> std::process::Command {
        let mut c = crate::wield_cmd::wield_env(self.ws.path(), self.home.path()).running(program);
        c.env("WIELD_DEBUG_TOOLS", "1").env("NO_COLOR", "1");
        c
    }

    pub fn config_home(&self) -> PathBuf {
        self.home.path().join(".config")
    }

    pub fn project_config(&self, text: &str) {
        let dir = self.ws.path().join(".wield");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    pub fn project_approvals(&self) -> String {
        std::fs::read_to_string(self.ws.path().join(".wield/approvals.toml")).unwrap_or_default()
    }

    pub fn global_approvals(&self) -> String {
        std::fs::read_to_string(self.config_home().join("wield/approvals.toml")).unwrap_or_default()
    }

    /// `wield [args] tools debug --json`, as JSON.
    pub fn debug(&self, args: &[&str]) -> Value {
        let out = self
            .wield()
            .args(args)
            .args(["tools", "debug", "--json"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tools debug failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// `wield call --json TOOL ARGS`: (exit code, result JSON, stderr).
    pub fn call(&self, extra: &[&str], tool: &str, args: &str) -> (i32, Value, String) {
        let out = self
            .wield()
            .args(extra)
            .args(["call", "--json", tool, args])
            .output()
            .unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status.code().unwrap_or(-1),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// A tool's decision in `tools debug --json` output: (status, stage, rule).
pub fn decision(debug: &Value, tool: &str) -> (String, String, String) {
    let d = debug["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} missing from {debug}"));
    (
        d["status"].as_str().unwrap().to_owned(),
        d["stage"].as_str().unwrap().to_owned(),
        d["rule"].as_str().unwrap().to_owned(),
    )
}

pub fn error_of(result: &Value) -> String {
    result["error"].as_str().unwrap_or_default().to_owned()
}
