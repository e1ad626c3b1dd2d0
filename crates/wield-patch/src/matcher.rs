//! Finding a chunk's lines in a file, in passes of decreasing strictness.
//!
//! A search asks for the first position at or after a cursor where a
//! sequence of patch lines matches the file at one [`Level`]. Chunks usually
//! sit close to the previous one, so the searcher first scans a window after
//! the cursor directly (exact comparisons there are plain byte compares).
//! When that fails it builds an index of the whole file, once, and uses it
//! for this and every later search: lines grouped by the hash of their
//! loosest normal form. The pattern line with the fewest candidates picks
//! the positions to try, each verified in full at the pass being tried.
//! Every search thus costs the distance it covers or a lookup, and many
//! chunks cost about one pass over the file.

use std::cell::OnceCell;

use crate::fold::{Level, fold_hash, folded, folded_contains};
use crate::lines::FileLines;

/// Lines scanned directly after the cursor, as long as no index exists.
const WINDOW: usize = 4096;

pub(crate) struct Searcher<'f, 'a> {
    file: &'f FileLines<'a>,
    /// `None` inside once building was attempted on a file too large.
    index: OnceCell<Option<Index>>,
    window: usize,
}

impl<'f, 'a> Searcher<'f, 'a> {
    pub(crate) fn new(file: &'f FileLines<'a>) -> Self {
        Self::with_window(file, WINDOW)
    }

    /// A searcher with a chosen direct-scan window; tests use 0 to force
    /// every search through the index.
    pub(crate) fn with_window(file: &'f FileLines<'a>, window: usize) -> Self {
        Searcher {
            file,
            index: OnceCell::new(),
            window,
        }
    }

    /// The first position at or after `from` where `pattern` matches, trying
    /// each pass over the whole remaining file before relaxing to the next.
    pub(crate) fn find(&self, pattern: &[&str], from: usize) -> Option<(usize, Level)> {
        Level::ALL
            .into_iter()
            .find_map(|level| self.find_at(pattern, from, level).map(|p| (p, level)))
    }

    /// The strictest pass at which `pattern` matches at `at`.
    pub(crate) fn matches_at(&self, pattern: &[&str], at: usize) -> Option<Level> {
        if at + pattern.len() > self.file.len() {
            return None;
        }
        Level::ALL.into_iter().find(|&level| self.verify(pattern, at, level))
    }

    /// Locates an `@@` context line: the same passes as [`Self::find`], then,
    /// as a last resort, the first line containing the folded context (so
    /// `@@ fn main` finds `fn main() {`).
    pub(crate) fn find_context(&self, context: &str, from: usize) -> Option<usize> {
        if let Some((p, _)) = self.find(&[context], from) {
            return Some(p);
        }
        let needle: String = folded(context).collect();
        if needle.is_empty() {
            return None;
        }
        let mut buf = String::new();
        (from..self.file.len()).find(|&i| folded_contains(self.file.line(i), &needle, &mut buf))
    }

    #[inline]
    fn verify(&self, pattern: &[&str], at: usize, level: Level) -> bool {
        pattern
            .iter()
            .enumerate()
            .all(|(k, line)| level.eq(self.file.line(at + k), line))
    }

    fn find_at(&self, pattern: &[&str], from: usize, level: Level) -> Option<usize> {
        let n = self.file.len();
        let m = pattern.len();
        if m == 0 {
            return (from <= n).then_some(from);
        }
        let last = n.checked_sub(m)?;
        if from > last {
            return None;
        }
        let mut start = from;
        if self.index.get().is_none() {
            let window_end = from.saturating_add(self.window).min(last + 1);
            if let Some(p) = (from..window_end).find(|&p| self.verify(pattern, p, level)) {
                return Some(p);
            }
            if window_end > last {
                return None;
            }
            start = window_end;
        }
        self.find_indexed(pattern, start, last, level)
    }

