//! Why an operation on a document failed.

use crate::calls::CallStatus;
use crate::diagnostic::Diagnostic;

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// Error-severity diagnostics stand: the document cannot be sent.
    #[error("the document cannot be sent until these are fixed:\n{}", list(diagnostics))]
    Blocked { diagnostics: Vec<Diagnostic> },
    /// Tool uses without a final result: the document cannot be sent.
    #[error("these tool calls have no final result yet:\n{}", calls_list(calls))]
    Unresolved {
        /// Each call's id, line and status.
        calls: Vec<(String, usize, CallStatus)>,
    },
    /// A file a person's message references cannot be attached.
    #[error("line {line}: {reference} cannot be attached: {why}")]
    Attachment {
        reference: String,
        line: usize,
        why: String,
    },
    /// No tool result with this id.
    #[error("there is no tool result `{id}` in the document; its tool use needs a result block first")]
    NoResult { id: String },
}

fn list(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|d| format!("  {d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn calls_list(calls: &[(String, usize, CallStatus)]) -> String {
    calls
        .iter()
        .map(|(id, line, status)| {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("  line {line}: `{id}` ({status})")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
