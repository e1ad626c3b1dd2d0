//! Line equivalence at each matching pass, and a hash consistent with it.
//!
//! Every pass is an equivalence relation given by a normal form (the line
//! itself, the line without trailing whitespace, the line trimmed, the line
//! trimmed with Unicode punctuation folded to ASCII). Comparing normal forms
//! lazily needs no allocation, and hashing them lets the matcher index a large
//! file once instead of rescanning it for every chunk.

use std::str::Chars;

/// The matching passes, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Lines equal byte for byte.
    Exact,
    /// Equal once whitespace at the ends of lines is ignored.
    TrimEnd,
    /// Equal once leading and trailing whitespace is ignored.
    Trim,
    /// Equal once trimmed and with Unicode punctuation folded to ASCII.
    Fold,
}

impl Level {
    /// How lines were compared at this pass, for messages ("matched …").
    pub fn describe(self) -> &'static str {
        match self {
            Level::Exact => "exactly",
            Level::TrimEnd => "when whitespace at the ends of lines is ignored",
            Level::Trim => "when leading and trailing whitespace is ignored",
            Level::Fold => "when leading and trailing whitespace is ignored and Unicode punctuation is folded to ASCII",
        }
    }

    pub(crate) const ALL: [Level; 4] = [Level::Exact, Level::TrimEnd, Level::Trim, Level::Fold];

    /// Whether a file line and a patch line are equal at this pass.
    #[inline]
    pub(crate) fn eq(self, file: &str, patch: &str) -> bool {
        match self {
            Level::Exact => file == patch,
            Level::TrimEnd => file.trim_end() == patch.trim_end(),
            Level::Trim => file.trim() == patch.trim(),
            Level::Fold => folded(file).eq(folded(patch)),
        }
    }
}

/// A hash of the line's normal form at the loosest pass, [`Level::Fold`].
/// Lines equal at any pass are equal at that one, so this single hash
/// serves as an index key for every pass. ASCII lines, as most are, are
/// hashed straight from the text; others are folded into `buf` first.
pub(crate) fn fold_hash(line: &str, buf: &mut String) -> u64 {
    let trimmed = line.trim_matches(is_blank_char);
    if trimmed.is_ascii() {
        return hash_bytes(trimmed.as_bytes());
    }
    buf.clear();
    buf.extend(trimmed.chars().flat_map(fold_char));
    hash_bytes(buf.as_bytes())
}

/// Characters that fold to nothing: zero-width spaces and joiners, the byte
/// order mark, the soft hyphen. They are also trimmed at the ends of a line.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{00AD}'
    )
}

fn is_blank_char(c: char) -> bool {
    c.is_whitespace() || is_invisible(c)
}

/// The fold pass's normal form as a character stream: the line trimmed of
/// whitespace (Unicode included) and invisible characters, then each
/// character folded by [`fold_char`].
pub(crate) fn folded(line: &str) -> impl Iterator<Item = char> + '_ {
    line.trim_matches(is_blank_char).chars().flat_map(fold_char)
}

/// Folds typographic punctuation that editors and word processors substitute
/// for ASCII (and that models reproduce as ASCII) back to ASCII.
pub(crate) fn fold_char(c: char) -> Folded {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2043}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => Folded::One('-'),
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{2035}' | '\u{02BC}' | '\u{FF07}' => {
            Folded::One('\'')
        }
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{2036}' | '\u{00AB}' | '\u{00BB}'
        | '\u{FF02}' => Folded::One('"'),
        '\u{00A0}' | '\u{1680}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Folded::One(' '),
        '\u{2026}' => Folded::Many("...".chars()),
        c if is_invisible(c) => Folded::None,
        c => Folded::One(c),
    }
}

/// What one character folds to; an iterator so that folding a line needs no
/// allocation.
pub(crate) enum Folded {
    None,
    One(char),
    Many(Chars<'static>),
}

impl Iterator for Folded {
    type Item = char;

