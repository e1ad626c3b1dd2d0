//! The parser: text in, a [`Document`] out, never a failure. One pass
//! splits the messages (tracking fences, so a role line inside a fenced
//! block is content), then one pass over each message reads its segments.
//! Both are linear in the text.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use crate::diagnostic::{Diagnostic, DiagnosticKind as K};
use crate::file_ref;
use crate::lines::{self, Line, LineIter, ThinkingTag};
use crate::syntax::{
    Aborted, Document, Fence, Frontmatter, LineRange, Message, Segment, Speaker, Status, Str, Text, ThinkingBlock,
    ThinkingKind, ToolResult, ToolUse,
};

/// Reads a document. Problems become [`Document::diagnostics`]; the text is
/// kept whole, so [`Document::write`] gives it back unchanged.
pub fn parse(text: &str) -> Document<'_> {
    let mut diagnostics = Vec::new();
    let (frontmatter, body) = frontmatter(text, &mut diagnostics);

    let mut first_marker = None;
    let mut first_text = None;
    for l in body.clone() {
        if marker_of(&l).is_some() {
            first_marker = Some(l);
            break;
        }
        if first_text.is_none() && !lines::is_blank(l.text) {
            first_text = Some(l.number);
        }
    }
    let preamble_end = first_marker.map_or(text.len(), |l| l.offset);
    let preamble = text[body_offset(&body, text)..preamble_end].into();
    if let Some(number) = first_text {
        diagnostics.push(Diagnostic::warning(
            K::TextBeforeFirstMessage,
            number,
            "text before the first role line (`@You:`, `@Assistant:`, `@System:`) is never sent; move it into a message",
        ));
    }

    let mut messages = Vec::new();
    let mut ids = Ids::default();
    if let Some(first) = first_marker {
        split_messages(
            LineIter::new(text, first.offset, first.number),
            &mut diagnostics,
            |lines, d| {
                messages.push(message(text, lines, d, &mut ids));
            },
        );
    }
    ids.check(&mut diagnostics);
    diagnostics.sort_by_key(|d| d.line);
    Document {
        frontmatter,
        preamble,
        messages,
        diagnostics,
    }
}

/// Where the lines of `body` start in `text`.
fn body_offset(body: &LineIter<'_>, text: &str) -> usize {
    body.clone().next().map_or(text.len(), |l| l.offset)
}

/// A role line: the speaker and, for the legacy inline form, the length of
/// the line's prefix that is the role line proper.
fn marker_of<'a>(line: &Line<'a>) -> Option<(&'a str, Option<usize>)> {
    if !line.text.starts_with('@') {
        return None;
    }
    if let Some(name) = lines::role_marker(line.text) {
        return Some((name, None));
    }
    lines::inline_role(line.text).map(|(name, prefix)| (name, Some(prefix)))
}

fn frontmatter<'a>(source: &'a str, diagnostics: &mut Vec<Diagnostic>) -> (Option<Frontmatter<'a>>, LineIter<'a>) {
    let all = LineIter::new(source, 0, 1);
    let mut rest = all.clone();
    let Some(first) = rest.next() else {
        return (None, all);
    };
    let Some(language) = first.text.strip_prefix("```") else {
        return (None, all);
    };
    let language = language.trim_end();
    if language.is_empty() || !language.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return (None, all);
    }
    let Some(close) = rest
        .clone()
        .find(|l| l.text.strip_prefix("```").is_some_and(lines::is_blank))
    else {
        diagnostics.push(Diagnostic::warning(
            K::UnclosedFrontmatter,
            1,
            format!("the ```{language} frontmatter opened on line 1 is never closed; add a line ``` after it"),
        ));
        return (None, all);
    };
    let fence = Fence {
        opener: first.raw.into(),
        ticks: 3,
        language: language.into(),
        info: "".into(),
        content: source[first.raw.len()..close.offset].into(),
        closer: Some(close.raw.into()),
        lines: LineRange::new(1, close.number),
    };
    check_frontmatter(language, &fence.content, diagnostics);
    (
        Some(Frontmatter {
            language: language.into(),
            fence,
        }),
        LineIter::new(source, close.offset + close.raw.len(), close.number + 1),
    )
}

