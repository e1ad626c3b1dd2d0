//! web_fetch and web_search through `wield call`, against a local server
//! only: encodings and sizes, redirects, the SSRF guard (every blocked
//! address class written several ways, a redirect from an allowed host to
//! a blocked one), a slow server, an endless body, a non-text type, and
//! search results parsed from recorded-style pages.

// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Env;

/// A local HTTP/1.1 server whose answers are chosen by path; it counts the
/// connections it accepted.
struct Server {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(stream, port));
            }
        });
        Self { port, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

fn html(stream: &mut TcpStream, content_type: &str, body: &[u8]) {
    respond(stream, "200 OK", &[("content-type", content_type.into())], body);
}

const UTF8_PAGE: &str = "<!doctype html><html><head><title>T</title><style>body{color:red}</style>\
<script>var leaked = 'SCRIPT-TEXT';</script></head><body><header>SITE-HEADER</header>\
<nav><a href=\"/menu\">MENU-ITEM</a></nav><main><h1>Grüße aus Köln</h1>\
<p>Read <a href=\"next.html\">the next page</a> or <a href=\"/docs/a?b=1\">the docs</a> &amp; more.</p>\
<img src=\"img/logo.png\" alt=\"logo\"></main><footer>SITE-FOOTER</footer></body></html>";

const DDG_PAGE: &str = r#"<!DOCTYPE html><html><head><title>rust at DuckDuckGo</title></head><body>
<div id="links" class="results">
<div class="result results_links results_links_deep result--ad"><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=shop.example&amp;ad_provider=x">Sponsored thing</a></h2>
<a class="result__snippet" href="https://duckduckgo.com/y.js?ad_domain=shop.example">Buy now.</a></div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2F&amp;rut=5f2">Rust Programming Language</a></h2>
<div class="result__extras"><div class="result__extras__url"><a class="result__url" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2F">www.rust-lang.org</a></div></div>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust%2Dlang.org%2F">A language empowering everyone to build <b>reliable</b> and efficient software.</a>
</div></div>
<div class="result results_links results_links_deep web-result "><div class="links_main links_deep result__body">
<h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fen.wikipedia.org%2Fwiki%2FRust_(programming_language)&amp;rut=9a1">Rust (programming language) - Wikipedia</a></h2>
<a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">Rust is a general-purpose programming language emphasizing performance, type safety &amp; concurrency.</a>
</div></div>
</div></body></html>"#;

const DDG_CHALLENGE: &str = r#"<!DOCTYPE html><html><body><div class="anomaly-modal__mask"><div class="anomaly-modal__modal">
<div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>
<div class="anomaly-modal__description">Please complete the following challenge to confirm this search was made by a human.</div>
<form id="challenge-form" action="/anomaly.js" method="POST"></form></div></div></body></html>"#;

const SEARXNG_JSON: &str = r#"{"query": "rust", "number_of_results": 0, "results": [
 {"url": "https://www.rust-lang.org/", "title": "Rust Programming Language", "content": "A language empowering everyone.", "engine": "duckduckgo", "engines": ["duckduckgo", "brave"], "score": 4.0, "category": "general"},
 {"url": "https://doc.rust-lang.org/book/", "title": "The Rust Programming Language &amp; Book", "content": "by Steve Klabnik and Carol Nichols", "engine": "google", "score": 2.0, "category": "general"}
], "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": []}"#;

