//! wield's MCP client as the commands show it: what `tools list`, `mcp
//! list`, `call` and `tools debug` say of bridged servers, which servers a
//! command starts, and what needs the `wield` binary itself (`wield mcp
//! serve` as a server or bridging one, signals, the process's end). The
//! client's behaviour through the runtime is tested in wield-mcp
//! (`tests/suite/bridged.rs`).

mod raw_http;
mod raw_server;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support;
use super::support::{Ws, everything_config, python, python_scenarios, repo_root};

/// How the commands report servers that could not start: `tools list`
/// warns on stderr and lists the rest, `mcp list` exits 1 (its JSON and its
/// lines), a call of a disabled server's tool exits 1 saying so, and
/// `tools debug` names the failed source. What the runtime does with such
/// servers is tested in wield-mcp (`tests/suite/bridged.rs`).
#[test]
fn the_commands_report_a_server_that_did_not_start() {
    let config = format!(
        "{}\n[mcp.servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo 'cannot open the database' >&2; exit 3\"]\n\n\
         [mcp.servers.off]\ncommand = \"sh\"\nenabled = false\n",
        everything_config()
    );
    let ws = Ws::new(&config);

    let out = ws.wield().args(["tools", "list"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp__everything__echo"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot open the database"), "{stderr}");

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
    assert_eq!(server("broken")["state"], "failed");
    assert!(
        server("broken")["error"]
            .as_str()
            .unwrap()
            .contains("cannot open the database"),
        "{v}"
    );
    assert_eq!(server("off")["state"], "disabled");

    // Regression: a call of a disabled server's tool said only "unknown tool".
    let out = ws.wield().args(["call", "mcp__off__x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown tool") && stderr.contains("MCP server `off` is disabled in the config"),
        "{stderr}"
    );

    let out = ws.wield().args(["mcp", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
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
/// (Which servers a command starts is the command's choice, so this stays
/// with the commands.)
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

/// A configuration whose `mcp` section has the wrong type is a usage
/// error (exit 2) of every command.
#[test]
fn an_mcp_section_of_the_wrong_type_exits_2() {
    for config in ["[mcp]\nservers = 5\n", "mcp = \"x\"\n"] {
        let out = Ws::new(config).wield().args(["mcp", "list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {stderr}");
        // Either check may see it first; each says what to write.
        assert!(
            stderr.contains("must be a table") || stderr.contains("is a table of settings"),
            "{config}: {stderr}"
        );
    }
}

/// server-everything bridged through `wield mcp serve`, seen by the Python
/// SDK's client: its progress notifications reach the client, its task-only
/// tool is left out, its roots are the workspace, and it is restarted on
/// next use after a crash. (It stays here: the server is `wield mcp
/// serve`, the binary.)
#[test]
fn server_everything_progress_roots_and_restart_through_mcp_serve() {
    python_scenarios("http", &["everything_restart"]);
}

/// A workspace bridging another's tools served over streamable HTTP behind
/// a token. (It stays here: the server is `wield mcp serve --http`, the
/// binary.)
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

/// What a bridged server starts itself (here a `sleep` beside the server,
/// as `npx` and shell wrappers do) is stopped with it when wield is done:
/// after `wield call`, after `wield mcp serve` reaches the end of its input,
/// and after `wield mcp serve` gets SIGTERM. (It stays here: it is about
/// the `wield` process ending; that the runtime's end stops them is tested
/// in wield-mcp.)
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
/// even one that ignores SIGTERM. (It stays here: signals are the
/// process's.)
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
