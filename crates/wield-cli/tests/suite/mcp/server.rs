//! `wield mcp serve` driven by the official Python MCP SDK.

use std::time::Duration;

use super::support::python_scenarios;

const CORE: &[&str] = &[
    "tools",
    "denied",
    "elicit",
    "policy",
    "hooks_and_timeouts",
    "escapes",
    "roots",
    "cancel_sleep",
    "concurrent_calls",
];

#[test]
fn python_sdk_over_stdio() {
    python_scenarios("stdio", CORE);
}

#[test]
fn python_sdk_over_http() {
    python_scenarios("http", CORE);
}

/// A bridged server's sampling and elicitation requests reach the client of
/// a stdio session (and are refused when it offers neither).
#[test]
fn bridged_servers_ask_the_stdio_client() {
    python_scenarios("stdio", &["bridged_requests"]);
}

/// The model's `ask` reaches the client's user as a form, over either
/// transport.
#[test]
fn the_model_s_questions_reach_the_client_s_user() {
    python_scenarios("stdio", &["model_asks"]);
    python_scenarios("http", &["model_asks"]);
}

/// Over HTTP (many clients), they reach the client whose call the server
/// is working on. (Regression: they were always refused.)
#[test]
fn bridged_servers_ask_the_http_client_that_called() {
    python_scenarios("http", &["bridged_requests"]);
}

/// Bridged servers that change their tools, or come up after a failed
/// start, change what the client lists (with list_changed), over either
/// transport.
#[test]
fn bridged_tool_changes_reach_the_client() {
    python_scenarios("stdio", &["bridged_list_changed"]);
    python_scenarios("http", &["bridged_list_changed"]);
}

#[test]
fn http_token_host_origin_and_sessions() {
    python_scenarios(
        "http",
        &[
            "http_security",
            "http_sessions",
            "http_delete_mid_call",
            "http_requests",
            "http_in_flight",
        ],
    );
}

/// A client that lost a call's stream resumes it (`Last-Event-ID`) with
/// the events after the last it saw, also once the call has finished; the
/// standalone stream; another session's stream stays closed to it.
#[test]
fn http_streams_resume() {
    python_scenarios("http", &["http_resume"]);
}

#[test]
fn bash_progress_and_cancel_over_stdio() {
    python_scenarios("stdio", &["bash_progress", "bash_cancel"]);
}

#[test]
fn bash_progress_and_cancel_over_http() {
    python_scenarios("http", &["bash_progress", "bash_cancel"]);
}