fn serve(mut stream: TcpStream, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
    }
    let target = first.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let path = target.split('?').next().unwrap_or("/").to_owned();
    let s = &mut stream;
    match path.as_str() {
        "/utf8" => html(s, "text/html; charset=utf-8", UTF8_PAGE.as_bytes()),
        // No charset in the header: the meta tag says Latin-1.
        "/latin1" => html(
            s,
            "text/html",
            b"<html><head><meta charset=\"iso-8859-1\"></head><body><p>Caf\xe9 cr\xe8me br\xfbl\xe9e</p></body></html>",
        ),
        // The header's charset: 日本語 in Shift_JIS.
        "/sjis" => html(
            s,
            "text/html; charset=Shift_JIS",
            b"<html><body><p>\x93\xfa\x96\x7b\x8c\xea</p></body></html>",
        ),
        // UTF-16 with a byte-order mark.
        "/utf16" => {
            let mut body = vec![0xff, 0xfe];
            body.extend("Grüße UTF-16".encode_utf16().flat_map(u16::to_le_bytes));
            html(s, "text/plain", &body)
        }
        "/json" => html(s, "application/json", br#"{"a": 1}"#),
        "/big" => html(s, "text/plain; charset=utf-8", &b"0123456789abcdef\n".repeat(16 * 1024)),
        "/image" => html(s, "image/png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        "/missing" => respond(s, "404 Not Found", &[("content-type", "text/html".into())], b"gone"),
        "/metadata-redirect" => respond(
            s,
            "302 Found",
            &[("location", "http://169.254.169.254/latest/meta-data/".into())],
            b"",
        ),
        "/other-port-redirect" => respond(
            s,
            "302 Found",
            &[("location", format!("http://[::1]:{port}/utf8"))],
            b"",
        ),
        "/slow" => {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\nstart");
            std::thread::sleep(Duration::from_secs(20));
        }
        "/endless" => {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n");
            let chunk = b"endless data endless data endless data\n".repeat(256);
            while s.write_all(&chunk).is_ok() {}
        }
        "/ddg" => html(s, "text/html; charset=UTF-8", DDG_PAGE.as_bytes()),
        "/ddg-challenge" => html(s, "text/html; charset=UTF-8", DDG_CHALLENGE.as_bytes()),
        "/searx/search" if target.contains("format=json") => html(s, "application/json", SEARXNG_JSON.as_bytes()),
        p => {
            // /hop/N redirects N more times before landing on /utf8.
            if let Some(n) = p.strip_prefix("/hop/").and_then(|n| n.parse::<u32>().ok()) {
                let next = if n == 0 {
                    "/utf8".to_owned()
                } else {
                    format!("/hop/{}", n - 1)
                };
                respond(s, "302 Found", &[("location", next)], b"");
            } else {
                respond(s, "404 Not Found", &[], b"");
            }
        }
    }
}

/// `wield -y [sets] call TOOL ARGS --json`.
fn call(e: &Env, sets: &[String], tool: &str, args: Value) -> (i32, Value) {
    let mut cmd = e.wield();
    cmd.arg("-y");
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.args(["call", tool, &args.to_string(), "--json"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout} {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

fn allow_local() -> Vec<String> {
    vec![r#"web_fetch.allow=["127.0.0.1"]"#.into()]
}

fn fetch(e: &Env, sets: &[String], args: Value) -> (i32, Value) {
    call(e, sets, "web_fetch", args)
}

fn output(v: &Value) -> String {
    v["output"].as_str().unwrap_or_default().to_owned()
}

fn error(v: &Value) -> String {
    v["error"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn html_becomes_markdown_without_chrome_and_with_absolute_links() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/utf8")}));
    assert_eq!(code, 0, "{v}");
    let out = output(&v);
    let first = out.lines().next().unwrap();
    assert_eq!(
        first,
        format!("Fetched: {} (text/html, {} bytes)", srv.url("/utf8"), UTF8_PAGE.len())
    );
    assert!(out.contains("\n\n# Grüße aus Köln\n"), "{out}");
    assert!(
        out.contains(&format!("[the next page]({})", srv.url("/next.html"))),
        "{out}"
    );
    assert!(out.contains(&format!("({})", srv.url("/docs/a?b=1"))), "{out}");
    assert!(out.contains(&format!("({})", srv.url("/img/logo.png"))), "{out}");
    assert!(out.contains("& more"), "{out}");
    for chrome in [
        "\nT\n",
        "SCRIPT-TEXT",
        "SITE-HEADER",
        "MENU-ITEM",
        "SITE-FOOTER",
        "color:red",
    ] {
        assert!(!out.contains(chrome), "{chrome} leaked: {out}");
    }
    let (_, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/utf8"), "format": "text"}));
    let text = output(&v);
    assert!(
        text.contains("Grüße aus Köln") && text.contains("Read the next page or the docs & more."),
        "{text}"
    );
    assert!(!text.contains('<') && !text.contains("SCRIPT-TEXT"), "{text}");
    let (_, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/utf8"), "format": "html"}));
    assert!(output(&v).contains("<script>var leaked"), "{v}");
    assert_eq!(v["metadata"]["content_type"], "text/html");
}

#[test]
fn pages_in_several_encodings_are_decoded() {
    let (e, srv) = (Env::new(), Server::start());
    for (path, want, charset) in [
        ("/latin1", "Café crème brûlée", "windows-1252"),
        ("/sjis", "日本語", "Shift_JIS"),
        ("/utf16", "Grüße UTF-16", "UTF-16LE"),
        ("/json", "{\"a\": 1}", "UTF-8"),
    ] {
        let (code, v) = fetch(&e, &allow_local(), json!({"url": srv.url(path)}));
        assert_eq!(code, 0, "{path}: {v}");
        assert!(output(&v).contains(want), "{path}: {v}");
        assert_eq!(v["metadata"]["charset"], charset, "{path}");
    }
}

#[test]
fn bodies_are_capped_by_the_call_and_the_configuration() {
    let (e, srv) = (Env::new(), Server::start());
    let size = 17 * 16 * 1024;
    let (_, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/big")}));
    assert!(
        output(&v).starts_with(&format!("Fetched: {} (text/plain, {size} bytes)\n", srv.url("/big"))),
        "{v}"
    );
    assert_eq!(v["metadata"]["truncated"], false);
    let (_, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/big"), "max_bytes": 1000}));
    assert!(output(&v).contains("1000 bytes, truncated at 1000 bytes)"), "{v}");
    assert_eq!(v["metadata"]["truncated"], true);
    // The call cannot raise the configured cap.
    let mut sets = allow_local();
    sets.push("web_fetch.max_bytes=2048".into());
    let (_, v) = fetch(&e, &sets, json!({"url": srv.url("/big"), "max_bytes": 100000}));
    assert_eq!(v["metadata"]["bytes"], 2048, "{v}");
}

#[test]
fn an_endless_body_stops_at_the_cap() {
    let (e, srv) = (Env::new(), Server::start());
    let mut sets = allow_local();
    sets.push("web_fetch.max_bytes=300000".into());
    let started = Instant::now();
    let (code, v) = fetch(&e, &sets, json!({"url": srv.url("/endless")}));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["metadata"]["bytes"], 300000);
    assert_eq!(v["metadata"]["truncated"], true);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
}

#[test]
fn a_slow_server_hits_the_time_limit() {
    let (e, srv) = (Env::new(), Server::start());
    let mut sets = allow_local();
    sets.push("web_fetch.timeout=1".into());
    let started = Instant::now();
    let (code, v) = fetch(&e, &sets, json!({"url": srv.url("/slow")}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("timed out after 1s"), "{v}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[test]
fn non_text_types_and_error_statuses_are_refused_with_what_they_were() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/image")}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("image/png, not text"), "{v}");
    let (_, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/missing")}));
    assert!(error(&v).contains("HTTP 404 Not Found"), "{v}");
    for url in ["file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"] {
        let (_, v) = fetch(&e, &allow_local(), json!({"url": url}));
        assert!(error(&v).contains("only http and https"), "{url}: {v}");
    }
}

#[test]
fn redirects_are_followed_by_hand_up_to_five() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/hop/4")}));
    assert_eq!(code, 0, "{v}");
    assert!(
        output(&v).starts_with(&format!("Fetched: {} ", srv.url("/utf8"))),
        "{v}"
    );
    assert_eq!(v["metadata"]["redirects"], 5);
    let (code, v) = fetch(&e, &allow_local(), json!({"url": srv.url("/hop/5")}));
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("more than 5 redirects"), "{v}");
}

#[test]
fn a_redirect_from_an_allowed_host_to_a_blocked_address_is_refused() {
    let (e, srv) = (Env::new(), Server::start());
    let sets = vec![format!(r#"web_fetch.allow=["127.0.0.1:{}"]"#, srv.port)];
    let (code, v) = fetch(&e, &sets, json!({"url": srv.url("/metadata-redirect")}));
    assert_eq!(code, 1, "{v}");
    let err = error(&v);
    assert!(err.contains("169.254.169.254") && err.contains("metadata"), "{err}");
    // The same server, reached as [::1], is not what the allow list names.
    let (_, v) = fetch(&e, &sets, json!({"url": srv.url("/other-port-redirect")}));
    assert!(error(&v).contains("blocked by the SSRF guard"), "{v}");
    assert!(error(&v).contains("::1"), "{v}");
}

#[test]
fn every_internal_address_class_is_refused_in_every_spelling_without_a_connection() {
    let (e, srv) = (Env::new(), Server::start());
    let p = srv.port;
    let urls = [
        format!("http://127.0.0.1:{p}/utf8"),
        format!("http://2130706433:{p}/utf8"),
        format!("http://0177.0.0.1:{p}/utf8"),
        format!("http://0x7f.0.0.1:{p}/utf8"),
        format!("http://0x7f000001:{p}/utf8"),
        format!("http://127.1:{p}/utf8"),
        format!("http://[::1]:{p}/utf8"),
        format!("http://[::ffff:127.0.0.1]:{p}/utf8"),
        format!("http://[::ffff:7f00:1]:{p}/utf8"),
        format!("http://[::127.0.0.1]:{p}/utf8"),
        format!("http://[64:ff9b::7f00:1]:{p}/utf8"),
        format!("http://0.0.0.0:{p}/utf8"),
        format!("http://[::]:{p}/utf8"),
        format!("http://localhost:{p}/utf8"),
        "http://169.254.169.254/latest/meta-data/".into(),
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/".into(),
        "http://10.0.0.1/".into(),
        "http://012.0.0.1/".into(),
        "http://172.16.0.1/".into(),
        "http://192.168.1.1/".into(),
        "http://0xc0a80101/".into(),
        "http://100.64.0.1/".into(),
        "http://[fd00::1]/".into(),
        "http://[fe80::1]/".into(),
        "http://224.0.0.1/".into(),
        "http://255.255.255.255/".into(),
    ];
    for url in &urls {
        let (code, v) = fetch(&e, &[], json!({"url": url}));
        assert_eq!(code, 1, "{url}: {v}");
        let err = error(&v);
        assert!(err.contains("blocked by the SSRF guard"), "{url}: {err}");
        assert!(err.contains("web_fetch.allow"), "{url}: {err}");
    }
    assert_eq!(srv.hits(), 0, "a blocked address was connected to");
}

#[test]
fn web_fetch_needs_approval_by_default() {
    let (e, srv) = (Env::new(), Server::start());
    let out = e
        .wield()
        .args(["--set", r#"web_fetch.allow=["127.0.0.1"]"#, "call", "web_fetch"])
        .arg(json!({"url": srv.url("/utf8")}).to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("approval required"),
        "{out:?}"
    );
    assert_eq!(srv.hits(), 0);
}

fn search_sets(srv: &Server, backend: &str, path: &str) -> Vec<String> {
    vec![
        r#"web_search.allow=["127.0.0.1"]"#.into(),
        format!(r#"web_search.backend="{backend}""#),
        format!(r#"web_search.base_url="{}""#, srv.url(path)),
    ]
}

#[test]
fn duckduckgo_results_come_from_its_html_page() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = call(
        &e,
        &search_sets(&srv, "duckduckgo", "/ddg"),
        "web_search",
        json!({"query": "rust"}),
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        output(&v),
        "Search results for \"rust\" (duckduckgo, 2 results):\n\n\
         1. [Rust Programming Language](https://www.rust-lang.org/)\n   \
         A language empowering everyone to build reliable and efficient software.\n\n\
         2. [Rust (programming language) - Wikipedia](https://en.wikipedia.org/wiki/Rust_(programming_language))\n   \
         Rust is a general-purpose programming language emphasizing performance, type safety & concurrency."
    );
    let (_, v) = call(
        &e,
        &search_sets(&srv, "duckduckgo", "/ddg"),
        "web_search",
        json!({"query": "rust", "limit": 1}),
    );
    assert_eq!(v["metadata"]["results"], 1, "{v}");
}

#[test]
fn a_challenge_page_is_an_error_that_says_so() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = call(
        &e,
        &search_sets(&srv, "duckduckgo", "/ddg-challenge"),
        "web_search",
        json!({"query": "rust"}),
    );
    assert_eq!(code, 1, "{v}");
    assert!(error(&v).contains("challenge page"), "{v}");
}

#[test]
fn searxng_results_come_from_its_json_api() {
    let (e, srv) = (Env::new(), Server::start());
    let (code, v) = call(
        &e,
        &search_sets(&srv, "searxng", "/searx"),
        "web_search",
        json!({"query": "rust"}),
    );
    assert_eq!(code, 0, "{v}");
    let out = output(&v);
    assert!(
        out.contains("1. [Rust Programming Language](https://www.rust-lang.org/)\n   A language empowering everyone."),
        "{out}"
    );
    assert!(
        out.contains("2. [The Rust Programming Language & Book](https://doc.rust-lang.org/book/)"),
        "{out}"
    );
}

#[test]
fn search_backends_are_guarded_and_keyed() {
    let (e, srv) = (Env::new(), Server::start());
    let mut sets = search_sets(&srv, "duckduckgo", "/ddg");
    sets.remove(0);
    let (code, v) = call(&e, &sets, "web_search", json!({"query": "rust"}));
    assert_eq!(code, 1, "{v}");
    assert!(
        error(&v).contains("blocked by the SSRF guard") && error(&v).contains("web_search.allow"),
        "{v}"
    );
    assert_eq!(srv.hits(), 0);
    let (_, v) = call(
        &e,
        &search_sets(&srv, "brave", "/brave"),
        "web_search",
        json!({"query": "rust"}),
    );
    assert!(error(&v).contains("BRAVE_API_KEY"), "{v}");
}

/// Over MCP the tools are listed with their network nature, and a call runs
/// through the same guard.
#[test]
fn mcp_lists_and_calls_the_web_tools() {
    use crate::shell::support::{Mcp, Ws};
    let (ws, srv) = (Ws::new(), Server::start());
    let mut mcp = Mcp::start(&ws, &["-y", "--set", r#"web_fetch.allow=["127.0.0.1"]"#]);
    let list = mcp.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().unwrap();
    for name in ["web_fetch", "web_search"] {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {list}"));
        assert_eq!(t["annotations"]["openWorldHint"], true, "{t}");
        assert_ne!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    let (is_error, text) = mcp.call("web_fetch", json!({"url": srv.url("/latin1")}));
    assert!(!is_error, "{text}");
    assert!(text.contains("Café crème brûlée"), "{text}");
    let (is_error, text) = mcp.call("web_fetch", json!({"url": "http://[::ffff:127.0.0.1]/"}));
    assert!(is_error && text.contains("blocked by the SSRF guard"), "{text}");
}

/// The agent offers web_fetch to the model, runs the call it asks for
/// (approved here by `-y`; headless it would be refused for approval) and
/// hands the page back.
#[test]
fn the_agent_fetches_a_page_the_model_asks_for() {
    use crate::scripted_provider::{Scripted, Turn};
    let srv = Server::start();
    let provider = Scripted::start(vec![
        Turn::Call("web_fetch", json!({"url": srv.url("/sjis")})),
        Turn::Text("The page says 日本語."),
    ]);
    let e = Env::new();
    e.put(
        ".wield/config.toml",
        &format!("{}\n[web_fetch]\nallow = [\"127.0.0.1\"]\n", provider.config()),
    );
    let out = e
        .wield()
        .args(["-y", "run", "--headless", "-p", "What does the page say?"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "The page says 日本語.\n");
    let requests = provider.requests();
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"web_fetch") && offered.contains(&"web_search"),
        "{offered:?}"
    );
    let tool = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let content = tool["content"].as_str().unwrap();
    assert!(
        content.starts_with(&format!("Fetched: {} (text/html", srv.url("/sjis"))),
        "{content}"
    );
    assert!(content.contains("日本語"), "{content}");
}

/// A malformed web setting is a usage error when wield starts, naming the key.
#[test]
fn malformed_web_settings_are_refused_at_start() {
    let e = Env::new();
    for (set, want) in [
        (r#"web_fetch.allow=["not a host"]"#, "web_fetch.allow: `not a host`"),
        (r#"web_search.allow=["10.0.0.0/40"]"#, "web_search.allow: `10.0.0.0/40`"),
        (
            "web_fetch.max_bytes=-1",
            "web_fetch.max_bytes must be a positive number",
        ),
        (r#"web_search.backend="bing""#, "web_search.backend `bing` is unknown"),
        (r#"web_search.backend="searxng""#, "needs web_search.base_url"),
    ] {
        let out = e
            .wield()
            .args(["-y", "--set", set, "call", "web_search", r#"{"query":"x"}"#])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{set}: {stderr}");
    }
}
