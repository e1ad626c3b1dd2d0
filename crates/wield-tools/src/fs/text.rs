//! Content sniffing (binary, images) and a line reader with bounded memory.

use std::io::{self, BufRead, Read};

/// How many bytes are looked at to tell text from binary.
pub(crate) const SNIFF_BYTES: usize = 8192;

/// An image format providers accept as an attachment.
pub(crate) fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A name for a binary format, from its first bytes.
fn binary_kind(head: &[u8]) -> &'static str {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x7fELF", "ELF executable"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1f\x8b", "gzip archive"),
        (b"BZh", "bzip2 archive"),
        (b"\xfd7zXZ\x00", "xz archive"),
        (b"7z\xbc\xaf\x27\x1c", "7z archive"),
        (b"\x28\xb5\x2f\xfd", "zstd archive"),
        (b"\0asm", "WebAssembly module"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\xca\xfe\xba\xbe", "Java class or Mach-O binary"),
        (b"\xcf\xfa\xed\xfe", "Mach-O binary"),
        (b"MZ", "Windows executable"),
        (b"!<arch>\n", "ar archive"),
        (b"\x00\x00\x01\x00", "icon"),
        (b"BM", "bitmap image"),
        (b"II*\x00", "TIFF image"),
        (b"MM\x00*", "TIFF image"),
        (b"OggS", "Ogg media"),
        (b"ID3", "MP3 audio"),
        (b"fLaC", "FLAC audio"),
        (b"\x1a\x45\xdf\xa3", "Matroska/WebM video"),
    ];
    if head.len() >= 12 && &head[4..8] == b"ftyp" {
        return "MP4/QuickTime media";
    }
    if head.len() >= 262 && &head[257..262] == b"ustar" {
        return "tar archive";
    }
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind)
}

/// `Some(kind)` when the first bytes of a file look binary: a NUL byte, or
/// mostly control bytes in what is not valid UTF-8 text.
pub(crate) fn binary_type(head: &[u8]) -> Option<&'static str> {
    if head.is_empty() {
        return None;
    }
    if head.contains(&0) {
        return Some(binary_kind(head));
    }
    // A multi-byte character may be cut at the end of the sample.
    let valid = match std::str::from_utf8(head) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    };
    if valid {
        return None;
    }
    let odd = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    // Latin-1 text is invalid UTF-8 but has few control bytes.
    (odd * 10 > head.len()).then(|| binary_kind(head))
}

/// Reads lines with a cap on how much of any one line is kept, so a file
/// with a gigantic line (or no newline at all) never lands in memory whole.
pub(crate) struct LineReader<R> {
    inner: R,
    max_line: usize,
    line: Line,
}

/// One line: its text (maybe cut) and whether it was cut.
#[derive(Default)]
pub(crate) struct Line {
    pub(crate) bytes: Vec<u8>,
    pub(crate) cut: bool,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(inner: R, max_line: usize) -> Self {
        Self {
            inner,
            max_line,
            line: Line::default(),
        }
    }

    /// Skip `n` lines without keeping them; returns how many were skipped
    /// (fewer at the end of the file).
    pub(crate) fn skip_lines(&mut self, n: u64) -> io::Result<u64> {
        let mut skipped = 0;
        while skipped < n {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            let mut consumed = buf.len();
            let mut ended_line = false;
            for pos in memchr::memchr_iter(b'\n', buf) {
                skipped += 1;
                if skipped == n {
                    consumed = pos + 1;
                    ended_line = true;
                    break;
                }
            }
            self.inner.consume(consumed);
            if ended_line {
                break;
            }
        }
        Ok(skipped)
    }

    /// The next line, without its terminator, into `line` (its buffer is
    /// reused); `false` at the end.
    pub(crate) fn next_line(&mut self, line: &mut Line) -> io::Result<bool> {
        line.bytes.clear();
        line.cut = false;
        let mut any = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(any);
            }
            any = true;
            let (chunk, done) = match memchr::memchr(b'\n', buf) {
                Some(pos) => (&buf[..pos], Some(pos + 1)),
                None => (buf, None),
            };
            let room = self.max_line.saturating_sub(line.bytes.len());
            if chunk.len() > room {
                line.cut = true;
            }
            line.bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let consumed = done.unwrap_or(buf.len());
            self.inner.consume(consumed);
            if done.is_some() {
                if line.bytes.last() == Some(&b'\r') && !line.cut {
                    line.bytes.pop();
                }
                return Ok(true);
            }
        }
    }

    /// Whether anything is left to read.
    pub(crate) fn at_end(&mut self) -> io::Result<bool> {
        Ok(self.inner.fill_buf()?.is_empty())
    }
}

