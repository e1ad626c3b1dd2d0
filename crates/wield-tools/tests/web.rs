//! web_fetch and web_search through the runtime's pipeline, against a
//! local server only: encodings and sizes, redirects, the SSRF guard (every
//! blocked address class written several ways, a redirect from an allowed
//! host to a blocked one), a slow server, an endless body, a non-text type,
//! and search results parsed from recorded-style pages. (How `wield call`,
//! MCP and the agent reach these tools is the CLI's suite.)

// Helpers outside #[test] fns unwrap too (clippy.toml allows it in tests only).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wield_core::approval::YesApprover;
use wield_test_support::pages::{Server, UTF8_PAGE};

/// A workspace of its own for each test.
struct Env {
    _dir: tempfile::TempDir,
    ws: PathBuf,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        Self { _dir: dir, ws }
    }
}

/// A call of `tool` through the pipeline of a runtime loaded with `sets`,
/// approved as `wield -y call` approves.
fn call(e: &Env, sets: &[String], tool: &str, args: Value) -> (i32, Value) {
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    support::call(&e.ws, &sets, Arc::new(YesApprover), tool, args)
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
