//! A local HTTP/1.1 server standing in for the web, whose answers are
//! chosen by path: pages in several encodings, redirects (to itself and to
//! blocked addresses), a slow and an endless body, a non-text type, error
//! statuses, and search backends' pages (DuckDuckGo's HTML, a challenge
//! page, SearXNG's JSON). For web_fetch's and web_search's tests.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A local HTTP/1.1 server whose answers are chosen by path; it counts the
/// connections it accepted.
pub struct Server {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    hits: Arc<AtomicUsize>,
}

impl Server {
    pub fn start() -> Self {
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

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn hits(&self) -> usize {
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

pub const UTF8_PAGE: &str = "<!doctype html><html><head><title>T</title><style>body{color:red}</style>\
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
