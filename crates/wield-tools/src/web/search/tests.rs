use super::*;

const DDG: &str = r#"<html><body><div class="serp__results">
<div class="result results_links results_links_deep result--ad">
  <a rel="nofollow" class="result__a" href="https://duckduckgo.com/y.js?ad_domain=ads.example&amp;u3=x">Buy things</a>
  <a class="result__snippet" href="https://duckduckgo.com/y.js?ad">An ad.</a>
</div>
<div class="result results_links results_links_deep web-result">
  <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fwww.rust-lang.org%2F&amp;rut=abc">Rust <b>Programming</b> Language</a></h2>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=x">A language empowering everyone to build <b>reliable</b> &amp; efficient software.</a>
</div>
<div class="result results_links results_links_deep web-result">
  <h2 class="result__title"><a rel="nofollow" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fdoc.rust-lang.org%2Fbook%2F&amp;rut=def" class="result__a">The Rust Book</a></h2>
</div>
<div class="result web-result"><a class="result__a" href="https://example.org/direct">Direct &quot;link&quot;</a>
<div class="result__snippet">Third snippet</div></div>
</div></body></html>"#;

#[test]
fn duckduckgo_pages_give_titles_targets_and_snippets_without_ads() {
    let hits = DuckDuckGo::new(None).unwrap().parse(DDG, 10).unwrap();
    assert_eq!(
        hits,
        vec![
            Hit {
                title: "Rust Programming Language".into(),
                url: "https://www.rust-lang.org/".into(),
                snippet: "A language empowering everyone to build reliable & efficient software.".into(),
            },
            Hit {
                title: "The Rust Book".into(),
                url: "https://doc.rust-lang.org/book/".into(),
                snippet: String::new(),
            },
            Hit {
                title: "Direct \"link\"".into(),
                url: "https://example.org/direct".into(),
                snippet: "Third snippet".into(),
            },
        ]
    );
    assert_eq!(DuckDuckGo::new(None).unwrap().parse(DDG, 1).unwrap().len(), 1);
}

#[test]
fn duckduckgo_challenge_and_unknown_pages_are_errors_and_no_results_is_empty() {
    let ddg = DuckDuckGo::new(None).unwrap();
    let challenge = "<html><body><form id=\"challenge-form\"><div class=\"anomaly-modal__title\">Unfortunately, bots use DuckDuckGo too.</div></form></body></html>";
    let e = ddg.parse(challenge, 5).unwrap_err().to_string();
    assert!(e.contains("challenge page"), "{e}");
    let e = ddg
        .parse("<html><body>Something else</body></html>", 5)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot be parsed"), "{e}");
    let none = "<html><body><div class=\"no-results\">No results.</div></body></html>";
    assert_eq!(ddg.parse(none, 5).unwrap(), vec![]);
}

#[test]
fn json_backends_read_their_shapes() {
    let base = Url::parse("http://127.0.0.1:1/").unwrap();
    let sx = Searxng::new(base.clone());
    let hits = sx
        .parse(
            r#"{"query":"q","results":[{"title":"A &amp; B","url":"https://a.example/","content":"snip"}]}"#,
            5,
        )
        .unwrap();
    assert_eq!(hits[0].title, "A & B");
    assert_eq!(
        sx.request("rust lang", 5).unwrap().url.as_str(),
        "http://127.0.0.1:1/search?q=rust+lang&format=json"
    );
    let e = sx.parse("<html>blocked</html>", 5).unwrap_err().to_string();
    assert!(e.contains("not JSON"), "{e}");
    let brave = Brave::new(Some(base.clone()), "k".into());
    let hits = brave
        .parse(
            r#"{"type":"search","web":{"results":[{"title":"T","url":"https://b.example/","description":"d"}]}}"#,
            5,
        )
        .unwrap();
    assert_eq!(hits[0].snippet, "d");
    let req = brave.request("x", 3).unwrap();
    assert!(
        req.headers
            .iter()
            .any(|(k, v)| *k == "x-subscription-token" && v == "k")
    );
    let tavily = Tavily::new(Some(base), "t".into());
    let hits = tavily
        .parse(
            r#"{"results":[{"title":"T","url":"https://t.example/","content":"c"}]}"#,
            5,
        )
        .unwrap();
    assert_eq!(hits[0].url, "https://t.example/");
    let req = tavily.request("x", 3).unwrap();
    assert!(req.body.unwrap().0.contains("\"max_results\":3"));
}

#[test]
fn results_render_as_a_numbered_markdown_list() {
    let hits = vec![Hit {
        title: "A [b]".into(),
        url: "https://a.example/".into(),
        snippet: "s".into(),
    }];
    assert_eq!(
        render("q", "duckduckgo", &hits),
        "Search results for \"q\" (duckduckgo, 1 result):\n\n1. [A b](https://a.example/)\n   s"
    );
    assert!(render("q", "brave", &[]).starts_with("No results"));
}
