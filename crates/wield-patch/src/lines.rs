//! A file's text viewed as lines, each keeping its own line ending.

/// Line start offsets into the original text, computed once with `memchr`.
/// Lines are borrowed slices, so matching never copies the file.
pub(crate) struct FileLines<'a> {
    text: &'a str,
    /// `starts[i]` is where line `i` begins; the last entry is `text.len()`.
    starts: Vec<usize>,
    crlf: usize,
    lf: usize,
}

impl<'a> FileLines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let mut starts = Vec::with_capacity(bytes.len() / 32 + 2);
        starts.push(0);
        let (mut crlf, mut lf) = (0, 0);
        for nl in memchr::memchr_iter(b'\n', bytes) {
            if nl > 0 && bytes[nl - 1] == b'\r' {
                crlf += 1;
            } else {
                lf += 1;
            }
            starts.push(nl + 1);
        }
        // A last line without a newline still is a line.
        if starts.last() != Some(&text.len()) {
            starts.push(text.len());
        }
        FileLines { text, starts, crlf, lf }
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
        match full.strip_suffix('\n') {
            Some(rest) => rest.strip_suffix('\r').unwrap_or(rest),
            None => full,
        }
    }

    /// Whether line `i` ends with a newline (only the last line may not).
    #[inline]
    pub(crate) fn has_ending(&self, i: usize) -> bool {
        self.full(i).ends_with('\n')
    }

    /// Lines `from..to` as one slice of the original text, endings included.
    pub(crate) fn span(&self, from: usize, to: usize) -> &'a str {
        &self.text[self.starts[from]..self.starts[to]]
    }

    /// The ending new lines get: CRLF when most lines use it, else LF.
    pub(crate) fn dominant_ending(&self) -> &'static str {
        if self.crlf > self.lf { "\r\n" } else { "\n" }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

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
    }
}
