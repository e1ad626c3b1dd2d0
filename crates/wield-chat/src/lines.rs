//! Line-level recognizers: the patterns Flemma's parser matches, written by
//! hand so that each costs time linear in its line.

/// One line of the document.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line<'a> {
    /// The line with its line ending.
    pub raw: &'a str,
    /// The line without `\n` or `\r\n`.
    pub text: &'a str,
    /// Counted from 1.
    pub number: usize,
    /// Where `raw` starts in the document.
    pub offset: usize,
}

/// The text of `lines` (consecutive lines of `source`), line endings
/// included: a slice of `source`, not a copy.
pub(crate) fn span<'a>(source: &'a str, lines: &[Line<'a>]) -> &'a str {
    match (lines.first(), lines.last()) {
        (Some(first), Some(last)) => &source[first.offset..last.offset + last.raw.len()],
        _ => "",
    }
}

/// The lines of `source` from byte `offset` on, the first numbered
/// `number`: read as they are needed, so that a large document is never
/// held as one vector of lines.
#[derive(Clone, Debug)]
pub(crate) struct LineIter<'a> {
    source: &'a str,
    offset: usize,
    number: usize,
}

impl<'a> LineIter<'a> {
    pub(crate) fn new(source: &'a str, offset: usize, number: usize) -> Self {
        Self { source, offset, number }
    }
}

impl<'a> Iterator for LineIter<'a> {
    type Item = Line<'a>;

    #[inline]
    fn next(&mut self) -> Option<Line<'a>> {
        let rest = &self.source[self.offset..];
        if rest.is_empty() {
            return None;
        }
        let len = rest.find('\n').map_or(rest.len(), |n| n + 1);
        let raw = &rest[..len];
        let line = Line {
            raw,
            text: strip_ending(raw),
            number: self.number,
            offset: self.offset,
        };
        self.offset += len;
        self.number += 1;
        Some(line)
    }
}

pub(crate) fn strip_ending(raw: &str) -> &str {
    let t = raw.strip_suffix('\n').unwrap_or(raw);
    t.strip_suffix('\r').unwrap_or(t)
}

/// Whether `text` starts with `byte`: checked before matching a longer
/// prefix, so that most lines are passed over without comparing strings.
#[inline]
fn starts_with_byte(text: &str, byte: u8) -> bool {
    text.as_bytes().first() == Some(&byte)
}

pub(crate) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn leading_ticks(text: &str) -> usize {
    text.bytes().take_while(|&b| b == b'`').count()
}

/// A fence opener: at least three backticks, and no backtick after them
/// (so ```` ```inline``` ```` is text). Returns the backtick count.
pub(crate) fn fence_open(text: &str) -> Option<usize> {
    let n = leading_ticks(text);
    (n >= 3 && !text[n..].contains('`')).then_some(n)
}

/// A fence closer for an opener of `ticks` backticks: as many or more
/// backticks, then only whitespace.
pub(crate) fn fence_close(text: &str, ticks: usize) -> bool {
    let n = leading_ticks(text);
    n >= ticks && is_blank(&text[n..])
}

/// The language word and the info string after a fence's backticks.
pub(crate) fn fence_info(text: &str, ticks: usize) -> (&str, &str) {
    let rest = text[ticks..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, ':' | '.' | '_' | '-')))
        .unwrap_or(rest.len());
    (&rest[..end], rest[end..].trim())
}

/// `@Name:` alone on its line (trailing whitespace allowed).
pub(crate) fn role_marker(text: &str) -> Option<&str> {
    let rest = text.strip_prefix('@')?;
    let end = rest.find(|c: char| !c.is_ascii_alphanumeric())?;
    let (name, after) = rest.split_at(end);
    let after = after.strip_prefix(':')?;
    (!name.is_empty() && is_blank(after)).then_some(name)
}

/// The legacy inline form `@System: text`, `@You: text`, `@Assistant:
/// text`: the role name and the length of the prefix that becomes the new
/// role line (`@You:` and at most one space).
pub(crate) fn inline_role(text: &str) -> Option<(&'static str, usize)> {
    for name in ["System", "You", "Assistant"] {
        let Some(rest) = text.strip_prefix('@').and_then(|r| r.strip_prefix(name)) else {
            continue;
        };
        let Some(after) = rest.strip_prefix(':') else {
            continue;
        };
        if is_blank(after) {
            return None;
        }
        let prefix = 2 + name.len() + usize::from(after.starts_with(' '));
        return Some((name, prefix));
    }
    None
}