fn check_frontmatter(language: &str, code: &str, diagnostics: &mut Vec<Diagnostic>) {
    let problem = match language {
        "toml" => code
            .parse::<toml::Table>()
            .err()
            .map(|e| format!("the TOML frontmatter is not valid: {}", e.message())),
        "json" => match serde_json::from_str::<Value>(code) {
            Ok(Value::Object(_)) => None,
            Ok(_) => Some("the JSON frontmatter must be an object (`{ … }`)".to_string()),
            Err(e) => Some(format!("the JSON frontmatter is not valid: {e}")),
        },
        // Lua is checked when it runs (`ChatOptions::of`): reading a
        // document never runs code.
        "lua" => return,
        other => {
            diagnostics.push(Diagnostic::error(
                K::UnsupportedFrontmatter,
                1,
                format!("unsupported frontmatter language `{other}`; write it as ```toml or ```json"),
            ));
            return;
        }
    };
    if let Some(message) = problem {
        diagnostics.push(Diagnostic::error(K::InvalidFrontmatter, 1, message));
    }
}

/// Splits `body` (which starts with a role line) into messages, tracking
/// fences so that a role line inside a fenced block is content, and hands
/// each message's lines to `each`. One buffer of lines serves every
/// message: it stays small (and in cache) however large the document is.
fn split_messages<'a>(
    body: LineIter<'a>,
    diagnostics: &mut Vec<Diagnostic>,
    mut each: impl FnMut(&[Line<'a>], &mut Vec<Diagnostic>),
) {
    // The diagnostic of a fence left open goes before those of the
    // messages, as when the messages were split first.
    let before_messages = diagnostics.len();
    let mut buffer: Vec<Line<'a>> = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    for line in body {
        if let Some((ticks, _)) = open {
            if lines::fence_close(line.text, ticks) {
                open = None;
            }
            buffer.push(line);
            continue;
        }
        if !buffer.is_empty() && marker_of(&line).is_some() {
            each(&buffer, diagnostics);
            buffer.clear();
            buffer.push(line);
            continue;
        }
        if let Some(ticks) = lines::fence_open(line.text) {
            open = Some((ticks, line.number));
        }
        buffer.push(line);
    }
    if !buffer.is_empty() {
        each(&buffer, diagnostics);
    }
    if let Some((_, opened)) = open {
        diagnostics.insert(
            before_messages,
            Diagnostic::error(
                K::UnclosedFence,
                opened,
                format!(
                    "the fence opened on line {opened} is never closed, so everything after it (role lines included) \
                     is inside it; close it with a line of backticks as long as its opener"
                ),
            ),
        );
    }
}

fn message<'a>(
    source: &'a str,
    lines: &[Line<'a>],
    diagnostics: &mut Vec<Diagnostic>,
    ids: &mut Ids<'a>,
) -> Message<'a> {
    let first = lines[0];
    let last = lines[lines.len() - 1].number;
    let (name, inline) = marker_of(&first).unwrap_or_default();
    let speaker = Speaker::from_name(name);
    if let Speaker::Other(name) = &speaker {
        diagnostics.push(Diagnostic::warning(
            K::UnknownRole,
            first.number,
            format!("`@{name}:` is not a role wield sends (System, You, Assistant); this message is ignored"),
        ));
    }
    // The legacy inline form's text is the message's first line; only then
    // are the lines copied.
    let mut owned: Vec<Line<'_>> = Vec::new();
    let marker = match inline {
        Some(prefix) => {
            diagnostics.push(Diagnostic::warning(
                K::LegacyInlineRole,
                first.number,
                format!("`@{name}:` and text on one line is the legacy form; it is read, and rewritten as two lines"),
            ));
            let rest = &first.raw[prefix..];
            owned.reserve(lines.len());
            owned.push(Line {
                raw: rest,
                text: lines::strip_ending(rest),
                number: first.number,
                offset: first.offset + prefix,
            });
            owned.extend_from_slice(&lines[1..]);
            first.raw[..prefix].into()
        }
        None => first.raw.into(),
    };
    let content = if inline.is_some() { &owned[..] } else { &lines[1..] };
    let segments = Segments {
        source,
        speaker: &speaker,
        lines: content,
        at: 0,
        out: Vec::new(),
        text: None,
        diagnostics,
        ids,
    }
    .run();
    Message {
        speaker,
        marker,
        inline: inline.is_some(),
        segments,
        lines: LineRange::new(first.number, last),
    }
}

