//! Files wield opens for itself, a model could name or swap: attachments of
//! a `.chat` document, the audit log, memory, the limits a document sets,
//! and compressed web bodies.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;

use super::support::{Ws, call_json, output};
use crate::common::{Env, SECRET};
use crate::scripted_provider::{Scripted, Turn};

/// A value only wield's own environment holds: it must never reach a
/// request to the model.
const ENV_SECRET: &str = "hunter2-only-in-wields-environment";

/// A workspace whose `.wield/config.toml` points at a scripted provider.
fn project(turns: Vec<Turn>) -> (Env, Scripted) {
    let provider = Scripted::start(turns);
    let env = Env::new();
    env.put(".wield/config.toml", &provider.config());
    (env, provider)
}

/// `wield chat ARGS` with the secret in wield's environment: (exit status,
/// stdout and stderr).
fn chat(env: &Env, args: &[&str]) -> (i32, String) {
    let out = env
        .wield()
        .env("WIELD_TEST_SECRET", ENV_SECRET)
        .arg("chat")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// No request the provider got holds `secret`.
fn never_sent(provider: &Scripted, secret: &str) {
    for (n, r) in provider.requests().iter().enumerate() {
        assert!(!r.to_string().contains(secret), "request {n} holds {secret}: {r}");
    }
}

/// A reference that leads out of the workspace, by a link to
/// `/proc/self/environ` (wield's own environment) or to a file outside it,
/// used to be attached: now neither is, and the person is told why.
#[test]
fn attachments_that_link_out_of_the_workspace_are_refused() {
    let (env, provider) = project(vec![Turn::Text("unused"), Turn::Text("unused")]);
    std::fs::create_dir_all(env.ws("sub")).unwrap();
    symlink("/proc/self/environ", env.ws("sub/notes.txt")).unwrap();
    symlink(env.base.join("outside/secret.txt"), env.ws("sub/other.txt")).unwrap();
    for (doc, reference) in [("a.chat", "@./sub/notes.txt"), ("b.chat", "@./sub/other.txt")] {
        env.put(doc, &format!("@You:\nSummarize {reference} please.\n"));
        let (code, out) = chat(&env, &[doc]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains(&format!("line 2: {reference} cannot be attached")),
            "{out}"
        );
        assert!(out.contains("outside the read roots"), "{out}");
    }
    assert!(provider.requests().is_empty(), "nothing was sent");
    never_sent(&provider, ENV_SECRET);
    never_sent(&provider, SECRET);
    // A link that stays inside the workspace is attached.
    env.put("real.txt", "the answer is 42\n");
    symlink("../real.txt", env.ws("sub/inside.txt")).unwrap();
    env.put("c.chat", "@You:\nSummarize @./sub/inside.txt please.\n");
    let (code, out) = chat(&env, &["c.chat"]);
    assert_eq!(code, 0, "{out}");
    assert!(provider.requests()[0].to_string().contains("the answer is 42"));
}

/// The attachment was checked by its path and then opened again by it,
/// following links: a process swapping the file for a link to
/// `/proc/self/environ` in a loop got wield's environment sent within a
/// few presses. Now what is opened is what is checked and read.
#[test]
fn an_attachment_swapped_for_a_link_while_it_is_sent_never_sends_the_environment() {
    const RUNS: usize = 30;
    let (env, provider) = project((0..RUNS).map(|_| Turn::Text("Noted.")).collect());
    std::fs::create_dir_all(env.ws("sub")).unwrap();
    env.put("sub/notes.txt", "plain notes\n");
    // The swapper: a regular file and a link to wield's environment take
    // turns at `sub/notes.txt`, each put in place by an atomic rename.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let sub = env.ws("sub");
        std::thread::spawn(move || {
            let (link, file, target) = (sub.join(".link"), sub.join(".file"), sub.join("notes.txt"));
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::remove_file(&link);
                let _ = symlink("/proc/self/environ", &link);
                let _ = std::fs::rename(&link, &target);
                let _ = std::fs::write(&file, "plain notes\n");
                let _ = std::fs::rename(&file, &target);
            }
        })
    };
    let (mut sent, mut refused) = (0, 0);
    for _ in 0..RUNS {
        env.put("a.chat", "@You:\nSummarize @./sub/notes.txt please.\n");
        let (code, out) = chat(&env, &["--once", "a.chat"]);
        match code {
            0 => sent += 1,
            1 => {
                assert!(out.contains("line 2: @./sub/notes.txt cannot be attached"), "{out}");
                refused += 1;
            }
            _ => panic!("unexpected exit {code}: {out}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    never_sent(&provider, ENV_SECRET);
    assert_eq!(sent + refused, RUNS);
    assert_eq!(provider.requests().len(), sent);
}

/// `wield --audit LOG call read notes.txt`: its exit status.
fn read_with_audit(ws: &Ws, log: &str) -> i32 {
    let out = ws
        .wield()
        .args(["--audit", log, "call", "read"])
        .arg(json!({"path": "notes.txt"}).to_string())
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

/// The audit log holds every call's full input, and was created with the
/// umask (0644) in directories open to everyone.
#[test]
fn the_audit_log_is_private() {
    let ws = Ws::new();
    std::fs::write(ws.ws.join("notes.txt"), "x\n").unwrap();
    assert_eq!(read_with_audit(&ws, "logs/calls/audit.jsonl"), 0);
    let log = ws.ws.join("logs/calls/audit.jsonl");
    assert!(std::fs::read_to_string(&log).unwrap().contains("notes.txt"));
    assert_eq!(mode(&log), 0o600);
    assert_eq!(mode(&ws.ws.join("logs/calls")), 0o700);
    assert_eq!(mode(&ws.ws.join("logs")), 0o700);
    // One that others could read is closed to them; a link is refused.
    let old = ws.ws.join("old.jsonl");
    std::fs::write(&old, "").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(read_with_audit(&ws, "old.jsonl"), 0);
    assert_eq!(mode(&old), 0o600);
    let target = ws.outside.join("elsewhere");
    std::fs::write(&target, "").unwrap();
    symlink(&target, ws.ws.join("link.jsonl")).unwrap();
    assert_ne!(read_with_audit(&ws, "link.jsonl"), 0);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "",
        "nothing was written through the link"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

/// Memory entries were 0644 in a 0755 directory: readable by every user.
#[test]
fn memory_is_private_like_sessions() {
    let ws = Ws::new();
    // A directory an older wield made open to others is closed.
    std::fs::create_dir_all(ws.ws.join(".wield/memory")).unwrap();
    std::fs::set_permissions(ws.ws.join(".wield/memory"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, v) = ws.call(
        &[],
        "memory_write",
        &json!({"key": "deploy", "content": "the staging password is hunter2"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(mode(&ws.ws.join(".wield/memory")), 0o700);
    assert_eq!(mode(&ws.ws.join(".wield/memory/deploy.md")), 0o600);
    // Written again, it stays private.
    let (code, v) = ws.call(&[], "memory_write", &json!({"key": "deploy", "content": "rotated"}));
    assert_eq!(code, 0, "{v}");
    assert_eq!(mode(&ws.ws.join(".wield/memory/deploy.md")), 0o600);
    let (code, v) = ws.call(&[], "memory_read", &json!({"key": "deploy"}));
    assert_eq!(code, 0, "{v}");
    assert!(output(&v).contains("rotated"), "{v}");
}

/// A document's `max_steps = 5` raised the configured `chat.max_steps = 1`:
/// a document may only tighten it.
#[test]
fn a_document_cannot_raise_the_configured_max_steps() {
    let (env, provider) = project(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Done."),
    ]);
    env.put("notes.txt", "x\n");
    let config = std::fs::read_to_string(env.ws(".wield/config.toml")).unwrap();
    env.put(".wield/config.toml", &format!("{config}\n[chat]\nmax_steps = 1\n"));
    env.put("a.chat", "```toml\nmax_steps = 5\n```\n@You:\nRead notes.txt twice.\n");
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("stopped after 1 replies with tool calls"), "{out}");
    assert_eq!(provider.requests().len(), 1);
    // A smaller document limit still binds.
    let (env, provider) = project(vec![
        Turn::Call("read", json!({ "path": "notes.txt" })),
        Turn::Text("Done."),
    ]);
    env.put("notes.txt", "x\n");
    env.put("a.chat", "```toml\nmax_steps = 1\n```\n@You:\nRead notes.txt.\n");
    let (code, out) = chat(&env, &["a.chat"]);
    assert_eq!(code, 3, "{out}");
    assert_eq!(provider.requests().len(), 1);
}

/// `<html><body>SECRET-GZIP-PAGE</body></html>`, gzip-compressed.
const GZIP_PAGE: &[u8] = &[
    31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 179, 201, 40, 201, 205, 177, 179, 73, 202, 79, 169, 180, 11, 118, 117, 14, 114,
    13, 209, 117, 143, 242, 12, 208, 13, 112, 116, 119, 181, 209, 7, 11, 219, 232, 131, 213, 0, 0, 156, 129, 218, 146,
    42, 0, 0, 0,
];

/// A server that answers every request with a gzip-compressed page, asked
/// or not, and records the requests' headers.
fn gzip_server() -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            record.lock().unwrap().push(String::from_utf8_lossy(&head).into_owned());
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                GZIP_PAGE.len()
            );
            let _ = s.write_all(GZIP_PAGE);
        }
    });
    (port, seen)
}

/// `web_fetch` returned a gzip body the server sent unasked as undecoded
/// bytes; now it asks for none and refuses one it gets, saying why.
#[test]
fn web_fetch_refuses_a_compressed_body_it_did_not_ask_for() {
    let ws = Ws::new();
    let (port, seen) = gzip_server();
    let mut cmd = ws.wield();
    cmd.args(["-y", "--set", r#"web_fetch.allow=["127.0.0.1"]"#, "call", "web_fetch"])
        .arg(json!({"url": format!("http://127.0.0.1:{port}/page")}).to_string())
        .arg("--json");
    let (_, v) = call_json(cmd);
    let text = v.to_string();
    assert!(text.contains("Content-Encoding: gzip"), "{v}");
    assert!(text.contains("does not decode compressed bodies"), "{v}");
    assert!(!output(&v).contains('\u{fffd}'), "undecoded bytes were returned: {v}");
    let heads = seen.lock().unwrap().join("\n").to_ascii_lowercase();
    assert!(heads.contains("accept-encoding: identity"), "{heads}");
}

/// A token file `wield mcp serve --http` made could be read by a sandboxed
/// command of the same user (`cat ~/.local/state/wield/tokens/*`), and with
/// it every tool called over HTTP. Both backends now hide the token
/// directories from commands; what else is there stays readable.
#[test]
fn sandboxed_commands_cannot_read_the_mcp_servers_token() {
    use std::io::BufRead;
    for (backend, ws) in super::each_backend().filter(|(b, _)| *b != "off") {
        let mut child = ws
            .wield()
            .args(["mcp", "serve", "--http", "127.0.0.1:0", "--yes"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        while !said.contains("serving MCP on") {
            let line = lines.next().expect("wield exited before serving").unwrap();
            said.push_str(&line);
            said.push('\n');
        }
        let file = said
            .split("the token is in ")
            .nth(1)
            .unwrap()
            .split(" (")
            .next()
            .unwrap()
            .to_owned();
        let token = std::fs::read_to_string(&file).unwrap().trim().to_owned();
        let dir = Path::new(&file).parent().unwrap().to_owned();
        assert!(dir.starts_with(&ws.home), "{said}");
        std::fs::write(ws.home.join(".local/state/visible.txt"), "visible-state-file").unwrap();
        let (_, v) = ws.bash(
            backend,
            &format!(
                "cat {file}; cat {}/*; echo \"listed: $(ls -A {})\"; cat {}",
                dir.display(),
                dir.display(),
                ws.home.join(".local/state/visible.txt").display()
            ),
        );
        child.kill().unwrap();
        child.wait().unwrap();
        let out = output(&v);
        assert!(
            !v.to_string().contains(&token),
            "{backend}: the command read the token: {v}"
        );
        let listed = out.lines().find(|l| l.starts_with("listed:")).unwrap_or_default();
        assert!(
            !listed.contains(".token"),
            "{backend}: the command listed the token file: {v}"
        );
        assert!(
            out.contains("visible-state-file"),
            "{backend}: too much was hidden: {v}"
        );
    }
}
