//! Sending a request and streaming the reply: HTTP, retries, cancellation.
//!
//! Connection errors, 408, 409, 429, 5xx and in-stream overload errors are
//! tried again with exponential backoff and jitter, honouring
//! `retry-after-ms`, `retry-after` (seconds or a date) and "try again in Ns"
//! in the body — but only while nothing has reached the caller; after the
//! first event the error goes up, marked retryable. Quota errors are not
//! retried. A 200 answer that is not an event stream (a proxy's HTML page)
//! is an error that says what came back.

use std::collections::VecDeque;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::conversation::{Origin, Response};
use crate::decode::{Anthropic, Chat, Decoding, Flow, Gemini, Responses, WireDecoder, error_of};
use crate::encode::{AnthropicThinking, anthropic_body, chat_body, gemini_body, responses_body};
use crate::error::LlmError;
use crate::event::StreamEvent;
use crate::request::Request;
use crate::turn::Turn;

/// The wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAi,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Chat Completions as llama.cpp, Ollama, vLLM, LM Studio, OpenRouter
    /// and the like speak it.
    OpenAiCompatible,
    /// Gemini (the Generative Language API, or Vertex).
    Gemini,
}

impl Kind {
    /// Every kind, by its configuration name.
    pub const ALL: [Kind; 5] = [
        Kind::Anthropic,
        Kind::OpenAi,
        Kind::OpenAiResponses,
        Kind::OpenAiCompatible,
        Kind::Gemini,
    ];

    /// The name `kind = …` takes.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::OpenAiResponses => "openai-responses",
            Kind::OpenAiCompatible => "openai-compatible",
            Kind::Gemini => "gemini",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// How hard the model may think, mapped to each kind's own setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ThinkingLevel {
    #[default]
    Off,
    Low,
    Medium,
    High,
    /// The model decides (Anthropic's adaptive thinking, Gemini's dynamic
    /// budget; `medium` effort for Responses).
    Adaptive,
}

/// Where and how to reach one provider. Its `Debug` form hides the key.
#[derive(Clone)]
pub struct Endpoint {
    pub kind: Kind,
    pub model: String,
    /// The API root, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Never printed, logged or saved.
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    /// Tries after the first one.
    pub max_retries: u32,
    /// The longest a request may wait for its first byte, and between two
    /// reads of its stream.
    pub timeout: Duration,
    pub thinking: ThinkingLevel,
    /// A thinking budget in tokens (Anthropic, Gemini) that wins over
    /// `thinking`.
    pub thinking_budget: Option<u32>,
    /// A reasoning effort (Responses) that wins over `thinking`.
    pub reasoning_effort: Option<String>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("kind", &self.kind)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<hidden>"))
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .field("thinking", &self.thinking)
            .field("thinking_budget", &self.thinking_budget)
            .field("reasoning_effort", &self.reasoning_effort)
            .finish()
    }
}

impl Endpoint {
    /// The request's URL and body for this kind.
    fn request(&self, request: &Request) -> (String, Value) {
        let base = self.base_url.trim_end_matches('/');
        let kind = self.kind.name();
        let model = self.model.as_str();
        match self.kind {
            Kind::Anthropic => {
                let thinking = match (self.thinking_budget, self.thinking) {
                    (Some(budget), _) => AnthropicThinking::Budget(budget),
                    (None, ThinkingLevel::Off) => AnthropicThinking::Off,
                    (None, ThinkingLevel::Low) => AnthropicThinking::Budget(2_048),
                    (None, ThinkingLevel::Medium) => AnthropicThinking::Budget(8_192),
                    (None, ThinkingLevel::High) => AnthropicThinking::Budget(24_576),
                    (None, ThinkingLevel::Adaptive) => AnthropicThinking::Adaptive,
                };
                (
                    format!("{base}/messages"),
                    anthropic_body(kind, model, request, thinking),
                )
            }
            Kind::OpenAi | Kind::OpenAiCompatible => {
                (format!("{base}/chat/completions"), chat_body(kind, model, request))
            }
            Kind::OpenAiResponses => {
                let effort = self.reasoning_effort.as_deref().or(match self.thinking {
                    ThinkingLevel::Off => None,
                    ThinkingLevel::Low => Some("low"),
                    ThinkingLevel::Medium => Some("medium"),
                    ThinkingLevel::High => Some("high"),
                    ThinkingLevel::Adaptive => Some("medium"),
                });
                (
                    format!("{base}/responses"),
                    responses_body(kind, model, request, effort),
                )
            }
            Kind::Gemini => {
                let budget = self.thinking_budget.map(i64::from).or(match self.thinking {
                    ThinkingLevel::Off => None,
                    ThinkingLevel::Low => Some(1_024),
                    ThinkingLevel::Medium => Some(8_192),
                    ThinkingLevel::High => Some(24_576),
                    // Gemini's dynamic thinking.
                    ThinkingLevel::Adaptive => Some(-1),
                });
                (
                    format!("{base}/models/{model}:streamGenerateContent?alt=sse"),
                    gemini_body(kind, model, request, budget),
                )
            }
        }
    }