/// The segment reader of one message.
struct Segments<'a, 'r, 'd> {
    source: &'a str,
    speaker: &'r Speaker,
    lines: &'r [Line<'a>],
    at: usize,
    out: Vec<Segment<'a>>,
    /// The index where the current text run started.
    text: Option<usize>,
    diagnostics: &'d mut Vec<Diagnostic>,
    ids: &'d mut Ids<'a>,
}

impl<'a> Segments<'a, '_, '_> {
    fn run(mut self) -> Vec<Segment<'a>> {
        let mut fence: Option<usize> = None;
        while self.at < self.lines.len() {
            let line = self.lines[self.at];
            if let Some(ticks) = fence {
                if lines::fence_close(line.text, ticks) {
                    fence = None;
                }
                self.text_line();
                continue;
            }
            let structural = match self.speaker {
                Speaker::Assistant => self.assistant_line(line),
                Speaker::You => self.user_line(line),
                _ => false,
            };
            if structural {
                continue;
            }
            fence = lines::fence_open(line.text);
            self.text_line();
        }
        self.flush_text(self.lines.len());
        self.out
    }

    fn text_line(&mut self) {
        if self.text.is_none() {
            self.text = Some(self.at);
        }
        self.at += 1;
    }

    fn flush_text(&mut self, end: usize) {
        let Some(start) = self.text.take() else {
            return;
        };
        let run = &self.lines[start..end];
        let mut file_refs = Vec::new();
        if *self.speaker == Speaker::You {
            let mut fence: Option<usize> = None;
            for line in run {
                match fence {
                    Some(ticks) if lines::fence_close(line.text, ticks) => fence = None,
                    Some(_) => {}
                    None => {
                        fence = lines::fence_open(line.text);
                        if fence.is_none() && line.text.contains('@') {
                            file_ref::find(line.text, line.number, &mut file_refs);
                        }
                    }
                }
            }
        }
        self.out.push(Segment::Text(Text {
            text: lines::span(self.source, run).into(),
            file_refs,
            lines: LineRange::new(run[0].number, run[run.len() - 1].number),
        }));
    }

    fn assistant_line(&mut self, line: Line<'a>) -> bool {
        if let Some((name, id)) = lines::tool_use_header(line.text) {
            self.flush_text(self.at);
            self.tool_use(line, name, id);
        } else if let Some(tag) = lines::thinking_open(line.text) {
            self.flush_text(self.at);
            self.thinking(line, tag);
        } else if let Some((namespace, message)) = lines::abort_marker(line.text) {
            self.flush_text(self.at);
            self.at += 1;
            self.out.push(Segment::Aborted(Aborted {
                message: message.into(),
                namespace: namespace.into(),
                line_text: line.raw.into(),
                lines: LineRange::new(line.number, line.number),
            }));
        } else {
            return false;
        }
        true
    }

    fn user_line(&mut self, line: Line<'a>) -> bool {
        let Some((id, rest)) = lines::tool_result_header(line.text) else {
            return false;
        };
        self.flush_text(self.at);
        self.tool_result(line, id, rest);
        true
    }

    /// The blank lines after the header, and the fence after them if there
    /// is one. Moves past what it returns.
    fn gap_and_fence(&mut self, what: &str) -> (Str<'a>, Option<Fence<'a>>) {
        let mut i = self.at;
        while i < self.lines.len() && lines::is_blank(self.lines[i].text) {
            i += 1;
        }
        let Some(ticks) = self.lines.get(i).and_then(|l| lines::fence_open(l.text)) else {
            return ("".into(), None);
        };
        let gap = lines::span(self.source, &self.lines[self.at..i]).into();
        let opener = self.lines[i];
        let (language, info) = lines::fence_info(opener.text, ticks);
        let close = self.lines[i + 1..]
            .iter()
            .position(|l| lines::fence_close(l.text, ticks))
            .map(|p| p + i + 1);
        let end = close.unwrap_or(self.lines.len());
        let last = close.map_or(self.lines[self.lines.len() - 1].number, |c| self.lines[c].number);
        if close.is_none() {
            self.diagnostics.push(Diagnostic::error(
                K::UnclosedFence,
                opener.number,
                format!(
                    "the fenced block of the {what} opened on line {} is never closed",
                    opener.number
                ),
            ));
        }
        let fence = Fence {
            opener: opener.raw.into(),
            ticks,
            language: language.into(),
            info: info.into(),
            content: lines::span(self.source, &self.lines[i + 1..end]).into(),
            closer: close.map(|c| self.lines[c].raw.into()),
            lines: LineRange::new(opener.number, last),
        };
        self.at = close.map_or(self.lines.len(), |c| c + 1);
        (gap, Some(fence))
    }

    fn tool_use(&mut self, header: Line<'a>, name: &'a str, id: &'a str) {
        self.at += 1;
        let (gap, fence) = self.gap_and_fence("tool use");
        match &fence {
            None => self.diagnostics.push(Diagnostic::error(
                K::ToolUseWithoutFence,
                header.number,
                format!("the tool use `{id}` has no fenced block with its JSON input after its header"),
            )),
            // Checked without building the value: the reader of the input
            // builds it (`ToolUse::input`).
            Some(f) if f.closer.is_some() => match serde_json::from_str::<serde::de::IgnoredAny>(f.body()) {
                Ok(_) if f.body().trim_start().starts_with('{') => {}
                Ok(_) => self.diagnostics.push(Diagnostic::error(
                    K::InvalidToolInput,
                    f.lines.start,
                    format!("the input of the tool use `{id}` must be a JSON object (`{{ … }}`)"),
                )),
                Err(e) => self.diagnostics.push(Diagnostic::error(
                    K::InvalidToolInput,
                    f.lines.start + e.line(),
                    format!("the input of the tool use `{id}` is not valid JSON: {e}"),
                )),
            },
            Some(_) => {}
        }
        let end = fence.as_ref().map_or(header.number, |f| f.lines.end);
        self.ids.uses.push((id, header.number));
        self.out.push(Segment::ToolUse(Box::new(ToolUse {
            name: name.into(),
            id: id.into(),
            header: header.raw.into(),
            gap,
            fence,
            lines: LineRange::new(header.number, end),
        })));
    }

    fn tool_result(&mut self, header: Line<'a>, id: &'a str, rest: &str) {
        self.at += 1;
        let lone = lone_status(rest);
        let suffix = if lone.is_some() {
            None
        } else {
            lines::status_suffix(rest)
        };
        let (mut status, mut meta) = match (lone, suffix) {
            (Some(status), _) => (Some(status), Vec::new()),
            (None, Some(tokens)) => read_status(tokens),
            (None, None) => {
                if !lines::is_blank(rest) {
                    self.diagnostics.push(Diagnostic::warning(
                        K::IgnoredHeaderText,
                        header.number,
                        format!(
                            "`{}` after the result's id is not a `(status)` suffix and is ignored",
                            rest.trim()
                        ),
                    ));
                }
                (None, Vec::new())
            }
        };
        // A misspelled status is read as waiting for the person (never as a
        // finished, empty result), and blocks the document until fixed;
        // `wield chat approve` or `reject` writes the header anew.
        if status.is_none()
            && let Some(at) = meta.iter().position(|t| unknown_status(t).is_some())
        {
            let token = meta.remove(at);
            let word = unknown_status(&token).unwrap_or(&token);
            self.diagnostics.push(Diagnostic::error(
                K::UnknownStatus,
                header.number,
                unknown_status_message(id, word),
            ));
            status = Some(Status::Pending);
        }
        let (gap, fence) = self.gap_and_fence("tool result");
        let mut legacy = false;
        match &fence {
            None => self.diagnostics.push(Diagnostic::error(
                K::ToolResultWithoutFence,
                header.number,
                format!("the tool result `{id}` has no fenced block after its header; add one (``` and ```) holding the result"),
            )),
            Some(f) if matches!(f.language.as_ref(), "flemma:tool" | "wield:tool") => {
                legacy = true;
                let (fence_status, fence_meta) = read_status(lines::tokens(&f.info));
                status = status.or(fence_status).or(Some(Status::Pending));
                meta.extend(fence_meta);
                self.diagnostics.push(Diagnostic::warning(
                    K::LegacyPlaceholder,
                    f.lines.start,
                    format!(
                        "```{} is the older placeholder form; it is read as `({})` and rewritten with the status in the header",
                        f.language,
                        status.map_or("pending", Status::as_str)
                    ),
                ));
            }
            Some(_) => {}
        }
        let end = fence.as_ref().map_or(header.number, |f| f.lines.end);
        self.ids.results.push((id, header.number));
        self.out.push(Segment::ToolResult(Box::new(ToolResult {
            id: id.into(),
            status,
            meta,
            header: header.raw.into(),
            gap,
            fence,
            legacy,
            lines: LineRange::new(header.number, end),
        })));
    }

    fn thinking(&mut self, opener: Line<'a>, tag: ThinkingTag<'a>) {
        self.at += 1;
        let (kind, self_closing) = match tag {
            ThinkingTag::Plain => (ThinkingKind::Plain, false),
            ThinkingTag::Redacted => (ThinkingKind::Redacted, false),
            ThinkingTag::Signed {
                provider,
                signature,
                self_closing,
            } => (
                ThinkingKind::Signed {
                    provider: provider.into(),
                    signature: signature.into(),
                },
                self_closing,
            ),
        };
        let (content, closer, last) = if self_closing {
            ("".into(), None, opener.number)
        } else {
            let close = self.lines[self.at..]
                .iter()
                .position(|l| lines::thinking_close(l.text))
                .map(|p| p + self.at);
            let end = close.unwrap_or(self.lines.len());
            let content = lines::span(self.source, &self.lines[self.at..end]).into();
            let last = self.lines[end.min(self.lines.len() - 1)].number;
            if close.is_none() {
                self.diagnostics.push(Diagnostic::warning(
                    K::UnclosedThinking,
                    opener.number,
                    "this thinking block has no `</thinking>` line, so the rest of the message is inside it",
                ));
            }
            self.at = close.map_or(self.lines.len(), |c| c + 1);
            (content, close.map(|c| self.lines[c].raw.into()), last)
        };
        self.out.push(Segment::Thinking(Box::new(ThinkingBlock {
            kind,
            opener: opener.raw.into(),
            content,
            closer,
            self_closing,
            lines: LineRange::new(opener.number, last),
        })));
    }
}

