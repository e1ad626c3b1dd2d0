//! wield's MCP client against a hand-written JSON-RPC stdio server that
//! misbehaves on purpose: it crashes while a child holds its output, floods
//! its stderr, replies beyond the SDK's message limit, ignores the end of
//! its input, offers no tools or tools wield cannot offer, pages its tools
//! without end.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::{Ws, python};
use crate::wield_cmd::wield_bin;

/// The server: standard library only. Its tools: `ok`; `crash` (starts a
/// `sleep` that keeps its stdout, writes its pid to `grandchild.pid`, exits
/// 9); `flaky` (read-only: does that the first time, answers the second);
/// `big` (`n` bytes of text); `hold` (answered, `released`, only after the
/// next call is; a `notifications/cancelled` adds the request's id to
/// `cancelled`); `shaped` (answers with its argument `result` as the
/// result); `cut` (a text ending in half a surrogate pair, as JavaScript
/// writes a string cut inside an emoji); `nan` (a reply with `NaN` in it,
/// which is not JSON); `flood` (`n` requests to wield, written without
/// reading its answers). The environment picks the rest: `TOOLS`
/// (JSON) replaces the tool list, `NO_TOOLS` drops the `tools` capability,
/// `LIST` makes `tools/list` exit 7 after a line on stderr (`crash`) or
/// answer with more than 16 MiB (`huge`),
/// `PAGES` makes every page of tools (50 new ones) point to another
/// (`endless`), to the same cursor again (`same`) or to an empty cursor
/// (`empty`, the last page as some servers mark it),
/// `FLOOD_MB` writes that much to stderr without a newline first, `ON_EOF`
/// (`exit`, `ignore`) and `ON_TERM` (`exit`, `ignore`) say what end of input
/// and SIGTERM do; both leave a file named after them; `VERSION` is the
/// protocol version it answers `initialize` with (else the one offered,
/// which it writes to `offered`); `INSTRUCTIONS` is the first line of its
/// `instructions`, 3,000 bytes more follow. It writes its pid to `server.pid`. (`crash` also starts a `sleep` in a session of its own,
/// its pid in `setsid.pid`.)
const SERVER: &str = r#"
import json, os, signal, subprocess, sys, time

def mark(name):
    open(name, "a").write("x")

def on_term(*_):
    mark("term")
    if os.environ.get("ON_TERM", "exit") == "exit":
        os._exit(0)

signal.signal(signal.SIGTERM, on_term)
open("server.pid", "w").write(str(os.getpid()))
mb = int(os.environ.get("FLOOD_MB", "0"))
chunk = "y" * (1 << 20)
for _ in range(mb):
    sys.stderr.write(chunk)
sys.stderr.flush()

