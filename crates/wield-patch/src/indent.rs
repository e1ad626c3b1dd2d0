//! Re-indenting a chunk's added lines when its old lines matched the file
//! only with leading whitespace ignored.
//!
//! A model that drops or adds one level of indentation on every line of a
//! chunk still finds its place (the trimmed passes), but its `+` lines carry
//! the same error. Written as they are, a Python block ends up mixed and no
//! longer parses. The offset between the file's indentation and the patch's
//! on the matched lines says how to fix them: when every non-blank matched
//! line is off by the same prefix, that prefix is added to (or taken from)
//! every non-blank added line. When the offset differs between lines, no
//! rewrite is safe and the match is refused.

use std::fmt;

/// How a chunk's added lines were shifted to the file's indentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shift {
    /// The file is indented deeper than the patch by this prefix.
    Deeper(String),
    /// The file is indented less than the patch by this prefix.
    Shallower(String),
}

impl Shift {
    /// Rewrite one added line; `None` when a `Shallower` line does not start
    /// with the prefix to take away.
    pub(crate) fn apply(&self, line: &str) -> Option<String> {
        if line.trim().is_empty() {
            return Some(line.to_owned());
        }
        match self {
            Shift::Deeper(prefix) => Some(format!("{prefix}{line}")),
            Shift::Shallower(prefix) => line.strip_prefix(prefix.as_str()).map(str::to_owned),
        }
    }
}

impl fmt::Display for Shift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shift::Deeper(p) => write!(f, "{} deeper", describe(p)),
            Shift::Shallower(p) => write!(f, "{} less", describe(p)),
        }
    }
}

/// "4 spaces", "1 tab", "1 tab and 2 spaces", "3 whitespace characters".
fn describe(ws: &str) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let after_tabs = ws.trim_start_matches('\t');
    let tabs = ws.len() - after_tabs.len();
    if !after_tabs.bytes().all(|b| b == b' ') {
        return plural(ws.chars().count(), "whitespace character");
    }
    match (tabs, after_tabs.len()) {
        (0, spaces) => plural(spaces, "space"),
        (tabs, 0) => plural(tabs, "tab"),
        (tabs, spaces) => format!("{} and {}", plural(tabs, "tab"), plural(spaces, "space")),
    }
}

/// The leading whitespace of a line.
fn leading(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The uniform shift from the patch's old lines to the file lines they
/// matched: `Ok(None)` when the indentation agrees (or no non-blank line
/// says otherwise), `Err(k)` when line `k` of the pair list disagrees with
/// the lines before it.
pub(crate) fn uniform_shift<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Option<Shift>, usize> {
    let mut seen: Option<Option<Shift>> = None;
    for (k, (file, patch)) in pairs.into_iter().enumerate() {
        if file.trim().is_empty() || patch.trim().is_empty() {
            continue;
        }
        let (f, p) = (leading(file), leading(patch));
        let shift = if f == p {
            None
        } else if let Some(extra) = f.strip_suffix(p) {
            Some(Shift::Deeper(extra.to_owned()))
        } else if let Some(extra) = p.strip_suffix(f) {
            Some(Shift::Shallower(extra.to_owned()))
        } else {
            return Err(k);
        };
        match &seen {
            None => seen = Some(shift),
            Some(first) if *first == shift => {}
            Some(_) => return Err(k),
        }
    }
    Ok(seen.flatten())
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn a_uniform_offset_is_found_in_either_direction() {
        let pairs = [("        x", "    x"), ("", "  "), ("    y", "y")];
        assert_eq!(uniform_shift(pairs), Ok(Some(Shift::Deeper("    ".into()))));
        let pairs = [("\tx", "\t\tx"), ("y", "\ty")];
        assert_eq!(uniform_shift(pairs), Ok(Some(Shift::Shallower("\t".into()))));
        assert_eq!(uniform_shift([("  a  ", "  a")]), Ok(None));
        assert_eq!(uniform_shift([("", "")]), Ok(None));
    }

    #[test]
    fn a_mixed_offset_is_refused_at_the_first_disagreeing_line() {
        assert_eq!(uniform_shift([("    a", "a"), ("  b", "b")]), Err(1));
        assert_eq!(uniform_shift([("a", "a"), ("  b", "b")]), Err(1));
        // Tabs in the file, spaces in the patch: no prefix relates them.
        assert_eq!(uniform_shift([("\tx", "    x")]), Err(0));
    }

    #[test]
    fn shifting_leaves_blank_lines_and_refuses_what_cannot_be_taken_away() {
        let deeper = Shift::Deeper("  ".into());
        assert_eq!(deeper.apply("x").as_deref(), Some("  x"));
        assert_eq!(deeper.apply("").as_deref(), Some(""));
        let shallower = Shift::Shallower("    ".into());
        assert_eq!(shallower.apply("      x").as_deref(), Some("  x"));
        assert_eq!(shallower.apply("  x"), None);
    }

    #[test]
    fn shifts_describe_themselves() {
        assert_eq!(Shift::Deeper("    ".into()).to_string(), "4 spaces deeper");
        assert_eq!(Shift::Shallower("\t".into()).to_string(), "1 tab less");
        assert_eq!(Shift::Deeper("\t\t ".into()).to_string(), "2 tabs and 1 space deeper");
        assert_eq!(
            Shift::Deeper(" \t".into()).to_string(),
            "2 whitespace characters deeper"
        );
    }
}
