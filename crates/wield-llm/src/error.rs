//! Why a model request failed, classified for retries.

use std::time::Duration;

/// What kind of failure a provider reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// Overloaded, rate-limited, a server error or a dropped connection:
    /// worth another try.
    Retryable,
    /// Out of quota or credit (`insufficient_quota`, a usage limit, 402):
    /// another try will not help until the account changes.
    Quota,
    /// The conversation is longer than the model's context window.
    ContextOverflow,
    /// The key is missing, wrong or lacks permission.
    Auth,
    /// The request was refused as invalid (its message says why).
    Invalid,
}

/// Why a model request failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an error, as an HTTP status or inside the
    /// stream.
    #[error("{}{message}{}", status.map(|s| format!("HTTP {s}: ")).unwrap_or_default(), class_hint(*class))]
    Provider {
        status: Option<u16>,
        /// The provider's own error code or type (`rate_limit_error`,
        /// `insufficient_quota`, …).
        code: Option<String>,
        message: String,
        class: ErrorClass,
        /// How long the provider asked to wait before another try.
        retry_after: Option<Duration>,
    },
    /// The stream held something that is not the provider's format.
    #[error("the provider sent a malformed stream: {0}")]
    Malformed(String),
    /// The stream ended before its terminal event.
    #[error("the stream ended before {0}; the reply is incomplete")]
    Truncated(String),
}

fn class_hint(class: ErrorClass) -> &'static str {
    match class {
        ErrorClass::Quota => " (a quota or billing limit: retrying will not help until it is raised)",
        ErrorClass::ContextOverflow => " (the conversation is longer than the model's context window)",
        _ => "",
    }
}

impl LlmError {
    /// Whether another try may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Provider { class, .. } => *class == ErrorClass::Retryable,
            Self::Truncated(_) => true,
            Self::Malformed(_) => false,
        }
    }

    /// Whether the provider said the conversation is longer than the
    /// model's context window.
    pub fn is_context_overflow(&self) -> bool {
        matches!(
            self,
            Self::Provider {
                class: ErrorClass::ContextOverflow,
                ..
            }
        )
    }

    /// A provider error classified from its status, code and message.
    pub fn provider(status: Option<u16>, code: Option<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        let class = classify(status, code.as_deref(), &message);
        let retry_after = try_again_in(&message);
        Self::Provider {
            status,
            code,
            message,
            class,
            retry_after,
        }
    }
}

/// The class of an error from what the provider said: quota codes first
/// (a 429 may be either), then context overflow, then the status.
pub fn classify(status: Option<u16>, code: Option<&str>, message: &str) -> ErrorClass {
    let code = code.unwrap_or_default().to_ascii_lowercase();
    let lower = message.to_ascii_lowercase();
    if matches!(
        code.as_str(),
        "insufficient_quota" | "usage_limit_reached" | "usage_not_included" | "billing_error"
    ) || status == Some(402)
        || lower.contains("insufficient_quota")
        || lower.contains("exceeded your current quota")
    {
        return ErrorClass::Quota;
    }
    // The providers' documented overflow errors: OpenAI and compatible
    // servers (`context_length_exceeded`, "maximum context length"),
    // Anthropic ("prompt is too long", "input length and `max_tokens`
    // exceed context limit"), Gemini ("input token count … exceeds the
    // maximum number of tokens allowed") and llama.cpp
    // (`exceed_context_size_error`, "exceeds the available context size").
    if matches!(code.as_str(), "context_length_exceeded" | "exceed_context_size_error")
        || lower.contains("prompt is too long")
        || lower.contains("context length")
        || lower.contains("context window")
        || lower.contains("maximum context")
        || lower.contains("exceed context limit")
        || lower.contains("context size")
        || (lower.contains("input token count") && lower.contains("exceeds the maximum"))
    {
        return ErrorClass::ContextOverflow;
    }
    match status {
        Some(401 | 403) => ErrorClass::Auth,
        Some(408 | 409 | 429 | 500..=599) => ErrorClass::Retryable,
        Some(_) => ErrorClass::Invalid,
        // In-stream errors: overloaded and server errors are retryable.
        None => {
            if code.contains("overloaded")
                || code.contains("rate_limit")
                || code.contains("server_error")
                || code.contains("api_error")
                || code.contains("unavailable")
                || code.contains("resource_exhausted")
                || lower.contains("overloaded")
            {
                ErrorClass::Retryable
            } else {
                ErrorClass::Invalid
            }
        }
    }
}