obj = {"type": "object"}
tools = [
    {"name": "ok", "inputSchema": obj},
    {"name": "crash", "inputSchema": obj},
    {"name": "flaky", "inputSchema": obj, "annotations": {"readOnlyHint": True}},
    {"name": "big", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "hold", "inputSchema": obj},
    {"name": "shaped", "inputSchema": obj},
    {"name": "cut", "inputSchema": obj},
    {"name": "nan", "inputSchema": obj},
    {"name": "flood", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
]
held = []
if os.environ.get("TOOLS"):
    tools = json.loads(os.environ["TOOLS"])

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

def crash():
    child = subprocess.Popen(["sleep", "300"])
    open("grandchild.pid", "w").write(str(child.pid))
    away = subprocess.Popen(["sleep", "301"], start_new_session=True, stdout=subprocess.DEVNULL)
    open("setsid.pid", "w").write(str(away.pid))
    os._exit(9)

for line in sys.stdin:
    m = json.loads(line)
    mid, method = m.get("id"), m.get("method")
    if method == "initialize":
        caps = {} if os.environ.get("NO_TOOLS") else {"tools": {}}
        open("offered", "w").write(m["params"]["protocolVersion"])
        version = os.environ.get("VERSION") or m["params"]["protocolVersion"]
        result = {"protocolVersion": version, "capabilities": caps, "serverInfo": {"name": "raw", "version": "1"}}
        if os.environ.get("INSTRUCTIONS"):
            result["instructions"] = os.environ["INSTRUCTIONS"] + "\n" + "i" * 3000
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "tools/list" and os.environ.get("LIST") == "crash":
        sys.stderr.write("\x1b[31mlisting broke\x1b[0m\n")
        sys.stderr.flush()
        os._exit(7)
    elif method == "tools/list" and os.environ.get("LIST") == "huge":
        huge = [{"name": "ok", "description": "d" * 17000000, "inputSchema": obj}]
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": huge}})
    elif method == "tools/list" and os.environ.get("NO_TOOLS"):
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}})
    elif method == "tools/list" and os.environ.get("PAGES"):
        page = int((m.get("params") or {}).get("cursor") or "0")
        more = [{"name": f"t{page}_{i}", "inputSchema": obj} for i in range(50)]
        cursor = {"endless": str(page + 1), "same": "1", "empty": ""}[os.environ["PAGES"]]
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": more, "nextCursor": cursor}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
    elif method == "tools/call":
        name = m["params"]["name"]
        text = "called " + name
        if name == "crash" or (name == "flaky" and not os.path.exists("flaky.once")):
            if name == "flaky":
                mark("flaky.once")
            crash()
        elif name == "flaky":
            text = "second try"
        elif name == "shaped":
            send({"jsonrpc": "2.0", "id": mid, "result": m["params"]["arguments"]["result"]})
            continue
        elif name == "hold":
            held.append(mid)
            continue
        elif name == "cut":
            text = "cut \ud83d"
        elif name == "nan":
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [], "n": float("nan")}})
            continue
        elif name == "big":
            text = "A" * m["params"]["arguments"]["n"]
        elif name == "flood":
            # Requests to wield, without reading its answers.
            for i in range(m["params"]["arguments"]["n"]):
                sys.stdout.write('{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (10**6 + i))
            text = "flooded"
        send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
        for h in held:
            send({"jsonrpc": "2.0", "id": h, "result": {"content": [{"type": "text", "text": "released"}]}})
        held = []
    elif method == "notifications/cancelled":
        open("cancelled", "a").write(str(m["params"]["requestId"]) + "\n")
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
mark("eof")
if os.environ.get("ON_EOF", "exit") == "ignore":
    while True:
        time.sleep(1)
"#;

/// A workspace with the server as each of `servers` (name, TOML env table).
#[allow(clippy::unwrap_used)]
fn workspace(servers: &[(&str, &str)]) -> Ws {
    let mut config = String::from("[approval]\nauto_approve = [\"$standard\", \"mcp__*\"]\n");
    for (name, env) in servers {
        config.push_str(&format!(
            "\n[mcp.servers.{name}]\ncommand = {:?}\nargs = [\"raw.py\"]\ntimeout = \"20s\"\nenv = {env}\n",
            python().display().to_string()
        ));
    }
    let ws = Ws::new(&config);
    std::fs::write(ws.ws().join("raw.py"), SERVER).unwrap();
    ws
}

#[allow(clippy::unwrap_used)]
fn call(ws: &Ws, tool: &str, args: &str) -> (Value, Duration) {
    let start = Instant::now();
    let out = ws.wield().args(["call", "--json", tool, args]).output().unwrap();
    let v =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (v, start.elapsed())
}

fn gone(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let dead = std::fs::read_to_string(Path::new("/proc").join(pid.trim()).join("stat")).map_or(true, |s| {
            s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))
        });
        if dead || Instant::now() > deadline {
            return dead;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Regression: wield noticed a crash only by the server's stdout closing,
/// so a server whose child kept it open made every call wait for its
/// timeout (20 s here) and was never restarted.
#[test]
fn a_server_that_exits_while_its_child_holds_its_output_fails_the_call_at_once() {
    let ws = workspace(&[("raw", "{}")]);
    let (v, took) = call(&ws, "mcp__raw__crash", "{}");
    assert_eq!(v["success"], false, "{v}");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("MCP server `raw` exited (exit status: 9) during the call to `crash`"),
        "{error}"
    );
    assert!(took < Duration::from_secs(10), "the crash was noticed after {took:?}");
    // What it left holding the pipe is stopped with it.
    let pid = std::fs::read_to_string(ws.ws().join("grandchild.pid")).unwrap();
    assert!(gone(&pid), "the crashed server's child {pid} outlived it");
    // Regression: a child in a session of its own outlived it.
    let pid = std::fs::read_to_string(ws.ws().join("setsid.pid")).unwrap();
    assert!(gone(&pid), "the crashed server's setsid child {pid} outlived it");

    // A read-only tool is sent again to the restarted server.
    let (v, took) = call(&ws, "mcp__raw__flaky", "{}");
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["output"], "second try", "{v}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Regression: stderr was read a line at a time, so a server writing
/// without newlines grew wield's memory by as much as it wrote.
#[test]
fn a_server_flooding_stderr_without_newlines_costs_bounded_memory() {
    let ws = workspace(&[("flood", "{ FLOOD_MB = \"256\" }")]);
    // The peak resident size of wield (and of the server), from a parent
    // that waited for them.
    let peak = "import resource, subprocess, sys\n\
                subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
                print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)";
    let out = ws
        .wield_env()
        .running(python())
        .arg("-c")
        .arg(peak)
        .arg(wield_bin())
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    let kib: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(kib < 128 * 1024, "wield grew to {} MiB", kib / 1024);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"][0]["state"], "ready", "{v}");
}