/// Where `read` takes numbered lines from. Lines are appended to a byte
/// buffer as valid UTF-8 (see [`into_text`]).
pub(crate) trait NumberedLines {
    /// Skip `n` lines; returns how many there were (fewer at the end).
    fn skip(&mut self, n: u64) -> io::Result<u64>;
    /// Append the next line to `out` as line `number`; `false` at the end.
    fn push_next(&mut self, out: &mut Vec<u8>, number: u64) -> io::Result<bool>;
    /// Whether no line is left.
    fn done(&mut self) -> io::Result<bool>;
}

impl<R: BufRead> NumberedLines for LineReader<R> {
    fn skip(&mut self, n: u64) -> io::Result<u64> {
        self.skip_lines(n)
    }

    fn push_next(&mut self, out: &mut Vec<u8>, number: u64) -> io::Result<bool> {
        let mut line = std::mem::take(&mut self.line);
        let more = self.next_line(&mut line)?;
        if more {
            push_numbered(out, number, &line.bytes, line.cut);
        }
        self.line = line;
        Ok(more)
    }

    fn done(&mut self) -> io::Result<bool> {
        self.at_end()
    }
}

/// The lines of a whole file already in memory and valid UTF-8: shown as
/// they are, without copying or checking each line again. Lines are cut and
/// ended exactly as [`LineReader`] cuts and ends them.
pub(crate) struct TextLines<'a> {
    text: &'a [u8],
    /// Where the next line starts.
    at: usize,
    max_line: usize,
}

impl<'a> TextLines<'a> {
    pub(crate) fn new(text: &'a str, max_line: usize) -> Self {
        Self {
            text: text.as_bytes(),
            at: 0,
            max_line,
        }
    }
}

impl NumberedLines for TextLines<'_> {
    fn skip(&mut self, n: u64) -> io::Result<u64> {
        let rest = self.text.get(self.at..).unwrap_or_default();
        let mut reader = LineReader::new(rest, self.max_line);
        let skipped = reader.skip_lines(n)?;
        self.at += rest.len() - reader.inner.len();
        Ok(skipped)
    }

    fn push_next(&mut self, out: &mut Vec<u8>, number: u64) -> io::Result<bool> {
        let start = self.at;
        let Some(rest) = self.text.get(start..).filter(|r| !r.is_empty()) else {
            return Ok(false);
        };
        if let Some(taken) = push_short_line(out, number, rest, self.max_line) {
            self.at = start + taken;
            return Ok(true);
        }
        let line = match memchr::memchr(b'\n', rest) {
            Some(pos) => {
                self.at = start + pos + 1;
                &rest[..pos]
            }
            None => {
                self.at = self.text.len();
                rest
            }
        };
        if line.len() > self.max_line {
            push_numbered(out, number, &line[..self.max_line], true);
        } else {
            // Valid UTF-8 already: the whole text was checked.
            push_number(out, number);
            out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
            out.push(b'\n');
        }
        Ok(true)
    }

    fn done(&mut self) -> io::Result<bool> {
        Ok(self.at >= self.text.len())
    }
}

/// Lines up to this long (and ending in a newline) take the fast copy.
const SHORT_LINE: usize = 128;
/// What [`push_short_line`] may store into spare capacity: the label, words
/// of the line starting up to `SHORT_LINE` (so a newline up to
/// `SHORT_LINE + 7`), and the newline's word after it.
const SHORT_ROOM: usize = 7 + SHORT_LINE + 7 + 8;

