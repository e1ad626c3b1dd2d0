//! Turning a fetched body into text: charset decoding, HTML to Markdown
//! (page chrome skipped, links made absolute), HTML to plain text, and
//! HTML entities.

use std::sync::LazyLock;

use encoding_rs::Encoding;
use regex::Regex;
use reqwest::Url;

/// Elements whose content is never page text.
const SKIPPED: [&str; 9] = [
    "script", "style", "nav", "header", "footer", "aside", "noscript", "iframe", "svg",
];

static META_CHARSET: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)<meta\b[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)"#).ok());
static BASE_HREF: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"(?i)<base\b[^>]*?href\s*=\s*["']([^"']+)["']"#).ok());
// htmd prints the `<title>`; the page's head is never page text.
static HEAD: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?is)<head\b.*?</head\s*>").ok());
static MD_LINK: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(\]\()(<?)([^)\s>]+)").ok());
static SKIPPED_BLOCKS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?is)<!--.*?-->|<(script|style|nav|header|footer|aside|noscript|iframe|svg|head|template)\b.*?</(script|style|nav|header|footer|aside|noscript|iframe|svg|head|template)\s*>").ok()
});
static BLOCK_TAGS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)</?(p|div|br|li|ul|ol|tr|table|h[1-6]|section|article|main|blockquote|pre|hr|dd|dt|dl)\b[^>]*>")
        .ok()
});
static TAG: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"(?s)<[^>]*>").ok());
static BLANK_LINES: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"\n[ \t]*(\n[ \t]*){2,}").ok());
static SPACES: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"[ \t\r\f\v\u{a0}]+").ok());
static ENTITY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});").ok());

/// Decode a body: the Content-Type charset, else a byte-order mark, else
/// (for HTML) a `<meta charset>` in the first 4 KiB, else UTF-8. Bytes
/// that are invalid in that encoding become U+FFFD.
pub fn decode(body: &[u8], header_charset: Option<&str>, is_html: bool) -> (String, &'static str) {
    let from_meta = || {
        let head = String::from_utf8_lossy(&body[..body.len().min(4096)]).into_owned();
        let re = META_CHARSET.as_ref()?;
        let label = re.captures(&head)?.get(1)?.as_str().to_owned();
        Encoding::for_label(label.as_bytes())
    };
    let encoding = header_charset
        .and_then(|c| Encoding::for_label(c.as_bytes()))
        .or_else(|| Encoding::for_bom(body).map(|(e, _)| e))
        .or_else(|| if is_html { from_meta() } else { None })
        .unwrap_or(encoding_rs::UTF_8);
    let (text, used, _) = encoding.decode(body);
    (text.into_owned(), used.name())
}

/// HTML to Markdown, page chrome skipped and relative links resolved
/// against the page's `<base href>` or its URL.
pub fn to_markdown(html: &str, page: &Url) -> String {
    let converter = htmd::HtmlToMarkdown::builder().skip_tags(SKIPPED.to_vec()).build();
    let body = match HEAD.as_ref() {
        Some(re) => re.replace(html, ""),
        None => html.into(),
    };
    let md = converter.convert(&body).unwrap_or_else(|_| to_text(&body));
    let base = BASE_HREF
        .as_ref()
        .and_then(|re| re.captures(html))
        .and_then(|c| page.join(&decode_entities(c.get(1)?.as_str())).ok())
        .unwrap_or_else(|| page.clone());
    let md = match MD_LINK.as_ref() {
        Some(re) => re
            .replace_all(&md, |c: &regex::Captures<'_>| {
                let target = &c[3];
                let resolved = if target.starts_with('#') || has_scheme(target) {
                    target.to_owned()
                } else {
                    base.join(target)
                        .map(|u| u.to_string())
                        .unwrap_or_else(|_| target.to_owned())
                };
                format!("{}{}{}", &c[1], &c[2], resolved)
            })
            .into_owned(),
        None => md,
    };
    collapse_blank_lines(md.trim())
}

fn has_scheme(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !scheme.contains('/')
        }
        None => false,
    }
}

