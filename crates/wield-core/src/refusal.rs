//! Why a pre-flight seam ([`Tool::pre`](crate::Tool::pre),
//! [`PathGuard::check`](crate::PathGuard::check)) stops a call: a message
//! meant for the model, or a failure of the check itself.

/// A boxed error that keeps its sources.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a call is refused before it runs.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The call breaks a rule the model can act on (read the file first, a
    /// path outside the roots, ...): the message says what was wrong and what
    /// to do, and is the call's error result as it stands.
    #[error("{0}")]
    ToModel(String),
    /// The check itself broke (a missing service, an I/O failure): the call
    /// is refused all the same, the model is told the check failed, and the
    /// cause is logged with its sources.
    #[error("{what}: {source}")]
    Failed {
        /// What could not be done, e.g. "could not open the workspace".
        what: String,
        #[source]
        source: BoxError,
    },
}

impl Refusal {
    /// A refusal whose message is meant for the model.
    pub fn to_model(message: impl Into<String>) -> Self {
        Self::ToModel(message.into())
    }

    /// A failure of the check: `what` could not be done because of `source`.
    pub fn failed(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Failed {
            what: what.into(),
            source: source.into(),
        }
    }
}

/// `error` and every source under it, joined with `: ` (for logs).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let shown = source.to_string();
        // A source an outer message already quotes is not repeated.
        if !text.ends_with(&shown) {
            text.push_str(": ");
            text.push_str(&shown);
        }
        next = source.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_keeps_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let refusal = Refusal::failed("could not stat the file", io);
        let source = std::error::Error::source(&refusal).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("denied"));
        assert_eq!(error_chain(&refusal), "could not stat the file: denied");
    }

    #[test]
    fn a_message_for_the_model_is_shown_as_is() {
        let refusal = Refusal::to_model("read it first");
        assert_eq!(refusal.to_string(), "read it first");
        assert!(std::error::Error::source(&refusal).is_none());
    }
}
