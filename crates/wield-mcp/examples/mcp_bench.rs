//! A raw JSON-RPC client for MCP servers over stdio, for `bench/mcp.sh`.
//!
//! No SDK and no async runtime: one JSON object per line each way, each
//! message written with one `write`, and replies kept as bytes and checked
//! with substring searches rather than parsed, so the numbers are the
//! server's and the pipe's, not a client library's.
//!
//! ```text
//! mcp_bench cold RUNS -- CMD...                    cold start to the initialize reply
//! mcp_bench calls N TOOL ARGS_JSON [WAIT] -- CMD... N sequential tools/call on one connection
//! mcp_bench floor BYTES [WAIT]                     be a server that does no work: answer each
//!                                                  request at once, tools/call with BYTES of text
//!                                                  (one tool, `floor`: an SDK client can connect)
//! ```
//! WAIT is how the reader waits for its input: `block` (the default) sleeps
//! in `read`, as a client on an event loop sleeps in `epoll_wait`, so each
//! reply also pays for waking the client up; `spin` keeps reading the
//! non-blocking pipe, so the time measured is the server's and the pipe's
//! alone (the client is never asleep when the reply arrives, and the server
//! never has to wake it).
//!
//! `floor` is the baseline of a run: what the pipe round trip and a reply of
//! that size cost on this machine, with a server that never leaves its loop.
//! Prints one JSON object (times in milliseconds for `cold`, microseconds
//! for `calls`).
#![allow(clippy::print_stdout)]

use std::os::fd::AsFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
use rustix::io::Errno;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

/// How a reader waits for input that has not arrived yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Sleep in `read`.
    Block,
    /// Keep reading the non-blocking pipe.
    Spin,
}

impl Wait {
    fn parse(word: &str) -> Result<Self, String> {
        match word {
            "block" => Ok(Self::Block),
            "spin" => Ok(Self::Spin),
            _ => Err(format!("WAIT is `block` or `spin`, not `{word}`")),
        }
    }
}

