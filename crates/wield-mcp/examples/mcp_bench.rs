//! A raw JSON-RPC client for MCP servers over stdio, for `bench/mcp.sh`.
//!
//! No SDK and no async runtime: one JSON object per line each way, written
//! and read with plain blocking pipes, and replies kept as bytes and checked
//! with substring searches rather than parsed, so the numbers are the
//! server's and the pipe's, not a client library's.
//!
//! ```text
//! mcp_bench cold RUNS -- CMD...               cold start to the initialize reply
//! mcp_bench calls N TOOL ARGS_JSON -- CMD...  N sequential tools/call on one connection
//! mcp_bench floor BYTES                       be a server that does no work: answer each
//!                                             request at once, tools/call with BYTES of text
//! ```
//! `floor` is the baseline of a run: what the pipe round trip and a reply of
//! that size cost on this machine, with a server that never leaves its loop.
//! Prints one JSON object (times in milliseconds for `cold`, microseconds
//! for `calls`).
#![allow(clippy::print_stdout)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Server {
    fn start(cmd: &[String]) -> Result<Self, String> {
        let (program, args) = cmd.split_first().ok_or("no command given after --")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().ok_or("no stdout")?);
        Ok(Self {
            child,
            stdin,
            stdout,
            line: Vec::with_capacity(1 << 16),
        })
    }

    fn send(&mut self, msg: &str) -> Result<(), String> {
        self.stdin
            .write_all(msg.as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Read lines until the reply carrying `"id":ID`; returns it.
    fn reply(&mut self, id: u64) -> Result<&[u8], String> {
        let want = format!("\"id\":{id}");
        let spaced = format!("\"id\": {id}");
        loop {
            self.line.clear();
            let n = self
                .stdout
                .read_until(b'\n', &mut self.line)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!("the server closed its output waiting for id {id}"));
            }
            // Notifications carry no id; another reply would be a bug here.
            if has(&self.line, &want) || has(&self.line, &spaced) {
                return Ok(&self.line);
            }
        }
    }

    fn initialize(&mut self) -> Result<(), String> {
        self.send(INIT)?;
        let r = self.reply(0)?;
        if !has(r, "\"result\"") {
            return Err(format!("initialize failed: {}", String::from_utf8_lossy(r)));
        }
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn has(line: &[u8], what: &str) -> bool {
    memchr::memmem::find(line, what.as_bytes()).is_some()
}

fn cold(runs: usize, cmd: &[String]) -> Result<String, String> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        let mut s = Server::start(cmd)?;
        s.send(INIT)?;
        s.reply(0)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        s.stop();
    }
    times.sort_by(f64::total_cmp);
    Ok(format!(
        r#"{{"runs":{runs},"median_ms":{:.2},"min_ms":{:.2}}}"#,
        times[times.len() / 2],
        times[0]
    ))
}

fn calls(n: u64, tool: &str, args: &str, cmd: &[String]) -> Result<String, String> {
    let args: serde_json::Value = serde_json::from_str(args).map_err(|e| format!("ARGS_JSON: {e}"))?;
    let mut s = Server::start(cmd)?;
    s.initialize()?;
    let mut lat = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
    let mut bytes = 0;
    for id in 1..=n {
        let msg = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}
        })
        .to_string();
        let t = Instant::now();
        s.send(&msg)?;
        let r = s.reply(id)?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        if has(r, "\"isError\":true") || has(r, "\"isError\": true") || !has(r, "\"result\"") {
            return Err(format!(
                "call {id} failed: {}",
                String::from_utf8_lossy(&r[..r.len().min(500)])
            ));
        }
        bytes = r.len();
    }
    s.stop();
    lat.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((q * lat.len() as f64) as usize).min(lat.len() - 1);
        lat[i]
    };
    #[allow(clippy::cast_precision_loss)]
    let mean = lat.iter().sum::<f64>() / lat.len() as f64;
    Ok(format!(
        r#"{{"calls":{n},"p50_us":{:.1},"p99_us":{:.1},"mean_us":{mean:.1},"reply_bytes":{bytes}}}"#,
        pick(0.50),
        pick(0.99)
    ))
}

/// A server that does no work: blocking reads and writes, one reply per
/// request, `tools/call` answered with `bytes` of text (`initialize` with an
/// empty result), notifications ignored.
fn floor(bytes: usize) -> Result<String, String> {
    let line = "x".repeat(47);
    let mut text = String::new();
    while text.len() < bytes {
        text.push_str(&line);
        text.push('\n');
    }
    let text = serde_json::to_string(&text).map_err(|e| e.to_string())?;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    let mut input = stdin.lock();
    let mut req = String::new();
    loop {
        req.clear();
        if input.read_line(&mut req).map_err(|e| e.to_string())? == 0 {
            return Ok(String::new());
        }
        let Some(at) = req.find("\"id\":") else {
            continue;
        };
        let id: String = req[at + 5..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        // One write per reply, newline included, as a server would.
        let reply = if req.contains("tools/call") {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{text}}}],\"isError\":false}}}}\n"
            )
        } else {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}\n")
        };
        out.write_all(reply.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| e.to_string())?;
    }
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, bytes] = &argv[..]
        && mode == "floor"
    {
        return match bytes.parse().map_err(|e| format!("BYTES: {e}")).and_then(floor) {
            Ok(_) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp_bench: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    let Some(sep) = argv.iter().position(|a| a == "--") else {
        eprintln!("usage: mcp_bench cold RUNS -- CMD... | calls N TOOL ARGS_JSON -- CMD... | floor BYTES");
        return std::process::ExitCode::from(2);
    };
    let (head, cmd) = (&argv[..sep], &argv[sep + 1..]);
    let out = match head {
        [mode, runs] if mode == "cold" => runs
            .parse()
            .map_err(|e| format!("RUNS: {e}"))
            .and_then(|r| cold(r, cmd)),
        [mode, n, tool, args] if mode == "calls" => n
            .parse()
            .map_err(|e| format!("N: {e}"))
            .and_then(|n| calls(n, tool, args, cmd)),
        _ => Err("usage: mcp_bench cold RUNS -- CMD... | calls N TOOL ARGS_JSON -- CMD...".into()),
    };
    match out {
        Ok(json) => {
            println!("{json}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp_bench: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