/// HTML to plain text: chrome dropped, block elements on their own lines,
/// entities decoded, whitespace collapsed.
pub fn to_text(html: &str) -> String {
    let replace = |re: &Option<Regex>, text: &str, with: &str| match re {
        Some(re) => re.replace_all(text, with).into_owned(),
        None => text.to_owned(),
    };
    let text = replace(&SKIPPED_BLOCKS, html, " ");
    let text = replace(&BLOCK_TAGS, &text, "\n");
    let text = replace(&TAG, &text, "");
    let text = decode_entities(&text);
    let text = replace(&SPACES, &text, " ");
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    collapse_blank_lines(lines.join("\n").trim())
}

/// Inline HTML (a title, a snippet) to one line of text.
pub fn inline_text(html: &str) -> String {
    let text = match TAG.as_ref() {
        Some(re) => re.replace_all(html, "").into_owned(),
        None => html.to_owned(),
    };
    decode_entities(&text).split_whitespace().collect::<Vec<_>>().join(" ")
}

fn collapse_blank_lines(text: &str) -> String {
    match BLANK_LINES.as_ref() {
        Some(re) => re.replace_all(text, "\n\n").into_owned(),
        None => text.to_owned(),
    }
}

/// Decode numeric entities and the common named ones.
pub fn decode_entities(text: &str) -> String {
    let Some(re) = ENTITY.as_ref() else {
        return text.to_owned();
    };
    re.replace_all(text, |c: &regex::Captures<'_>| {
        let name = &c[1];
        let ch = if let Some(num) = name.strip_prefix('#') {
            let n = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                None => num.parse().ok(),
            };
            n.and_then(char::from_u32).map(String::from)
        } else {
            named_entity(name).map(String::from)
        };
        ch.unwrap_or_else(|| c[0].to_owned())
    })
    .into_owned()
}

fn named_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => "\u{a0}",
        "mdash" => "—",
        "ndash" => "–",
        "hellip" => "…",
        "lsquo" => "‘",
        "rsquo" => "’",
        "ldquo" => "“",
        "rdquo" => "”",
        "laquo" => "«",
        "raquo" => "»",
        "copy" => "©",
        "reg" => "®",
        "trade" => "™",
        "middot" => "·",
        "bull" => "•",
        "euro" => "€",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_come_from_the_header_the_bom_or_the_meta_tag() {
        let latin1 = b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9</body></html>";
        assert!(decode(latin1, None, true).0.contains("café"));
        assert!(decode(b"caf\xe9", Some("windows-1252"), false).0.contains("café"));
        let sjis = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=Shift_JIS\">\x93\xfa\x96\x7b";
        assert!(decode(sjis, None, true).0.contains("日本"));
        assert!(decode(b"\xef\xbb\xbfhello", None, false).0.starts_with("hello"));
    }

    #[test]
    fn markdown_skips_chrome_and_resolves_links() {
        let page = Url::parse("https://example.com/docs/page.html").unwrap();
        let html = "<html><head><title>PAGE-TITLE</title><style>.x{}</style><script>var secret=1</script></head><body>\
            <nav><a href=\"/home\">Home</a></nav><h1>Title</h1><p>See <a href=\"other.html\">other</a>, \
            <a href=\"/root\">root</a>, <a href=\"https://x.org/a\">abs</a> and <a href=\"#frag\">frag</a>.</p>\
            <img src=\"img/a.png\" alt=\"pic\"><footer>foot</footer></body></html>";
        let md = to_markdown(html, &page);
        assert!(md.contains("# Title"), "{md}");
        assert!(md.contains("(https://example.com/docs/other.html)"), "{md}");
        assert!(md.contains("(https://example.com/root)"), "{md}");
        assert!(md.contains("(https://x.org/a)"), "{md}");
        assert!(md.contains("(#frag)"), "{md}");
        assert!(md.contains("(https://example.com/docs/img/a.png)"), "{md}");
        for leaked in ["PAGE-TITLE", "secret", "Home", "foot", ".x{}"] {
            assert!(!md.contains(leaked), "{leaked} leaked: {md}");
        }
    }

    #[test]
    fn text_drops_tags_and_decodes_entities() {
        let t = to_text("<body><script>x()</script><p>a &amp; b&nbsp;c</p><p>&#233;&#x263A;</p></body>");
        assert_eq!(t, "a & b c\n\né☺");
    }
}