/// `wield mcp serve` over raw pipes, line by line: malformed input gets
/// JSON-RPC's answers (garbage a Parse error, a wrong-shaped request an
/// Invalid Request error), and large results written by the fast path are
/// exact JSON.
#[test]
fn raw_stdio_framing_and_large_results() {
    use serde_json::json;
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::sync::mpsc;

    let ws = super::support::Ws::new("");
    // 2,000 lines with everything JSON escapes: quotes, backslashes, tabs,
    // control characters and text beyond ASCII.
    let body: String = (0..2000)
        .map(|i| format!("{i}: \"quoted\" back\\slash\ttab \u{1}\u{1f} é€𝄞\n"))
        .collect();
    std::fs::write(ws.ws().join("big.txt"), &body).unwrap();

    let mut child = ws
        .command()
        .args(["-C"])
        .arg(ws.ws())
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let output = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in output.lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut send = |line: &str| {
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
        input.flush().unwrap();
    };
    let next = || -> serde_json::Value {
        let line = rx.recv_timeout(Duration::from_secs(20)).expect("a reply within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    };

    // Before initialize: ping is answered, a call is refused, even one that
    // carries its own protocol version in `_meta` (a later revision's
    // stateless lifecycle), and a notification is dropped.
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#);
    assert_eq!(next(), json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    let touch = ws.ws().join("ran-before-initialize");
    let call = |id: u32, meta: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"touch {}"}}{meta}}}}}"#,
            touch.display()
        )
    };
    let inline = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}"#;
    for (id, meta) in [(90, ""), (91, inline)] {
        send(&call(id, meta));
        let err = next();
        assert_eq!(
            (&err["id"], &err["error"]["code"]),
            (&json!(id), &json!(-32600)),
            "{err}"
        );
        assert!(
            err["error"]["message"].as_str().unwrap().contains("initialize"),
            "{err}"
        );
    }
    send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    assert_eq!(next()["result"]["serverInfo"]["name"], "wield");
    // Once only.
    send(
        r#"{"jsonrpc":"2.0","id":92,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(92), &json!(-32600)),
        "{err}"
    );
    // Inline versions are not served in the session either.
    send(&call(93, inline));
    assert_eq!(next()["error"]["code"], json!(-32600));
    assert!(!touch.exists(), "a call ran outside the lifecycle");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    // Not JSON: Parse error, to no id. JSON the parser cannot take (a
    // number out of range): Parse error, to its id. A string cut inside a
    // surrogate pair: taken with U+FFFD. A call whose params are not an
    // object, or that names no tool: Invalid params, to its id. JSON that
    // is no message: Invalid Request, to its id when it has one.
    send("this is not json");
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(null), &json!(-32700)),
        "{err}"
    );
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":1e400}}}"#,
    );
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(2), &json!(-32700)),
        "{err}"
    );
    send(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":{"path":"cut \ud83d.txt"}}}"#,
    );
    let reply = next();
    assert_eq!(reply["id"], json!(3), "{reply}");
    assert!(reply.to_string().contains("cut \u{fffd}.txt"), "{reply}");
    send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"oops"}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(1), &json!(-32602)),
        "{err}"
    );
    send(r#"{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"arguments":{}}}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!("n"), &json!(-32602)),
        "{err}"
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing field `name`"),
        "{err}"
    );
    send(r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(5), &json!(-32600)),
        "{err}"
    );
    send(r#"{"jsonrpc":"2.0"}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(null), &json!(-32600)),
        "{err}"
    );
    send(r#"{"jsonrpc":"2.0","id":"x","method":"foo","params":[1]}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!("x"), &json!(-32601)),
        "{err}"
    );
    // An id the server cannot hold (past i64, a fraction): refused, to
    // that very id, saying which ids are served.
    for id in ["18446744073709551615", "1.5"] {
        send(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        let err = next();
        assert_eq!(
            (err["id"].to_string(), &err["error"]["code"]),
            (id.to_owned(), &json!(-32600)),
            "{err}"
        );
        assert!(
            err["error"]["message"].as_str().unwrap().contains("out of range"),
            "{err}"
        );
    }
    send(r#"{"jsonrpc":"2.0","id":9,"method":"foo/bar"}"#);
    let err = next();
    assert_eq!(
        (&err["id"], &err["error"]["code"]),
        (&json!(9), &json!(-32601)),
        "{err}"
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("method not found: `foo/bar`"),
        "{err}"
    );

    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"big.txt"}}}"#);
    let reply = next();
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    // The output limit (50 KB) cuts the file; the first 500 lines are whole.
    let want: String = body
        .lines()
        .enumerate()
        .take(500)
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    assert!(
        text.starts_with(&want),
        "{}",
        text.chars().take(300).collect::<String>()
    );
    assert!(text.contains("\"quoted\" back\\slash\ttab \u{1}\u{1f} é€𝄞"));

    send(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    assert_eq!(next()["id"], 3);
    drop(input);
    assert!(child.wait().unwrap().success());
}

/// SIGTERM ends `wield mcp serve` at once, also when its input is still
/// open and its output is a file (the SDK's blocking standard streams, whose
/// read cannot be cancelled).
#[test]
fn sigterm_ends_a_stdio_session_with_its_input_open() {
    use std::process::Stdio;
    use std::time::Instant;

    let ws = super::support::Ws::new("");
    let out = std::fs::File::create(ws.ws().join("out.jsonl")).unwrap();
    let mut serve = ws
        .command()
        .args(["mcp", "serve"])
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input = serve.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let _ = std::process::Command::new("kill").arg(serve.id().to_string()).status();
    let signalled = Instant::now();
    let deadline = signalled + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = serve.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = serve.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(input);
    let status = status.expect("wield mcp serve ignored SIGTERM while its input was open");
    assert!(status.success(), "{status:?}");
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "{:?}",
        signalled.elapsed()
    );
}

