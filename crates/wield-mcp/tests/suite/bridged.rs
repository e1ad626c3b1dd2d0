//! wield's MCP client through the runtime that bridges it: external
//! servers (`@modelcontextprotocol/server-everything`, the official Python
//! SDK's server in `tests/peers/server.py`, servers that fail or hang at
//! start-up) as `mcp__NAME__*` tools, called through the runtime's
//! pipeline as a front-end calls them. What the `wield` commands print and
//! exit with, and which servers each command starts, is tested in
//! wield-cli.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_runtime::RuntimeOptions;
use wield_test_support::command::peer_command;
use wield_test_support::pipeline::Loaded;

use super::workspace::{Workspace, everything_config, peer_server, python};

#[test]
fn server_everything_tools_work_through_the_runtime() {
    let ws = Workspace::new(&everything_config());
    let rt = ws.load();
    let tools = rt.tools();
    for t in ["mcp__everything__echo", "mcp__everything__get-sum"] {
        assert!(tools.iter().any(|n| n == t), "{t} missing: {tools:?}");
    }
    // The server's description and schema pass through.
    let echo = rt.mcp_schema_of("mcp__everything__echo");
    assert_eq!(echo["description"], "Echoes back the input string", "{echo}");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string", "{echo}");
    assert_eq!(echo["inputSchema"]["required"], json!(["message"]), "{echo}");

    let v = rt.call("mcp__everything__echo", json!({"message": "hello wield"}));
    assert_eq!(v["success"], true, "{v}");
    assert!(v["output"].as_str().unwrap().contains("hello wield"), "{v}");

    // Also by its provider-safe name, as a model would send it.
    let v = rt.call("mcp__everything__get-sum", json!({"a": 2, "b": 40}));
    assert_eq!(v["success"], true, "{v}");
    assert!(v["output"].as_str().unwrap().contains("42"), "{v}");

    // The server's schema is enforced before the call leaves wield.
    let v = rt.call("mcp__everything__get-sum", json!({"a": "two"}));
    assert_eq!(v["success"], false, "{v}");

    // Images come back as attachments.
    let v = rt.call("mcp__everything__get-tiny-image", json!({}));
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["metadata"]["attachments"][0]["mime"], "image/png", "{v}");
    rt.end();

    // A server's readOnlyHint is not trusted: without an approval rule its
    // tools need approval like any other.
    let plain = everything_config().replace("\"mcp__everything__*\"", "");
    let rt = Workspace::new(&plain).load();
    let v = rt.call("mcp__everything__echo", json!({"message": "x"}));
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");
    rt.end();
}

#[test]
fn a_bridged_call_that_outlives_the_server_timeout_is_an_error() {
    // The limit applies to the start too: 8 s, which the server's start
    // keeps to even beside the suite's other tests on a busy machine (4 s
    // did not); the call must be cut short at it.
    let ws = Workspace::new(&everything_config().replace("timeout = \"30s\"", "timeout = \"8s\""));
    let rt = ws.load();
    let started = Instant::now();
    let v = rt.call(
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 20, "steps": 20}),
    );
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("did not answer within 8s"), "{v}");
    assert_eq!(v["metadata"]["timed_out"], true, "{v}");
    assert!(started.elapsed().as_secs() < 15, "the call was not cut short");
    rt.end();
}

/// Whether the process `pid` has ended (gone, or a zombie).
fn gone(pid: &str) -> bool {
    std::fs::read_to_string(Path::new("/proc").join(pid).join("stat")).map_or(true, |s| {
        s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))
    })
}