/// The common line (numbered below 1,000,000, shorter than [`SHORT_LINE`]
/// and than the cut, ended by a newline before the end of the text), as
/// [`push_number`] and a copy would append it, in one pass: eight bytes are
/// stored at a time while they are searched for the newline, then the end
/// is set after the line. Returns how many bytes of `rest` the line took
/// (its newline included), or `None`, having appended nothing, for a line
/// the general way must show.
fn push_short_line(out: &mut Vec<u8>, number: u64, rest: &[u8], max_line: usize) -> Option<usize> {
    const NEWLINES: u64 = u64::from_le_bytes([b'\n'; 8]);
    let label = short_label(number)?;
    out.reserve(SHORT_ROOM);
    let spare = out.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    let store = |at: usize, word: [u8; 8]| {
        debug_assert!(at + 8 <= SHORT_ROOM);
        // SAFETY: `spare` points at `out`'s spare capacity, of at least
        // SHORT_ROOM bytes; `at` is at most 7 + SHORT_LINE + 7 (the words
        // below start at most SHORT_LINE into the line, and the newline is
        // within the last one), so the eight bytes stay within it. An
        // unaligned store of plain bytes.
        unsafe { spare.add(at).cast::<[u8; 8]>().write_unaligned(word) }
    };
    store(0, label);
    let mut i = 0;
    while i <= SHORT_LINE {
        let word: [u8; 8] = rest.get(i..i + 8)?.try_into().ok()?;
        store(7 + i, word);
        let found = zero_bytes(u64::from_le_bytes(word) ^ NEWLINES);
        if found != 0 {
            let newline = i + (found.trailing_zeros() / 8) as usize;
            if newline > max_line {
                return None;
            }
            let end = if newline > 0 && rest[newline - 1] == b'\r' {
                newline - 1
            } else {
                newline
            };
            store(7 + end, [b'\n', 0, 0, 0, 0, 0, 0, 0]);
            // SAFETY: the label (7 bytes), the line's `end` bytes and the
            // newline after them were all stored above, within the spare
            // capacity. They are valid UTF-8: an ASCII label, then bytes of
            // a `str` cut before a newline (or a `\r` before it), an ASCII
            // boundary.
            unsafe { out.set_len(out.len() + 7 + end + 1) };
            return Some(newline + 1);
        }
        i += 8;
    }
    None
}

/// The high bit of each byte of `v` that is zero (exact: no carries cross
/// bytes).
#[inline]
fn zero_bytes(v: u64) -> u64 {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((v & LOWS) + LOWS) | v) & !LOWS
}

