//! A workspace laid out so that the sandbox's roots are known exactly, and
//! ways to run the real binary in it (for the suites that test the binary's
//! tools: shell, security, command, Lua, agent and web tools).
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use tempfile::TempDir;

use crate::wield_cmd::WieldEnv;

/// `base/ws` is the workspace, `base/tmp` wield's temp dir (a write root),
/// `base/home` its HOME, `base/outside` a directory in no root. `base`
/// itself is no root, so "outside the write roots" is a real place.
pub struct Ws {
    _dir: TempDir,
    pub ws: PathBuf,
    pub tmp: PathBuf,
    pub home: PathBuf,
    pub outside: PathBuf,
}

impl Ws {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let [ws, tmp, home, outside] = ["ws", "tmp", "home", "outside"].map(|d| base.join(d));
        for d in [&ws, &tmp, &home, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::create_dir_all(ws.join("src")).unwrap();
        Self {
            _dir: dir,
            ws,
            tmp,
            home,
            outside,
        }
    }

    /// Where `wield` runs: the workspace, with this home and temp dir.
    pub fn wield_env(&self) -> WieldEnv {
        crate::wield_cmd::wield_env(&self.ws, &self.home).with_tmp(&self.tmp)
    }

    /// The binary with a clean environment (PATH only, plus the layout).
    pub fn wield(&self) -> Command {
        let mut cmd = self.wield_env().command();
        cmd.stdin(Stdio::null());
        cmd
    }

    /// `wield [pre...] call TOOL ARGS --json`: (exit status, the JSON result).
    pub fn call(&self, pre: &[&str], tool: &str, args: &Value) -> (i32, Value) {
        let mut cmd = self.wield();
        cmd.args(pre).args(["call", tool, &args.to_string(), "--json"]);
        call_json(cmd)
    }

    /// `bash` in a given backend ("landlock", "bwrap") or unsandboxed ("off").
    pub fn bash(&self, backend: &str, command: &str) -> (i32, Value) {
        let args = serde_json::json!({ "command": command });
        match backend {
            "off" => self.call(&["--set", "sandbox.enabled=false", "-y"], "bash", &args),
            b => self.call(
                &[
                    "--set",
                    "sandbox.enabled=true",
                    "--set",
                    &format!("sandbox.backend=\"{b}\""),
                ],
                "bash",
                &args,
            ),
        }
    }
}

pub fn call_json(mut cmd: Command) -> (i32, Value) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout={stdout} stderr={}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

pub fn output(v: &Value) -> &str {
    v["output"].as_str().unwrap_or_default()
}

/// `wield sandbox check --json`, asserting that both backends work here:
/// this machine is expected to have them, so a missing one is a failure,
/// not a reason to skip.
pub fn require_backends(ws: &Ws) -> Value {
    let out = ws.wield().args(["sandbox", "check", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["landlock"]["available"], true,
        "Landlock is unavailable on this machine, the sandbox tests cannot run: {v}"
    );
    assert!(
        v["landlock"]["abi"].as_i64().unwrap() >= 4,
        "Landlock ABI too old for these tests: {v}"
    );
    assert_eq!(
        v["bwrap"]["works"], true,
        "bubblewrap does not work here (apt-get install bubblewrap): {v}"
    );
    v
}

/// A tiny MCP client over `wield mcp serve`'s stdio: newline-delimited
/// JSON-RPC.
pub struct Mcp {
    child: std::process::Child,
    reader: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Mcp {
    pub fn start(ws: &Ws, pre: &[&str]) -> Self {
        let mut child = ws
            .wield()
            .args(pre)
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Self { child, reader, next: 1 };
        let init = mcp.request(
            "initialize",
            serde_json::json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "shell-tests", "version": "1"}
            }),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        mcp.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, v: &Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = std::io::BufRead::read_line(&mut self.reader, &mut line).unwrap();
            assert!(n > 0, "the server closed its output while waiting for {method}");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v.get("id") == Some(&serde_json::json!(id)) {
                return v;
            }
        }
    }

    /// A tool call: (is_error, text).
    pub fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let v = self.request("tools/call", serde_json::json!({"name": tool, "arguments": args}));
        let result = &v["result"];
        assert!(result.is_object(), "tools/call {tool} failed: {v}");
        let text = result["content"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        (result["isError"] == true, text)
    }

    /// Close stdin (the session ends) and wait for the server to exit.
    pub fn finish(mut self) -> i32 {
        drop(self.child.stdin.take());
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