/// `` **Tool Use:** `NAME` (`ID`) ``: the name and the id.
pub(crate) fn tool_use_header(text: &str) -> Option<(&str, &str)> {
    if !starts_with_byte(text, b'*') {
        return None;
    }
    let rest = text.strip_prefix("**Tool Use:**")?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let end = rest.find('`')?;
    let (name, rest) = rest.split_at(end);
    let rest = rest[1..].trim_start().strip_prefix("(`")?;
    let close = rest.find(')')?;
    let id = rest[..close].strip_suffix('`')?;
    (!name.is_empty() && !id.is_empty()).then_some((name, id))
}

/// `` **Tool Result:** `ID` `` and what follows the id.
pub(crate) fn tool_result_header(text: &str) -> Option<(&str, &str)> {
    if !starts_with_byte(text, b'*') {
        return None;
    }
    let rest = text.strip_prefix("**Tool Result:**")?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let end = rest.find('`')?;
    let id = &rest[..end];
    (!id.is_empty()).then_some((id, &rest[end + 1..]))
}

/// The tokens of a `(…)` status suffix, or `None` when `rest` is not one.
pub(crate) fn status_suffix(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(tokens(inner))
}

/// Whitespace-separated tokens; a double- or single-quoted run keeps its
/// spaces (`note="two words"`).
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    for c in text.chars() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                }
            }
            None if c.is_whitespace() => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
                current.push(c);
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A thinking opener.
pub(crate) enum ThinkingTag<'a> {
    Plain,
    Redacted,
    Signed {
        provider: &'a str,
        signature: &'a str,
        self_closing: bool,
    },
}

pub(crate) fn thinking_open(text: &str) -> Option<ThinkingTag<'_>> {
    if !starts_with_byte(text, b'<') {
        return None;
    }
    if text == "<thinking>" {
        return Some(ThinkingTag::Plain);
    }
    let rest = text.strip_prefix("<thinking")?;
    let trimmed = rest.trim_start();
    if trimmed.len() == rest.len() {
        return None;
    }
    if trimmed == "redacted>" {
        return Some(ThinkingTag::Redacted);
    }
    let colon = trimmed.find(':')?;
    let provider = &trimmed[..colon];
    if provider.is_empty() || !provider.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    let rest = trimmed[colon + 1..].strip_prefix("signature=\"")?;
    let quote = rest.find('"')?;
    let signature = &rest[..quote];
    let end = rest[quote + 1..].trim_start();
    let self_closing = match end {
        ">" => false,
        "/>" => true,
        _ => return None,
    };
    Some(ThinkingTag::Signed {
        provider,
        signature,
        self_closing,
    })
}

pub(crate) fn thinking_close(text: &str) -> bool {
    text == "</thinking>"
}