/// The text numbered lines were appended to. Every piece appended is valid
/// UTF-8, so the check never fails; were it to, nothing panics.
pub(crate) fn into_text(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Read up to `n` bytes from the start of a reader.
pub(crate) fn read_head(reader: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    reader.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

/// Append `line` to `out` as `read` shows it: the 1-based number right-aligned
/// in six columns, a tab, the text (invalid UTF-8 replaced, a cut line
/// marked) and a newline. No allocation when the line is valid UTF-8.
pub(crate) fn push_numbered(out: &mut Vec<u8>, number: u64, bytes: &[u8], cut: bool) {
    push_number(out, number);
    match std::str::from_utf8(bytes) {
        Ok(_) => out.extend_from_slice(bytes),
        Err(_) => out.extend_from_slice(String::from_utf8_lossy(bytes).as_bytes()),
    }
    if cut {
        out.extend_from_slice("… [line cut]".as_bytes());
    }
    out.push(b'\n');
}

/// The line number right-aligned in six columns and a tab. Digits by hand:
/// this runs once per line shown, and the formatting machinery costs more
/// than the rest of the line together.
#[inline]
fn push_number(out: &mut Vec<u8>, number: u64) {
    if let Some(label) = short_label(number) {
        out.extend_from_slice(&label[..7]);
        return;
    }
    let mut digits = *b"00000000000000000000";
    let mut at = digits.len();
    let mut n = number;
    while n > 0 {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&digits[at..]);
    out.push(b'\t');
}

/// The label of a line numbered below 1,000,000: the number right-aligned
/// in six columns and a tab, in the first seven bytes of a word. Built in a
/// register, not byte by byte in memory: six spaces and a tab, with the
/// digits laid over the spaces from the right.
#[inline]
fn short_label(number: u64) -> Option<[u8; 8]> {
    if number >= 1_000_000 {
        return None;
    }
    let mut label = u64::from_le_bytes(*b"      \t\0");
    let mut shift = 40;
    let mut n = number;
    loop {
        label = (label & !(0xff << shift)) | ((u64::from(b'0') + n % 10) << shift);
        n /= 10;
        if n == 0 {
            break;
        }
        shift -= 8;
    }
    Some(label.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_lines_look_like_cat_n() {
        let mut out = Vec::new();
        push_numbered(&mut out, 7, b"seven", false);
        push_numbered(&mut out, 1_234_567, b"bad \xff byte", true);
        push_numbered(&mut out, 0, b"", false);
        push_numbered(&mut out, 999_999, b"a", false);
        push_numbered(&mut out, 1_000_000, b"b", false);
        push_numbered(&mut out, u64::MAX, b"c", false);
        assert_eq!(
            into_text(out),
            "     7\tseven\n1234567\tbad \u{fffd} byte\u{2026} [line cut]\n     0\t\n\
             999999\ta\n1000000\tb\n18446744073709551615\tc\n"
        );
    }

    #[test]
    fn lines_are_capped_and_skipping_counts_newlines() {
        let data = format!("one\r\ntwo\n{}\nfour", "x".repeat(100));
        let mut r = LineReader::new(io::BufReader::with_capacity(16, data.as_bytes()), 10);
        let mut line = Line::default();
        assert!(r.next_line(&mut line).unwrap());
        assert_eq!(line.bytes, b"one");
        assert_eq!(r.skip_lines(1).unwrap(), 1);
        assert!(r.next_line(&mut line).unwrap());
        assert!(line.cut && line.bytes.len() == 10);
        assert!(r.next_line(&mut line).unwrap());
        assert_eq!(line.bytes, b"four");
        assert!(!line.cut);
        assert!(!r.next_line(&mut line).unwrap());
        assert!(r.at_end().unwrap());
    }

    fn numbered(lines: &mut impl NumberedLines, skip: u64) -> (u64, String) {
        let skipped = lines.skip(skip).unwrap();
        let mut out = Vec::new();
        let mut n = skip;
        while lines.push_next(&mut out, n + 1).unwrap() {
            n += 1;
        }
        assert!(lines.done().unwrap());
        (skipped, into_text(out))
    }

    #[test]
    fn the_fast_copy_shows_what_the_line_reader_shows() {
        // Lines of every length around the word size and the fast copy's
        // bound, with and without `\r`, multi-byte characters, cut or not,
        // numbered across 999,999, and a last line with and without a
        // newline.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut text = String::new();
        for len in (0..40).chain(120..140).chain([200, 300]) {
            for _ in 0..3 {
                for _ in 0..len {
                    text.push(['a', 'é', '\t', ' ', '"'][usize::try_from(next(5)).unwrap()]);
                }
                text.push_str(["\n", "\r\n", "\n\n"][usize::try_from(next(3)).unwrap()]);
            }
        }
        for tail in ["", "end", "no newline at all, and longer than a word"] {
            let text = format!("{text}{tail}");
            for max_line in [10, 130, 8192] {
                for skip in [0, 7, 999_990] {
                    let mut a = LineReader::new(io::BufReader::with_capacity(64, text.as_bytes()), max_line);
                    let mut b = TextLines::new(&text, max_line);
                    let (a_skipped, a_text) = numbered_from(&mut a, 7.min(skip), skip);
                    let (b_skipped, b_text) = numbered_from(&mut b, 7.min(skip), skip);
                    assert_eq!(
                        (a_skipped, &a_text),
                        (b_skipped, &b_text),
                        "cut at {max_line}, from {skip}"
                    );
                }
            }
        }
    }

    /// Skip `skip` lines, then number the rest from `first + 1`.
    fn numbered_from(lines: &mut impl NumberedLines, skip: u64, first: u64) -> (u64, String) {
        let skipped = lines.skip(skip).unwrap();
        let mut out = b"before".to_vec();
        let mut n = first;
        while lines.push_next(&mut out, n + 1).unwrap() {
            n += 1;
        }
        assert!(lines.done().unwrap());
        (skipped, into_text(out))
    }

    #[test]
    fn text_lines_show_what_the_line_reader_shows() {
        let long = "é".repeat(9);
        for text in [
            String::new(),
            "one".to_owned(),
            "one\n".to_owned(),
            "one\r\ntwo\r\n\r\n\nlast".to_owned(),
            format!("{long}\nshort\n{long}\r\na{long}\n"),
            "x".repeat(10) + "\r\n" + &"y".repeat(11),
            "\n\n\n".to_owned(),
        ] {
            for skip in [0, 1, 2, 5] {
                let mut a = LineReader::new(io::BufReader::with_capacity(3, text.as_bytes()), 10);
                let mut b = TextLines::new(&text, 10);
                assert_eq!(
                    numbered(&mut a, skip),
                    numbered(&mut b, skip),
                    "{text:?} skipping {skip}"
                );
            }
        }
    }

    #[test]
    fn sniffing() {
        assert_eq!(binary_type(b"\x7fELF\x02\x01\x01\0\0"), Some("ELF executable"));
        assert_eq!(binary_type(b"hello\nworld\n"), None);
        assert_eq!(binary_type("héllo".as_bytes()), None);
        assert_eq!(binary_type(b"caf\xe9 cr\xe8me\n"), None);
        assert_eq!(binary_type(b"\x01\x02\x03\x04\x05\xff\xfe"), Some("binary data"));
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
    }
}