    /// The headers that carry the key, for this kind.
    fn auth(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let Some(key) = &self.api_key else { return builder };
        match self.kind {
            Kind::Anthropic => builder.header("x-api-key", key),
            Kind::Gemini => builder.header("x-goog-api-key", key),
            _ => builder.header("authorization", format!("Bearer {key}")),
        }
    }

    fn decoder(&self) -> Box<dyn WireDecoder> {
        match self.kind {
            Kind::Anthropic => Box::new(Anthropic::default()),
            Kind::OpenAi | Kind::OpenAiCompatible => Box::new(Chat),
            Kind::OpenAiResponses => Box::new(Responses::default()),
            Kind::Gemini => Box::new(Gemini),
        }
    }
}

/// A model provider: one endpoint and its HTTP client.
pub struct Provider {
    endpoint: Endpoint,
    client: reqwest::Client,
}

impl Provider {
    pub fn new(endpoint: Endpoint) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .connect_timeout(endpoint.timeout)
            .build()
            .map_err(|e| LlmError::provider(None, None, format!("cannot build an HTTP client: {e}")))?;
        Ok(Self { endpoint, client })
    }

    /// Sends `request` and streams the reply: every event goes to
    /// `on_event` as it comes. Cancelling `cancel` closes the stream and
    /// returns what came so far, stopped as `cancelled`.
    pub async fn stream(
        &self,
        request: &Request,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(&StreamEvent),
    ) -> Result<Response, LlmError> {
        let (url, body) = self.endpoint.request(request);
        let mut attempt = 0;
        loop {
            let mut delivered = false;
            let outcome = self
                .once(&url, &body, cancel, &mut |e: &StreamEvent| {
                    delivered = true;
                    on_event(e);
                })
                .await;
            match outcome {
                Err(Failure { error, wait })
                    if !delivered && error.is_retryable() && attempt < self.endpoint.max_retries =>
                {
                    attempt += 1;
                    let delay = wait.unwrap_or_else(|| backoff(attempt));
                    on_event(&StreamEvent::Retrying {
                        attempt: attempt + 1,
                        of: self.endpoint.max_retries + 1,
                        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        reason: error.to_string(),
                    });
                    tracing::debug!(
                        "{} request failed ({error}); trying again in {delay:?}",
                        self.endpoint.kind.name()
                    );
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = cancel.cancelled() => return Err(error),
                    }
                }
                Err(Failure { error, .. }) => return Err(error),
                Ok(response) => return Ok(response),
            }
        }
    }

    async fn once(
        &self,
        url: &str,
        body: &Value,
        cancel: &CancellationToken,
        on_event: &mut dyn FnMut(&StreamEvent),
    ) -> Result<Response, Failure> {
        let mut builder = self.client.post(url).header("content-type", "application/json");
        if self.endpoint.kind == Kind::Anthropic {
            builder = builder.header("anthropic-version", "2023-06-01");
        }
        builder = self.endpoint.auth(builder);
        for (name, value) in &self.endpoint.headers {
            builder = builder.header(name, value);
        }
        let sent = builder.body(body.to_string()).send();
        let response = tokio::select! {
            r = tokio::time::timeout(self.endpoint.timeout, sent) => r,
            () = cancel.cancelled() => return Ok(self.decoding().cancel()),
        };
        let response = match response {
            Err(_) => {
                return Err(Failure::now(
                    LlmError::provider(
                        None,
                        Some("timeout".into()),
                        format!("no answer from {url} within {:?}", self.endpoint.timeout),
                    )
                    .retryable(),
                ));
            }
            Ok(Err(e)) => {
                return Err(Failure::now(
                    LlmError::provider(
                        None,
                        Some("connection".into()),
                        format!("cannot reach {url}: {}", cause(&e)),
                    )
                    .retryable(),
                ));
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        let wait = retry_after(response.headers());
        if status != 200 {
            let text = response.text().await.unwrap_or_default();
            let error = error_body(status, &text);
            let wait = wait.or(match &error {
                LlmError::Provider { retry_after, .. } => *retry_after,
                _ => None,
            });
            return Err(Failure { error, wait });
        }
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if content_type.starts_with("text/html") {
            let text = response.text().await.unwrap_or_default();
            let shown: String = text.chars().take(200).collect();
            return Err(Failure::now(LlmError::Malformed(format!(
                "{url} answered 200 with an HTML page instead of an event stream (a proxy or a wrong base_url?): {shown}"
            ))));
        }
        let mut decoding = self.decoding();
        let mut events = response.bytes_stream().eventsource();
        let mut out = VecDeque::new();
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout(self.endpoint.timeout, events.next()) => next,
                () = cancel.cancelled() => return Ok(decoding.cancel()),
            };
            let event = match next {
                Err(_) => {
                    return Err(Failure::now(LlmError::Truncated(format!(
                        "its end: nothing came for {:?}",
                        self.endpoint.timeout
                    ))));
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(Failure::now(LlmError::Truncated(format!("its end ({e})")))),
                Ok(Some(Ok(event))) => event,
            };
            let flow = decoding
                .event(&event.event, &event.data, &mut out)
                .map_err(Failure::now)?;
            for e in out.drain(..) {
                on_event(&e);
            }
            if flow == Flow::Done {
                break;
            }
        }
        let response = decoding.finish(&mut out).map_err(Failure::now)?;
        for e in out.drain(..) {
            on_event(&e);
        }
        Ok(response)
    }

    fn decoding(&self) -> Decoding {
        let origin = Origin {
            provider: self.endpoint.kind.name().to_owned(),
            model: self.endpoint.model.clone(),
        };
        Decoding::new(
            self.endpoint.decoder(),
            Turn::new(origin, format!("call_{}_", unique())),
        )
    }
}

