//! The error for a chunk that does not match, and the search for the region
//! of the file that comes closest, so that the message tells a model where to
//! look before it retries.

use std::collections::HashSet;
use std::fmt;

use crate::fold::{fold_hash, folded};
use crate::lines::FileLines;
use crate::matcher::Searcher;

/// Lines of the expected text and of the closest region shown in a message.
const SHOWN_LINES: usize = 40;

/// A chunk that could not be placed. `Display` gives the whole story in a
/// form meant for a model: which chunk, what it expected, where the closest
/// region is. It does not name the file; prefix the path when reporting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchError {
    /// 1-based index of the chunk among the update's chunks.
    pub chunk: usize,
    /// How many chunks the update has.
    pub chunk_count: usize,
    /// 1-based line of the chunk in the patch text.
    pub patch_line: usize,
    pub kind: MismatchKind,
    /// 1-based file line where the search began (after the previous chunk).
    pub searched_from: usize,
    /// Number of lines in the file.
    pub file_lines: usize,
    /// The context line, or the chunk's context and removed lines.
    pub expected: Vec<String>,
    /// 1-based line where the expected lines do match, outside the allowed
    /// range: before the search start, or (for an end-of-file chunk) not at
    /// the end.
    pub found_elsewhere: Option<usize>,
    /// The region of the file most similar to `expected`, if any line is
    /// (boxed to keep the error small on the success path).
    pub closest: Option<Box<Region>>,
}

/// Which part of a chunk failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchKind {
    /// An `@@` context line was not found.
    Context,
    /// The context and removed lines were not found.
    Lines,
    /// `*** End of File`: the file does not end with the chunk's old lines.
    EndOfFile,
    /// The lines matched only with leading whitespace ignored, and the
    /// file's indentation differs from the patch's by different amounts on
    /// different lines (or more than an added line has), so the added lines
    /// cannot be re-indented safely. `closest` holds the matched lines.
    Indentation,
}

/// Consecutive lines of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// 1-based number of the first line.
    pub first_line: usize,
    pub lines: Vec<String>,
    /// How many of them resemble a line that was expected.
    pub similar: usize,
}

impl std::error::Error for MatchError {}

impl fmt::Display for MatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chunk {} of {} (patch line {}) does not match the file: ",
            self.chunk, self.chunk_count, self.patch_line
        )?;
        let from = self.searched_from;
        let n = match self.file_lines {
            1 => "1 line".to_owned(),
            n => format!("{n} lines"),
        };
        match self.kind {
            MismatchKind::Context => writeln!(
                f,
                "the `@@` context line was not found at or after line {from} (the file has {n}):"
            )?,
            MismatchKind::Lines => writeln!(
                f,
                "these lines were not found at or after line {from} (the file has {n}; compared exactly, \
                 then ignoring whitespace at the ends of lines, then with Unicode punctuation folded to ASCII):"
            )?,
            MismatchKind::Indentation => writeln!(
                f,
                "these lines match the file only with leading whitespace ignored, and the file is indented \
                 differently from the patch by different amounts on different lines (or by more than an added \
                 line has), so the added lines cannot be re-indented to fit without guessing:"
            )?,
            MismatchKind::EndOfFile => writeln!(
                f,
                "the chunk ends with `*** End of File` but the file's last lines are not these:"
            )?,
        }
        write_lines(f, &self.expected, |_| " ".repeat(7))?;
        if let Some(at) = self.found_elsewhere {
            match self.kind {
                MismatchKind::EndOfFile => writeln!(
                    f,
                    "They occur at line {at}, which is not the end of the file: drop `*** End of File` or extend \
                     the chunk to the file's last line."
                )?,
                _ => writeln!(
                    f,
                    "They occur at line {at}, before line {from} where this chunk's search began (just after the \
                     previous chunk): list chunks in the order their lines appear in the file."
                )?,
            }
        }
        match &self.closest {
            Some(region) if self.kind == MismatchKind::Indentation => {
                let last = region.first_line + region.lines.len().saturating_sub(1);
                writeln!(f, "The file's lines {}-{last}:", region.first_line)?;
                write_lines(f, &region.lines, |k| format!("{:>6} ", region.first_line + k))?;
            }
            Some(region) if self.kind == MismatchKind::Context => {
                writeln!(f, "Closest line in the file:")?;
                write_lines(f, &region.lines, |k| format!("{:>6} ", region.first_line + k))?;
            }
            Some(region) => {
                let last = region.first_line + region.lines.len().saturating_sub(1);
                writeln!(
                    f,
                    "Closest region in the file: lines {}-{last} ({} of {} expected lines similar):",
                    region.first_line,
                    region.similar,
                    self.expected.len()
                )?;
                write_lines(f, &region.lines, |k| format!("{:>6} ", region.first_line + k))?;
            }
            None => writeln!(f, "No similar lines were found in the file.")?,
        }
        write!(
            f,
            "Re-read the file, then send the patch again with its ' ' and '-' lines copied from the file, \
             indentation included."
        )
    }
}