/// Lines from a pipe, read straight into one buffer (no copy per line).
struct Input<F> {
    fd: F,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl<F: AsFd> Input<F> {
    fn new(fd: F, wait: Wait) -> Result<Self, String> {
        if wait == Wait::Spin {
            let flags = fcntl_getfl(&fd).map_err(|e| format!("fcntl: {e}"))?;
            fcntl_setfl(&fd, flags | OFlags::NONBLOCK).map_err(|e| format!("fcntl: {e}"))?;
        }
        Ok(Self {
            fd,
            buf: vec![0; 1 << 20],
            start: 0,
            end: 0,
        })
    }

    /// The next line, its newline included; `None` at the end of the input.
    fn line(&mut self) -> Result<Option<&[u8]>, String> {
        let mut scanned = self.start;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[scanned..self.end]) {
                let line = self.start..scanned + i + 1;
                self.start = line.end;
                return Ok(Some(&self.buf[line]));
            }
            if self.start == self.end {
                (self.start, self.end) = (0, 0);
            } else if self.end == self.buf.len() {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
                if self.end == self.buf.len() {
                    self.buf.resize(self.buf.len() * 2, 0);
                }
            }
            scanned = self.end;
            match rustix::io::read(&self.fd, &mut self.buf[self.end..]) {
                Ok(0) => return Ok(None),
                Ok(n) => self.end += n,
                Err(Errno::AGAIN) => std::hint::spin_loop(),
                Err(Errno::INTR) => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}

/// Write all of `bytes` (a blocking pipe: one `write` for a message that
/// fits in the pipe).
fn write_all(fd: impl AsFd, mut bytes: &[u8]) -> Result<(), String> {
    while !bytes.is_empty() {
        match rustix::io::write(&fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(format!("write: {e}")),
        }
    }
    Ok(())
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: Input<ChildStdout>,
    msg: Vec<u8>,
}

impl Server {
    fn start(cmd: &[String], wait: Wait) -> Result<Self, String> {
        let (program, args) = cmd.split_first().ok_or("no command given after --")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = Input::new(child.stdout.take().ok_or("no stdout")?, wait)?;
        Ok(Self {
            child,
            stdin,
            stdout,
            msg: Vec::with_capacity(1 << 10),
        })
    }

    /// Send one message and its newline with one `write`.
    fn send(&mut self, msg: &str) -> Result<(), String> {
        self.msg.clear();
        self.msg.extend_from_slice(msg.as_bytes());
        self.msg.push(b'\n');
        write_all(&self.stdin, &self.msg)
    }

    /// Read lines until the reply carrying `"id":ID`; returns it.
    fn reply(&mut self, id: u64) -> Result<&[u8], String> {
        let want = format!("\"id\":{id}");
        let spaced = format!("\"id\": {id}");
        loop {
            let Some(line) = self.stdout.line()? else {
                return Err(format!("the server closed its output waiting for id {id}"));
            };
            // Notifications carry no id; another reply would be a bug here.
            if has(line, &want) || has(line, &spaced) {
                // The line ends where the input's next line starts (taken
                // again here: a borrow returned from the loop would hold
                // `self.stdout` for the whole loop).
                let len = line.len();
                let end = self.stdout.start;
                return Ok(&self.stdout.buf[end - len..end]);
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
        let mut s = Server::start(cmd, Wait::Block)?;
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

fn calls(n: u64, tool: &str, args: &str, wait: Wait, cmd: &[String]) -> Result<String, String> {
    let args: serde_json::Value = serde_json::from_str(args).map_err(|e| format!("ARGS_JSON: {e}"))?;
    let mut s = Server::start(cmd, wait)?;
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

/// A server that does no work: one reply per request, each written with one
/// `write`, `tools/call` answered with `bytes` of text (`initialize` with an
/// empty result), notifications ignored.
fn floor(bytes: usize, wait: Wait) -> Result<(), String> {
    let line = "x".repeat(47);
    let mut text = String::new();
    while text.len() < bytes {
        text.push_str(&line);
        text.push('\n');
    }
    let text = serde_json::to_string(&text).map_err(|e| e.to_string())?;
    let mut input = Input::new(std::io::stdin(), wait)?;
    let out = std::io::stdout();
    let mut reply = Vec::with_capacity(text.len() + 200);
    while let Some(req) = input.line()? {
        let Some(at) = memchr::memmem::find(req, b"\"id\":") else {
            continue;
        };
        let id = req[at + 5..]
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take_while(|b| b.is_ascii_digit());
        reply.clear();
        reply.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        reply.extend(id);
        if has(req, "tools/call") {
            reply.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
            reply.extend_from_slice(text.as_bytes());
            reply.extend_from_slice(b"}],\"isError\":false}}\n");
        } else if has(req, "\"initialize\"") {
            // Enough of a handshake and a listing for an SDK client.
            reply.extend_from_slice(FLOOR_INIT);
        } else if has(req, "tools/list") {
            reply.extend_from_slice(FLOOR_TOOLS);
        } else {
            reply.extend_from_slice(b",\"result\":{}}\n");
        }
        write_all(&out, &reply)?;
    }
    Ok(())
}

/// `floor`'s answer to `initialize`, after its id.
const FLOOR_INIT: &[u8] = br#","result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"1"}}}
"#;

/// `floor`'s one tool, after its id.
const FLOOR_TOOLS: &[u8] = br#","result":{"tools":[{"name":"floor","inputSchema":{"type":"object"}}]}}
"#;

const USAGE: &str =
    "usage: mcp_bench cold RUNS -- CMD... | calls N TOOL ARGS_JSON [block|spin] -- CMD... | floor BYTES [block|spin]";

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|m| m == "floor") {
        let run = match &argv[1..] {
            [bytes] => Ok((bytes, Wait::Block)),
            [bytes, wait] => Wait::parse(wait).map(|w| (bytes, w)),
            _ => Err(USAGE.to_owned()),
        }
        .and_then(|(bytes, wait)| {
            let bytes = bytes.parse().map_err(|e| format!("BYTES: {e}"))?;
            floor(bytes, wait)
        });
        return match run {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcp_bench: {e}");
                std::process::ExitCode::from(1)
            }
        };
    }
    let Some(sep) = argv.iter().position(|a| a == "--") else {
        eprintln!("{USAGE}");
        return std::process::ExitCode::from(2);
    };
    let (head, cmd) = (&argv[..sep], &argv[sep + 1..]);
    let out = match head {
        [mode, runs] if mode == "cold" => runs
            .parse()
            .map_err(|e| format!("RUNS: {e}"))
            .and_then(|r| cold(r, cmd)),
        [mode, n, tool, args, wait @ ..] if mode == "calls" && wait.len() <= 1 => {
            let wait = wait.first().map_or(Ok(Wait::Block), |w| Wait::parse(w));
            n.parse()
                .map_err(|e| format!("N: {e}"))
                .and_then(|n| calls(n, tool, args, wait?, cmd))
        }
        _ => Err(USAGE.to_owned()),
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
