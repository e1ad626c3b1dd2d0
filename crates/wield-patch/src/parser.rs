//! The `*** Begin Patch` grammar.
//!
//! The parser is a single forward pass over the patch's lines. It is lenient
//! where a model's slip has only one sensible reading (whitespace around
//! marker lines, a heredoc wrapper, blank lines between chunks, a unified-diff
//! hunk header used as `@@` context) and strict everywhere else, because a
//! patch that means something other than what was intended is worse than one
//! that is refused with a message saying how to fix it.

use std::collections::HashMap;
use std::fmt;

use crate::patch::{Chunk, ChunkLine, Operation, Patch};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const UPDATE: &str = "*** Update File:";
const DELETE: &str = "*** Delete File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// The grammar in one sentence, appended to every parse error so that a model
/// can repair the patch without having to look the format up.
pub const VALID_HEADERS: &str = "Valid lines: `*** Begin Patch` first; then any of `*** Add File: PATH` \
(followed by `+` lines), `*** Update File: PATH` (optionally followed by `*** Move to: PATH`, then chunks: \
`@@ [CONTEXT]`, lines starting with ' ', '-' or '+', optionally `*** End of File`), `*** Delete File: PATH`; \
`*** End Patch` last.";

/// Why a patch text was refused, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number in the patch text as given (heredoc lines counted).
    pub line: usize,
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid patch at line {}: {}. {VALID_HEADERS}", self.line, self.kind)
    }
}

impl std::error::Error for ParseError {}

/// What was wrong; the `Display` text says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("the patch is empty")]
    Empty,
    #[error("expected `*** Begin Patch`, found `{found}`")]
    MissingBegin { found: String },
    #[error("missing `*** End Patch`: the patch text ended first")]
    MissingEnd,
    #[error("unknown header `{found}`")]
    UnknownHeader { found: String },
    #[error("`{found}` is not allowed here: {why}")]
    MisplacedLine { found: String, why: &'static str },
    #[error("`{header}` needs a path after the colon")]
    EmptyPath { header: &'static str },
    #[error("in `*** Add File: {path}` every content line must start with '+', found `{found}`")]
    BadAddLine { path: String, found: String },
    #[error(
        "in `*** Update File: {path}` every chunk line must start with ' ' (context), '-' (remove), '+' (add) \
         or `@@`, found `{found}`"
    )]
    BadChunkLine { path: String, found: String },
    #[error("`*** Update File: {path}` has no chunks; add at least one chunk of ' ', '-' and '+' lines")]
    EmptyUpdate { path: String },
    #[error("this chunk of `*** Update File: {path}` has an `@@` line but no ' ', '-' or '+' lines")]
    EmptyChunk { path: String },
    #[error(
        "`{path}` already appears in this patch at line {first_line}; put all changes to one file in one operation \
         (a file the patch deletes may be created again after the delete)"
    )]
    DuplicatePath { path: String, first_line: usize },
    #[error("the patch contains no operations, so no files were modified")]
    NoOperations,
    #[error("unexpected text after `*** End Patch`: `{found}`; send one patch at a time")]
    TrailingText { found: String },
}

/// Parses a patch. See the crate documentation for the format.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let (start, end) = heredoc_bounds(&lines);
    let mut parser = Parser {
        lines: &lines[..end],
        pos: start,
    };
    let ops = parser.parse()?;
    check_duplicates(&ops)?;
    Ok(Patch { ops })
}

struct Parser<'a> {
    lines: &'a [&'a str],
    pos: usize,
}