/// Waits up to `limit` for the process `pid` to end; whether it did.
fn ends_within(pid: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while !gone(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    gone(pid)
}

#[test]
fn a_server_that_exits_or_hangs_at_startup_is_reported_and_blocks_nothing() {
    // A port nothing listens on.
    let refused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!(
        "{}\n[mcp.servers.refused]\nurl = \"http://127.0.0.1:{refused}/mcp\"\n\n\
         [mcp.servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'cannot open the database' >&2; exit 3\"]\n\n\
         [mcp.servers.hangs]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 300 & echo $! > grandchild.pid; wait\"]\ntimeout = \"1s\"\n\n\
         [mcp.servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n\n\
         [mcp.servers.off]\ncommand = \"sh\"\nenabled = false\n\n\
         [mcp.servers.typo]\ncommand = \"sh\"\ntimeout = \"soon\"\n",
        everything_config()
    );
    let ws = Workspace::new(&config);

    // Every server starts at once: the hanging one costs its own 1 s, the
    // others report at once, and the working one's tools are all there.
    let start = Instant::now();
    let rt = ws.load();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a hanging server blocked start-up: {:?}",
        start.elapsed()
    );
    assert!(rt.tools().iter().any(|t| t == "mcp__everything__echo"));
    let v = rt.call("mcp__everything__echo", json!({"message": "still works"}));
    assert_eq!(v["success"], true, "{v}");

    // A server that does not finish starting is killed with everything it
    // started (here the shell's `sleep`), not just the process wield ran.
    let pid = std::fs::read_to_string(ws.path().join("grandchild.pid")).unwrap();
    assert!(
        ends_within(pid.trim(), Duration::from_secs(5)),
        "the hanging server's child {} outlived its start",
        pid.trim()
    );

    let state = |name: &str| rt.server(name).state.as_str();
    assert_eq!(state("everything"), "ready");
    assert!(rt.server("everything").tools >= 10, "{:?}", rt.servers());
    assert_eq!(state("broken"), "failed");
    let why = rt.error("broken");
    assert!(
        why.contains("exited") && why.contains("cannot open the database"),
        "{why}"
    );
    assert_eq!(state("hangs"), "failed");
    assert!(rt.error("hangs").contains("1s"), "{:?}", rt.servers());
    assert!(rt.error("missing").contains("no such file"), "{:?}", rt.servers());
    assert_eq!(state("off"), "disabled");
    // Regression: an HTTP server whose connection was refused said only
    // "error sending request for url"; the cause is told.
    let why = rt.error("refused");
    assert!(why.contains("Connection refused"), "{why}");
    // Regression: a mistake in one server's table stopped every command;
    // it fails that server's start, saying what is wrong.
    assert_eq!(state("typo"), "failed");
    let why = rt.error("typo");
    assert!(
        why.contains("mcp.servers.typo.timeout") && why.contains("\"soon\""),
        "{why}"
    );

    // Regression: a call of a disabled server's tool said only "unknown tool".
    let v = rt.call("mcp__off__x", json!({}));
    assert_eq!(v["success"], false, "{v}");
    let why = v["error"].as_str().unwrap();
    assert!(
        why.contains("unknown tool") && why.contains("MCP server `off` is disabled in the config"),
        "{why}"
    );

    // The failed server is a source whose tools are missing, saying why;
    // none of its tools is registered.
    let set = rt.0.runtime.tools().current();
    let warnings = set.registry.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.source == "mcp:broken" && w.message.contains("cannot open the database")),
        "{warnings:?}"
    );
    assert!(!rt.tools().iter().any(|t| t.starts_with("mcp__broken__")));
    rt.end();
}

/// A built-in tool runs in `ws`, whatever its servers do.
fn calculator_runs(ws: &Workspace) {
    let rt = ws.load();
    let v = rt.call("calculator", json!({"expression": "1+1"}));
    assert_eq!(v["success"], true, "{v}");
    rt.end();
}