    /// Candidates from the index, for starts in `from..=last`.
    fn find_indexed(&self, pattern: &[&str], from: usize, last: usize, level: Level) -> Option<usize> {
        let Some(index) = self.index.get_or_init(|| Index::build(self.file)) else {
            return (from..=last).find(|&p| self.verify(pattern, p, level));
        };
        // Anchor on the rarest pattern line: a pattern starting with `}` or
        // a blank line should not visit every such line of the file.
        let mut buf = String::new();
        let mut anchor: Option<(usize, u64, &[u32])> = None;
        for (offset, line) in pattern.iter().enumerate() {
            let hash = fold_hash(line, &mut buf);
            let bucket = index.bucket(hash);
            if anchor.is_none_or(|(_, _, best)| bucket.len() < best.len()) {
                anchor = Some((offset, hash, bucket));
            }
        }
        let (offset, hash, bucket) = anchor?;
        let first = bucket.partition_point(|&line| (line as usize) < from + offset);
        bucket[first..]
            .iter()
            .map(|&line| line as usize)
            .filter(|&line| index.hashes[line] == hash as u32)
            .map(|line| line - offset)
            .take_while(|&p| p <= last)
            .find(|&p| self.verify(pattern, p, level))
    }
}

/// Every line's [`fold_hash`] (its low 32 bits, enough to filter
/// candidates before verifying them), and the lines grouped by hash bucket
/// with a counting sort, so building costs two passes over the file. Within
/// a bucket lines are ascending, so the first candidate after a cursor is a
/// binary search away. Lines equal at any pass share a fold hash, so one
/// index serves every pass. Line numbers are `u32` to keep the index small
/// (it is built on a hot path); a file with more lines is scanned instead.
struct Index {
    hashes: Vec<u32>,
    shift: u32,
    bucket_starts: Vec<u32>,
    lines: Vec<u32>,
}

impl Index {
    fn build(file: &FileLines<'_>) -> Option<Index> {
        let n = file.len();
        let count = u32::try_from(n).ok()?;
        // About two lines per bucket.
        let bits = (n / 2).max(1).next_power_of_two().trailing_zeros().clamp(1, 31);
        let shift = 64 - bits;
        let mut buf = String::new();
        let full: Vec<u64> = (0..n).map(|i| fold_hash(file.line(i), &mut buf)).collect();
        let mut bucket_starts = vec![0u32; (1 << bits) + 1];
        for &h in &full {
            bucket_starts[(h >> shift) as usize] += 1;
        }
        // Running sums: each entry becomes its bucket's end (the extra last
        // entry ends up `n`).
        for b in 1..bucket_starts.len() {
            bucket_starts[b] += bucket_starts[b - 1];
        }
        // Fill each bucket from its end, last line first: every bucket ends
        // up ascending and its entry moves back to the bucket's start.
        let mut lines = vec![0u32; n];
        for (line, &h) in (0..count).zip(&full).rev() {
            let slot = &mut bucket_starts[(h >> shift) as usize];
            *slot -= 1;
            lines[*slot as usize] = line;
        }
        let hashes = full.iter().map(|&h| h as u32).collect();
        Some(Index {
            hashes,
            shift,
            bucket_starts,
            lines,
        })
    }