/// Regression: a server that sent requests without reading the answers
/// made them queue in wield without end (660 MB for 300,000). Past a few
/// hundred waiting to be written, an answer fails at once.
#[test]
fn a_server_that_does_not_read_its_answers_costs_bounded_memory() {
    let ws = workspace(&[("raw", "{}")]);
    let peak = "import resource, subprocess, sys\n\
                done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n\
                print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, done.stdout.strip())";
    let out = ws
        .wield_env()
        .running(python())
        .arg("-c")
        .arg(peak)
        .arg(wield_bin())
        .args(["call", "mcp__raw__flood", r#"{"n": 100000}"#])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let (kib, output) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
    assert_eq!(output, "flooded", "{text} {}", String::from_utf8_lossy(&out.stderr));
    let kib: u64 = kib.parse().unwrap();
    assert!(kib < 128 * 1024, "wield grew to {} MiB", kib / 1024);
}

/// Stopping follows the MCP lifecycle for stdio: end of input first, then
/// SIGTERM, then SIGKILL. Regression: servers were SIGKILLed at once.
#[test]
fn servers_are_stopped_by_end_of_input_then_sigterm_then_sigkill() {
    let ws = workspace(&[
        ("polite", "{}"),
        ("deaf", "{ ON_EOF = \"ignore\" }"),
        ("stubborn", "{ ON_EOF = \"ignore\", ON_TERM = \"ignore\" }"),
    ]);
    let stopped = || gone(&std::fs::read_to_string(ws.ws().join("server.pid")).unwrap());
    let marks = |what: &str| -> bool {
        let p = ws.ws().join(what);
        let there = p.exists();
        let _ = std::fs::remove_file(p);
        there
    };
    let server = |name: &str| -> Duration {
        let (v, took) = call(&ws, &format!("mcp__{name}__ok"), "{}");
        assert_eq!(v["success"], true, "{v}");
        took
    };
    // A server that exits at the end of its input is not signalled (and
    // costs only the time it takes to exit).
    server("polite");
    assert!(marks("eof") && !marks("term") && stopped(), "polite");
    // One that stays gets SIGTERM after a short grace.
    let took = server("deaf");
    assert!(marks("eof") && marks("term") && stopped(), "deaf");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // One that ignores SIGTERM too is killed, and wield exits in bounded time.
    let took = server("stubborn");
    assert!(marks("eof") && marks("term") && stopped(), "stubborn");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Regression: a reply beyond the SDK's 16 MiB line limit was dropped and
/// the call waited for its timeout.
#[test]
fn a_reply_too_large_to_read_fails_the_call_at_once() {
    let ws = workspace(&[("raw", "{}")]);
    let (v, took) = call(&ws, "mcp__raw__big", r#"{"n":17000000}"#);
    assert_eq!(v["success"], false, "{v}");
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("reply of more than 16 MiB"), "{error}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (v, _) = call(&ws, "mcp__raw__big", r#"{"n":1000}"#);
    assert_eq!(v["output"].as_str().map(str::len), Some(1000), "{v}");

    // Regression: every call in flight to the server failed with it; the
    // reply's id says whose it is, and the others go on.
    let mut serve = super::support::RawServe::initialized(&ws);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__raw__hold","arguments":{}}}"#);
    std::thread::sleep(Duration::from_millis(300));
    serve.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mcp__raw__big","arguments":{"n":17000000}}}"#,
    );
    let mut replies = [
        serve.reply(Duration::from_secs(20)),
        serve.reply(Duration::from_secs(20)),
    ];
    replies.sort_by_key(|r| r["id"].as_i64());
    let [held, big] = &replies;
    assert_eq!(held["result"]["isError"], false, "{held}");
    assert_eq!(held["result"]["content"][0]["text"], "released", "{held}");
    assert_eq!(big["result"]["isError"], true, "{big}");
    assert!(big.to_string().contains("reply of more than 16 MiB"), "{big}");
    assert!(serve.finish(Duration::from_secs(10)).success());
}

/// Regression: a result the SDK's types reject (one block of an unknown
/// kind, `isError` as a string, no object at all) failed the call with
/// "Unexpected response type", losing what could be read.
#[test]
fn a_result_of_an_odd_shape_keeps_what_can_be_read() {
    let ws = workspace(&[("raw", "{}")]);
    let shaped = |result: &str| call(&ws, "mcp__raw__shaped", &format!(r#"{{"result": {result}}}"#)).0;
    let v = shaped(r#"{"content": [{"type": "text", "text": "kept"}, {"type": "hologram", "n": 1}]}"#);
    assert_eq!(v["success"], true, "{v}");
    let out = v["output"].as_str().unwrap();
    assert!(out.starts_with("kept\n[a `hologram` content block"), "{out}");
    assert_eq!(v["metadata"]["mcp_server"], "raw", "{v}");
    let v = shaped(r#"{"content": [{"type": "text", "text": "no"}], "isError": "true"}"#);
    assert_eq!(v["success"], false, "{v}");
    assert_eq!(v["error"], "no", "{v}");
    let v = shaped("null");
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not a tool result"), "{v}");
}

/// Regression: a bridged tool's output schema was offered, but results
/// that broke it were passed on, and a client that checks them (as the
/// Python SDK does) lost the whole result. Such a result is a failure that
/// says why and keeps the server's text.
#[test]
fn a_result_that_breaks_the_declared_output_schema_fails() {
    let tools = r#"[{"name": "shaped", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]"#;
    let ws = workspace(&[("raw", &format!("{{ TOOLS = '{tools}' }}"))]);
    let shaped = |result: &str| call(&ws, "mcp__raw__shaped", &format!(r#"{{"result": {result}}}"#)).0;
    let v = shaped(r#"{"content": [{"type": "text", "text": "one"}], "structuredContent": {"n": 1}}"#);
    assert_eq!(v["success"], true, "{v}");
    let v = shaped(r#"{"content": [{"type": "text", "text": "word"}], "structuredContent": {"n": "x"}}"#);
    assert_eq!(v["success"], false, "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(
        e.starts_with("word\n") && e.contains("does not match") && e.contains("integer"),
        "{e}"
    );
    let v = shaped(r#"{"content": [{"type": "text", "text": "none"}]}"#);
    assert!(
        v["error"].as_str().unwrap().contains("has no structured content"),
        "{v}"
    );
    // A failure needs none.
    let v = shaped(r#"{"content": [{"type": "text", "text": "broke"}], "isError": true}"#);
    assert_eq!(v["error"], "broke", "{v}");
    // `mcp serve` offers it.
    let mut serve = super::support::RawServe::initialized(&ws);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let listed = serve.reply(Duration::from_secs(20));
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__raw__shaped")
        .unwrap();
    assert_eq!(tool["outputSchema"]["required"][0], "n", "{tool}");
    assert!(serve.finish(Duration::from_secs(10)).success());
}

/// A server without the `tools` capability is ready with no tools (it is
/// not asked for them); a tool whose schema admits no object is left out,
/// with why; generated names avoid every name the server lists.
#[test]
fn what_a_server_lists_is_offered_consistently() {
    let tools = [
        r#"{"name": "read.file", "inputSchema": {"type": "object"}}"#,
        r#"{"name": "read_file", "inputSchema": {"type": "object"}}"#,
        r#"{"name": "read_file_2d6f0437", "inputSchema": {"type": "object"}}"#,
        r#"{"name": "text_only", "inputSchema": {"type": "string"}}"#,
        r#"{"name": "nullable", "inputSchema": {"type": ["object", "null"], "properties": {"a": {"type": "string"}}}}"#,
        r#"{"name": "", "inputSchema": {"type": "object"}}"#,
    ]
    .join(", ");
    let ws = workspace(&[
        ("bare", "{ NO_TOOLS = \"1\" }"),
        ("odd", &format!("{{ TOOLS = '[{tools}]' }}")),
    ]);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    let bare = &v["servers"][0];
    assert_eq!(bare["state"], "ready", "{v}");
    assert_eq!(bare["tools"], 0, "{v}");
    let odd = &v["servers"][1];
    assert_eq!(odd["tools"], 4, "{v}");
    let warning = odd["warnings"][0].as_str().unwrap_or_default();
    assert!(
        warning.contains("`text_only` is left out") && warning.contains("object"),
        "{v}"
    );
    // Regression: a tool with an empty name became `mcp__odd__`.
    assert!(
        odd["warnings"][1]
            .as_str()
            .is_some_and(|w| w.contains("empty name") && w.contains("left out")),
        "{v}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("twice"), "{stderr}");

    // The table says so too, and `tools debug` lists it with the sources'
    // warnings (not only in the log on stderr).
    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("warning: ") && table.contains("`text_only` is left out"),
        "{table}"
    );
    let out = ws.wield().args(["tools", "debug"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("`text_only` is left out"),
        "{out:?}"
    );
    let (list, names) = super::support::listed_tools(&ws, "mcp__odd__");
    assert_eq!(names.len(), 4, "{list}");
    assert!(!list.contains("text_only"), "{list}");
    // The names that need no change keep them; the dotted one gets another.
    for (name, tool) in [
        ("mcp__odd__read_file", "read_file"),
        ("mcp__odd__read_file_2d6f0437", "read_file_2d6f0437"),
    ] {
        assert_eq!(call(&ws, name, "{}").0["output"], format!("called {tool}"));
    }
    let dotted = names
        .iter()
        .find(|n| {
            ![
                "mcp__odd__read_file",
                "mcp__odd__read_file_2d6f0437",
                "mcp__odd__nullable",
            ]
            .contains(&n.as_str())
        })
        .unwrap();
    assert_eq!(call(&ws, dotted, "{}").0["output"], "called read.file");
    // A schema that admits an object among other types is offered (and
    // checked) as the object schema it is.
    let (v, _) = call(&ws, "mcp__odd__nullable", r#"{"a":"x"}"#);
    assert_eq!(v["output"], "called nullable", "{v}");
    let nullable = super::support::mcp_schema_of(&ws, "mcp__odd__nullable");
    assert_eq!(nullable["inputSchema"]["type"], "object", "{nullable}");
    assert_eq!(
        nullable["inputSchema"]["properties"]["a"]["type"], "string",
        "{nullable}"
    );
}

/// Regression: one tool without an `inputSchema` made the SDK fail to read
/// the whole page, and the server was left out with all its tools. Such a
/// tool (and one whose name is not a string) is left out alone, with why.
#[test]
fn a_tool_that_cannot_be_read_is_left_out_alone() {
    let tools = [
        r#"{"name": "ok", "description": "Clears\u001b[2J the screen\u202e", "inputSchema": {"type": "object"}}"#,
        r#"{"name": "schemaless"}"#,
        r#"{"name": 5, "inputSchema": {"type": "object"}}"#,
        r#"{"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}"#,
        r#"{"name": "odd_type", "inputSchema": {"type": "object", "properties": {"a": {"type": "frobnicate"}}}}"#,
        r#"{"name": "remote", "inputSchema": {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/s.json"}}}}"#,
    ]
    .join(", ");
    let ws = workspace(&[("odd", &format!("{{ TOOLS = '[{tools}]' }}"))]);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let odd = &v["servers"][0];
    assert_eq!(odd["state"], "ready", "{v}");
    assert_eq!(odd["tools"], 1, "{v}");
    let warnings = odd["warnings"].to_string();
    assert!(
        warnings.contains("`schemaless` is left out: it has no `inputSchema`"),
        "{warnings}"
    );
    assert!(warnings.contains("tool number 3 of the page is left out"), "{warnings}");
    assert!(
        warnings.contains("`research` is left out") && warnings.contains("task"),
        "{warnings}"
    );
    // Regression: schemas wield cannot compile were counted as tools and
    // then dropped at registration, with a log line on every run.
    for tool in ["odd_type", "remote"] {
        assert!(
            warnings.contains(&format!("`{tool}` is left out: wield cannot use its input schema")),
            "{warnings}"
        );
    }
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warn"), "{out:?}");
    assert_eq!(call(&ws, "mcp__odd__ok", "{}").0["output"], "called ok");
    // Its description is shown, never obeyed by the terminal.
    for args in [&["tools", "list"][..], &["tools", "show", "mcp__odd__ok"]] {
        let out = ws.wield().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Clears\\u{1b}[2J the screen\\u{202e}"), "{text}");
        assert!(!out.stdout.contains(&0x1b), "{text}");
    }
}

/// Regression: a server that crashed while listing its tools was mostly
/// reported as "Transport closed", and one whose list was too large to read
/// as not listing in time, after its whole timeout.
#[test]
fn a_listing_that_fails_says_how() {
    let ws = workspace(&[("crash", "{ LIST = \"crash\" }"), ("huge", "{ LIST = \"huge\" }")]);
    let start = Instant::now();
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let took = start.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let crash = v["servers"][0]["error"].as_str().unwrap_or_default();
    assert!(
        crash.contains("exited (exit status: 7)") && crash.contains("listing broke") && crash.contains("while listing"),
        "{v}"
    );
    let huge = v["servers"][1]["error"].as_str().unwrap_or_default();
    assert!(huge.contains("more than 16 MiB"), "{v}");
    assert!(took < Duration::from_secs(15), "{took:?}");
    // The server's escape sequences are shown, not sent to the terminal.
    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("\\u{1b}[31mlisting broke"), "{table}");
    assert!(!out.stdout.contains(&0x1b), "{table}");
}

/// Regression: a call cut by its timeout told the server from a task of its
/// own, which `wield call` often exited before running: the server went on
/// working on a call nobody would read.
#[test]
fn a_call_cut_by_its_timeout_tells_the_server_before_wield_exits() {
    let ws = workspace(&[("raw", "{}")]);
    for round in 1..=3 {
        let out = ws
            .wield()
            .args([
                "--set",
                "mcp.servers.raw.timeout=1",
                "call",
                "--json",
                "mcp__raw__hold",
                "{}",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["metadata"]["timed_out"], true, "{v}");
        let told = std::fs::read_to_string(ws.ws().join("cancelled")).unwrap_or_default();
        assert_eq!(told.lines().count(), round, "round {round}: {told:?}");
    }
}

/// Regression: a reply the SDK could not parse was dropped, and its call
/// waited for its timeout. Half a surrogate pair is read as U+FFFD (as the
/// TypeScript SDK reads it); a reply that is not JSON fails its call at
/// once, saying why.
#[test]
fn a_reply_that_does_not_parse_is_read_or_fails_its_call_at_once() {
    let ws = workspace(&[("raw", "{}")]);
    let (v, took) = call(&ws, "mcp__raw__cut", "{}");
    assert_eq!(
        (&v["success"], &v["output"]),
        (&true.into(), &"cut \u{fffd}".into()),
        "{v}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let (v, took) = call(&ws, "mcp__raw__nan", "{}");
    assert_eq!(v["success"], false, "{v}");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("failed the call to `nan`") && error.contains("cannot read the server's reply"),
        "{error}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// A server's `instructions` are kept (cut at 2 KiB) and shown by `wield mcp
/// list`: whole in its JSON, their first line (escaped) in its table.
#[test]
fn a_servers_instructions_are_shown() {
    let ws = workspace(&[("raw", "{ INSTRUCTIONS = \"Call ok first.\\u001b[2J\" }")]);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["servers"][0]["instructions"].as_str().unwrap();
    assert!(text.starts_with("Call ok first.\u{1b}[2J\niii"), "{text}");
    assert!(
        text.ends_with('…') && text.len() == 2048 + '…'.len_utf8(),
        "{}",
        text.len()
    );
    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("instructions: Call ok first.\\u{1b}[2J …"), "{table}");
}

/// wield offers the newest protocol revision that has an `initialize`
/// handshake, goes on with a server that answers an older one it speaks,
/// and leaves a server that answers one it does not speak, saying so.
#[test]
fn a_server_answering_a_protocol_version_wield_does_not_speak_is_left() {
    let ws = workspace(&[
        ("old", "{ VERSION = \"2024-11-05\" }"),
        ("future", "{ VERSION = \"2099-01-01\" }"),
    ]);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(ws.ws().join("offered")).unwrap(), "2025-11-25");
    // Listed by name.
    let old = &v["servers"][1];
    assert_eq!((&old["name"], &old["state"]), (&"old".into(), &"ready".into()), "{v}");
    let future = &v["servers"][0];
    assert_eq!(future["state"], "failed", "{v}");
    let why = future["error"].as_str().unwrap();
    assert!(
        why.contains("protocol version `2099-01-01`, which wield does not speak")
            && why.contains("2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25"),
        "{why}"
    );
    let (v, _) = call(&ws, "mcp__old__ok", "{}");
    assert_eq!(v["output"], "called ok", "{v}");
}

/// Regression: a server that always answered with a `nextCursor` had wield
/// ask for page after page, holding every tool, until the start timed out.
/// The listing is bounded, a cursor sent twice ends it, and either way the
/// server fails with the reason.
#[test]
fn a_server_that_pages_without_end_fails_with_the_reason() {
    let ws = workspace(&[("endless", "{ PAGES = \"endless\" }"), ("same", "{ PAGES = \"same\" }")]);
    let start = Instant::now();
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let took = start.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v}");
    let endless = &v["servers"][0];
    assert_eq!(endless["state"], "failed", "{v}");
    let why = endless["error"].as_str().unwrap();
    assert!(why.contains("more than 10000 tools"), "{why}");
    let same = &v["servers"][1];
    assert_eq!(same["state"], "failed", "{v}");
    let why = same["error"].as_str().unwrap();
    assert!(why.contains("same `nextCursor` twice"), "{why}");
    // An empty cursor ends the listing, as the TypeScript SDK takes it.
    let ws = workspace(&[("empty", "{ PAGES = \"empty\" }")]);
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&v["servers"][0]["state"], &v["servers"][0]["tools"]),
        (&"ready".into(), &50.into()),
        "{v}"
    );
    assert!(took < Duration::from_secs(15), "{took:?}");
}

/// Under `mcp serve` (servers started in the background), a server whose
/// every tool is left out still has the reason reach a call of one.
#[test]
fn under_mcp_serve_a_left_out_tool_says_why() {
    let tools = r#"{"name": "text_only", "inputSchema": {"type": "string"}}"#;
    let ws = workspace(&[("odd", &format!("{{ TOOLS = '[{tools}]' }}"))]);
    let mut serve = super::support::RawServe::initialized(&ws);
    serve.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp__odd__text_only","arguments":{}}}"#,
    );
    let r = serve.reply(Duration::from_secs(20));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r.to_string().contains("`text_only` is left out"), "{r}");
    assert!(serve.finish(Duration::from_secs(10)).success());
}