/// A bridged server that hangs at start-up delays neither the handshake
/// nor the built-in tools: it starts in the background, and only a listing
/// (or a call of a tool not there yet) waits for it, within its timeout.
#[test]
fn a_slow_bridged_server_does_not_hold_up_the_session() {
    use serde_json::json;
    use std::time::Instant;

    let ws = super::support::Ws::new("[mcp.servers.stuck]\ncommand = \"sleep\"\nargs = [\"60\"]\ntimeout = \"3s\"\n");
    let started = Instant::now();
    let mut serve = super::support::RawServe::start(&ws);
    serve.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let init = serve.reply(Duration::from_secs(10));
    assert_eq!(init["result"]["serverInfo"]["name"], "wield", "{init}");
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "initialize took {:?}",
        started.elapsed()
    );
    serve.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"6*7"}}}"#);
    let r = serve.reply(Duration::from_secs(10));
    assert_eq!(
        r["result"]["content"][0]["text"].as_str().map(str::trim),
        Some("42"),
        "{r}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2000),
        "a built-in call waited: {:?}",
        started.elapsed()
    );
    // The listing waits for the server's start to end (it fails after 3 s).
    serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    let listed = serve.reply(Duration::from_secs(20));
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "listed before the server's start ended"
    );
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"calculator") && !names.iter().any(|n| n.starts_with("mcp__stuck")),
        "{names:?}"
    );
    // A call of its tools says why they are absent.
    serve.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp__stuck__x","arguments":{}}}"#);
    let r = serve.reply(Duration::from_secs(10));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(r.to_string().contains("stuck"), "{r}");
    let status = serve.finish(Duration::from_secs(5));
    assert!(status.success(), "{status}");
}

/// Regression: past `--approval-timeout` the call was refused, but the
/// form's withdrawal (`notifications/cancelled`) waited for the client to
/// send something else, so a client's dialog stayed open.
#[test]
fn an_unanswered_approval_form_is_withdrawn_when_its_time_runs_out() {
    let ws = super::support::Ws::new("[approval]\nconfirm = [\"bash\"]\n");
    let mut serve = super::support::RawServe::start_with(&ws, &["--approval-timeout", "1s"]);
    serve.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    serve.reply(Duration::from_secs(20));
    serve.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    serve.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo ran"}}}"#,
    );
    let form = serve.next(Duration::from_secs(20));
    assert_eq!(form["method"], "elicitation/create", "{form}");
    let mut withdrawn = false;
    let mut result = None;
    while !withdrawn || result.is_none() {
        let m = serve.next(Duration::from_secs(5));
        if m["method"] == "notifications/cancelled" {
            assert_eq!(m["params"]["requestId"], form["id"], "{m}");
            withdrawn = true;
        } else if m["id"] == 2 {
            result = Some(m);
        }
    }
    let result = result.unwrap();
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(result.to_string().contains("did not answer"), "{result}");
    assert!(serve.finish(Duration::from_secs(10)).success());
}