fn write_lines(f: &mut fmt::Formatter<'_>, lines: &[String], gutter: impl Fn(usize) -> String) -> fmt::Result {
    for (k, line) in lines.iter().take(SHOWN_LINES).enumerate() {
        writeln!(f, "{}| {line}", gutter(k))?;
    }
    if lines.len() > SHOWN_LINES {
        writeln!(f, "       … {} more lines", lines.len() - SHOWN_LINES)?;
    }
    Ok(())
}

/// What the apply loop knows when a chunk fails.
pub(crate) struct Failure<'p> {
    pub chunk: usize,
    pub chunk_count: usize,
    pub patch_line: usize,
    /// 0-based cursor.
    pub from: usize,
    pub kind: MismatchKind,
    pub expected: &'p [&'p str],
    /// 0-based line where the expected lines matched, for
    /// [`MismatchKind::Indentation`].
    pub matched_at: Option<usize>,
}

impl Failure<'_> {
    pub(crate) fn into_error(self, file: &FileLines<'_>, searcher: &Searcher<'_, '_>) -> MatchError {
        let found_elsewhere = match self.kind {
            MismatchKind::Context => searcher.find_context(self.expected.first().copied().unwrap_or(""), 0),
            MismatchKind::Lines | MismatchKind::EndOfFile => searcher.find(self.expected, 0).map(|(p, _)| p),
            MismatchKind::Indentation => None,
        };
        let found_elsewhere = found_elsewhere
            .filter(|&p| self.kind == MismatchKind::EndOfFile || p < self.from)
            .map(|p| p + 1);
        let closest = match self.kind {
            MismatchKind::Context => closest_line(file, self.expected.first().copied().unwrap_or(""), self.from),
            MismatchKind::Lines | MismatchKind::EndOfFile => closest_window(file, self.expected, self.from),
            MismatchKind::Indentation => self
                .matched_at
                .map(|at| region(file, at, self.expected.len(), self.expected.len())),
        };
        MatchError {
            chunk: self.chunk,
            chunk_count: self.chunk_count,
            patch_line: self.patch_line,
            kind: self.kind,
            searched_from: self.from + 1,
            file_lines: file.len(),
            expected: self.expected.iter().map(|s| s.to_string()).collect(),
            found_elsewhere,
            closest: closest.map(Box::new),
        }
    }
}