    #[inline]
    fn next(&mut self) -> Option<char> {
        match self {
            Folded::None => None,
            Folded::One(c) => {
                let c = *c;
                *self = Folded::None;
                Some(c)
            }
            Folded::Many(chars) => chars.next(),
        }
    }
}

/// Whether `line`, folded, contains `needle`, folded. Used only for the last
/// resort of `@@` context lines (`@@ fn main` naming `fn main() {`). Lines
/// that are ASCII, as most are, need no folding and no allocation.
pub(crate) fn folded_contains(line: &str, needle_folded: &str, buf: &mut String) -> bool {
    if line.is_ascii() {
        return line.contains(needle_folded);
    }
    buf.clear();
    buf.extend(folded(line));
    buf.contains(needle_folded)
}

/// A small multiply-rotate hash (the scheme of rustc's FxHash): the matcher
/// hashes every line of a file when it builds an index, so SipHash would
/// dominate, and collisions only cost a verification.
#[derive(Default)]
struct Hasher(u64);

impl Hasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = Hasher::default();
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        h.add(u64::from_le_bytes(word));
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h.add(u64::from_le_bytes(tail));
    // The length separates lines that differ only by trailing NUL bytes.
    h.add(bytes.len() as u64);
    h.finish()
}

#[cfg(test)]
mod tests {

    use super::*;

    fn fold(s: &str) -> String {
        folded(s).collect()
    }

    #[test]
    fn exact_is_byte_equality() {
        assert!(Level::Exact.eq("a b", "a b"));
        assert!(!Level::Exact.eq("a b ", "a b"));
        assert!(!Level::Exact.eq(" a", "a"));
    }

    #[test]
    fn trim_end_ignores_only_trailing_whitespace() {
        assert!(Level::TrimEnd.eq("let x = 1;   \t", "let x = 1;"));
        assert!(!Level::TrimEnd.eq("  let x = 1;", "let x = 1;"));
    }

    #[test]
    fn trim_ignores_both_ends_but_not_the_middle() {
        assert!(Level::Trim.eq("\t  let x = 1;  ", "let x = 1;"));
        assert!(!Level::Trim.eq("let  x = 1;", "let x = 1;"));
    }

    #[test]
    fn fold_maps_dashes_quotes_spaces_and_ellipsis() {
        assert_eq!(
            fold("a \u{2013} b \u{2014} c \u{2212} d \u{2011} e"),
            "a - b - c - d - e"
        );
        assert_eq!(
            fold("\u{201C}hi\u{201D} \u{2018}x\u{2019} \u{00AB}y\u{00BB}"),
            "\"hi\" 'x' \"y\""
        );
        assert_eq!(fold("a\u{00A0}b\u{202F}c\u{3000}d"), "a b c d");
        assert_eq!(fold("wait\u{2026}"), "wait...");
        assert_eq!(fold("\u{FEFF}zero\u{200B}width"), "zerowidth");
        assert_eq!(fold("\u{00A0} padded \u{00A0}"), "padded");
        assert!(Level::Fold.eq("  let s = \u{201C}a\u{2014}b\u{201D};", "let s = \"a-b\";"));
        assert!(!Level::Fold.eq("let s = \"a-b\";", "let s = \"a_b\";"));
    }

    #[test]
    fn fold_hash_agrees_with_equality_at_every_level() {
        let pairs = [
            ("x = 1", "x = 1"),
            ("x = 1  ", "x = 1"),
            ("  x = 1 ", "x = 1"),
            ("\u{00A0}x \u{2013} 1\u{2026}", "x - 1..."),
            ("\u{FEFF}\u{201C}q\u{201D}", "\"q\""),
            ("exactly eight!!", "exactly eight!!"),
        ];
        let mut buf = String::new();
        for level in Level::ALL {
            for (a, b) in pairs {
                if level.eq(a, b) {
                    assert_eq!(fold_hash(a, &mut buf), fold_hash(b, &mut buf), "{level:?} {a:?} {b:?}");
                }
            }
        }
        assert!(pairs.iter().all(|(a, b)| Level::Fold.eq(a, b)));
        assert_ne!(fold_hash("abc", &mut buf), fold_hash("abd", &mut buf));
        assert_ne!(fold_hash("", &mut buf), fold_hash("\0", &mut buf));
    }

    #[test]
    fn contains_folds_non_ascii_lines() {
        let mut buf = String::new();
        assert!(folded_contains("fn main() {", "fn main", &mut buf));
        assert!(folded_contains("// a \u{2014} b", "a - b", &mut buf));
        assert!(!folded_contains("fn other() {", "fn main", &mut buf));
    }
}
