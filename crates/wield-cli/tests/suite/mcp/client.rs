//! wield's MCP client: external servers as `mcp__NAME__*` tools.

mod raw_http;
mod raw_server;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support;
use super::support::{Ws, everything_config, python, python_scenarios, repo_root};
use crate::peer_cmd::peer_command;

#[test]
fn server_everything_tools_work_through_wield_call() {
    let ws = Ws::new(&everything_config());
    let out = ws.wield().args(["tools", "list"]).output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{list}");
    for t in ["mcp__everything__echo", "mcp__everything__get-sum"] {
        assert!(list.contains(t), "{t} missing:\n{list}");
    }
    // The server's description and schema pass through.
    let echo = super::support::mcp_schema_of(&ws, "mcp__everything__echo");
    assert_eq!(echo["description"], "Echoes back the input string", "{echo}");
    assert_eq!(echo["inputSchema"]["properties"]["message"]["type"], "string", "{echo}");
    assert_eq!(
        echo["inputSchema"]["required"],
        serde_json::json!(["message"]),
        "{echo}"
    );

    let out = ws
        .wield()
        .args([
            "call",
            "--json",
            "mcp__everything__echo",
            r#"{"message":"hello wield"}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");
    assert!(v["output"].as_str().unwrap().contains("hello wield"), "{v}");

    // Also by its provider-safe name, as a model would send it.
    let out = ws
        .wield()
        .args(["call", "--json", "mcp__everything__get-sum", r#"{"a":2,"b":40}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");
    assert!(v["output"].as_str().unwrap().contains("42"), "{v}");

    // The server's schema is enforced before the call leaves wield.
    let out = ws
        .wield()
        .args(["call", "--json", "mcp__everything__get-sum", r#"{"a":"two"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], false, "{v}");

    // A server's readOnlyHint is not trusted: without an approval rule its
    // tools need approval like any other.
    let plain = everything_config().replace("\"mcp__everything__*\"", "");
    let out = Ws::new(&plain)
        .wield()
        .args(["call", "--json", "mcp__everything__echo", r#"{"message":"x"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("approval required"), "{v}");

    // Images come back as attachments.
    let out = ws
        .wield()
        .args(["call", "--json", "mcp__everything__get-tiny-image", "{}"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["metadata"]["attachments"][0]["mime"], "image/png", "{v}");
}

#[test]
fn a_bridged_call_that_outlives_the_server_timeout_is_an_error() {
    // Start-up is quick (under 4 s even on a busy machine); the limit
    // applies to the call itself.
    let ws = Ws::new(&everything_config().replace("timeout = \"30s\"", "timeout = \"4s\""));
    let started = std::time::Instant::now();
    let out = ws
        .wield()
        .args([
            "call",
            "--json",
            "mcp__everything__trigger-long-running-operation",
            r#"{"duration":20,"steps":20}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], false, "{v}");
    assert!(v["error"].as_str().unwrap().contains("did not answer within 4s"), "{v}");
    assert_eq!(v["metadata"]["timed_out"], true, "{v}");
    assert!(started.elapsed().as_secs() < 15, "the call was not cut short");
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
    let ws = Ws::new(&config);

    // Every server starts at once: the hanging one costs its own 1 s, the
    // others report at once, and the working one's tools are all there.
    let start = Instant::now();
    let out = ws.wield().args(["tools", "list"]).output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "a hanging server blocked start-up: {:?}",
        start.elapsed()
    );
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp__everything__echo"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot open the database"), "{stderr}");
    let out = ws
        .wield()
        .args([
            "call",
            "--json",
            "mcp__everything__echo",
            r#"{"message":"still works"}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");

    // A server that does not finish starting is killed with everything it
    // started (here the shell's `sleep`), not just the process wield ran.
    let pid = std::fs::read_to_string(ws.ws().join("grandchild.pid")).unwrap();
    let proc_dir = Path::new("/proc").join(pid.trim());
    let gone = |dir: &Path| {
        std::fs::read_to_string(dir.join("stat")).map_or(true, |s| {
            s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(&proc_dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        gone(&proc_dir),
        "the hanging server's child {} outlived wield",
        pid.trim()
    );

    // `mcp list` exits 1 when an enabled server could not be started.
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let server = |name: &str| {
        v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {v}"))
    };
    assert_eq!(server("everything")["state"], "ready");
    assert!(server("everything")["tools"].as_u64().unwrap() >= 10, "{v}");
    let broken = server("broken");
    assert_eq!(broken["state"], "failed");
    let why = broken["error"].as_str().unwrap();
    assert!(
        why.contains("exited") && why.contains("cannot open the database"),
        "{why}"
    );
    assert_eq!(server("hangs")["state"], "failed");
    assert!(server("hangs")["error"].as_str().unwrap().contains("1s"), "{v}");
    assert!(
        server("missing")["error"].as_str().unwrap().contains("no such file"),
        "{v}"
    );
    assert_eq!(server("off")["state"], "disabled");
    // Regression: an HTTP server whose connection was refused said only
    // "error sending request for url"; the cause is told.
    let why = server("refused")["error"].as_str().unwrap().to_owned();
    assert!(why.contains("Connection refused"), "{why}");
    // Regression: a mistake in one server's table stopped every command;
    // it fails that server's start, saying what is wrong.
    assert_eq!(server("typo")["state"], "failed");
    let why = server("typo")["error"].as_str().unwrap().to_owned();
    assert!(
        why.contains("mcp.servers.typo.timeout") && why.contains("\"soon\""),
        "{why}"
    );

    // Regression: a call of a disabled server's tool said only "unknown tool".
    let out = ws.wield().args(["call", "mcp__off__x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool") && stderr.contains("MCP server `off` is disabled in the config"),
        "{stderr}"
    );

    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("broken") && text.contains("failed") && text.contains("error:"),
        "{text}"
    );
    // Each server's line: its name, state and tool count.
    let line = |name: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name} in\n{text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    let everything = line("everything");
    assert_eq!(everything[1], "ready", "{text}");
    assert!(everything[2].parse::<usize>().unwrap() >= 10, "{text}");
    assert_eq!(line("broken")[1..3], ["failed", "0"], "{text}");

    let out = ws.wield().args(["tools", "debug"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("mcp:broken") && text.contains("cannot open the database"),
        "{text}"
    );
    assert!(!text.contains("mcp__broken__"), "{text}");
}

/// Commands that use no bridged tool start no server, so a slow one
/// delays nothing; a call of a bridged tool starts only its own server.
#[test]
fn commands_start_only_the_servers_they_need() {
    let ws = Ws::new(
        "[mcp.servers.slow]\ncommand = \"sleep\"\nargs = [\"30\"]\ntimeout = \"6s\"\n\n\
         [mcp.servers.other]\ncommand = \"sleep\"\nargs = [\"30\"]\ntimeout = \"6s\"\n",
    );
    for args in [
        &["call", "calculator", r#"{"expression":"6*7"}"#][..],
        &["sandbox", "check"],
        &["approvals", "list"],
    ] {
        let start = Instant::now();
        let out = ws.wield().args(args).output().unwrap();
        assert!(out.status.code().is_some_and(|c| c < 2), "{args:?}: {out:?}");
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{args:?} waited for the servers: {:?}",
            start.elapsed()
        );
    }
    let start = Instant::now();
    let out = ws
        .wield()
        .args(["-y", "patch", "apply", "-"])
        .write_stdin("*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch\n")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "patch apply waited: {:?}",
        start.elapsed()
    );

    // A bridged call waits for its own server only (6 s, not 12 s).
    let start = Instant::now();
    let out = ws.wield().args(["call", "mcp__slow__x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let error = stderr
        .lines()
        .find(|l| l.starts_with("error: unknown tool"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains("mcp:slow: MCP server `slow` did not complete its start"),
        "{error}"
    );
    assert!(!stderr.contains("`other`"), "{stderr}");
    assert!(start.elapsed() < Duration::from_secs(11), "{:?}", start.elapsed());
}

/// A built-in tool runs in `ws`, whatever its servers do.
#[allow(clippy::unwrap_used)]
fn calculator_runs(ws: &Ws) {
    let out = ws
        .wield()
        .args(["call", "calculator", r#"{"expression":"1+1"}"#])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn deferred_servers_and_bad_config() {
    let ws = Ws::new(&format!("{}deferred = true\n", everything_config()));
    let out = ws.wield().args(["tools", "debug", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let echo = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .cloned()
        .unwrap();
    assert_eq!(echo["status"], "deferred", "{echo}");

    // A mistake in a server's table fails that server (`mcp list` exits 1
    // saying why), not every command.
    let ws = Ws::new("[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n");
    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("both"), "{out:?}");
    calculator_runs(&ws);

    // Regression: a `${VAR}` that is not set became an empty string.
    let ws = Ws::new(
        "[mcp.servers.x]\nurl = \"http://127.0.0.1:1/mcp\"\n\
         headers = { Authorization = \"Bearer ${WIELD_TEST_SURELY_UNSET_TOKEN}\" }\n",
    );
    // It fails that server only (a warning, `mcp list` exits 1), and
    // commands that do not use it run.
    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("failed")
            && stdout.contains("mcp.servers.x.headers.Authorization")
            && stdout.contains("WIELD_TEST_SURELY_UNSET_TOKEN is not set"),
        "{stdout}"
    );
    calculator_runs(&ws);

    // Regression: sections of the wrong type read as "no servers".
    for config in [
        "[mcp]\nservers = 5\n",
        "[mcp]\nservers = []\n",
        "mcp = \"x\"\n",
        "mcp = 5\n",
    ] {
        let out = Ws::new(config).wield().args(["mcp", "list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {stderr}");
        assert!(stderr.contains("must be a table"), "{config}: {stderr}");
    }
}

/// server-everything bridged through `wield mcp serve`, seen by the Python
/// SDK's client: its progress notifications reach the client, its task-only
/// tool is left out, its roots are the workspace, and it is restarted on
/// next use after a crash.
#[test]
fn server_everything_progress_roots_and_restart_through_mcp_serve() {
    python_scenarios("http", &["everything_restart"]);
}

#[test]
fn a_streamable_http_server_with_a_token_header() {
    // Workspace A serves its tools over HTTP behind a token.
    let a = Ws::new("");
    std::fs::write(a.ws().join("a.txt"), "served over http\n").unwrap();
    let (mut server, url) = super::support::serve_http(&a, &["--token", "tok-123"]);

    // Workspace B bridges it, the token coming from the environment.
    let b = Ws::new(&format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__self__*\"]\n\n\
         [mcp.servers.self]\nurl = \"{url}\"\nheaders = {{ Authorization = \"Bearer ${{SELF_TOKEN}}\" }}\ntimeout = \"10s\"\n"
    ));
    let out = b
        .wield()
        .env("SELF_TOKEN", "tok-123")
        .args(["call", "--json", "mcp__self__calculator", r#"{"expression":"6*7"}"#])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v} {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(v["output"].as_str().unwrap().trim(), "42");

    let out = b
        .wield()
        .env("SELF_TOKEN", "tok-123")
        .args([
            "call",
            "--json",
            "mcp__self__read",
            r#"{"path":"a.txt","offset":null,"limit":null}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["output"].as_str().unwrap().contains("served over http"), "{v}");

    // A wrong token: the server is reported, its tools absent.
    let out = b
        .wield()
        .env("SELF_TOKEN", "wrong")
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["servers"][0]["state"], "failed", "{v}");
    // Regression: it said to set the header that was set.
    let why = v["servers"][0]["error"].as_str().unwrap();
    assert!(why.contains("did not accept the `Authorization` header"), "{why}");
    let _ = server.kill();
    let _ = server.wait();
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
    let ws = Ws::new(&format!(
        "[mcp.servers.found]\nurl = \"http://127.0.0.1:{port}/mcp\"\ntimeout = \"10s\"\n\n\
         [mcp.servers.moved]\nurl = \"http://127.0.0.1:{port}/old\"\ntimeout = \"10s\"\n"
    ));
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let _ = redirector.kill();
    let _ = redirector.wait();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let found = v["servers"][0]["error"].as_str().unwrap_or_default();
    assert!(
        found.contains(&format!(
            "it redirects to http://127.0.0.1:{port}/mcp/ (HTTP 302 Found), and wield follows only"
        )) && found.contains(&format!("set `url = \"http://127.0.0.1:{port}/mcp/\"`")),
        "{v}"
    );
    let moved = v["servers"][1]["error"].as_str().unwrap_or_default();
    assert!(
        moved.contains(
            "it redirects to http://127.0.0.1:9/mcp (HTTP 307 Temporary Redirect), which is another host or port"
        ) && moved.contains("set `url = \"http://127.0.0.1:9/mcp\"`"),
        "{v}"
    );
}

/// A server on the official Python SDK (`tests/peers/server.py` of
/// wield-mcp), started from a relative script path in its configured `cwd`
/// with its configured `env`: its working directory and environment, its
/// structured content, and its sampling and elicitation requests, which
/// `wield call` (no front-end that offers them) refuses.
#[test]
fn python_sdk_server_env_cwd_structured_content_and_refused_requests() {
    let config = format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__peer__*\"]\n\n\
         [mcp.servers.peer]\ncommand = {:?}\nargs = [\"peer.py\"]\ncwd = \"servers/peer\"\n\
         env = {{ PEER_VALUE = \"from-config\" }}\ntimeout = \"30s\"\n",
        python().display().to_string()
    );
    let ws = Ws::new(&config);
    let dir = ws.ws().join("servers/peer");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        repo_root().join("crates/wield-mcp/tests/peers/server.py"),
        dir.join("peer.py"),
    )
    .unwrap();
    let call = |tool: &str, args: &str| -> Value {
        let out = ws.wield().args(["call", "--json", tool, args]).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    };

    // Without `cwd` a server runs in the workspace, wherever wield was
    // started from.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = ws
        .wield()
        .current_dir(elsewhere.path())
        .arg("-C")
        .arg(ws.ws())
        .args([
            "-y",
            "--set",
            &format!("mcp.servers.abs.command={:?}", python().display().to_string()),
            "--set",
            &format!("mcp.servers.abs.args=[{:?}]", dir.join("peer.py").display().to_string()),
            "call",
            "--json",
            "mcp__abs__where",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let seen: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        Path::new(seen["cwd"].as_str().unwrap()),
        ws.ws().canonicalize().unwrap(),
        "{seen}"
    );

    // The script is found only from `cwd`; `env` reaches the server.
    let v = call("mcp__peer__where", "{}");
    assert_eq!(v["success"], true, "{v}");
    let seen: Value = serde_json::from_str(v["output"].as_str().unwrap()).unwrap();
    assert_eq!(
        Path::new(seen["cwd"].as_str().unwrap()),
        dir.canonicalize().unwrap(),
        "{seen}"
    );
    assert_eq!(seen["value"], "from-config", "{seen}");

    // Structured content the text leaves out follows the text.
    let v = call("mcp__peer__weather", r#"{"city":"Oslo"}"#);
    assert_eq!(v["success"], true, "{v}");
    let output = v["output"].as_str().unwrap();
    assert!(output.starts_with("Mild in Oslo.\n"), "{output}");
    let data: Value = serde_json::from_str(&output["Mild in Oslo.\n".len()..]).unwrap();
    assert_eq!(data["temperature"], 21, "{output}");
    assert_eq!(v["metadata"]["structured_content"]["city"], "Oslo", "{v}");

    // A list the SDK sends as one block per item and as structured content
    // is shown once.
    let v = call("mcp__peer__primes", r#"{"below":12}"#);
    assert_eq!(v["output"], "2\n3\n5\n7\n11", "{v}");

    // `read.file` and `read_file` both stay reachable: the name that needed
    // no change keeps it, the other gets a hash of its original name.
    let (list, hashed) = super::support::listed_tools(&ws, "mcp__peer__read_file_");
    assert_eq!(hashed.len(), 1, "{list}");
    assert_eq!(call("mcp__peer__read_file", "{}")["output"], "underscored");
    assert_eq!(call(&hashed[0], "{}")["output"], "dotted");

    // A tool's own `timeout` argument is passed to it and is not wield's
    // time limit; the server's `timeout` (30 s) is, not `executor.timeout`.
    let out = ws
        .wield()
        .args([
            "--set",
            "executor.timeout=1",
            "call",
            "--json",
            "mcp__peer__pause",
            r#"{"seconds":1.5,"timeout":1}"#,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["output"], "slept 1.5s (timeout argument 1 ms)", "{v}");

    // Requests to the client's model or user get a clear refusal.
    let v = call("mcp__peer__ask_model", r#"{"prompt":"hi"}"#);
    let output = v["output"].as_str().unwrap();
    assert!(
        output.contains("client error") && output.contains("sampling is not supported"),
        "{v}"
    );
    let v = call("mcp__peer__ask_user", r#"{"question":"name?"}"#);
    let output = v["output"].as_str().unwrap();
    assert!(
        output.contains("client error") && output.contains("elicitation is not supported"),
        "{v}"
    );
}

/// What a bridged server starts itself (here a `sleep` beside the server,
/// as `npx` and shell wrappers do) is stopped with it when wield is done:
/// after `wield call`, after `wield mcp serve` reaches the end of its input,
/// and after `wield mcp serve` gets SIGTERM.
#[test]
fn a_bridged_servers_children_end_with_wield() {
    let ws = Ws::new("");
    let dir = ws.ws();
    std::fs::copy(
        repo_root().join("crates/wield-mcp/tests/peers/server.py"),
        dir.join("peer.py"),
    )
    .unwrap();
    let config = format!(
        "[approval]\nauto_approve = [\"$standard\", \"mcp__g__*\"]\n\n\
         [mcp.servers.g]\ncommand = \"sh\"\n\
         args = [\"-c\", \"sleep 300 & echo $! > child.pid; exec {} peer.py\"]\n",
        python().display()
    );
    std::fs::write(dir.join(".wield/config.toml"), config).unwrap();
    // `mcp serve` starts its servers in the background: the file may come
    // after the handshake.
    let child = || -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(dir.join("child.pid")).is_ok_and(|t| t.ends_with('\n'))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = std::fs::read_to_string(dir.join("child.pid")).unwrap();
        std::fs::remove_file(dir.join("child.pid")).unwrap();
        text.trim().parse().unwrap()
    };
    let gone = |pid: u32| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
            let dead = stat.map_or(true, |s| {
                s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z'))
            });
            if dead {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    let out = ws.wield().args(["call", "--json", "mcp__g__where"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v}");
    let pid = child();
    assert!(gone(pid), "after wield call, the server's child {pid} still runs");

    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    for how in ["end of input", "SIGTERM"] {
        let mut serve = super::support::RawServe::start(&ws);
        serve.send(init);
        let reply = serve.reply(Duration::from_secs(20));
        assert!(reply["result"]["serverInfo"].is_object(), "{reply}");
        let pid = child();
        let status = if how == "SIGTERM" {
            let _ = Command::new("kill").arg(serve.child.id().to_string()).status();
            serve.wait(Duration::from_secs(20))
        } else {
            serve.finish(Duration::from_secs(20))
        };
        assert!(status.success(), "{how}: {status:?}");
        assert!(gone(pid), "after {how}, the server's child {pid} still runs");
    }
}

/// SIGTERM while a bridged server is still starting (for `wield call`, and
/// for `wield mcp serve --http`, which starts its servers in the
/// background) ends wield at once, and the server's whole group with it,
/// even one that ignores SIGTERM.
#[test]
fn sigterm_while_a_server_starts_stops_it_too() {
    let ws = Ws::new(
        "[mcp.servers.slow]\ncommand = \"sh\"\n\
         args = [\"-c\", \"echo $$ > server.pid; trap '' TERM; sleep 300; sleep 300\"]\ntimeout = \"60s\"\n",
    );
    let dir = ws.ws();
    let pid_file = dir.join("server.pid");
    let server_pid = || -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(t) = std::fs::read_to_string(&pid_file)
                && t.ends_with('\n')
            {
                std::fs::remove_file(&pid_file).unwrap();
                return t.trim().parse().unwrap();
            }
            assert!(Instant::now() < deadline, "the server never started");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
    };
    for args in [
        vec!["call", "mcp__slow__x", "{}"],
        vec!["mcp", "serve", "--http", "127.0.0.1:0"],
    ] {
        let mut wield = ws
            .command()
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = server_pid();
        let _ = Command::new("kill").arg(wield.id().to_string()).status();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = wield.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "{args:?}: wield ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        // Regression: wield waited out a grace for the end of input, then
        // the runtime's end, then the stragglers' (3 s in all); at a signal
        // the servers get SIGTERM at once, and SIGKILL after one grace.
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "{args:?}: wield took {:?} to stop",
            started.elapsed()
        );
        if args[0] == "call" {
            assert_eq!(status.code(), Some(130), "{args:?}");
        }
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !alive(pid),
            "{args:?}: the server outlived wield by {:?}",
            started.elapsed()
        );
    }
}

/// A command that is not there says where it was looked for: a path is
/// relative to the server's `cwd`, a bare name is looked up on PATH.
#[test]
fn a_missing_command_says_where_it_was_looked_for() {
    let ws = Ws::new(
        "[mcp.servers.rel]\ncommand = \"./not-here.sh\"\n\n[mcp.servers.bare]\ncommand = \"wield-no-such-command\"\n",
    );
    let out = ws.wield().args(["mcp", "list", "--json"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = |i: usize| v["servers"][i]["error"].as_str().unwrap_or_default().to_owned();
    assert!(why(0).contains("command not found (check `command` and PATH)"), "{v}");
    assert!(
        why(1).contains("no such file (a path in `command` is relative to the server's `cwd`"),
        "{v}"
    );
}