/// The window of `expected.len()` lines holding the most lines that equal
/// (after trimming and folding) some non-blank expected line. Order is not
/// required, so a region where the model missed or added a line still scores.
fn closest_window(file: &FileLines<'_>, expected: &[&str], from: usize) -> Option<Region> {
    let n = file.len();
    let m = expected.len().clamp(1, n.max(1));
    if n == 0 {
        return None;
    }
    let mut buf = String::new();
    let wanted: HashSet<u64> = expected
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| fold_hash(l, &mut buf))
        .collect();
    let hits: Vec<bool> = (0..n)
        .map(|i| {
            let line = file.line(i);
            !line.trim().is_empty() && wanted.contains(&fold_hash(line, &mut buf))
        })
        .collect();
    let mut scores = Vec::with_capacity(n - m + 1);
    let mut sum: usize = hits[..m].iter().filter(|&&h| h).count();
    scores.push(sum);
    for start in 1..=n - m {
        sum = sum + usize::from(hits[start + m - 1]) - usize::from(hits[start - 1]);
        scores.push(sum);
    }
    let (start, similar) = pick(&scores, from)?;
    Some(region(file, start, m, similar))
}

/// The line sharing the most words with an `@@` context line.
fn closest_line(file: &FileLines<'_>, context: &str, from: usize) -> Option<Region> {
    let folded_context: String = folded(context).collect();
    let mut words: Vec<&str> = folded_context
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().count() >= 2)
        .collect();
    words.sort_unstable();
    words.dedup();
    if words.is_empty() {
        return None;
    }
    let scores: Vec<usize> = (0..file.len())
        .map(|i| words.iter().filter(|w| file.line(i).contains(**w)).count())
        .collect();
    let (line, similar) = pick(&scores, from)?;
    Some(region(file, line, 1, similar))
}

/// The best score, preferring the earliest at or after `from` unless an
/// earlier position scores strictly higher.
fn pick(scores: &[usize], from: usize) -> Option<(usize, usize)> {
    let best = |range: std::ops::Range<usize>| {
        range
            .filter_map(|i| scores.get(i).map(|&s| (i, s)))
            .fold(None, |acc: Option<(usize, usize)>, (i, s)| match acc {
                Some((_, best)) if best >= s => acc,
                _ => Some((i, s)),
            })
    };
    let after = best(from.min(scores.len())..scores.len());
    let before = best(0..from.min(scores.len()));
    let chosen = match (after, before) {
        (Some(a), Some(b)) if b.1 > a.1 => b,
        (Some(a), _) => a,
        (None, b) => b?,
    };
    (chosen.1 > 0).then_some(chosen)
}

fn region(file: &FileLines<'_>, start: usize, len: usize, similar: usize) -> Region {
    let end = (start + len).min(file.len());
    Region {
        first_line: start + 1,
        lines: (start..end).map(|i| file.line(i).to_string()).collect(),
        similar,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn pick_prefers_after_cursor_unless_earlier_is_strictly_better() {
        assert_eq!(pick(&[2, 0, 2, 1], 1), Some((2, 2)));
        assert_eq!(pick(&[3, 0, 2, 1], 1), Some((0, 3)));
        assert_eq!(pick(&[0, 0], 0), None);
        assert_eq!(pick(&[1, 0], 5), Some((0, 1)));
        assert_eq!(pick(&[], 0), None);
    }

    #[test]
    fn closest_window_counts_similar_lines_in_any_order() {
        let text = "a\nfn f() {\n    x();\n    y();\n}\nb\n";
        let file = FileLines::new(text);
        let region = closest_window(&file, &["fn f() {", "    y();", "    z();", "}"], 0);
        let region = region.expect("a region");
        assert_eq!(region.first_line, 2);
        assert_eq!(region.similar, 3);
        assert_eq!(region.lines, ["fn f() {", "    x();", "    y();", "}"]);
    }

    #[test]
    fn closest_window_is_none_without_similar_lines() {
        let file = FileLines::new("a\nb\n");
        assert_eq!(closest_window(&file, &["c", "d", "e"], 0), None);
        assert_eq!(closest_window(&FileLines::new(""), &["c"], 0), None);
    }

    #[test]
    fn closest_line_shares_words_with_the_context() {
        let file = FileLines::new("fn alpha() {}\nfn beta_gamma(x: u8) {}\n");
        let region = closest_line(&file, "fn beta_gamma(y)", 0).expect("a line");
        assert_eq!(region.first_line, 2);
    }
}