/// A line that the grammar gives a meaning of its own. Markers are recognised
/// after trimming, so indentation or trailing spaces around them are accepted.
enum Marker<'a> {
    Begin,
    End,
    Add(&'a str),
    Update(&'a str),
    Delete(&'a str),
    MoveTo(&'a str),
    EndOfFile,
}

fn marker(line: &str) -> Option<Marker<'_>> {
    // A body line starting with '-' or '+' is content whatever follows; only
    // lines that could be an indented marker are examined.
    if line.starts_with(['-', '+']) {
        return None;
    }
    let t = line.trim();
    if !t.starts_with("***") {
        return None;
    }
    Some(match t {
        BEGIN => Marker::Begin,
        END => Marker::End,
        END_OF_FILE => Marker::EndOfFile,
        _ => {
            if let Some(p) = t.strip_prefix(ADD) {
                Marker::Add(p.trim())
            } else if let Some(p) = t.strip_prefix(UPDATE) {
                Marker::Update(p.trim())
            } else if let Some(p) = t.strip_prefix(DELETE) {
                Marker::Delete(p.trim())
            } else if let Some(p) = t.strip_prefix(MOVE_TO) {
                Marker::MoveTo(p.trim())
            } else {
                return None;
            }
        }
    })
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty() && !line.starts_with(' ')
}

/// `@@` at the start of the line (tabs before it tolerated; a leading space
/// would make it a context line whose text starts with `@@`).
fn context_marker(line: &str) -> Option<&str> {
    line.trim_start_matches('\t').strip_prefix("@@")
}

fn is_body_line(line: &str) -> bool {
    line.starts_with([' ', '-', '+']) && marker(line).is_none()
}

impl<'a> Parser<'a> {
    fn err(&self, line_index: usize, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: line_index + 1,
            kind,
        }
    }

    fn skip_blank(&mut self) {
        while self.pos < self.lines.len() && self.lines[self.pos].trim().is_empty() {
            self.pos += 1;
        }
    }

    fn parse(&mut self) -> Result<Vec<Operation>, ParseError> {
        self.skip_blank();
        let Some(first) = self.lines.get(self.pos) else {
            return Err(self.err(self.pos, ParseErrorKind::Empty));
        };
        if !matches!(marker(first), Some(Marker::Begin)) {
            return Err(self.err(self.pos, ParseErrorKind::MissingBegin { found: shorten(first) }));
        }
        self.pos += 1;
        let mut ops = Vec::new();
        loop {
            self.skip_blank();
            let Some(&line) = self.lines.get(self.pos) else {
                let last = self.lines.len().saturating_sub(1);
                return Err(self.err(last, ParseErrorKind::MissingEnd));
            };
            let at = self.pos;
            match marker(line) {
                Some(Marker::End) => {
                    self.pos += 1;
                    self.skip_blank();
                    if let Some(rest) = self.lines.get(self.pos) {
                        return Err(self.err(self.pos, ParseErrorKind::TrailingText { found: shorten(rest) }));
                    }
                    if ops.is_empty() {
                        return Err(self.err(at, ParseErrorKind::NoOperations));
                    }
                    return Ok(ops);
                }
                Some(Marker::Add(path)) => {
                    let path = self.path(at, path, ADD)?;
                    ops.push(self.parse_add(path, at)?);
                }
                Some(Marker::Delete(path)) => {
                    let path = self.path(at, path, DELETE)?;
                    self.pos += 1;
                    ops.push(Operation::Delete { path, line: at + 1 });
                }
                Some(Marker::Update(path)) => {
                    let path = self.path(at, path, UPDATE)?;
                    ops.push(self.parse_update(path, at)?);
                }
                Some(Marker::Begin) => return Err(self.misplaced(at, "the patch has already begun")),
                Some(Marker::MoveTo(_)) => {
                    return Err(self.misplaced(at, "`*** Move to:` must directly follow `*** Update File:`"));
                }
                Some(Marker::EndOfFile) => {
                    return Err(self.misplaced(at, "`*** End of File` may only end a chunk of an `*** Update File`"));
                }
                None if context_marker(line).is_some() || is_body_line(line) => {
                    return Err(self.misplaced(at, "chunk lines must follow an `*** Update File:` header"));
                }
                None => return Err(self.err(at, ParseErrorKind::UnknownHeader { found: shorten(line) })),
            }
        }
    }

    fn misplaced(&self, at: usize, why: &'static str) -> ParseError {
        self.err(
            at,
            ParseErrorKind::MisplacedLine {
                found: shorten(self.lines[at]),
                why,
            },
        )
    }

    fn path(&self, at: usize, path: &str, header: &'static str) -> Result<String, ParseError> {
        if path.is_empty() {
            return Err(self.err(at, ParseErrorKind::EmptyPath { header }));
        }
        Ok(path.to_string())
    }

    /// Index of the first non-blank line at or after `from`.
    fn next_non_blank(&self, from: usize) -> usize {
        let mut j = from;
        while j < self.lines.len() && self.lines[j].trim().is_empty() {
            j += 1;
        }
        j
    }

    fn parse_add(&mut self, path: String, header: usize) -> Result<Operation, ParseError> {
        self.pos += 1;
        let mut contents = String::new();
        while let Some(&line) = self.lines.get(self.pos) {
            if let Some(text) = line.strip_prefix('+') {
                contents.push_str(text);
                contents.push('\n');
                self.pos += 1;
            } else if line.trim().is_empty() {
                // Blank lines followed by more '+' lines are empty lines of
                // the file a model forgot to prefix; otherwise they separate
                // this operation from the next.
                let j = self.next_non_blank(self.pos);
                if self.lines.get(j).is_some_and(|l| l.starts_with('+')) {
                    for _ in self.pos..j {
                        contents.push('\n');
                    }
                }
                self.pos = j;
                if !self.lines.get(j).is_some_and(|l| l.starts_with('+')) {
                    break;
                }
            } else if marker(line).is_some() {
                break;
            } else {
                return Err(self.err(
                    self.pos,
                    ParseErrorKind::BadAddLine {
                        path,
                        found: shorten(line),
                    },
                ));
            }
        }
        Ok(Operation::Add {
            path,
            contents,
            line: header + 1,
        })
    }

    fn parse_update(&mut self, path: String, header: usize) -> Result<Operation, ParseError> {
        self.pos += 1;
        self.skip_blank();
        let mut move_to = None;
        if let Some(Marker::MoveTo(dest)) = self.lines.get(self.pos).and_then(|l| marker(l)) {
            move_to = Some(self.path(self.pos, dest, MOVE_TO)?);
            self.pos += 1;
        }
        let mut chunks: Vec<Chunk> = Vec::new();
        let mut current: Option<Chunk> = None;
        while let Some(&line) = self.lines.get(self.pos) {
            let at = self.pos;
            if let Some(m) = marker(line) {
                if !matches!(m, Marker::EndOfFile) {
                    break;
                }
                match current.take() {
                    Some(mut chunk) if !chunk.lines.is_empty() => {
                        chunk.end_of_file = true;
                        chunks.push(chunk);
                        self.pos += 1;
                        continue;
                    }
                    Some(chunk) => return Err(self.err(chunk.line - 1, ParseErrorKind::EmptyChunk { path })),
                    None => {
                        return Err(self.misplaced(at, "`*** End of File` must follow the lines of a chunk"));
                    }
                }
            }
            if let Some(rest) = context_marker(line) {
                let context = context_text(rest);
                match current.as_mut() {
                    // Consecutive `@@` lines narrow the location step by step.
                    Some(chunk) if chunk.lines.is_empty() => chunk.context.extend(context),
                    _ => {
                        if let Some(done) = current.take() {
                            chunks.push(done);
                        }
                        current = Some(Chunk {
                            context: context.into_iter().collect(),
                            lines: Vec::new(),
                            end_of_file: false,
                            line: at + 1,
                        });
                    }
                }
                self.pos += 1;
            } else if let Some(body) = body_line(line) {
                current
                    .get_or_insert_with(|| Chunk {
                        context: Vec::new(),
                        lines: Vec::new(),
                        end_of_file: false,
                        line: at + 1,
                    })
                    .lines
                    .push(body);
                self.pos += 1;
            } else if is_blank(line) {
                // Inside a chunk, blank lines followed by more body lines are
                // empty context lines; before an `@@`, a header or the end
                // they only separate, and are dropped.
                let j = self.next_non_blank(self.pos);
                let inside = self.lines.get(j).is_some_and(|l| is_body_line(l));
                if let Some(chunk) = current.as_mut().filter(|_| inside) {
                    for _ in self.pos..j {
                        chunk.lines.push(ChunkLine::Context(String::new()));
                    }
                }
                self.pos = j;
            } else if line.trim_start().starts_with("***") {
                // A header-like line wield does not know: say so, rather
                // than call it a malformed chunk line.
                return Err(self.err(
                    at,
                    ParseErrorKind::UnknownHeader {
                        found: shorten(line.trim()),
                    },
                ));
            } else {
                return Err(self.err(
                    at,
                    ParseErrorKind::BadChunkLine {
                        path,
                        found: shorten(line),
                    },
                ));
            }
        }
        if let Some(chunk) = current {
            if chunk.lines.is_empty() {
                return Err(self.err(chunk.line - 1, ParseErrorKind::EmptyChunk { path }));
            }
            chunks.push(chunk);
        }
        if chunks.is_empty() {
            return Err(self.err(header, ParseErrorKind::EmptyUpdate { path }));
        }
        Ok(Operation::Update {
            path,
            move_to,
            chunks,
            line: header + 1,
        })
    }
}

fn body_line(line: &str) -> Option<ChunkLine> {
    if marker(line).is_some() {
        return None;
    }
    let mut chars = line.chars();
    let kind = chars.next()?;
    let text = chars.as_str().to_string();
    match kind {
        ' ' => Some(ChunkLine::Context(text)),
        '-' => Some(ChunkLine::Remove(text)),
        '+' => Some(ChunkLine::Add(text)),
        _ => None,
    }
}

/// The text after `@@`: one separating space removed (indentation beyond it
/// is kept for the exact pass), trailing whitespace dropped, and a unified
/// diff hunk range (`-12,7 +12,8 @@`) skipped, since models often copy those.
fn context_text(rest: &str) -> Option<String> {
    let mut text = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
    if let Some(after) = strip_hunk_range(text.trim_start()) {
        text = after.strip_prefix(' ').unwrap_or(after);
    }
    if text.trim().is_empty() {
        None
    } else {
        Some(text.to_string())
    }
}

/// `-A[,B] +C[,D] @@` at the start of `s` → what follows it.
fn strip_hunk_range(s: &str) -> Option<&str> {
    fn range(s: &str, sign: char) -> Option<&str> {
        let s = s.strip_prefix(sign)?;
        let digits = s.find(|c: char| !c.is_ascii_digit() && c != ',').unwrap_or(s.len());
        if digits == 0 { None } else { Some(&s[digits..]) }
    }
    let s = range(s, '-')?;
    let s = range(s.strip_prefix(' ')?, '+')?;
    s.trim_start().strip_prefix("@@")
}

/// Recognises `<<'EOF'`, `<<"EOF"`, `<<EOF` (optionally after one command
/// word, as in `apply_patch <<'EOF'`) on the first non-blank line, and the
/// closing delimiter on the last non-blank line. Returns the line range to
/// parse; line numbers stay those of the original text.
fn heredoc_bounds(lines: &[&str]) -> (usize, usize) {
    let all = (0, lines.len());
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return all;
    };
    let opener = lines[first].trim();
    let Some(op) = opener.find("<<") else {
        return all;
    };
    let before = opener[..op].trim();
    if before.contains(char::is_whitespace) {
        return all;
    }
    let word = opener[op + 2..].trim_start_matches('-').trim();
    let delimiter = ['\'', '"']
        .iter()
        .find_map(|q| word.strip_prefix(*q).and_then(|w| w.strip_suffix(*q)))
        .unwrap_or(word);
    if delimiter.is_empty() || !delimiter.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return all;
    }
    let mut end = lines.len();
    if let Some(last) = lines.iter().rposition(|l| !l.trim().is_empty())
        && last > first
        && lines[last].trim() == delimiter
    {
        end = last;
    }
    (first + 1, end)
}