/// The status of a suffix that is one status word alone (`(error)`,
/// `(status=pending)`): the common case, read without building tokens.
fn lone_status(rest: &str) -> Option<Status> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    if inner.is_empty() || inner.contains(char::is_whitespace) {
        return None;
    }
    Status::parse(inner.strip_prefix("status=").unwrap_or(inner))
}

/// The word of a suffix token that stands where a status would (a bare
/// word, or `status=WORD`) but is none: what a person misspelled. Other
/// tokens are `key=value` metadata.
fn unknown_status(token: &str) -> Option<&str> {
    match token.split_once('=') {
        Some(("status", word)) => Some(word),
        Some(_) => None,
        None => Some(token),
    }
    .filter(|w| Status::parse(w).is_none())
}

/// What is wrong with the status word `word` of the result `id`, with the
/// status it was probably meant to be.
fn unknown_status_message(id: &str, word: &str) -> String {
    let words = Status::ALL.map(Status::as_str);
    let lower = word.to_ascii_lowercase();
    let closest = words
        .iter()
        .chain(&["deny", "reject"])
        .map(|w| (strsim::damerau_levenshtein(&lower, w), *w))
        .min()
        .filter(|(d, _)| *d <= 2)
        .map(|(_, w)| Status::parse(w).map_or(w, Status::as_str));
    let hint = closest.map_or(String::new(), |w| format!("did you mean `({w})`? "));
    format!(
        "`{word}` in the result `{id}`'s header is no status, so the result is not read as done; {hint}the \
         statuses are {}, or none for a finished result",
        words.map(|w| format!("`({w})`")).join(", ")
    )
}