/// Regression: a request that reused the id of one still in flight had one
/// of the two go unanswered, though it ran. It is refused, saying why; the
/// id is free again once its request is answered.
#[test]
fn a_request_reusing_an_id_in_flight_is_refused() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = [\"$standard\", \"bash\"]\n");
    let mut serve = super::support::RawServe::initialized(&ws);
    serve.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 1; echo slow > slow.txt; echo slow"}}}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"1+1"}}}"#);
    let refused = serve.reply(Duration::from_secs(20));
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused.to_string().contains("already in use"), "{refused}");
    let slow = serve.reply(Duration::from_secs(20));
    assert_eq!(slow["id"], 7, "{slow}");
    assert!(slow.to_string().contains("slow"), "{slow}");
    serve.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"1+1"}}}"#);
    let again = serve.reply(Duration::from_secs(20));
    assert_eq!(again["result"]["content"][0]["text"], "2", "{again}");
    // Regression: an id reused right after its request was cancelled got
    // the cancelled call's answer, and the new call was lost. A cancelled
    // request is not answered (as MCP says), so its id stays taken.
    serve.send(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 30"}}}"#,
    );
    std::thread::sleep(Duration::from_millis(500));
    serve.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"2+2"}}}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"calculator","arguments":{"expression":"3+3"}}}"#);
    let refused = serve.reply(Duration::from_secs(20));
    assert_eq!(
        (refused["id"].clone(), refused["error"]["code"].clone()),
        (8.into(), (-32600).into()),
        "{refused}"
    );
    let next = serve.reply(Duration::from_secs(20));
    assert_eq!(next["id"], 9, "{next}");
    assert_eq!(next["result"]["content"][0]["text"], "6", "{next}");
    assert!(serve.finish(Duration::from_secs(10)).success());
}

/// Regression: a client that stopped reading (closed its end of wield's
/// stdout) but kept wield's stdin open kept the session, and its commands,
/// alive. The first reply that cannot be written ends it.
#[test]
fn a_client_that_stops_reading_ends_the_session() {
    use std::io::{BufRead, BufReader, Write};
    let ws = super::support::Ws::new("");
    let mut serve = super::support::serve_piped(&ws);
    let mut input = serve.stdin.take().unwrap();
    let mut output = BufReader::new(serve.stdout.take().unwrap());
    writeln!(input, "{}", super::support::INITIALIZE).unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert!(line.contains("serverInfo"), "{line}");
    drop(output);
    writeln!(input, r#"{{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
    input.flush().unwrap();
    assert!(
        super::support::exit_within(&mut serve, Duration::from_secs(10)).is_some(),
        "wield kept serving a client that stopped reading"
    );
    drop(input);
}

/// Regression: a client that ended its input without reading the replies
/// it had asked for (more than the pipe holds) kept wield alive for good,
/// blocked writing them. Once nothing is read for 2 s the session ends;
/// a client that reads, however slowly, gets every reply (see the test
/// above for one that closes its end).
#[test]
fn a_client_that_ends_its_input_and_reads_nothing_does_not_keep_wield() {
    use std::io::{BufRead, BufReader, Write};
    let ws = super::support::Ws::new("");
    let line = "x".repeat(999) + "\n";
    std::fs::write(ws.ws().join("big.txt"), line.repeat(40)).unwrap();
    let start = |ws: &super::support::Ws| {
        let mut serve = super::support::serve_piped(ws);
        let mut input = serve.stdin.take().unwrap();
        writeln!(input, "{}", super::support::INITIALIZE).unwrap();
        // 20 reads of 40 KB: 800 KB of replies, far more than a pipe holds.
        for id in 1..=20 {
            writeln!(
                input,
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"read","arguments":{{"path":"big.txt"}}}}}}"#
            )
            .unwrap();
        }
        input.flush().unwrap();
        std::thread::sleep(Duration::from_secs(1));
        drop(input);
        serve
    };
    let mut serve = start(&ws);
    let output = serve.stdout.take().unwrap();
    assert!(
        super::support::exit_within(&mut serve, Duration::from_secs(15)).is_some(),
        "wield kept writing to a client that reads nothing"
    );
    drop(output);
    // A slow reader gets them all.
    let mut serve = start(&ws);
    let mut output = BufReader::new(serve.stdout.take().unwrap());
    let mut replies = 0;
    let mut reply = String::new();
    while {
        std::thread::sleep(Duration::from_millis(100));
        reply.clear();
        output.read_line(&mut reply).unwrap() > 0
    } {
        replies += 1;
    }
    assert_eq!(replies, 21, "the initialize reply and the 20 reads");
    assert!(serve.wait().unwrap().success());
}