/// An error, and how long the provider asked to wait.
struct Failure {
    error: LlmError,
    wait: Option<Duration>,
}

impl Failure {
    fn now(error: LlmError) -> Self {
        let wait = match &error {
            LlmError::Provider { retry_after, .. } => *retry_after,
            _ => None,
        };
        Self { error, wait }
    }
}

impl LlmError {
    fn retryable(self) -> Self {
        match self {
            LlmError::Provider {
                status,
                code,
                message,
                retry_after,
                ..
            } => LlmError::Provider {
                status,
                code,
                message,
                class: crate::error::ErrorClass::Retryable,
                retry_after,
            },
            other => other,
        }
    }
}

/// An error body, read leniently: `{"error": {...}}` or `{"error": "..."}`,
/// numeric codes; anything else shown as it came.
fn error_body(status: u16, text: &str) -> LlmError {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.get("error").is_some() => error_of(v.get("error").unwrap_or(&Value::Null), Some(status)),
        Ok(v) if v.get("message").is_some() => error_of(&v, Some(status)),
        _ => {
            let shown: String = text.trim().chars().take(300).collect();
            LlmError::provider(
                Some(status),
                None,
                if shown.is_empty() { "no body".to_owned() } else { shown },
            )
        }
    }
}

/// `retry-after-ms`, else `retry-after` in seconds or as an HTTP date.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let when = httpdate(value)?;
    when.duration_since(std::time::SystemTime::now()).ok()
}

/// An IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`).
fn httpdate(text: &str) -> Option<std::time::SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = months.iter().position(|m| m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else { return None };
    // Days since 1970-01-01 (civil calendar).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + h * 3600 + m * 60 + s).ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

/// 0.5 s, 1 s, 2 s, … up to 8 s, each within ±10 %.
/// What went wrong with a request that got no answer, in words that say
/// what to check: the innermost cause reqwest reports (refused, DNS, TLS,
/// timeout), named, with its own text.
pub(crate) fn cause(e: &reqwest::Error) -> String {
    let mut inner: &dyn std::error::Error = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    let text = inner.to_string();
    let lower = text.to_ascii_lowercase();
    let hint = if e.is_timeout() || lower.contains("timed out") {
        "timed out: the server is slow or unreachable; check the address and raise providers.NAME.timeout"
    } else if lower.contains("connection refused") {
        "connection refused: nothing listens there; start the server or fix base_url"
    } else if lower.contains("dns") || lower.contains("failed to lookup") || lower.contains("name or service") {
        "the host name does not resolve (DNS): check base_url's host"
    } else if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
        "TLS failed: check the certificate, or use http:// for a local server"
    } else if lower.contains("reset") || lower.contains("closed") {
        "the connection was closed by the server"
    } else {
        return text;
    };
    format!("{hint} ({text})")
}

fn backoff(attempt: u32) -> Duration {
    let base = 0.5 * 2f64.powi(attempt.saturating_sub(1).min(4) as i32);
    let jitter = 0.9 + 0.2 * (unique() % 1000) as f64 / 1000.0;
    Duration::from_secs_f64((base * jitter).min(8.0))
}

/// A number that differs between calls (ids, jitter).
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    nanos ^ (COUNTER.fetch_add(1, Ordering::Relaxed) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_and_retry_headers() {
        let t = httpdate("Wed, 21 Oct 2015 07:28:00 GMT").and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        assert_eq!(t, Some(Duration::from_secs(1_445_412_480)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap_or_else(|_| unreachable!()));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "150".parse().unwrap_or_else(|_| unreachable!()));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
    }

    #[test]
    fn error_bodies_are_read_leniently() {
        let e = error_body(
            500,
            r#"{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}"#,
        );
        assert!(e.is_retryable() && e.to_string().contains("Cannot use tools"), "{e}");
        let e = error_body(404, r#"{"error":"model 'x' not found"}"#);
        assert!(
            !e.is_retryable() && e.to_string().contains("model 'x' not found"),
            "{e}"
        );
        let e = error_body(502, "<html>Bad gateway</html>");
        assert!(e.is_retryable() && e.to_string().contains("Bad gateway"), "{e}");
    }

    #[test]
    fn backoff_grows_and_stays_bounded() {
        assert!(backoff(1) < Duration::from_millis(600));
        assert!(backoff(3) > Duration::from_millis(1700));
        assert!(backoff(30) <= Duration::from_secs(8));
    }
}