#[test]
fn deferred_servers_and_bad_config() {
    let ws = Workspace::new(&format!("{}deferred = true\n", everything_config()));
    let rt = ws.load();
    let decisions = serde_json::to_value(rt.0.runtime.tools().current().policy.decisions()).unwrap();
    let echo = decisions
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .cloned()
        .unwrap_or_else(|| panic!("{decisions}"));
    assert_eq!(echo["status"], "deferred", "{echo}");
    rt.end();

    // A mistake in a server's table fails that server, saying why, not
    // every command.
    let ws = Workspace::new("[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n");
    let rt = ws.load();
    assert_eq!(rt.server("x").state.as_str(), "failed");
    assert!(rt.error("x").contains("both"), "{:?}", rt.servers());
    rt.end();
    calculator_runs(&ws);

    // Regression: a `${VAR}` that is not set became an empty string.
    let ws = Workspace::new(
        "[mcp.servers.x]\nurl = \"http://127.0.0.1:1/mcp\"\n\
         headers = { Authorization = \"Bearer ${WIELD_TEST_SURELY_UNSET_TOKEN}\" }\n",
    );
    // It fails that server only, and what does not use it runs.
    let rt = ws.load();
    assert_eq!(rt.server("x").state.as_str(), "failed");
    let why = rt.error("x");
    assert!(
        why.contains("mcp.servers.x.headers.Authorization") && why.contains("WIELD_TEST_SURELY_UNSET_TOKEN is not set"),
        "{why}"
    );
    rt.end();
    calculator_runs(&ws);

    // Regression: sections of the wrong type read as "no servers".
    for config in [
        "[mcp]\nservers = 5\n",
        "[mcp]\nservers = []\n",
        "mcp = \"x\"\n",
        "mcp = 5\n",
    ] {
        let Err(e) = Workspace::new(config).load_with(&[]) else {
            panic!("{config}: loaded");
        };
        assert!(e.is_usage(), "{config}: {e}");
        // The configuration's check or the MCP section's, whichever sees it
        // first; each says what to write.
        let e = e.to_string();
        assert!(
            e.contains("must be a table") || e.contains("is a table of settings"),
            "{config}: {e}"
        );
    }
}