/// `<!-- wield:aborted: MESSAGE -->` or `flemma:aborted`: the namespace and
/// the message.
pub(crate) fn abort_marker(text: &str) -> Option<(&str, &str)> {
    if !starts_with_byte(text, b'<') {
        return None;
    }
    let inner = text.strip_prefix("<!--")?.strip_suffix("-->")?.trim_start();
    for namespace in ["wield", "flemma"] {
        if let Some(message) = inner.strip_prefix(namespace).and_then(|r| r.strip_prefix(":aborted:")) {
            return Some((namespace, message.trim()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_markers_are_alone_on_their_line() {
        assert_eq!(role_marker("@You:"), Some("You"));
        assert_eq!(role_marker("@Assistant:  \t"), Some("Assistant"));
        assert_eq!(role_marker("@You: hi"), None);
        assert_eq!(role_marker(" @You:"), None);
        assert_eq!(inline_role("@You: hi"), Some(("You", 6)));
        assert_eq!(inline_role("@You:hi"), Some(("You", 5)));
        assert_eq!(inline_role("@You:   "), None);
        assert_eq!(inline_role("@Other: hi"), None);
    }

    #[test]
    fn fences_follow_commonmark_openers() {
        assert_eq!(fence_open("```json"), Some(3));
        assert_eq!(fence_open("````"), Some(4));
        assert_eq!(fence_open("```How are you?```"), None);
        assert_eq!(fence_open("``"), None);
        assert!(fence_close("````  ", 3));
        assert!(!fence_close("```", 4));
        assert_eq!(
            fence_info("```flemma:tool status=pending", 3),
            ("flemma:tool", "status=pending")
        );
    }

    #[test]
    fn headers() {
        assert_eq!(
            tool_use_header("**Tool Use:** `calc` (`toolu_1`)"),
            Some(("calc", "toolu_1"))
        );
        assert_eq!(
            tool_use_header("**Tool Use:** `a:b` (`search:0`) trailing"),
            Some(("a:b", "search:0"))
        );
        assert_eq!(tool_use_header("**Tool Use:** `calc`"), None);
        assert_eq!(
            tool_result_header("**Tool Result:** `t1` (pending)"),
            Some(("t1", " (pending)"))
        );
        assert_eq!(
            status_suffix(" (status=pending sandbox=false) "),
            Some(vec!["status=pending".into(), "sandbox=false".into()])
        );
        assert_eq!(status_suffix(" done"), None);
        assert_eq!(tokens(r#"a note="two words" b"#), vec!["a", "note=\"two words\"", "b"]);
    }

    #[test]
    fn thinking_and_abort() {
        assert!(matches!(thinking_open("<thinking>"), Some(ThinkingTag::Plain)));
        assert!(matches!(
            thinking_open("<thinking redacted>"),
            Some(ThinkingTag::Redacted)
        ));
        assert!(matches!(
            thinking_open(r#"<thinking anthropic:signature="abc" />"#),
            Some(ThinkingTag::Signed {
                provider: "anthropic",
                signature: "abc",
                self_closing: true
            })
        ));
        assert!(thinking_open("<thinking> ").is_none());
        assert!(thinking_open("<thinkingredacted>").is_none());
        assert_eq!(
            abort_marker("<!-- flemma:aborted: Stopped. -->"),
            Some(("flemma", "Stopped."))
        );
        assert_eq!(abort_marker("<!-- wield:aborted:  -->"), Some(("wield", "")));
        assert_eq!(abort_marker("<!-- note -->"), None);
    }

    /// `@:` names no one, so it is no role line.
    #[test]
    fn a_role_line_needs_a_name() {
        assert_eq!(role_marker("@:"), None);
        assert_eq!(role_marker("@You"), None);
    }

    /// A tool header with an empty name or id is text, not a call or a
    /// result.
    #[test]
    fn tool_headers_need_a_name_and_an_id() {
        assert_eq!(tool_use_header("**Tool Use:** `` (`x`)"), None);
        assert_eq!(tool_use_header("**Tool Use:** `calc` (``)"), None);
        assert_eq!(tool_use_header("**Tool Use:** `calc` (`x)"), None);
        assert_eq!(tool_result_header("**Tool Result:** ``"), None);
        assert_eq!(tool_result_header("**Tool Result:** `x"), None);
        assert_eq!(tool_result_header("**Tool Result:** `x`"), Some(("x", "")));
    }

    /// A quoted run keeps its spaces in either quote, and ends at its
    /// closing quote.
    #[test]
    fn quoted_tokens_end_at_their_quote() {
        assert_eq!(tokens("a='x y' b"), vec!["a='x y'", "b"]);
        assert_eq!(tokens(r#""a" b"#), vec!["\"a\"", "b"]);
        assert_eq!(tokens("  "), Vec::<String>::new());
    }

    /// The words after a fence's backticks: the language, then the rest
    /// trimmed.
    #[test]
    fn fence_info_splits_language_from_the_rest() {
        assert_eq!(fence_info("```  json  extra words ", 3), ("json", "extra words"));
        assert_eq!(fence_info("````", 4), ("", ""));
        assert_eq!(fence_info("```a.b_c-d{x}", 3), ("a.b_c-d", "{x}"));
        assert!(!fence_close("```x", 3));
    }

    /// Signed thinking tags need a word for the provider, a quoted
    /// signature, and `>` or `/>` after it.
    #[test]
    fn signed_thinking_tags_are_read_strictly() {
        assert!(matches!(
            thinking_open("<thinking   redacted>"),
            Some(ThinkingTag::Redacted)
        ));
        assert!(matches!(
            thinking_open(r#"<thinking a:signature="s" >"#),
            Some(ThinkingTag::Signed {
                provider: "a",
                signature: "s",
                self_closing: false
            })
        ));
        for text in [
            r#"<thinking :signature="s">"#,
            r#"<thinking x-y:signature="s">"#,
            r#"<thinking a:signature="s" x>"#,
            r#"<thinking a:signature="s>"#,
            r#"<thinking a:sig="s">"#,
            "<thinking",
            "thinking>",
        ] {
            assert!(thinking_open(text).is_none(), "{text}");
        }
        assert!(thinking_close("</thinking>"));
        assert!(!thinking_close("</thinking> "));
    }

    /// Abort markers need their namespace and `:aborted:`; spacing inside
    /// the comment is free.
    #[test]
    fn abort_markers_name_wield_or_flemma() {
        assert_eq!(abort_marker("<!--wield:aborted: m-->"), Some(("wield", "m")));
        assert_eq!(abort_marker("<!-- other:aborted: m -->"), None);
        assert_eq!(abort_marker("<!-- wield:stopped: m -->"), None);
        assert_eq!(abort_marker("<!-- wield:aborted: m"), None);
    }
}
