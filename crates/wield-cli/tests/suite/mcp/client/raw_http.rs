//! wield's MCP client against a hand-written streamable HTTP server that
//! fails on purpose: a proxy's 504 after the server took the call, a
//! response stream that ends without the result.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::{RawServe, Ws, python};
use crate::peer_cmd::peer_command;

/// The server: standard library only, its port on stdout. Its tools:
/// `charge` (appends a line to `charges` in its working directory, then
/// answers 504 as a proxy would), `slow` (answers after 2 s, on an event
/// stream), `broken` (an event stream that ends without the result), `cut`
/// (a reply whose text ends in half a surrogate pair; `cutsse` the same on
/// an event stream), `nansse` (a reply with `NaN`, on an event stream),
/// `huge` (a reply of 17 MiB, on an event stream), `echo`, `stop` (answers,
/// then the server stops listening and exits), and
/// `research`, which must be called as a task. It lists them on an event
/// stream. A `DELETE`
/// of the session appends its id to `deleted`, a `notifications/cancelled`
/// the request's id to `cancelled`.
const SERVER: &str = r#"import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

obj = {"type": "object"}
TOOLS = [{"name": n, "inputSchema": obj} for n in ["charge", "slow", "broken", "cut", "cutsse", "nansse", "huge", "echo", "stop"]]
TOOLS.append({"name": "research", "inputSchema": obj, "execution": {"taskSupport": "required"}})

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def reply(self, code, body, kind="application/json", extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
    def sse(self, events, wait=0):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for i in range(wait * 2):
            self.wfile.write(b": wait\n\n"); self.wfile.flush(); time.sleep(0.5)
        for e in events:
            self.wfile.write(("event: message\ndata: " + json.dumps(e) + "\n\n").encode()); self.wfile.flush()
        self.close_connection = True
    def do_GET(self):
        self.reply(405, b"", "text/plain")
    def do_DELETE(self):
        with open("deleted", "a") as f:
            f.write(self.headers.get("Mcp-Session-Id", "") + "\n")
        self.reply(200, b"", "text/plain")
    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        mid, method = m.get("id"), m.get("method")
        ok = lambda result: {"jsonrpc": "2.0", "id": mid, "result": result}
        text = lambda t: ok({"content": [{"type": "text", "text": t}]})
        if method == "initialize":
            return self.reply(200, ok({"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                                       "serverInfo": {"name": "rh", "version": "1"}}), extra=[("Mcp-Session-Id", "s1")])
        if mid is None:
            if method == "notifications/cancelled":
                with open("cancelled", "a") as f:
                    f.write(str(m["params"]["requestId"]) + "\n")
            return self.reply(202, b"", "text/plain")
        if method == "tools/list":
            # In the session, its protocol version named once.
            if len(self.headers.get_all("Mcp-Protocol-Version") or []) != 1 or self.headers.get("Mcp-Session-Id") != "s1":
                return self.reply(400, b"bad headers", "text/plain")
            # On an event stream, as many servers answer.
            return self.sse([ok({"tools": TOOLS})])
        name = m["params"]["name"]
        if name == "charge":
            with open("charges", "a") as f:
                f.write("charged\n")
            return self.reply(504, b"<html><body>504 Gateway Time-out</body></html>", "text/html")
        if name == "slow":
            return self.sse([text("slow ok")], wait=2)
        if name == "broken":
            return self.sse([{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "bye"}}])
        if name == "cut":
            return self.reply(200, text("cut \ud83d"))
        if name == "cutsse":
            return self.sse([text("cut \ud83d")])
        if name == "huge":
            return self.sse([text("x" * (17 << 20))])
        if name == "nansse":
            return self.sse([ok({"n": float("nan")})])
        if name == "stop":
            self.reply(200, text("stopping"))
            threading.Thread(target=lambda: (server.shutdown(), server.server_close())).start()
            return
        return self.reply(200, text("echo"))

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A workspace that bridges the server as `rh`; the server, which runs in
/// the directory above the workspace (`files`), where it leaves its files.
struct Bridged {
    ws: Ws,
    server: Child,
}

impl Bridged {
    fn new() -> Self {
        let ws = Ws::new("");
        std::fs::write(ws.dir.path().join("rawhttp.py"), SERVER).unwrap();
        let mut server = peer_command(python())
            .arg("rawhttp.py")
            .current_dir(ws.dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut port = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut port)
            .unwrap();
        std::fs::write(
            ws.ws().join(".wield/config.toml"),
            format!(
                "[approval]\nauto_approve = [\"$standard\", \"mcp__*\"]\n\n\
                 [mcp.servers.rh]\nurl = \"http://127.0.0.1:{}/mcp\"\ntimeout = \"20s\"\n",
                port.trim()
            ),
        )
        .unwrap();
        Self { ws, server }
    }

    fn file(&self, name: &str) -> String {
        let path: PathBuf = self.ws.dir.path().join(name);
        std::fs::read_to_string(path).unwrap_or_default()
    }

    /// The error of a call of `tool`, which must fail.
    fn failure(&self, tool: &str) -> String {
        let v = self.call(tool);
        assert_eq!(v["success"], false, "{v}");
        v["error"].as_str().unwrap().to_owned()
    }

    fn call(&self, tool: &str) -> Value {
        let out = self.ws.wield().args(["call", "--json", tool, "{}"]).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

impl Drop for Bridged {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// Regression: over HTTP every failed POST counted as a call never sent, so
/// a call the server had taken (its answer lost to a proxy's 504) was sent
/// again: a tool that is neither read-only nor idempotent ran twice.
#[test]
fn a_call_an_http_server_took_is_not_sent_again() {
    let rh = Bridged::new();
    let error = rh.failure("mcp__rh__charge");
    assert!(
        error.contains("failed the call to `charge`") && error.contains("HTTP 504"),
        "{error}"
    );
    // The SDK's type names say nothing to a user.
    assert!(!error.contains("Transport ["), "{error}");
    assert_eq!(rh.file("charges"), "charged\n", "the call was sent again");
}

/// Regression: over HTTP one call's response stream ending without its
/// result dropped the whole connection, failing every other call in flight
/// to the server.
#[test]
fn one_broken_http_response_fails_only_its_own_call() {
    let rh = Bridged::new();
    let mut serve = RawServe::initialized(&rh.ws);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__rh__slow","arguments":{}}}"#);
    std::thread::sleep(Duration::from_millis(300));
    serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__rh__broken","arguments":{}}}"#);
    let start = Instant::now();
    let broken = serve.reply(Duration::from_secs(20));
    assert_eq!(broken["id"], 2, "{broken}");
    assert_eq!(broken["result"]["isError"], true, "{broken}");
    let text = broken["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("ended its HTTP response to the call to `broken` without the result"),
        "{text}"
    );
    // Well before the slow call's answer (2 s after it was sent).
    assert!(start.elapsed() < Duration::from_millis(1500), "{:?}", start.elapsed());
    let slow = serve.reply(Duration::from_secs(20));
    assert_eq!(slow["id"], 1, "{slow}");
    assert_eq!(slow["result"]["isError"], false, "{slow}");
    assert_eq!(slow["result"]["content"][0]["text"], "slow ok", "{slow}");
    assert!(serve.finish(Duration::from_secs(10)).success());
    // `mcp serve` ends its session with the server on its way out too.
    assert_eq!(rh.file("deleted"), "s1\n");
}

/// A call cut by its timeout tells the HTTP server so before `wield call`
/// exits.
#[test]
fn a_call_cut_by_its_timeout_tells_the_http_server() {
    let rh = Bridged::new();
    let out = rh
        .ws
        .wield()
        .args([
            "--set",
            "mcp.servers.rh.timeout=1",
            "call",
            "--json",
            "mcp__rh__slow",
            "{}",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["metadata"]["timed_out"], true, "{v}");
    assert_eq!(rh.file("cancelled").lines().count(), 1, "{:?}", rh.file("cancelled"));
}

/// Regression: wield exited without ending its session with a `url`
/// server, which kept it until it timed out. It sends the `DELETE` MCP
/// asks of a client that is done with a session.
#[test]
fn wield_ends_its_session_with_an_http_server_on_the_way_out() {
    let rh = Bridged::new();
    let v = rh.call("mcp__rh__echo");
    assert_eq!(v["output"], "echo", "{v}");
    assert_eq!(rh.file("deleted"), "s1\n");
    let out = rh.ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(rh.file("deleted"), "s1\ns1\n");
}

/// Regression: a `url` server's tool that can only be called as a task was
/// offered (the SDK's types drop `execution`, and no raw text of an HTTP
/// answer reached wield), and every call of it failed. wield lists a `url`
/// server's tools itself, in the SDK's session, and leaves such a tool out.
#[test]
fn a_url_servers_task_only_tool_is_left_out() {
    let rh = Bridged::new();
    let out = rh.ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = &v["servers"][0];
    assert_eq!(
        (&server["state"], &server["tools"]),
        (&"ready".into(), &9.into()),
        "{v}"
    );
    let warnings = server["warnings"].to_string();
    assert!(warnings.contains("research") && warnings.contains("task"), "{warnings}");
    let out = rh.ws.wield().args(["tools", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        list.contains("mcp__rh__echo") && !list.contains("mcp__rh__research"),
        "{list}"
    );
}

/// Regression: over HTTP a reply on an event stream that held half a
/// surrogate pair (a JavaScript server cutting a string in the middle of an
/// emoji), or that was not valid JSON at all, was dropped, and its call
/// failed as a response "without the result". Such a reply is read as over
/// stdio: with U+FFFD, or as an error saying why wield cannot read it.
#[test]
fn http_replies_are_read_as_over_stdio() {
    let rh = Bridged::new();
    let v = rh.call("mcp__rh__cutsse");
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["output"], "cut \u{fffd}", "{v}");
    let error = rh.failure("mcp__rh__nansse");
    assert!(
        error.contains("failed the call to `nansse`") && error.contains("not valid JSON-RPC"),
        "{error}"
    );
    // A plain JSON answer is read by the SDK: the call fails saying why,
    // without the SDK's type names.
    let error = rh.failure("mcp__rh__cut");
    assert!(
        error.contains("the reply is not valid JSON-RPC") && !error.contains("ServerJsonRpcMessage"),
        "{error}"
    );
}

/// Regression: a reply on an event stream larger than wield reads (16 MiB)
/// failed its call as a response that ended "without the result", blaming
/// the server.
#[test]
fn an_http_reply_too_large_to_read_says_so() {
    let rh = Bridged::new();
    let error = rh.failure("mcp__rh__huge");
    assert!(
        error.contains("failed the call to `huge`")
            && error.contains("larger than wield reads in one message")
            && error.contains("ask the tool for less at a time"),
        "{error}"
    );
}

/// Regression: a call to an HTTP server that had stopped said only "error
/// sending request for url", where a failed start says why the server
/// cannot be reached (the SDK's HTTP error holds the HTTP client's error
/// without naming it its source, so the causes were not followed).
#[test]
fn a_call_to_an_http_server_gone_says_why() {
    let rh = Bridged::new();
    let mut serve = RawServe::initialized(&rh.ws);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__rh__stop","arguments":{}}}"#);
    let stopped = serve.reply(Duration::from_secs(20));
    assert_eq!(stopped["result"]["isError"], false, "{stopped}");
    // The server has answered; it is gone once its port refuses.
    let port = std::fs::read_to_string(rh.ws.ws().join(".wield/config.toml")).unwrap();
    let port = port
        .split("127.0.0.1:")
        .nth(1)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(format!("127.0.0.1:{port}")).is_ok() {
        assert!(Instant::now() < deadline, "the server still listens");
        std::thread::sleep(Duration::from_millis(20));
    }
    serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__rh__echo","arguments":{}}}"#);
    let failed = serve.reply(Duration::from_secs(20));
    assert_eq!(failed["result"]["isError"], true, "{failed}");
    let text = failed["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Connection refused"), "{text}");
}
