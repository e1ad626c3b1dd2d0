//! A file's text viewed as lines, each keeping its own line ending.

/// Line start offsets into the original text, computed once with `memchr`.
/// Lines are borrowed slices, so matching never copies the file.
///
/// A line ends at LF, at CRLF, or at a CR that no LF follows (old Mac files,
/// and what Codex treats as a line ending too).
pub(crate) struct FileLines<'a> {
    text: &'a str,
    /// `starts[i]` is where line `i` begins; the last entry is `text.len()`.
    starts: Vec<usize>,
    /// How many lines end in LF, CRLF and a lone CR.
    counts: [usize; 3],
}

/// The line endings, in the order of [`FileLines`]' counts.
const ENDINGS: [&str; 3] = ["\n", "\r\n", "\r"];

impl<'a> FileLines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity(bytes.len() / 32 + 2);
        starts.push(0);
        let mut counts = [0; 3];
        let mut skip_lf = false;
        for at in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if bytes[at] == b'\n' {
                if std::mem::take(&mut skip_lf) {
                    continue;
                }
                counts[0] += 1;
            } else if bytes.get(at + 1) == Some(&b'\n') {
                // The LF of this CRLF ends the line; its hit comes next.
                counts[1] += 1;
                skip_lf = true;
                starts.push(at + 2);
                continue;
            } else {
                counts[2] += 1;
            }
            starts.push(at + 1);
        }
        // A last line without a newline still is a line.
        if starts.last() != Some(&text.len()) {
            starts.push(text.len());
        }
        FileLines { text, starts, counts }
    }

    /// Number of lines (a trailing newline does not start another line).
    pub(crate) fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Line `i` with its ending.
    #[inline]
    pub(crate) fn full(&self, i: usize) -> &'a str {
        &self.text[self.starts[i]..self.starts[i + 1]]
    }

    /// Line `i` without its ending.
    #[inline]
    pub(crate) fn line(&self, i: usize) -> &'a str {
        let full = self.full(i);
        &full[..full.len() - ending_len(full)]
    }

    /// The ending of line `i`: `"\n"`, `"\r\n"`, `"\r"`, or `""` for a last
    /// line without one.
    #[inline]
    pub(crate) fn ending(&self, i: usize) -> &'a str {
        let full = self.full(i);
        &full[full.len() - ending_len(full)..]
    }

    /// Whether line `i` has a line ending (only the last line may not).
    #[inline]
    pub(crate) fn has_ending(&self, i: usize) -> bool {
        !self.ending(i).is_empty()
    }

    /// Lines `from..to` as one slice of the original text, endings included.
    pub(crate) fn span(&self, from: usize, to: usize) -> &'a str {
        &self.text[self.starts[from]..self.starts[to]]
    }

    /// The ending inserted lines get: the one most lines use (LF on a tie
    /// with either other, CRLF on a tie with a lone CR; LF in a file of at
    /// most one line without an ending).
    pub(crate) fn dominant_ending(&self) -> &'static str {
        let [lf, crlf, cr] = self.counts;
        if crlf > lf && crlf >= cr {
            ENDINGS[1]
        } else if cr > lf && cr > crlf {
            ENDINGS[2]
        } else {
            ENDINGS[0]
        }
    }
}

/// The length of the line ending `full` ends with.
#[inline]
fn ending_len(full: &str) -> usize {
    match full.as_bytes() {
        [.., b'\r', b'\n'] => 2,
        [.., b'\n' | b'\r'] => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn splits_lines_and_keeps_endings() {
        let f = FileLines::new("a\r\nb\nc");
        assert_eq!(f.len(), 3);
        assert_eq!((f.line(0), f.full(0)), ("a", "a\r\n"));
        assert_eq!((f.line(1), f.full(1)), ("b", "b\n"));
        assert_eq!((f.line(2), f.full(2)), ("c", "c"));
        assert!(!f.has_ending(2));
        assert_eq!(f.span(1, 3), "b\nc");
    }

    #[test]
    fn trailing_newline_does_not_add_a_line() {
        assert_eq!(FileLines::new("a\nb\n").len(), 2);
        assert_eq!(FileLines::new("").len(), 0);
        assert_eq!(FileLines::new("\n").len(), 1);
    }

    #[test]
    fn dominant_ending_follows_the_majority() {
        assert_eq!(FileLines::new("a\r\nb\r\nc\n").dominant_ending(), "\r\n");
        assert_eq!(FileLines::new("a\r\nb\nc\n").dominant_ending(), "\n");
        assert_eq!(FileLines::new("no newline").dominant_ending(), "\n");
        assert_eq!(FileLines::new("a\rb\rc\n").dominant_ending(), "\r");
        assert_eq!(FileLines::new("a\rb\r\nc\n").dominant_ending(), "\n");
        assert_eq!(FileLines::new("a\rb\r\n").dominant_ending(), "\r\n");
    }

    /// A lone CR wins only when it outnumbers LF: a tie goes to LF, and
    /// so does a file where LF leads whatever CRLF does.
    #[test]
    fn lone_cr_needs_a_strict_majority_over_lf() {
        assert_eq!(FileLines::new("a\rb\n").dominant_ending(), "\n");
        assert_eq!(FileLines::new("a\nb\nc\rd").dominant_ending(), "\n");
    }

    #[test]
    fn a_lone_cr_ends_a_line() {
        let f = FileLines::new("one\rtwo\rthree\r");
        assert_eq!(f.len(), 3);
        assert_eq!((f.line(1), f.ending(1)), ("two", "\r"));
        let f = FileLines::new("a\r\r\nb\rc\n\rd");
        let lines: Vec<_> = (0..f.len()).map(|i| (f.line(i), f.ending(i))).collect();
        assert_eq!(
            lines,
            [
                ("a", "\r"),
                ("", "\r\n"),
                ("b", "\r"),
                ("c", "\n"),
                ("", "\r"),
                ("d", "")
            ]
        );
        assert_eq!(FileLines::new("x\r").len(), 1);
    }
}
