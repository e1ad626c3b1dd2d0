//! Placing an update's chunks in a file's text and producing the new text.

use std::fmt;

use crate::fold::Level;
use crate::indent::{self, Shift};
use crate::lines::FileLines;
use crate::matcher::Searcher;
use crate::mismatch::{Failure, MatchError, MismatchKind};
use crate::patch::{Chunk, ChunkLine};

/// One placed chunk: its body replaces `old_len` lines from `start`.
struct Edit<'c> {
    start: usize,
    old_len: usize,
    body: &'c [ChunkLine],
    /// How its added lines move to the file's indentation.
    shift: Option<Shift>,
}

/// An update applied to a file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The file's new text.
    pub text: String,
    /// The chunks whose lines matched only at a fuzzy pass, in chunk order.
    /// Worth telling whoever sent the patch: the result may need a look.
    pub fuzzy: Vec<FuzzyMatch>,
}

/// A chunk whose context and removed lines matched the file only at a
/// fuzzy pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzyMatch {
    /// 1-based index of the chunk among the update's chunks.
    pub chunk: usize,
    /// 1-based file line where its lines matched, and how many lines.
    pub first_line: usize,
    pub line_count: usize,
    /// The pass that matched.
    pub pass: Level,
    /// How its added lines were re-indented to the file, if they were.
    pub shift: Option<Shift>,
}

impl fmt::Display for FuzzyMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let last = self.first_line + self.line_count.saturating_sub(1);
        write!(f, "chunk {} matched ", self.chunk)?;
        if last > self.first_line {
            write!(f, "lines {}-{last}", self.first_line)?;
        } else {
            write!(f, "line {}", self.first_line)?;
        }
        write!(f, " only {}", self.pass.describe())?;
        if let Some(shift) = &self.shift {
            write!(
                f,
                "; the file is indented {shift} than the patch there, so its added lines were re-indented to match"
            )?;
        }
        Ok(())
    }
}

/// Applies an update's chunks to a file's text and returns the new text,
/// with the chunks that needed a fuzzy pass.
///
/// Chunks are placed in order, each searched for after the previous one (see
/// the crate documentation for the passes). Lines the chunk keeps are copied
/// from the file as they are, so a fuzzy match never rewrites them. When the
/// old lines matched only with leading whitespace ignored and the file is
/// indented by a uniform offset from the patch, the added lines get the same
/// offset; an uneven offset is refused ([`MismatchKind::Indentation`]).
/// Each kept line keeps its own ending; an added line takes the ending of the
/// removed line it replaces (in order within a run of changes), and a pure
/// insertion the file's dominant ending. When the file lacks a final
/// newline, one is added only if a chunk reaches the end of the file.
pub fn apply_chunks(original: &str, chunks: &[Chunk]) -> Result<Applied, MatchError> {
    let file = FileLines::new(original);
    let searcher = Searcher::new(&file);
    let (edits, fuzzy) = place(&file, &searcher, chunks)?;
    Ok(Applied {
        text: assemble(&file, original, &edits),
        fuzzy,
    })
}