/// A `url` that redirects in a way wield does not follow (a 302, which
/// would turn the POST into a GET; a 307 to another port, which would hand
/// it the session and headers) fails the start with where it leads and the
/// `url` to set instead.
#[test]
fn a_redirecting_url_says_where_it_leads() {
    const REDIRECTOR: &str = "import http.server, sys\n\
        class H(http.server.BaseHTTPRequestHandler):\n\
        \x20   def do_POST(self):\n\
        \x20       code, to = (302, '/mcp/') if self.path == '/mcp' else (307, 'http://127.0.0.1:9/mcp')\n\
        \x20       self.send_response(code); self.send_header('Location', to)\n\
        \x20       self.send_header('Content-Length', '0'); self.end_headers()\n\
        \x20   do_GET = do_POST\n\
        \x20   def log_message(self, *a): pass\n\
        s = http.server.HTTPServer(('127.0.0.1', 0), H)\n\
        print(s.server_address[1], flush=True)\n\
        s.serve_forever()\n";
    let mut redirector = peer_command(python())
        .args(["-c", REDIRECTOR])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(redirector.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    let port = port.trim();
    let ws = Workspace::new(&format!(
        "[mcp.servers.found]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout = \"10s\"\n\n\
         [mcp.servers.moved]\nurl = \"http://127.0.0.1:{port}/old\"\ntimeout = \"10s\"\n"
    ));
    let rt = ws.load();
    let _ = redirector.kill();
    let _ = redirector.wait();
    let found = rt.error("found");
    assert!(
        found.contains(&format!(
            "it redirects to http://127.0.0.1:{port}/mcp/ (HTTP 302 Found), and wield follows only"
        )) && found.contains(&format!("set `url = \"http://127.0.0.1:{port}/mcp/\"`")),
        "{found}"
    );
    let moved = rt.error("moved");
    assert!(
        moved.contains(
            "it redirects to http://127.0.0.1:9/mcp (HTTP 307 Temporary Redirect), which is another host or port"
        ) && moved.contains("set `url = \"http://127.0.0.1:9/mcp\"`"),
        "{moved}"
    );
    rt.end();
}

/// A server on the official Python SDK, started from a relative script
/// path in its configured `cwd` with its configured `env`: its working
/// directory and environment, its structured content, and its sampling and
/// elicitation requests, which a runtime without a front-end that offers
/// them refuses.
#[test]
fn python_sdk_server_env_cwd_structured_content_and_refused_requests() {
    let config = format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__peer__*\"]\n\n\
         [mcp.servers.peer]\ncommand = {:?}\nargs = [\"peer.py\"]\ncwd = \"servers/peer\"\n\
         env = {{ PEER_VALUE = \"from-config\" }}\ntimeout = \"30s\"\n",
        python().display().to_string()
    );
    let ws = Workspace::new(&config);
    let dir = ws.path().join("servers/peer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(peer_server(), dir.join("peer.py")).unwrap();

    // Without `cwd` a server runs in the workspace, wherever the front-end
    // runs (this test runs in the crate's directory).
    let abs = ws
        .load_with(&[
            &format!("mcp.servers.abs.command={:?}", python().display().to_string()),
            &format!("mcp.servers.abs.args=[{:?}]", dir.join("peer.py").display().to_string()),
            "approval.auto_approve=[\"mcp__abs__*\"]",
        ])
        .unwrap();
    let v = abs.call("mcp__abs__where", json!({}));
    let seen: Value = serde_json::from_str(v["output"].as_str().unwrap_or_else(|| panic!("{v}"))).unwrap();
    assert_eq!(
        Path::new(seen["cwd"].as_str().unwrap()),
        ws.path().canonicalize().unwrap(),
        "{seen}"
    );
    abs.end();

    let rt = ws.load_with(&["executor.timeout=1"]).unwrap();
    // The script is found only from `cwd`; `env` reaches the server.
    let v = rt.call("mcp__peer__where", json!({}));
    assert_eq!(v["success"], true, "{v}");
    let seen: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        Path::new(seen["cwd"].as_str().unwrap()),
        dir.canonicalize().unwrap(),
        "{seen}"
    );
    assert_eq!(seen["value"], "from-config", "{seen}");

    // Structured content the text leaves out follows the text.
    let v = rt.call("mcp__peer__weather", json!({"city": "Oslo"}));
    assert_eq!(v["success"], true, "{v}");
    let output = v["output"].as_str().unwrap();
    assert!(output.starts_with("Mild in Oslo.\n"), "{output}");
    let data: Value = serde_json::from_str(&output["Mild in Oslo.\n".len()..]).unwrap();
    assert_eq!(data["temperature"], 21, "{output}");
    assert_eq!(v["metadata"]["structured_content"]["city"], "Oslo", "{v}");

    // A list the SDK sends as one block per item and as structured content
    // is shown once.
    let v = rt.call("mcp__peer__primes", json!({"below": 12}));
    assert_eq!(v["output"], "2\n3\n5\n7\n11", "{v}");

    // `read.file` and `read_file` both stay reachable: the name that needed
    // no change keeps it, the other gets a hash of its original name.
    let tools = rt.tools();
    let hashed: Vec<&String> = tools
        .iter()
        .filter(|t| t.starts_with("mcp__peer__read_file_"))
        .collect();
    assert_eq!(hashed.len(), 1, "{tools:?}");
    assert_eq!(rt.call("mcp__peer__read_file", json!({}))["output"], "underscored");
    assert_eq!(rt.call(hashed[0], json!({}))["output"], "dotted");

    // A tool's own `timeout` argument is passed to it and is not wield's
    // time limit; the server's `timeout` (30 s) is, not `executor.timeout`
    // (1 s here).
    let v = rt.call("mcp__peer__pause", json!({"seconds": 1.5, "timeout": 1}));
    assert_eq!(v["output"], "slept 1.5s (timeout argument 1 ms)", "{v}");

    // Requests to the client's model or user get a clear refusal.
    let v = rt.call("mcp__peer__ask_model", json!({"prompt": "hi"}));
    let output = v["output"].as_str().unwrap();
    assert!(
        output.contains("client error") && output.contains("sampling is not supported"),
        "{v}"
    );
    let v = rt.call("mcp__peer__ask_user", json!({"question": "name?"}));
    let output = v["output"].as_str().unwrap();
    assert!(
        output.contains("client error") && output.contains("elicitation is not supported"),
        "{v}"
    );
    rt.end();
}