/// Each path is used by one operation, except that a path a Delete removed
/// may be created again by a later Add or `*** Move to`.
fn check_duplicates(ops: &[Operation]) -> Result<(), ParseError> {
    // Path -> (line of its first use, whether that use deleted it).
    let mut seen: HashMap<&str, (usize, bool)> = HashMap::new();
    for op in ops {
        let (creates, deletes) = (
            matches!(op, Operation::Add { .. }),
            matches!(op, Operation::Delete { .. }),
        );
        let dest = match op {
            Operation::Update {
                move_to: Some(dest), ..
            } => Some((dest.as_str(), true)),
            _ => None,
        };
        for (path, creates) in std::iter::once((op.path(), creates)).chain(dest) {
            match seen.get_mut(path) {
                None => {
                    seen.insert(path, (op.line(), deletes));
                }
                Some(entry) if entry.1 && creates => entry.1 = false,
                Some(&mut (first_line, _)) => {
                    let kind = ParseErrorKind::DuplicatePath {
                        path: path.to_string(),
                        first_line,
                    };
                    return Err(ParseError { line: op.line(), kind });
                }
            }
        }
    }
    Ok(())
}

/// Quotes a patch line in a message without flooding it.
fn shorten(line: &str) -> String {
    const MAX: usize = 80;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
