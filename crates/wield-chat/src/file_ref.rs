//! File references in a person's text: `@./path`, `@../path`, `@~/path`,
//! `@//absolute/path`, with an optional `;type=mime/type`. Trailing
//! punctuation is not part of the reference (`see @./notes.txt.`), and
//! percent-escapes are decoded (`@./my%20report.txt`).

use crate::syntax::FileRef;

/// Characters a reference never ends with: they belong to the sentence.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '>'];

/// The references in one line of text. A reference runs from its `@` to
/// the end of its word; only the `@`s are looked for, and each word is
/// passed over once: linear in the line.
pub(crate) fn find(text: &str, line: usize, out: &mut Vec<FileRef>) {
    let mut from = 0;
    // Where the word of the last `@` looked at ends, so that a word full
    // of `@`s is measured once.
    let mut word_end = 0;
    while let Some(at) = text[from..].find('@').map(|i| from + i) {
        if at >= word_end {
            let rest = &text[at..];
            word_end = at + rest.find(char::is_whitespace).unwrap_or(rest.len());
        }
        let word = &text[at + 1..word_end];
        if !["./", "../", "~/", "//"].iter().any(|s| word.starts_with(s)) {
            from = at + 1;
            continue;
        }
        // The first reference of a word takes the rest of it.
        from = at + 1 + word.len();
        let token = word.trim_end_matches(TRAILING);
        let (path, mime) = match token.split_once(";type=") {
            Some((path, mime)) if !mime.is_empty() => (path, Some(mime.to_string())),
            Some((path, _)) => (path, None),
            None => (token, None),
        };
        if !has_name(path) {
            continue;
        }
        out.push(FileRef {
            raw: format!("@{token}"),
            path: absolute(percent_decode(path)),
            mime,
            line,
        });
    }
}

/// Whether the path names something past its prefix (`@./` alone does not).
fn has_name(path: &str) -> bool {
    let name = path.trim_start_matches(['.', '/', '~']);
    !name.is_empty()
}

/// `//abs/path` names `/abs/path`.
fn absolute(path: String) -> String {
    match path.strip_prefix('/') {
        Some(rest) if rest.starts_with('/') => rest.to_string(),
        _ => path,
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(hex), bytes.get(i + 2).and_then(hex))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: &u8) -> Option<u8> {
    (*b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(text: &str) -> Vec<(String, String, Option<String>)> {
        let mut out = Vec::new();
        find(text, 1, &mut out);
        out.into_iter().map(|r| (r.raw, r.path, r.mime)).collect()
    }

    #[test]
    fn references_strip_punctuation_and_decode() {
        assert_eq!(
            refs("See @./my%20report.txt. and @../up/a.png;type=image/png, then @~/x."),
            vec![
                ("@./my%20report.txt".into(), "./my report.txt".into(), None),
                (
                    "@../up/a.png;type=image/png".into(),
                    "../up/a.png".into(),
                    Some("image/png".into())
                ),
                ("@~/x".into(), "~/x".into(), None),
            ]
        );
        assert_eq!(refs("mail me@example.com or @./ alone"), vec![]);
        assert_eq!(
            refs("(@//etc/hosts)"),
            vec![("@//etc/hosts".into(), "/etc/hosts".into(), None)]
        );
        assert_eq!(refs("bad %zz @./a%zz"), vec![("@./a%zz".into(), "./a%zz".into(), None)]);
    }
}
