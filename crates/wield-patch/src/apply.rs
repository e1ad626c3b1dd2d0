//! Placing an update's chunks in a file's text and producing the new text.

use crate::lines::FileLines;
use crate::matcher::Searcher;
use crate::mismatch::{Failure, MatchError, MismatchKind};
use crate::patch::{Chunk, ChunkLine};

/// One placed chunk: its body replaces `old_len` lines from `start`.
struct Edit<'c> {
    start: usize,
    old_len: usize,
    body: &'c [ChunkLine],
}

/// Applies an update's chunks to a file's text and returns the new text.
///
/// Chunks are placed in order, each searched for after the previous one (see
/// the crate documentation for the passes). Lines the chunk keeps are copied
/// from the file as they are, so a fuzzy match never rewrites them; each line
/// keeps its own ending and added lines take the file's dominant one. When
/// the file lacks a final newline, one is added only if a chunk reaches the
/// end of the file.
pub fn apply_chunks(original: &str, chunks: &[Chunk]) -> Result<String, MatchError> {
    let file = FileLines::new(original);
    let searcher = Searcher::new(&file);
    let edits = place(&file, &searcher, chunks)?;
    Ok(assemble(&file, original, &edits))
}

fn place<'c>(
    file: &FileLines<'_>,
    searcher: &Searcher<'_, '_>,
    chunks: &'c [Chunk],
) -> Result<Vec<Edit<'c>>, MatchError> {
    let n = file.len();
    let mut cursor = 0;
    let mut edits: Vec<Edit<'c>> = Vec::with_capacity(chunks.len());
    for (k, chunk) in chunks.iter().enumerate() {
        let fail = |from: usize, kind: MismatchKind, expected: &[&str]| {
            Failure {
                chunk: k + 1,
                chunk_count: chunks.len(),
                patch_line: chunk.line,
                from,
                kind,
                expected,
            }
            .into_error(file, searcher)
        };

        let mut from = cursor;
        let mut context_at = None;
        for context in &chunk.context {
            let Some(at) = searcher.find_context(context, from) else {
                return Err(fail(from, MismatchKind::Context, &[context.as_str()]));
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
            match context_at.filter(|_| !chunk.end_of_file) {
                Some(at) => {
                    edits.push(Edit {
                        start: at + 1,
                        old_len: 0,
                        body: &chunk.lines,
                    });
                    cursor = at + 1;
                }
                None => edits.push(Edit {
                    start: n,
                    old_len: 0,
                    body: &chunk.lines,
                }),
            }
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
                    .filter(|&p| p >= from && searcher.matches_at(pattern, p).is_some())
            } else {
                searcher.find(pattern, from).map(|(p, _)| p).or_else(|| {
                    // The first old line may repeat the `@@` line itself.
                    let at = context_at?;
                    searcher.matches_at(pattern, at).map(|_| at)
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
        let Some(start) = placed else {
            let kind = if chunk.end_of_file {
                MismatchKind::EndOfFile
            } else {
                MismatchKind::Lines
            };
            return Err(fail(from, kind, &old));
        };
        edits.push(Edit { start, old_len, body });
        cursor = start + old_len;
    }
    // Appends were recorded at the end; keep them after every other edit
    // while preserving chunk order among edits at the same position.
    edits.sort_by_key(|e| e.start);
    Ok(edits)
}

fn assemble(file: &FileLines<'_>, original: &str, edits: &[Edit<'_>]) -> String {
    let ending = file.dominant_ending();
    let added: usize = edits
        .iter()
        .flat_map(|e| e.body)
        .map(|l| match l {
            ChunkLine::Add(text) => text.len() + ending.len(),
            _ => 0,
        })
        .sum();
    let mut out = String::with_capacity(original.len() + added + ending.len());
    let mut next = 0;
    for edit in edits {
        out.push_str(file.span(next, edit.start));
        // Text after a last line that had no newline: give it one.
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(ending);
        }
        let mut line = edit.start;
        for body_line in edit.body {
            match body_line {
                ChunkLine::Context(_) => {
                    out.push_str(file.full(line));
                    if !file.has_ending(line) {
                        out.push_str(ending);
                    }
                    line += 1;
                }
                ChunkLine::Remove(_) => line += 1,
                ChunkLine::Add(text) => {
                    out.push_str(text);
                    out.push_str(ending);
                }
            }
        }
        next = edit.start + edit.old_len;
    }
    out.push_str(file.span(next, file.len()));
    out
}

#[cfg(test)]
mod tests;
