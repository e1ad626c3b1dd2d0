//! DuckDuckGo's HTML endpoint: no key, a page to scrape.
//!
//! Results are `a.result__a` links (the lite page's `a.result-link`) with
//! a `result__snippet` (`result-snippet`) after them; links go through a
//! `/l/?uddg=` redirector whose target is taken out. Ads (`y.js` links)
//! are skipped. A page with neither results nor DuckDuckGo's "no results"
//! marker is a challenge page or a changed layout: an error, never an
//! empty answer.

use std::sync::LazyLock;

use regex::Regex;
use reqwest::Url;

use super::{Hit, SearchBackend, SearchError};
use crate::web::html::{decode_entities, inline_text};
use crate::web::http::Request;

const DEFAULT_URL: &str = "https://html.duckduckgo.com/html/";

static TITLE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?is)<a\b([^>]*\bclass\s*=\s*["'][^"']*\bresult(?:__a|-link)\b[^"']*["'][^>]*)>(.*?)</a\s*>"#).ok()
});
static SNIPPET: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r#"(?is)<(a|div|td|span)\b[^>]*\bclass\s*=\s*["'][^"']*\bresult(?:__snippet|-snippet)\b[^"']*["'][^>]*>(.*?)</(?:a|div|td|span)\s*>"#).ok()
});
static HREF: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r#"(?is)\bhref\s*=\s*["']([^"']*)["']"#).ok());

pub struct DuckDuckGo {
    url: Url,
}

impl DuckDuckGo {
    /// `base` replaces the public endpoint (a mirror, a recorded page).
    pub fn new(base: Option<Url>) -> Result<Self, SearchError> {
        let url = match base {
            Some(u) => u,
            None => Url::parse(DEFAULT_URL).map_err(|e| SearchError::Setup(e.to_string()))?,
        };
        Ok(Self { url })
    }
}

impl SearchBackend for DuckDuckGo {
    fn name(&self) -> &'static str {
        "duckduckgo"
    }

    fn request(&self, query: &str, _limit: usize) -> Result<Request, SearchError> {
        let mut url = self.url.clone();
        url.query_pairs_mut().append_pair("q", query);
        Ok(Request::get(url).header("accept", "text/html"))
    }

    fn parse(&self, body: &str, limit: usize) -> Result<Vec<Hit>, SearchError> {
        let (Some(title_re), Some(snippet_re), Some(href_re)) = (TITLE.as_ref(), SNIPPET.as_ref(), HREF.as_ref())
        else {
            return Err(unparsable("the result patterns failed to build"));
        };
        let titles: Vec<_> = title_re.captures_iter(body).collect();
        let snippets: Vec<_> = snippet_re.captures_iter(body).collect();
        let mut hits = Vec::new();
        for (i, t) in titles.iter().enumerate() {
            let (Some(whole), Some(attrs), Some(inner)) = (t.get(0), t.get(1), t.get(2)) else {
                continue;
            };
            let Some(href) = href_re.captures(attrs.as_str()).and_then(|c| c.get(1)) else {
                continue;
            };
            let Some(url) = target(href.as_str()) else {
                continue;
            };
            let next = titles
                .get(i + 1)
                .and_then(|n| n.get(0))
                .map_or(body.len(), |m| m.start());
            let snippet = snippets
                .iter()
                .filter_map(|s| s.get(0).zip(s.get(2)))
                .find(|(m, _)| m.start() >= whole.end() && m.start() < next)
                .map(|(_, inner)| inline_text(inner.as_str()))
                .unwrap_or_default();
            hits.push(Hit {
                title: inline_text(inner.as_str()),
                url,
                snippet,
            });
            if hits.len() == limit {
                break;
            }
        }
        if !hits.is_empty() {
            return Ok(hits);
        }
        let lower = body.to_ascii_lowercase();
        if ["no-results", "no results found", "no  results."]
            .iter()
            .any(|m| lower.contains(m))
        {
            return Ok(Vec::new());
        }
        if ["anomaly", "challenge", "captcha", "bots use duckduckgo"]
            .iter()
            .any(|m| lower.contains(m))
        {
            return Err(unparsable(
                "DuckDuckGo served a bot check (a challenge page) instead of results. Wait a little and retry, \
                 or ask the user to configure another backend (web_search.backend = \"searxng\", \"brave\" or \"tavily\")",
            ));
        }
        Err(unparsable(
            "no results were found in it; it may be a challenge page, or DuckDuckGo changed its layout. \
             Retry later or ask the user to configure another backend (web_search.backend)",
        ))
    }
}

fn unparsable(why: &str) -> SearchError {
    SearchError::Unparsable {
        backend: "duckduckgo",
        hint: format!(": {why}"),
    }
}

/// The result's real address: the `uddg` parameter of DuckDuckGo's
/// redirector, else the link itself; ads are dropped.
fn target(href: &str) -> Option<String> {
    let href = decode_entities(href);
    let url = Url::parse("https://duckduckgo.com/").ok()?.join(&href).ok()?;
    if url.path().ends_with("/y.js") {
        return None;
    }
    let is_ddg = url
        .host_str()
        .is_some_and(|h| h == "duckduckgo.com" || h.ends_with(".duckduckgo.com"));
    if is_ddg {
        return url
            .query_pairs()
            .find(|(k, _)| k == "uddg")
            .map(|(_, v)| v.into_owned());
    }
    matches!(url.scheme(), "http" | "https").then(|| url.to_string())
}
