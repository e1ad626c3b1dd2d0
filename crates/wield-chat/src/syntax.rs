//! The syntax tree of a `.chat` document. Every node keeps the text it was
//! read from (its lines with their line endings), so that writing the tree
//! back gives the document byte for byte; the parsed fields beside that
//! text are what the rest of wield reads.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::diagnostic::Diagnostic;

/// Text of a document: borrowed from the text it was read from, owned
/// where wield rewrote it.
pub type Str<'a> = Cow<'a, str>;

/// Lines `start..=end`, counted from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LineRange {
    pub start: usize,
    pub end: usize,
}

impl LineRange {
    pub(crate) fn new(start: usize, end: usize) -> Self {
        Self {
            start,
            end: end.max(start),
        }
    }
}

/// A parsed document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document<'a> {
    pub frontmatter: Option<Frontmatter<'a>>,
    /// Text between the frontmatter and the first message, as written
    /// (ignored when the document is sent).
    pub preamble: Str<'a>,
    pub messages: Vec<Message<'a>>,
    pub diagnostics: Vec<Diagnostic>,
}

/// The fenced block on line 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Frontmatter<'a> {
    /// `toml` (wield's own), `json` (Flemma's JSON form), or another
    /// language wield reports and keeps as it is (`lua`).
    pub language: Str<'a>,
    pub fence: Fence<'a>,
}

impl<'a> Frontmatter<'a> {
    /// The text between the fences, as written.
    pub fn code(&self) -> &str {
        &self.fence.content
    }
}

/// A fenced block as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Fence<'a> {
    /// The opening line, its line ending included.
    pub opener: Str<'a>,
    /// How many backticks open it.
    pub ticks: usize,
    /// The word after the backticks (`json`, `flemma:tool`), or empty.
    pub language: Str<'a>,
    /// What follows the language on the opening line, trimmed.
    pub info: Str<'a>,
    /// The lines between the fences, their line endings included.
    pub content: Str<'a>,
    /// The closing line, its line ending included; `None` when the block
    /// runs to the end of its message unclosed.
    pub closer: Option<Str<'a>>,
    pub lines: LineRange,
}

impl<'a> Fence<'a> {
    /// The content without the line ending of its last line: what the
    /// block holds.
    pub fn body(&self) -> &str {
        let c = self.content.strip_suffix('\n').unwrap_or(&self.content);
        c.strip_suffix('\r').unwrap_or(c)
    }

    pub(crate) fn write_to(&self, out: &mut String) {
        out.push_str(&self.opener);
        out.push_str(&self.content);
        if let Some(closer) = &self.closer {
            out.push_str(closer);
        }
    }
}

/// Who speaks in a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    System,
    You,
    Assistant,
    /// Any other `@Name:` line: a message boundary that is never sent.
    Other(String),
}

impl Speaker {
    pub(crate) fn from_name(name: &str) -> Self {
        match name {
            "System" => Speaker::System,
            "You" => Speaker::You,
            "Assistant" => Speaker::Assistant,
            other => Speaker::Other(other.to_string()),
        }
    }

    /// The name on the role line.
    pub fn name(&self) -> &str {
        match self {
            Speaker::System => "System",
            Speaker::You => "You",
            Speaker::Assistant => "Assistant",
            Speaker::Other(name) => name,
        }
    }
}

/// A message: its role line and what follows until the next role line.
#[derive(Clone, Debug, PartialEq)]
pub struct Message<'a> {
    pub speaker: Speaker,
    /// The role line as written. For the legacy inline form
    /// (`@You: text`) this is only `@You: `, and `text` starts the
    /// message's first segment.
    pub marker: Str<'a>,
    /// Whether the role line was the legacy inline form.
    pub inline: bool,
    pub segments: Vec<Segment<'a>>,
    pub lines: LineRange,
}