/// Regression: over HTTP a client could open connections and send nothing,
/// or half a request (headers or body), and hold them for ever. Headers and a POSTed
/// body each have 30 s to arrive; then the connection is closed, or the
/// request refused with `408`.
#[test]
fn http_requests_that_never_finish_arriving_are_dropped() {
    use std::io::{Read, Write};
    let ws = super::support::Ws::new("");
    let (mut server, url) = super::support::serve_http(&ws, &[]);
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let start = std::time::Instant::now();
    // Regression: a connection that sent nothing at all was never closed.
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    let mut headers = std::net::TcpStream::connect(&addr).unwrap();
    headers.write_all(b"POST /mcp HTTP/1.1\r\nHost: ").unwrap();
    let mut body = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        body,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        super::support::TOKEN
    )
    .unwrap();
    for stream in [&silent, &headers, &body] {
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    }
    let mut rest = Vec::new();
    let _ = headers.read_to_end(&mut rest);
    assert!(start.elapsed() < Duration::from_secs(50), "{:?}", start.elapsed());
    let _ = silent.read_to_end(&mut rest);
    assert!(start.elapsed() < Duration::from_secs(50), "{:?}", start.elapsed());
    let mut answer = vec![0; 256];
    let n = body.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(50), "{:?}", start.elapsed());
    let _ = server.kill();
    let _ = server.wait();
}

/// Regression: at the end of its input a stdio session waited 5 s (the
/// SDK's wait for replies under way) with its commands still running. The
/// end of input stops the session's calls at once.
#[test]
fn the_end_of_input_stops_calls_at_once() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = [\"$standard\", \"bash\"]\n");
    let mut serve = super::support::RawServe::initialized(&ws);
    // Found by name on the host: under bubblewrap the command's pids are
    // its PID namespace's.
    let name = format!("eoi-sleeper-{}", std::process::id());
    serve.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"echo started > long.pid; exec -a {name} sleep 30"}}}}}}"#
    ));
    let pid_file = ws.ws().join("long.pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')) {
        assert!(std::time::Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c.starts_with(name.as_bytes())))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !running() {
        assert!(std::time::Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = std::time::Instant::now();
    assert!(serve.finish(Duration::from_secs(10)).success());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "wield took {:?} to end",
        started.elapsed()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(), "the command {name} outlived the session");
}