    /// The lines whose hash falls in `hash`'s bucket, ascending.
    fn bucket(&self, hash: u64) -> &[u32] {
        let b = (hash >> self.shift) as usize;
        &self.lines[self.bucket_starts[b] as usize..self.bucket_starts[b + 1] as usize]
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn file(lines: &[&str]) -> String {
        lines.iter().map(|l| format!("{l}\n")).collect()
    }

    /// Runs the same search with direct scanning and through the index.
    fn both<T: PartialEq + std::fmt::Debug>(text: &str, f: impl Fn(&Searcher) -> T) -> T {
        let lines = FileLines::new(text);
        let direct = f(&Searcher::with_window(&lines, usize::MAX));
        let indexed = f(&Searcher::with_window(&lines, 0));
        assert_eq!(direct, indexed, "index and direct scan disagree");
        direct
    }

    #[test]
    fn index_puts_every_line_in_its_bucket_in_ascending_order() {
        let text: String = (0..1000).map(|i| format!("line {}\n", i % 37)).collect();
        let lines = FileLines::new(&text);
        let index = Index::build(&lines).expect("an index");
        let mut buf = String::new();
        let mut seen = 0;
        for b in 0..index.bucket_starts.len() - 1 {
            let bucket = &index.lines[index.bucket_starts[b] as usize..index.bucket_starts[b + 1] as usize];
            assert!(bucket.windows(2).all(|w| w[0] < w[1]), "bucket {b} not ascending");
            seen += bucket.len();
        }
        assert_eq!(seen, 1000);
        for i in 0..1000 {
            let bucket = index.bucket(fold_hash(lines.line(i), &mut buf));
            assert!(bucket.contains(&(i as u32)), "line {i} missing from its bucket");
        }
    }

    #[test]
    fn index_and_direct_scan_agree_on_random_files() {
        // Few distinct lines, so that patterns recur and partial matches
        // abound; variants exercise every pass.
        const LINES: [&str; 6] = ["a", " a", "a\t", "b", "x \u{2013} y", "x - y"];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        for _ in 0..300 {
            let text: String = (0..next(40))
                .map(|_| format!("{}\n", LINES[next(LINES.len())]))
                .collect();
            let pattern: Vec<&str> = (0..1 + next(3)).map(|_| LINES[next(LINES.len())]).collect();
            let from = next(45);
            both(&text, |s| s.find(&pattern, from));
        }
    }

    #[test]
    fn exact_pass_wins_over_an_earlier_fuzzy_match() {
        let text = file(&["  foo", "foo", "bar"]);
        assert_eq!(both(&text, |s| s.find(&["foo"], 0)), Some((1, Level::Exact)));
    }

    #[test]
    fn each_pass_in_turn() {
        let text = file(&["a", "foo  ", "b"]);
        assert_eq!(both(&text, |s| s.find(&["foo"], 0)), Some((1, Level::TrimEnd)));
        let text = file(&["a", "\tfoo", "b"]);
        assert_eq!(both(&text, |s| s.find(&["foo"], 0)), Some((1, Level::Trim)));
        let text = file(&["a", "x \u{2014} y", "b"]);
        assert_eq!(both(&text, |s| s.find(&["x - y"], 0)), Some((1, Level::Fold)));
        let text = file(&["a", "b"]);
        assert_eq!(both(&text, |s| s.find(&["c"], 0)), None);
    }

    #[test]
    fn search_starts_at_the_cursor_and_repeated_lines_match_in_order() {
        let text = file(&["x", "}", "x", "}", "x", "}"]);
        assert_eq!(both(&text, |s| s.find(&["x", "}"], 0)), Some((0, Level::Exact)));
        assert_eq!(both(&text, |s| s.find(&["x", "}"], 1)), Some((2, Level::Exact)));
        assert_eq!(both(&text, |s| s.find(&["x", "}"], 3)), Some((4, Level::Exact)));
        assert_eq!(both(&text, |s| s.find(&["x", "}"], 5)), None);
    }

    #[test]
    fn index_anchors_on_the_rarest_line_and_verifies_the_rest() {
        let mut lines = vec!["}"; 50];
        lines[20] = "unique";
        lines[40] = "unique";
        lines[41] = "tail";
        let text = file(&lines);
        assert_eq!(
            both(&text, |s| s.find(&["}", "unique", "tail"], 0)),
            Some((39, Level::Exact))
        );
        assert_eq!(both(&text, |s| s.find(&["}", "unique", "}"], 25)), None);
        assert_eq!(
            both(&text, |s| s.find(&["}", "unique", "}"], 0)),
            Some((19, Level::Exact))
        );
    }

    #[test]
    fn pattern_longer_than_the_rest_of_the_file_is_not_found() {
        let text = file(&["a", "b"]);
        assert_eq!(both(&text, |s| s.find(&["a", "b", "c"], 0)), None);
        assert_eq!(both(&text, |s| s.find(&["b"], 2)), None);
        assert_eq!(both(&text, |s| s.find(&["b"], 99)), None);
    }

    #[test]
    fn matches_at_reports_the_strictest_level() {
        let lines_text = file(&["a", " b "]);
        let lines = FileLines::new(&lines_text);
        let s = Searcher::new(&lines);
        assert_eq!(s.matches_at(&["a", "b"], 0), Some(Level::Trim));
        assert_eq!(s.matches_at(&["b"], 1), Some(Level::Trim));
        assert_eq!(s.matches_at(&["b", "c"], 1), None);
    }

    #[test]
    fn context_falls_back_to_a_containing_line() {
        let text = file(&["use x;", "fn main() {", "}"]);
        assert_eq!(both(&text, |s| s.find_context("fn main() {", 0)), Some(1));
        assert_eq!(both(&text, |s| s.find_context("fn main", 0)), Some(1));
        assert_eq!(both(&text, |s| s.find_context("fn main", 2)), None);
        assert_eq!(both(&text, |s| s.find_context("fn other", 0)), None);
    }
}
