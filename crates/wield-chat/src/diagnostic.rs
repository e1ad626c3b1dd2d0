//! Problems found in a document, each with the line it is on. An
//! error-severity one blocks sending the document; a warning does not.

use std::fmt;

use serde::Serialize;

/// How bad a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The document must not be sent until it is fixed.
    Error,
    /// Worth fixing; the document can still be sent.
    Warning,
}

/// What kind of problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticKind {
    /// A fence (or thinking tag) that is never closed.
    UnclosedFence,
    /// Line 1 opens a frontmatter fence that is never closed.
    UnclosedFrontmatter,
    /// Frontmatter in a language wield cannot read.
    UnsupportedFrontmatter,
    /// Frontmatter that is not valid TOML or JSON, or not a table/object.
    InvalidFrontmatter,
    /// A tool use whose fence is not a JSON object.
    InvalidToolInput,
    /// A tool use header with no fenced block after it.
    ToolUseWithoutFence,
    /// A tool result header with no fenced block after it.
    ToolResultWithoutFence,
    /// A tool result whose id matches no tool use.
    UnmatchedToolResult,
    /// Two tool uses with the same id.
    DuplicateToolUseId,
    /// Two tool results for the same id.
    DuplicateToolResult,
    /// Text after a tool result's id that is not a `(…)` status suffix.
    IgnoredHeaderText,
    /// A word in a tool result's `(…)` suffix that is no status
    /// (`(aproved)`): the result is not read as done.
    UnknownStatus,
    /// A `<thinking>` without its `</thinking>`.
    UnclosedThinking,
    /// `@Role: text` on one line: read, to be rewritten as two lines.
    LegacyInlineRole,
    /// A ```` ```flemma:tool status=… ```` placeholder: read, to be
    /// rewritten with the status in the header.
    LegacyPlaceholder,
    /// An `@Name:` line other than System, You and Assistant.
    UnknownRole,
    /// Text before the first role line, which is never sent.
    TextBeforeFirstMessage,
}

/// A problem at a line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: DiagnosticKind,
    /// Counted from 1.
    pub line: usize,
    /// What is wrong and what to do about it.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn error(kind: DiagnosticKind, line: usize, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            kind,
            line,
            message: message.into(),
        }
    }

    pub(crate) fn warning(kind: DiagnosticKind, line: usize, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            kind,
            line,
            message: message.into(),
        }
    }

    /// Whether this one blocks sending.
    pub fn blocks_sending(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "line {}: {severity}: {}", self.line, self.message)
    }
}
