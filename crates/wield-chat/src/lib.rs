//! `.chat` documents: a conversation with a model as one editable file,
//! compatible with Flemma's format.
//!
//! ````text
//! ```toml
//! model = "claude-sonnet-4-5"
//! ```
//! @System:
//! You are terse.
//!
//! @You:
//! What is in @./notes.txt?
//!
//! @Assistant:
//! **Tool Use:** `read` (`toolu_01`)
//!
//! ```json
//! {"path": "notes.txt"}
//! ```
//!
//! @You:
//! **Tool Result:** `toolu_01` (pending)
//!
//! ```
//! ```
//! ````
//!
//! - [`parse`] reads any text into a [`Document`] and never fails: what is
//!   wrong becomes a [`Diagnostic`] with its line, and an error-severity
//!   one blocks sending. It runs in time linear in the text.
//! - Every node keeps the text it was read from, so [`Document::write`]
//!   gives back the parsed text byte for byte; the [`write`] module's
//!   functions make the canonical forms wield writes (a tool use, a result
//!   or placeholder with its status, a thinking block, a new prompt, the
//!   abort marker), and [`Document::rewrite_legacy`] rewrites the legacy
//!   forms (`@You: text` on one line, ```` ```flemma:tool status=… ````
//!   placeholders).
//! - [`Document::conversation`] is what a model is sent (a system prompt
//!   and [`wield_llm::Message`]s); [`Document::tool_calls`] and its
//!   siblings say where each call stands; [`Document::state`] is all of it
//!   as JSON for editors and scripts.

mod attach;
mod calls;
mod convert;
pub mod cycle;
mod diagnostic;
#[cfg(feature = "runtime")]
pub mod document;
mod error;
mod file_ref;
#[cfg(test)]
mod hang_guard;
mod lines;
mod options;
mod parse;
mod state;
mod syntax;
pub mod write;

pub use calls::{CallStatus, ToolCall};
pub use convert::{Conversation, ConvertOptions, provider_kind};
pub use diagnostic::{Diagnostic, DiagnosticKind, Severity};
#[cfg(feature = "runtime")]
pub use document::{ChatDocument, CycleFlags, DocumentError};
pub use error::ChatError;
pub use options::ChatOptions;
pub use parse::parse;
pub use state::{FrontmatterState, MessageState, SegmentState, State};
pub use syntax::{
    Aborted, Document, Fence, FileRef, Frontmatter, LineRange, Message, Segment, Speaker, Status, Text, ThinkingBlock,
    ThinkingKind, ToolResult, ToolUse,
};