/// A piece of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Segment<'a> {
    Text(Text<'a>),
    // The blocks are boxed so that the text segments, the most numerous,
    // stay small.
    ToolUse(Box<ToolUse<'a>>),
    ToolResult(Box<ToolResult<'a>>),
    Thinking(Box<ThinkingBlock<'a>>),
    Aborted(Aborted<'a>),
}

impl<'a> Segment<'a> {
    pub fn lines(&self) -> LineRange {
        match self {
            Segment::Text(s) => s.lines,
            Segment::ToolUse(s) => s.lines,
            Segment::ToolResult(s) => s.lines,
            Segment::Thinking(s) => s.lines,
            Segment::Aborted(s) => s.lines,
        }
    }
}

/// Plain text, blank lines included, as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Text<'a> {
    pub text: Str<'a>,
    /// The file references in it (only in `@You:` messages).
    pub file_refs: Vec<FileRef>,
    pub lines: LineRange,
}

/// `@./path`, `@../path`, `@~/path` or `@//absolute/path` in a person's
/// text, with an optional `;type=mime/type`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileRef {
    /// As written, from the `@` to the end of the reference (trailing
    /// punctuation left out).
    pub raw: String,
    /// The path, percent-decoded: `./a b.txt`, `~/x`, `/abs/path`.
    pub path: String,
    /// The `;type=` override.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    pub line: usize,
}

/// `` **Tool Use:** `NAME` (`ID`) `` and its fenced JSON input.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse<'a> {
    pub name: Str<'a>,
    pub id: Str<'a>,
    /// The header line as written.
    pub header: Str<'a>,
    /// Blank lines between the header and the fence.
    pub gap: Str<'a>,
    /// `None` when no fenced block follows the header (a diagnostic says so).
    pub fence: Option<Fence<'a>>,
    pub lines: LineRange,
}

impl<'a> ToolUse<'a> {
    /// The input, when the fence is closed and holds a JSON object. Read
    /// on demand: parsing only checks it.
    pub fn input(&self) -> Option<Value> {
        let fence = self.fence.as_ref().filter(|f| f.closer.is_some())?;
        serde_json::from_str::<Value>(fence.body())
            .ok()
            .filter(Value::is_object)
    }
}

/// `` **Tool Result:** `ID` (STATUS …) `` and its fenced block.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult<'a> {
    pub id: Str<'a>,
    /// `None` is a final result; `Some(Error)` a final error result; the
    /// others are placeholders of the tool cycle.
    pub status: Option<Status>,
    /// The other tokens of the status suffix (`sandbox=false`), as written.
    pub meta: Vec<String>,
    /// The header line as written.
    pub header: Str<'a>,
    pub gap: Str<'a>,
    pub fence: Option<Fence<'a>>,
    /// Whether this is the older placeholder form, a ```` ```flemma:tool ````
    /// (or `wield:tool`) fence carrying `status=…`.
    pub legacy: bool,
    pub lines: LineRange,
}

impl<'a> ToolResult<'a> {
    /// What the block holds.
    pub fn content(&self) -> &str {
        self.fence.as_ref().map_or("", Fence::body)
    }

    /// Whether this is a final result (plain or `(error)`), not a
    /// placeholder of the cycle.
    pub fn is_final(&self) -> bool {
        matches!(self.status, None | Some(Status::Error))
    }
}

/// The status suffix of a tool result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Approved,
    Denied,
    Rejected,
    Aborted,
    Error,
}

impl Status {
    /// Every status, in the order the documentation lists them.
    pub const ALL: [Status; 6] = [
        Status::Pending,
        Status::Approved,
        Status::Denied,
        Status::Rejected,
        Status::Aborted,
        Status::Error,
    ];

    /// Every status, and the aliases `reject` and `deny`.
    pub fn parse(word: &str) -> Option<Status> {
        Some(match word {
            "pending" => Status::Pending,
            "approved" => Status::Approved,
            "denied" | "deny" => Status::Denied,
            "rejected" | "reject" => Status::Rejected,
            "aborted" => Status::Aborted,
            "error" => Status::Error,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Denied => "denied",
            Status::Rejected => "rejected",
            Status::Aborted => "aborted",
            Status::Error => "error",
        }
    }
}

/// What kind of thinking block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThinkingKind<'a> {
    /// `<thinking>`.
    Plain,
    /// `<thinking PROVIDER:signature="…">`, or its self-closing form.
    Signed { provider: Str<'a>, signature: Str<'a> },
    /// `<thinking redacted>`: the content is the provider's opaque data.
    Redacted,
}

/// A `<thinking …>` block.
#[derive(Clone, Debug, PartialEq)]
pub struct ThinkingBlock<'a> {
    pub kind: ThinkingKind<'a>,
    /// The opening tag line as written.
    pub opener: Str<'a>,
    /// The lines between the tags, as written.
    pub content: Str<'a>,
    /// The closing tag line; `None` for the self-closing form and for a
    /// block left unclosed.
    pub closer: Option<Str<'a>>,
    pub self_closing: bool,
    pub lines: LineRange,
}

impl<'a> ThinkingBlock<'a> {
    /// The reasoning (or the redacted data), without the final line ending.
    pub fn text(&self) -> &str {
        let c = self.content.strip_suffix('\n').unwrap_or(&self.content);
        c.strip_suffix('\r').unwrap_or(c)
    }
}

/// `<!-- wield:aborted: MESSAGE -->` (or `flemma:aborted`).
#[derive(Clone, Debug, PartialEq)]
pub struct Aborted<'a> {
    pub message: Str<'a>,
    /// `wield` or `flemma`.
    pub namespace: Str<'a>,
    /// The line as written.
    pub line_text: Str<'a>,
    pub lines: LineRange,
}