/// What a bridged server starts itself (here a `sleep` beside the server,
/// as `npx` and shell wrappers do) is stopped with it when the front-end
/// ends the runtime's servers.
#[test]
fn a_bridged_servers_children_end_with_the_runtime() {
    let ws = Workspace::new(&format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__g__*\"]\n\n\
         [mcp.servers.g]\ncommand = \"sh\"\n\
         args = [\"-c\", \"sleep 300 & echo $! > child.pid; exec {} peer.py\"]\n",
        python().display()
    ));
    std::fs::copy(peer_server(), ws.path().join("peer.py")).unwrap();
    let rt = ws.load();
    let v = rt.call("mcp__g__where", json!({}));
    assert_eq!(v["success"], true, "{v}");
    let pid = std::fs::read_to_string(ws.path().join("child.pid")).unwrap();
    let pid = pid.trim();
    assert!(!gone(pid), "the server's child {pid} ended before the runtime");
    rt.end();
    assert!(
        ends_within(pid, Duration::from_secs(10)),
        "after the runtime's end, the server's child {pid} still runs"
    );
}

/// A command that is not there says where it was looked for: a path is
/// relative to the server's `cwd`, a bare name is looked up on PATH.
#[test]
fn a_missing_command_says_where_it_was_looked_for() {
    let ws = Workspace::new(
        "[mcp.servers.rel]\ncommand = \"./not-here.sh\"\n\n[mcp.servers.bare]\ncommand = \"wield-no-such-command\"\n",
    );
    let rt = ws.load();
    let bare = rt.error("bare");
    assert!(bare.contains("command not found (check `command` and PATH)"), "{bare}");
    let rel = rt.error("rel");
    assert!(
        rel.contains("no such file (a path in `command` is relative to the server's `cwd`"),
        "{rel}"
    );
    rt.end();
}

/// A front-end's stop while a server is still starting ends the load at
/// once ([`wield_runtime::Error::Interrupted`]), and the server's whole
/// group with it, even one that ignores SIGTERM. (How `wield` turns its
/// signals into that stop is tested in wield-cli.)
#[test]
fn a_stop_while_a_server_starts_ends_the_load_and_the_server() {
    let ws = Workspace::new(
        "[mcp.servers.slow]\ncommand = \"sh\"\n\
         args = [\"-c\", \"echo $$ > server.pid; trap '' TERM; sleep 300; sleep 300\"]\ntimeout = \"60s\"\n",
    );
    let stop = CancellationToken::new();
    let pid_file = ws.path().join("server.pid");
    let stopper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // Past this the load ends at the server's own timeout instead.
            let deadline = Instant::now() + Duration::from_secs(50);
            loop {
                if let Ok(t) = std::fs::read_to_string(&pid_file)
                    && t.ends_with('\n')
                {
                    stop.cancel();
                    return (t.trim().to_owned(), Instant::now());
                }
                assert!(Instant::now() < deadline, "the server never started");
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let loaded = Loaded::with_options(ws.path(), RuntimeOptions::builder().stop(stop).build());
    let (pid, stopped) = stopper.join().unwrap();
    let took = stopped.elapsed();
    assert!(
        matches!(loaded, Err(wield_runtime::Error::Interrupted)),
        "{:?}",
        loaded.err().map(|e| e.to_string())
    );
    assert!(took < Duration::from_millis(1500), "the load took {took:?} to stop");
    assert!(
        ends_within(&pid, Duration::from_secs(10)),
        "the server outlived the stop by {:?}",
        stopped.elapsed()
    );
}