/// The status among `tokens` (`status=X` wins over a bare word) and the
/// other tokens, as written.
pub(crate) fn read_status(tokens: Vec<String>) -> (Option<Status>, Vec<String>) {
    let keyed = tokens
        .iter()
        .position(|t| t.strip_prefix("status=").and_then(Status::parse).is_some());
    let chosen = keyed.or_else(|| tokens.iter().position(|t| Status::parse(t).is_some()));
    let Some(chosen) = chosen else {
        return (None, tokens);
    };
    let word = tokens[chosen].strip_prefix("status=").unwrap_or(&tokens[chosen]);
    let status = Status::parse(word);
    let meta = tokens
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != chosen)
        .map(|(_, t)| t)
        .collect();
    (status, meta)
}

/// A multiply-rotate hasher (rustc's Fx): ids come from the document the
/// person edits, so there is no adversary to defend against, and SipHash
/// was a tenth of the time spent reading a large document.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The ids of the document's tool uses and results with their header
/// lines, in document order, gathered while the messages are read (so
/// that checking them never walks the whole tree again).
#[derive(Default)]
struct Ids<'a> {
    uses: Vec<(&'a str, usize)>,
    results: Vec<(&'a str, usize)>,
}

impl Ids<'_> {
    /// Duplicate tool-use ids, duplicate results, and results that answer
    /// no tool use.
    fn check(&self, diagnostics: &mut Vec<Diagnostic>) {
        // Each use's line, and whether a result answered it yet.
        let mut uses: IdMap<&str, (usize, bool)> = IdMap::with_capacity_and_hasher(self.uses.len(), Default::default());
        for &(id, line) in &self.uses {
            if let Some((first, _)) = uses.get(id) {
                diagnostics.push(Diagnostic::error(
                    K::DuplicateToolUseId,
                    line,
                    format!("the tool use id `{id}` is already used on line {first}; ids must be unique"),
                ));
            } else {
                uses.insert(id, (line, false));
            }
        }
        for &(id, line) in &self.results {
            match uses.get_mut(id) {
                None => diagnostics.push(Diagnostic::error(
                    K::UnmatchedToolResult,
                    line,
                    format!("the tool result `{id}` answers no tool use; fix its id or remove it"),
                )),
                Some((_, true)) => diagnostics.push(Diagnostic::error(
                    K::DuplicateToolResult,
                    line,
                    format!("the tool use `{id}` already has a result above; keep only one"),
                )),
                Some((_, answered)) => *answered = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::Segment;

    fn kinds(text: &str) -> Vec<(K, usize)> {
        parse(text).diagnostics.iter().map(|d| (d.kind, d.line)).collect()
    }

    fn result(text: &str) -> ToolResult<'_> {
        let doc = parse(text);
        let found = doc.messages.iter().flat_map(|m| &m.segments).find_map(|s| match s {
            Segment::ToolResult(r) => Some((**r).clone()),
            _ => None,
        });
        match found {
            Some(r) => r,
            None => panic!("no tool result in {text:?}"),
        }
    }

    const USE: &str = "@Assistant:\n**Tool Use:** `a` (`x`)\n\n```json\n{}\n```\n@You:\n";

    /// A frontmatter's language is one word after the backticks (trailing
    /// spaces allowed); anything else makes line 1 body text.
    #[test]
    fn frontmatter_language_is_one_word() {
        let doc = parse("```toml  \na = 1\n```  \n@You:\nhi\n");
        let fm = doc
            .frontmatter
            .as_ref()
            .map(|f| (f.language.to_string(), f.fence.lines));
        assert_eq!(fm, Some(("toml".to_string(), LineRange::new(1, 3))));
        assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);
        assert!(parse("```to-ml\na = 1\n```\n@You:\nhi\n").frontmatter.is_none());
        assert!(parse("```my_lang\n```\n@You:\nhi\n").frontmatter.is_some());
    }

    /// Text before the first role line is reported at its first non-blank
    /// line, and blank lines alone are not reported.
    #[test]
    fn text_before_the_first_message_is_reported_where_it_starts() {
        assert_eq!(
            kinds("\n\nstray\nmore\n@You:\nhi\n"),
            vec![(K::TextBeforeFirstMessage, 3)]
        );
        assert!(kinds("\n  \n@You:\nhi\n").is_empty());
        assert_eq!(parse("\n\nstray\n@You:\nhi\n").preamble, "\n\nstray\n");
    }

    /// A document without a role line is all preamble, with no messages.
    #[test]
    fn a_document_without_role_lines_has_no_messages() {
        let doc = parse("just text\n");
        assert!(doc.messages.is_empty());
        assert_eq!(doc.preamble, "just text\n");
    }

    /// A result's status suffix: one word or `status=word`, spaces inside
    /// the parentheses, other tokens kept as meta, and an unknown word read
    /// as a misspelled status: waiting (and an error, see the suite).
    #[test]
    fn result_status_suffixes() {
        let status = |suffix: &str| {
            let text = format!("{USE}**Tool Result:** `x`{suffix}\n\n```\n```\n");
            let r = result(&text);
            (r.status, r.meta.clone())
        };
        assert_eq!(status(" (status=denied)"), (Some(Status::Denied), vec![]));
        assert_eq!(status(" ( error )"), (Some(Status::Error), vec![]));
        assert_eq!(
            status(" (note=1 approved)"),
            (Some(Status::Approved), vec!["note=1".to_string()])
        );
        assert_eq!(status(" (status=bogus)"), (Some(Status::Pending), vec![]));
        assert_eq!(status(" ()"), (None, vec![]));
        assert_eq!(status(""), (None, vec![]));
        // `status=` wins over a bare word before it.
        assert_eq!(
            status(" (pending status=rejected)"),
            (Some(Status::Rejected), vec!["pending".to_string()])
        );
    }

    /// Only text after the id that is not a `(…)` suffix is reported as
    /// ignored; a bare suffix or nothing is not.
    #[test]
    fn header_text_after_the_id_is_reported_only_when_ignored() {
        let found = |suffix: &str| kinds(&format!("{USE}**Tool Result:** `x`{suffix}\n\n```\n```\n"));
        assert!(found("   ").is_empty());
        assert!(found(" (pending)").is_empty());
        assert_eq!(found(" done"), vec![(K::IgnoredHeaderText, 8)]);
    }

    /// A legacy placeholder with no status reads as pending, and the
    /// header's status wins over the fence's.
    #[test]
    fn legacy_placeholder_statuses() {
        let r = result(
            "@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x`\n```flemma:tool\n```\n",
        );
        assert_eq!((r.status, r.legacy, r.is_final()), (Some(Status::Pending), true, false));
        let r = result(
            "@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x` (approved)\n```wield:tool status=rejected\n```\n",
        );
        assert_eq!(r.status, Some(Status::Approved));
        let r = result(
            "@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{}\n```\n@You:\n**Tool Result:** `x`\n```text\nok\n```\n",
        );
        assert_eq!(
            (r.status, r.legacy, r.is_final(), r.content()),
            (None, false, true, "ok")
        );
    }

    /// A tool use's input must be a JSON object, reported where the JSON
    /// goes wrong; an unclosed fence is reported as unclosed (by the
    /// message and by the tool use), and its input is not checked.
    #[test]
    fn tool_use_input_checks() {
        let input = |json: &str| {
            kinds(&format!(
                "@Assistant:\n**Tool Use:** `a` (`x`)\n\n```json\n{json}\n```\n"
            ))
        };
        assert!(input("  {\"a\": 1}").is_empty());
        assert_eq!(input("[1]"), vec![(K::InvalidToolInput, 4)]);
        assert_eq!(input("{\n\"a\":\n}"), vec![(K::InvalidToolInput, 7)]);
        assert_eq!(
            kinds("@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{\n"),
            vec![(K::UnclosedFence, 3), (K::UnclosedFence, 3)]
        );
    }

    /// A tool use's segment spans its header to its fence's closer, the
    /// gap between them kept as written.
    #[test]
    fn a_tool_use_spans_header_gap_and_fence() {
        let doc = parse("@Assistant:\n**Tool Use:** `a` (`x`)\n\n \n```json\n{}\n```\nafter\n");
        let Segment::ToolUse(u) = &doc.messages[0].segments[0] else {
            panic!("{:?}", doc.messages[0].segments)
        };
        assert_eq!(u.lines, LineRange::new(2, 7));
        assert_eq!(u.gap, "\n \n");
        assert_eq!(doc.messages[0].segments[1].lines(), LineRange::new(8, 8));
        let doc = parse("@Assistant:\n**Tool Use:** `a` (`x`)\ntext\n");
        assert_eq!(doc.messages[0].segments[0].lines(), LineRange::new(2, 2));
        assert_eq!(
            kinds("@Assistant:\n**Tool Use:** `a` (`x`)\ntext\n"),
            vec![(K::ToolUseWithoutFence, 2)]
        );
    }

    /// An unclosed thinking block runs to the end of its message, and a
    /// self-closing one is its opener line alone.
    #[test]
    fn thinking_block_lines() {
        let doc = parse("@Assistant:\n<thinking>\na\nb\n@You:\nhi\n");
        assert_eq!(doc.messages[0].segments[0].lines(), LineRange::new(2, 4));
        assert_eq!(
            kinds("@Assistant:\n<thinking>\na\nb\n@You:\nhi\n"),
            vec![(K::UnclosedThinking, 2)]
        );
        let doc = parse("@Assistant:\n<thinking a:signature=\"s\" />\nsaid\n");
        let segments = &doc.messages[0].segments;
        assert_eq!(segments[0].lines(), LineRange::new(2, 2));
        assert_eq!(segments[1].lines(), LineRange::new(3, 3));
        let doc = parse("@Assistant:\n<thinking>\nhm\n</thinking>\nsaid\n");
        assert_eq!(doc.messages[0].segments[0].lines(), LineRange::new(2, 4));
        assert_eq!(doc.messages[0].segments[1].lines(), LineRange::new(5, 5));
    }

    /// Thinking tags, tool headers and abort markers mean something only in
    /// a reply, and tool results only in a person's message.
    #[test]
    fn blocks_belong_to_their_speaker() {
        let doc = parse(
            "@You:\n<thinking>\n**Tool Use:** `a` (`x`)\n<!-- wield:aborted: m -->\n@Assistant:\n**Tool Result:** `x`\n",
        );
        for m in &doc.messages {
            assert!(matches!(&m.segments[..], [Segment::Text(_)]), "{:?}", m.segments);
        }
        assert!(doc.diagnostics.is_empty(), "{:?}", doc.diagnostics);
    }

    /// File references are read in a person's text outside fences only,
    /// and a fence's opening line (its info string) is inside it.
    #[test]
    fn file_references_outside_fences_only() {
        let doc = parse(
            "@You:\nsee @./a.txt\n```\n@./b.txt\n```\nand @./c.txt\n```text @./e.txt\nx\n```\n@Assistant:\n@./d.txt\n",
        );
        let refs: Vec<_> = doc.state().file_refs.into_iter().map(|r| (r.path, r.line)).collect();
        assert_eq!(refs, vec![("./a.txt".to_string(), 2), ("./c.txt".to_string(), 6)]);
    }

    /// A fence left open inside a message holds the rest of the document,
    /// role lines included, and is reported at its opener.
    #[test]
    fn an_unclosed_fence_swallows_later_role_lines() {
        let doc = parse("@You:\nhi\n```\n@Assistant:\nno\n");
        assert_eq!(doc.messages.len(), 1);
        assert_eq!(doc.messages[0].lines, LineRange::new(1, 5));
        assert_eq!(kinds("@You:\nhi\n```\n@Assistant:\nno\n"), vec![(K::UnclosedFence, 3)]);
    }

    /// The legacy inline role line's text is the first line of the message,
    /// and its segments are numbered from the role line.
    #[test]
    fn legacy_inline_text_starts_the_message() {
        let doc = parse("@You:hello\nworld\n");
        let m = &doc.messages[0];
        assert_eq!((m.marker.as_ref(), m.inline), ("@You:", true));
        let Segment::Text(t) = &m.segments[0] else {
            panic!("{:?}", m.segments)
        };
        assert_eq!((t.text.as_ref(), t.lines), ("hello\nworld\n", LineRange::new(1, 2)));
        assert_eq!(doc.write(), "@You:hello\nworld\n");
    }

    /// Ids are checked across the document: a second use of an id, a second
    /// result for it, and a result for no use are errors on their lines.
    #[test]
    fn ids_are_checked_across_the_document() {
        let text = format!(
            "{USE}**Tool Result:** `x`\n```\n1\n```\n**Tool Result:** `y`\n```\n2\n```\n@Assistant:\n**Tool Use:** `a` (`x`)\n```json\n{{}}\n```\n"
        );
        assert_eq!(
            kinds(&text),
            vec![(K::UnmatchedToolResult, 12), (K::DuplicateToolUseId, 17)]
        );
        let doc = parse(&text);
        let said = doc.diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>();
        assert!(said[1].contains("already used on line 2"), "{said:?}");
    }

    /// In a CRLF document a result's text and a thought's text end without
    /// the line ending, as in an LF one.
    #[test]
    fn block_text_drops_the_crlf_of_its_last_line() {
        let text = "@Assistant:\r\n<thinking>\r\nhm\r\n</thinking>\r\n**Tool Use:** `a` (`x`)\r\n```json\r\n{}\r\n```\r\n@You:\r\n**Tool Result:** `x`\r\n```\r\ntwo\r\nlines\r\n```\r\n";
        let doc = parse(text);
        let Segment::Thinking(t) = &doc.messages[0].segments[0] else {
            panic!("{:?}", doc.messages[0].segments)
        };
        assert_eq!(t.text(), "hm");
        assert_eq!(doc.tool_calls()[0].result.as_deref(), Some("two\r\nlines"));
        assert_eq!(doc.write(), text);
    }
}