/// A client that accepts anything (`Accept: */*`) is served, not refused
/// with 406 for not naming both kinds of answer.
#[test]
fn http_accepts_a_client_that_accepts_anything() {
    use std::io::{Read, Write};
    let ws = super::support::Ws::new("");
    let (mut server, url) = super::support::serve_http(&ws, &[]);
    let addr = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
    let body = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nAccept: */*\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        super::support::TOKEN,
        body.len()
    )
    .unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("serverInfo"), "{answer}");
    let _ = server.kill();
    let _ = server.wait();
}

/// Regression: a call that gave a member of its arguments twice ran the
/// last one (`serde_json` keeps it), while a proxy in front of wield that
/// keeps the first would have checked another command. Such a request is
/// refused, and nothing runs.
#[test]
fn a_call_giving_an_argument_twice_is_refused() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = [\"$standard\", \"bash\"]\n");
    let mut serve = super::support::RawServe::initialized(&ws);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo safe","command":"touch ran"}}}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo safe","command":"touch ran"},"_meta":{"progressToken":"p"}}}"#);
    for id in [1, 2] {
        let refused = serve.reply(Duration::from_secs(20));
        assert_eq!(refused["id"], id, "{refused}");
        assert_eq!(refused["error"]["code"], -32600, "{refused}");
        assert!(
            refused.to_string().contains("member `command` given twice"),
            "{refused}"
        );
    }
    assert!(serve.finish(Duration::from_secs(10)).success());
    assert!(!ws.ws().join("ran").exists(), "the second command ran");
}

/// An answer to an approval form that gives a member twice is not taken:
/// the call is refused, saying why, and does not run.
#[test]
fn an_approval_answer_giving_a_member_twice_is_refused() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = [\"$readonly\"]\n");
    let mut serve = super::support::RawServe::start(&ws);
    serve.send(&super::support::INITIALIZE.replace(r#""capabilities":{}"#, r#""capabilities":{"elicitation":{}}"#));
    assert!(serve.reply(Duration::from_secs(20))["result"].is_object());
    serve.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    serve.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"path":"x.txt","content":"x"}}}"#);
    let form = serve.next(Duration::from_secs(20));
    assert_eq!(form["method"], "elicitation/create", "{form}");
    serve.send(&format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{"remember":false,"remember":true}}}}}}"#,
        form["id"]
    ));
    let result = serve.reply(Duration::from_secs(20));
    assert_eq!(result["id"], 1, "{result}");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(result.to_string().contains("given twice"), "{result}");
    assert!(serve.finish(Duration::from_secs(10)).success());
    assert!(!ws.ws().join("x.txt").exists(), "the call ran");
}

/// Regression: a refused call tells the user to run `wield approvals add`,
/// but the running session had read the remembered approvals when it
/// started, so the pattern took effect only in a new session. Remembered
/// approvals are read again when their file changes, both ways; a call a
/// `confirm` rule asks for is not sent to them, as they would not apply.
#[test]
fn approvals_remembered_while_serving_apply_to_the_next_call() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = []\nconfirm = [\"bash\"]\n");
    let mut serve = super::support::RawServe::initialized(&ws);
    let mut id = 0;
    let mut call = |serve: &mut super::support::RawServe, name: &str, arguments: &str| {
        id += 1;
        serve.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
        ));
        let reply = serve.reply(Duration::from_secs(20));
        assert_eq!(reply["id"], id, "{reply}");
        (
            reply["result"]["isError"] == true,
            reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    };
    let sum = r#"{"expression":"1+1"}"#;
    let (refused, text) = call(&mut serve, "calculator", sum);
    assert!(refused && text.contains("wield approvals add 'calculator'"), "{text}");
    ws.wield().args(["approvals", "add", "calculator"]).assert().success();
    assert_eq!(call(&mut serve, "calculator", sum), (false, "2".to_owned()));
    ws.wield()
        .args(["approvals", "remove", "calculator"])
        .assert()
        .success();
    assert!(
        call(&mut serve, "calculator", sum).0,
        "a removed approval still applied"
    );

    let echo = r#"{"command":"echo hi"}"#;
    let (refused, text) = call(&mut serve, "bash", echo);
    assert!(refused, "{text}");
    assert!(
        text.contains("approval.confirm") && text.contains("--yes") && !text.contains("approvals add"),
        "{text}"
    );
    ws.wield().args(["approvals", "add", "bash:echo*"]).assert().success();
    assert!(call(&mut serve, "bash", echo).0, "a confirm rule asks every time");
}

/// A model (an MCP session) may move a file onto an existing one only once
/// it has read the destination, as with an Add over it.
#[test]
fn a_model_moves_a_file_onto_another_only_after_reading_it() {
    let ws = super::support::Ws::new("[approval]\nauto_approve = [\"$standard\"]\n");
    std::fs::write(ws.ws().join("a.txt"), "a\n").unwrap();
    std::fs::write(ws.ws().join("b.txt"), "b\n").unwrap();
    let mut serve = super::support::RawServe::initialized(&ws);
    let patch = serde_json::json!({
        "name": "patch",
        "arguments": { "patch": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n-a\n+A\n*** End Patch" }
    });
    let call = |id: u32, params: &serde_json::Value| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
    };
    serve.send(&call(1, &patch));
    let refused = serve.reply(Duration::from_secs(20));
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused.to_string().contains("has not been read in this session"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(ws.ws().join("b.txt")).unwrap(), "b\n");
    serve.send(&call(
        2,
        &serde_json::json!({ "name": "read", "arguments": { "path": "b.txt" } }),
    ));
    assert_eq!(serve.reply(Duration::from_secs(20))["result"]["isError"], false);
    serve.send(&call(3, &patch));
    let done = serve.reply(Duration::from_secs(20));
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(std::fs::read_to_string(ws.ws().join("b.txt")).unwrap(), "A\n");
    assert!(!ws.ws().join("a.txt").exists());
    assert!(serve.finish(Duration::from_secs(10)).success());
}
