//! `mcp serve --http` authentication against other local users.
// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::support::Ws;
use crate::peer_cmd::peer_command;

/// The uid and gid of `nobody`, the other local user of these tests.
const NOBODY: &str = "65534";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A running `wield mcp serve --http 127.0.0.1:0`, and what it printed
/// before serving.
struct Served {
    child: Child,
    addr: String,
    said: String,
}

impl Served {
    fn spawn(mut cmd: Command) -> Self {
        let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        let addr = loop {
            let line = lines.next().expect("wield exited before serving").unwrap();
            said.push_str(&line);
            said.push('\n');
            if let Some(rest) = line.split("serving MCP on http://").nth(1) {
                break rest.split('/').next().unwrap().to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, addr, said }
    }

    /// The token file the server named.
    fn token_file(&self) -> PathBuf {
        let rest = self
            .said
            .split("the token is in ")
            .nth(1)
            .unwrap_or_else(|| panic!("{}", self.said));
        PathBuf::from(rest.split(" (").next().unwrap())
    }

    fn stop(mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let _ = self.child.wait();
    }
}

fn serve(ws: &Ws, extra: &[&str]) -> Command {
    let mut cmd = ws.wield();
    cmd.args(["mcp", "serve", "--http", "127.0.0.1:0"]).args(extra);
    cmd
}

/// One POSTed initialize with `headers` (each a full `Name: value`): the
/// status code.
fn post(addr: &str, headers: &[String]) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{extra}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{INITIALIZE}",
        INITIALIZE.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {answer:?}"))
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// `cmd` run as `nobody`.
fn as_nobody(program: &str, args: &[&str]) -> std::process::Output {
    peer_command("setpriv")
        .args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", "--", program])
        .args(args)
        .output()
        .unwrap()
}

/// Regression: over loopback no token was the default, and another local
/// user ran commands as the server's user. With no token configured, one
/// is made and written where only the server's user can read it; `nobody`
/// can neither read it nor run a call without it.
#[test]
fn a_server_without_a_configured_token_makes_one_only_its_user_can_read() {
    let ws = Ws::new();
    let served = Served::spawn(serve(&ws, &["--yes"]));
    let file = served.token_file();
    assert!(file.starts_with(&ws.home), "{}", file.display());
    let meta = std::fs::metadata(&file).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600, "the token file's mode");
    assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().mode() & 0o777, 0o700);
    let token = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert_eq!(token.len(), 64, "{token}");

    assert_eq!(post(&served.addr, &[]), 401, "a request without the token was served");
    assert_eq!(post(&served.addr, &[bearer("guess")]), 401);
    assert_eq!(post(&served.addr, &[bearer(&token)]), 200);

    // Another user, given a way down to the token's own directory (0700,
    // wield's), cannot read it...
    let base = ws.home.parent().unwrap();
    for dir in file.parent().unwrap().ancestors().skip(1) {
        if !dir.starts_with(base) {
            break;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let read = as_nobody("cat", &[file.to_str().unwrap()]);
    assert!(!read.status.success(), "nobody read the token");
    // ... nor run a command through the server.
    let ran = ws.ws.join("ran-as-nobody");
    let url = format!("http://{}/mcp", served.addr);
    let call = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"bash","arguments":{{"command":"touch {}"}}}}}}"#,
        ran.display()
    );
    for body in [INITIALIZE, call.as_str()] {
        let out = as_nobody(
            "curl",
            &[
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "-H",
                "Content-Type: application/json",
                "-H",
                "Accept: application/json, text/event-stream",
                "-d",
                body,
                &url,
            ],
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "401", "nobody's request: {out:?}");
    }
    assert!(!ran.exists());
    served.stop();
    assert!(!file.exists(), "the token file outlived its server");
}

/// An empty or blank token used to mean "no authentication"; now it is an
/// error, wherever it comes from.
#[test]
fn an_empty_token_is_an_error() {
    let ws = Ws::new();
    let empty = ws.home.join("empty.token");
    std::fs::write(&empty, "\n").unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut env = serve(&ws, &[]);
    env.env("WIELD_MCP_TOKEN", "");
    let mut blank = serve(&ws, &["--token", "   "]);
    let mut file = serve(&ws, &["--token-file", empty.to_str().unwrap()]);
    for cmd in [&mut env, &mut blank, &mut file] {
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("empty"), "{err}");
    }
}

/// A token file other users can read is refused, saying how to fix it; a
/// private one is used.
#[test]
fn a_token_file_must_be_private() {
    let ws = Ws::new();
    let file = ws.home.join("mcp.token");
    std::fs::write(&file, "from-a-file\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = serve(&ws, &["--token-file", file.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("chmod 600"), "{err}");

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let served = Served::spawn(serve(&ws, &["--token-file", file.to_str().unwrap()]));
    assert!(!served.said.contains("the token is in"), "{}", served.said);
    assert_eq!(post(&served.addr, &[]), 401);
    assert_eq!(post(&served.addr, &[bearer("from-a-file")]), 200);
    served.stop();
}

/// `--token` is visible to every user in /proc/PID/cmdline: it works, with
/// a warning naming the alternatives.
#[test]
fn a_token_on_the_command_line_warns() {
    let ws = Ws::new();
    let served = Served::spawn(serve(&ws, &["--token", "on-the-line"]));
    assert!(
        served.said.contains("warning")
            && served.said.contains("WIELD_MCP_TOKEN")
            && served.said.contains("--token-file"),
        "{}",
        served.said
    );
    assert_eq!(post(&served.addr, &[bearer("on-the-line")]), 200);
    served.stop();
}

/// Two Authorization headers (a proxy and wield might each read another)
/// are refused, whichever holds the token.
#[test]
fn two_authorization_headers_get_400() {
    let ws = Ws::new();
    let mut cmd = serve(&ws, &[]);
    cmd.env("WIELD_MCP_TOKEN", "right");
    let served = Served::spawn(cmd);
    assert_eq!(post(&served.addr, &[bearer("right")]), 200);
    assert_eq!(post(&served.addr, &[bearer("right"), bearer("wrong")]), 400);
    assert_eq!(post(&served.addr, &[bearer("wrong"), bearer("right")]), 400);
    served.stop();
}

/// Regression: thousands of half-open connections (connect, send nothing)
/// held the server's descriptors for the 30 s header deadline each, so a
/// real client could not be served. Unauthenticated connections are now
/// few (the oldest make room) and closed after a few seconds.
#[test]
fn half_open_connections_do_not_starve_real_clients() {
    let ws = Ws::new();
    let mut cmd = serve(&ws, &[]);
    cmd.env("WIELD_MCP_TOKEN", "real-client");
    // The server gets 1,024 descriptors; the attacker opens twice that.
    // SAFETY: setrlimit is async-signal-safe and touches only the child.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let served = Served::spawn(cmd);
    let mut idle = Vec::new();
    for _ in 0..2000 {
        match TcpStream::connect(&served.addr) {
            Ok(s) => idle.push(s),
            Err(e) => panic!("connecting: {e}"),
        }
    }
    // Give the server time to accept what it can.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    assert_eq!(post(&served.addr, &[bearer("real-client")]), 200);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the real client waited {:?}",
        started.elapsed()
    );
    // The silent connections are closed within the short deadline.
    let last = idle.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut buf = [0u8; 16];
    let started = Instant::now();
    let n = last.read(&mut buf);
    assert!(
        matches!(n, Ok(0)) || n.is_err() && started.elapsed() < Duration::from_secs(14),
        "{n:?} after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "closed after {:?}",
        started.elapsed()
    );
    served.stop();
}
