//! One guarded HTTP exchange: every hop checked by the SSRF guard, the
//! connection pinned to the checked addresses, redirects followed by hand,
//! the body capped and the whole exchange time-limited.

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use tokio_util::sync::CancellationToken;

use super::guard::{self, Allow, GuardError};

/// The most redirects one exchange follows.
pub const MAX_REDIRECTS: usize = 5;

const USER_AGENT: &str = concat!("Mozilla/5.0 (compatible; wield/", env!("CARGO_PKG_VERSION"), ")");

/// What to send.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<(String, &'static str)>,
}

impl Request {
    pub fn get(url: Url) -> Self {
        Self {
            method: Method::GET,
            url,
            headers: Vec::new(),
            body: None,
        }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// A POST with a body of the given content type.
    pub fn post(url: Url, body: String, content_type: &'static str) -> Self {
        Self {
            method: Method::POST,
            url,
            headers: Vec::new(),
            body: Some((body, content_type)),
        }
    }
}

/// The limits and exceptions of one exchange.
#[derive(Debug, Clone)]
pub struct Limits {
    pub allow: Allow,
    /// The config key of `allow`, named in refusals.
    pub allow_key: String,
    pub max_bytes: usize,
    pub timeout: Duration,
}

/// What came back.
#[derive(Debug)]
pub struct Response {
    pub url: Url,
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// The body was longer than the cap and was cut there.
    pub truncated: bool,
    pub redirects: usize,
}

impl Response {
    /// The media type without parameters, lower-cased (`text/html`).
    pub fn media_type(&self) -> Option<String> {
        let ct = self.headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
        let media = ct.split(';').next()?.trim().to_ascii_lowercase();
        (!media.is_empty()).then_some(media)
    }

    /// The `charset` parameter of Content-Type.
    pub fn charset(&self) -> Option<String> {
        let ct = self.headers.get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?;
        ct.split(';').skip(1).find_map(|p| {
            let (k, v) = p.split_once('=')?;
            k.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| v.trim().trim_matches(['"', '\'']).to_owned())
        })
    }
}

/// Why an exchange failed, in words for the model.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(transparent)]
    Guard(#[from] GuardError),
    #[error("{url}: timed out after {secs}s. The server is slow or not answering; try again later or another source.")]
    Timeout { url: String, secs: u64 },
    #[error("cancelled")]
    Cancelled,
    #[error(
        "{url}: more than {MAX_REDIRECTS} redirects. The address redirects in a loop or too often; try the final address directly."
    )]
    TooManyRedirects { url: String },
    #[error("{url}: redirect (HTTP {status}) with no usable Location header.")]
    BadRedirect { url: String, status: u16 },
    /// The server compressed the body though wield asked for none: wield
    /// does not decode compressed bodies (a small one can stand for a huge
    /// text), so it refuses rather than hand the model undecoded bytes.
    #[error(
        "{url}: the server sent the body compressed (Content-Encoding: {encoding}) although wield asked for an \
         uncompressed one (Accept-Encoding: identity); wield does not decode compressed bodies. Try another \
         address for the same content."
    )]
    Encoded { url: String, encoding: String },
    #[error("{url}: {reason}")]
    Transport { url: String, reason: String },
}

/// Send a request under the guard and limits; stop at `cancel`.
pub async fn send(req: Request, limits: &Limits, cancel: &CancellationToken) -> Result<Response, HttpError> {
    let url = req.url.to_string();
    let secs = limits.timeout.as_secs().max(1);
    let deadline = Instant::now() + limits.timeout;
    tokio::select! {
        _ = cancel.cancelled() => Err(HttpError::Cancelled),
        r = tokio::time::timeout(limits.timeout, exchange(req, limits, deadline)) => match r {
            Ok(r) => r,
            Err(_) => Err(HttpError::Timeout { url, secs }),
        },
    }
}

async fn exchange(mut req: Request, limits: &Limits, deadline: Instant) -> Result<Response, HttpError> {
    let mut redirects = 0;
    loop {
        let checked = guard::check(&req.url, &limits.allow, &limits.allow_key).await?;
        let transport = |e: reqwest::Error| HttpError::Transport {
            url: req.url.to_string(),
            reason: error_chain(&e),
        };
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(deadline.saturating_duration_since(Instant::now()))
            .user_agent(USER_AGENT);
        // The client connects to the addresses the guard checked and never
        // resolves the name again (no rebinding between check and connect).
        if let Some(domain) = &checked.domain {
            builder = builder.resolve_to_addrs(domain, &checked.addrs);
        }
        let client = builder.build().map_err(transport)?;
        let mut headers = HeaderMap::new();
        for (name, value) in &req.headers {
            if let Ok(v) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), v);
            }
        }
        // Only an uncompressed body is wanted: what is read is capped and
        // handed on as it came, so it must be the text itself.
        headers
            .entry(reqwest::header::ACCEPT_ENCODING)
            .or_insert(HeaderValue::from_static("identity"));
        let mut rb = client.request(req.method.clone(), req.url.clone()).headers(headers);
        if let Some((body, ct)) = &req.body {
            rb = rb.header(reqwest::header::CONTENT_TYPE, *ct).body(body.clone());
        }
        let mut resp = rb.send().await.map_err(transport)?;
        let status = resp.status();
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            let next = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|loc| req.url.join(loc).ok())
                .ok_or_else(|| HttpError::BadRedirect {
                    url: req.url.to_string(),
                    status: status.as_u16(),
                })?;
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(HttpError::TooManyRedirects {
                    url: req.url.to_string(),
                });
            }
            // 301, 302 and 303 turn a POST into a GET, as browsers do.
            if status != StatusCode::TEMPORARY_REDIRECT && status != StatusCode::PERMANENT_REDIRECT {
                req.method = Method::GET;
                req.body = None;
            }
            req.url = next;
            continue;
        }
        if let Some(encoding) = content_encoding(resp.headers()) {
            return Err(HttpError::Encoded {
                url: req.url.to_string(),
                encoding,
            });
        }
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            let room = limits.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Response {
            url: req.url,
            status,
            headers: resp.headers().clone(),
            body,
            truncated,
            redirects,
        });
    }
}

/// The body's content coding when it is not the identity: every
/// `Content-Encoding` header and every coding listed in one counts.
fn content_encoding(headers: &HeaderMap) -> Option<String> {
    let codings: Vec<String> = headers
        .get_all(reqwest::header::CONTENT_ENCODING)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .flat_map(|v| v.split(',').map(|c| c.trim().to_ascii_lowercase()).collect::<Vec<_>>())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    (!codings.is_empty()).then(|| codings.join(", "))
}

/// An error with its causes, which carry the useful part (refused,
/// certificate, reset).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_coding_other_than_identity_counts() {
        let mut h = HeaderMap::new();
        assert_eq!(content_encoding(&h), None);
        h.insert(reqwest::header::CONTENT_ENCODING, HeaderValue::from_static("identity"));
        assert_eq!(content_encoding(&h), None);
        h.append(reqwest::header::CONTENT_ENCODING, HeaderValue::from_static("GZip, br"));
        assert_eq!(content_encoding(&h).as_deref(), Some("gzip, br"));
    }
}