fn place<'c>(
    file: &FileLines<'_>,
    searcher: &Searcher<'_, '_>,
    chunks: &'c [Chunk],
) -> Result<(Vec<Edit<'c>>, Vec<FuzzyMatch>), MatchError> {
    let n = file.len();
    let mut cursor = 0;
    let mut edits: Vec<Edit<'c>> = Vec::with_capacity(chunks.len());
    let mut fuzzy = Vec::new();
    for (k, chunk) in chunks.iter().enumerate() {
        let fail = |from: usize, kind: MismatchKind, expected: &[&str], matched_at: Option<usize>| {
            Failure {
                chunk: k + 1,
                chunk_count: chunks.len(),
                patch_line: chunk.line,
                from,
                kind,
                expected,
                matched_at,
            }
            .into_error(file, searcher)
        };

        let mut from = cursor;
        let mut context_at = None;
        for context in &chunk.context {
            let Some(at) = searcher.find_context(context, from) else {
                return Err(fail(from, MismatchKind::Context, &[context.as_str()], None));
            };
            context_at = Some(at);
            from = at + 1;
        }

        let old: Vec<&str> = chunk.old_lines().collect();
        if old.is_empty() {
            // Only added lines: after the context line if there is one,
            // otherwise (or with `*** End of File`) at the end of the file.
            // An append leaves the cursor alone, so later chunks may still
            // change lines before the end.
            let start = match context_at.filter(|_| !chunk.end_of_file) {
                Some(at) => {
                    cursor = at + 1;
                    at + 1
                }
                None => n,
            };
            edits.push(Edit {
                start,
                old_len: 0,
                body: &chunk.lines,
                shift: None,
            });
            continue;
        }

        // A model often ends a chunk with an empty context line for the
        // blank line it expects after the change; at the end of a file there
        // is none, so retry without such trailing lines.
        let mut body: &[ChunkLine] = &chunk.lines;
        let mut old_len = old.len();
        let placed = loop {
            let pattern = &old[..old_len];
            let at = if chunk.end_of_file {
                n.checked_sub(old_len)
                    .filter(|&p| p >= from)
                    .and_then(|p| searcher.matches_at(pattern, p).map(|level| (p, level)))
            } else {
                searcher.find(pattern, from).or_else(|| {
                    // The first old line may repeat the `@@` line itself.
                    let at = context_at?;
                    searcher.matches_at(pattern, at).map(|level| (at, level))
                })
            };
            if at.is_some() {
                break at;
            }
            match body.split_last() {
                Some((ChunkLine::Context(text), rest)) if text.trim().is_empty() && old_len > 1 => {
                    body = rest;
                    old_len -= 1;
                }
                _ => break None,
            }
        };
        let Some((start, level)) = placed else {
            let kind = if chunk.end_of_file {
                MismatchKind::EndOfFile
            } else {
                MismatchKind::Lines
            };
            return Err(fail(from, kind, &old, None));
        };
        let shift = if level >= Level::Trim {
            let pairs = (start..start + old_len).map(|i| file.line(i)).zip(old.iter().copied());
            let shift = indent::uniform_shift(pairs)
                .map_err(|_| fail(from, MismatchKind::Indentation, &old[..old_len], Some(start)))?;
            let fits = |s: &Shift| {
                body.iter().all(|l| match l {
                    ChunkLine::Add(text) => s.apply(text).is_some(),
                    _ => true,
                })
            };
            if shift.as_ref().is_some_and(|s| !fits(s)) {
                return Err(fail(from, MismatchKind::Indentation, &old[..old_len], Some(start)));
            }
            shift
        } else {
            None
        };
        if level != Level::Exact {
            fuzzy.push(FuzzyMatch {
                chunk: k + 1,
                first_line: start + 1,
                line_count: old_len,
                pass: level,
                shift: shift.clone(),
            });
        }
        edits.push(Edit {
            start,
            old_len,
            body,
            shift,
        });
        cursor = start + old_len;
    }
    // Appends were recorded at the end; keep them after every other edit
    // while preserving chunk order among edits at the same position.
    edits.sort_by_key(|e| e.start);
    Ok((edits, fuzzy))
}

fn assemble(file: &FileLines<'_>, original: &str, edits: &[Edit<'_>]) -> String {
    let dominant = file.dominant_ending();
    let added: usize = edits
        .iter()
        .flat_map(|e| e.body)
        .map(|l| match l {
            ChunkLine::Add(text) => text.len() + 2,
            _ => 0,
        })
        .sum();
    let mut out = String::with_capacity(original.len() + added + 2);
    let mut next = 0;
    for edit in edits {
        out.push_str(file.span(next, edit.start));
        // Text after a last line that had no newline: give it one.
        if !out.is_empty() && !out.ends_with(['\n', '\r']) {
            out.push_str(dominant);
        }
        let mut line = edit.start;
        // Each run of changes between kept lines: its added lines take the
        // endings of its removed lines, in order.
        for run in edit.body.split(|l| matches!(l, ChunkLine::Context(_))) {
            let removed = run.iter().filter(|l| matches!(l, ChunkLine::Remove(_))).count();
            let endings: Vec<&str> = (line..line + removed).map(|i| file.ending(i)).collect();
            let mut added = 0;
            for body_line in run {
                if let ChunkLine::Add(text) = body_line {
                    match &edit.shift {
                        Some(shift) => out.push_str(&shift.apply(text).unwrap_or_else(|| text.clone())),
                        None => out.push_str(text),
                    }
                    let ending = endings.get(added).or(endings.last()).copied().unwrap_or(dominant);
                    out.push_str(if ending.is_empty() { dominant } else { ending });
                    added += 1;
                }
            }
            line += removed;
            // The kept line that ended this run, if any.
            if line < edit.start + edit.old_len {
                out.push_str(file.full(line));
                if !file.has_ending(line) {
                    out.push_str(dominant);
                }
                line += 1;
            }
        }
        next = edit.start + edit.old_len;
    }
    out.push_str(file.span(next, file.len()));
    out
}

#[cfg(test)]
mod tests;