/// "Please try again in 1.2s" / "in 350ms" / "in 2 seconds" in a message.
pub fn try_again_in(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let at = lower.find("try again in")?;
    let rest = lower[at + "try again in".len()..].trim_start();
    let digits = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let value: f64 = rest[..digits].parse().ok()?;
    let unit = rest[digits..].trim_start();
    let seconds = if unit.starts_with("ms") || unit.starts_with("millisecond") {
        value / 1000.0
    } else if unit.starts_with('s') {
        value
    } else {
        return None;
    };
    Duration::try_from_secs_f64(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_is_told_from_a_rate_limit_whatever_the_status() {
        assert_eq!(
            classify(Some(429), Some("rate_limit_exceeded"), "slow down"),
            ErrorClass::Retryable
        );
        assert_eq!(classify(Some(429), Some("insufficient_quota"), "no"), ErrorClass::Quota);
        assert_eq!(classify(Some(402), None, "pay"), ErrorClass::Quota);
        assert_eq!(
            classify(
                Some(400),
                Some("invalid_request_error"),
                "prompt is too long: 3 tokens > 2 maximum"
            ),
            ErrorClass::ContextOverflow
        );
        assert_eq!(classify(Some(529), None, "Overloaded"), ErrorClass::Retryable);
        assert_eq!(
            classify(None, Some("overloaded_error"), "Overloaded"),
            ErrorClass::Retryable
        );
        assert_eq!(classify(Some(401), None, "bad key"), ErrorClass::Auth);
        assert_eq!(classify(Some(400), None, "bad"), ErrorClass::Invalid);
    }

    #[test]
    fn the_providers_documented_overflow_errors_are_context_overflow() {
        for (status, code, message) in [
            (
                Some(400),
                Some("context_length_exceeded"),
                "This model's maximum context length is 128000 tokens.",
            ),
            (
                Some(400),
                Some("invalid_request_error"),
                "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000",
            ),
            (
                Some(400),
                Some("INVALID_ARGUMENT"),
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            ),
            (
                Some(400),
                Some("exceed_context_size_error"),
                "the request exceeds the available context size, try increasing it",
            ),
            (
                None,
                Some("context_length_exceeded"),
                "Your input exceeds the context window",
            ),
        ] {
            let e = LlmError::provider(status, code.map(str::to_owned), message);
            assert!(e.is_context_overflow(), "{message}");
            assert!(!e.is_retryable());
        }
        assert!(!LlmError::provider(Some(400), None, "bad request").is_context_overflow());
    }

    #[test]
    fn try_again_in_reads_seconds_and_milliseconds() {
        assert_eq!(
            try_again_in("Rate limit reached. Please try again in 1.5s."),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(try_again_in("try again in 350ms"), Some(Duration::from_millis(350)));
        assert_eq!(try_again_in("Try again in 2 seconds"), Some(Duration::from_secs(2)));
        assert_eq!(try_again_in("try again later"), None);
    }

    #[test]
    fn quota_errors_say_retrying_will_not_help() {
        let e = LlmError::provider(
            Some(429),
            Some("insufficient_quota".into()),
            "You exceeded your current quota",
        );
        assert!(!e.is_retryable());
        assert!(e.to_string().contains("retrying will not help"), "{e}");
    }
}
