//! Writing: a [`Document`] back to text (what was read, byte for byte),
//! the canonical forms wield writes, and the rewrites of the legacy forms
//! and of tool-result statuses.

use crate::error::ChatError;
use crate::syntax::{Document, Fence, Segment, Speaker, Status, ToolResult};

impl<'a> Document<'a> {
    /// The document as text. For a parsed document this is the text it was
    /// parsed from.
    pub fn write(&self) -> String {
        // Grown as it is written rather than sized by a first walk over
        // the tree: for a large document, that walk (over memory long out
        // of cache) cost more than the few doublings of the buffer.
        let mut out = String::new();
        if let Some(f) = &self.frontmatter {
            f.fence.write_to(&mut out);
        }
        out.push_str(&self.preamble);
        for m in &self.messages {
            out.push_str(&m.marker);
            for s in &m.segments {
                write_segment(s, &mut out);
            }
        }
        out
    }

    /// The document with its legacy forms rewritten in the current form
    /// (`@You: text` as `@You:` and `text` on the next line, ```` ```flemma:tool
    /// status=… ```` placeholders with the status in the result's header),
    /// and how many were rewritten. Read the text again for its new line
    /// numbers.
    pub fn rewrite_legacy(&self) -> (String, usize) {
        let mut doc = self.clone();
        let mut count = 0;
        for m in &mut doc.messages {
            if m.inline {
                let ending = ending_of(m.segments.first().map_or("\n", seg_text));
                m.marker = format!("{}{ending}", role_line(&m.speaker)).into();
                m.inline = false;
                count += 1;
            }
            for s in &mut m.segments {
                if let Segment::ToolResult(r) = s
                    && r.legacy
                {
                    let status = r.status.unwrap_or(Status::Pending);
                    let header = result_header(&r.id, Some(status), &r.meta);
                    r.header = format!("{header}{}", ending_of(&r.header)).into();
                    if let Some(f) = &mut r.fence {
                        f.opener = format!("{}{}", "`".repeat(f.ticks), ending_of(&f.opener)).into();
                    }
                    count += 1;
                }
            }
        }
        (doc.write(), count)
    }

    /// The document with the status of `id`'s result (the last one, if
    /// there are several) set to `status`, its other suffix tokens and its
    /// content kept. `None` makes it a final result.
    pub fn with_status(&self, id: &str, status: Option<Status>) -> Result<String, ChatError> {
        let mut doc = self.clone();
        let r = doc.result_mut(id)?;
        let header = result_header(&r.id, status, &other_meta(&r.meta));
        r.header = format!("{header}{}", ending_of(&r.header)).into();
        Ok(doc.write())
    }

    /// The document with `id`'s result block (the last one, if there are
    /// several) replaced by a canonical one holding `content`.
    pub fn with_result(&self, id: &str, status: Option<Status>, content: &str) -> Result<String, ChatError> {
        let mut doc = self.clone();
        doc.result_mut(id)?.replace(status, content);
        Ok(doc.write())
    }

    /// The document with each outcome's result written: its status set,
    /// and its block replaced when it brings content.
    pub(crate) fn with_outcomes(&self, outcomes: &[&crate::cycle::Outcome]) -> Result<String, ChatError> {
        let mut doc = self.clone();
        for o in outcomes {
            let r = doc.result_mut(&o.id)?;
            match &o.content {
                Some(content) => r.replace(o.status, content),
                None => {
                    let header = result_header(&r.id, o.status, &other_meta(&r.meta));
                    r.header = format!("{header}{}", ending_of(&r.header)).into();
                }
            }
        }
        Ok(doc.write())
    }

    fn result_mut(&mut self, id: &str) -> Result<&mut ToolResult<'a>, ChatError> {
        self.messages
            .iter_mut()
            .rev()
            .flat_map(|m| m.segments.iter_mut().rev())
            .find_map(|s| match s {
                Segment::ToolResult(r) if r.id == id => Some(&mut **r),
                _ => None,
            })
            .ok_or_else(|| ChatError::NoResult { id: id.to_string() })
    }
}

impl ToolResult<'_> {
    /// Replaced by a canonical block with `status` holding `content`.
    fn replace(&mut self, status: Option<Status>, content: &str) {
        let end = self
            .fence
            .as_ref()
            .and_then(|f| f.closer.as_deref())
            .map_or("\n", ending_of);
        let block = tool_result_block(&self.id, status, "", content);
        self.header = format!("{}{end}", block.strip_suffix('\n').unwrap_or(&block)).into();
        self.gap = "".into();
        self.fence = None;
    }
}

fn seg_text<'s>(s: &'s Segment<'_>) -> &'s str {
    match s {
        Segment::Text(t) => &t.text,
        _ => "\n",
    }
}

fn write_segment(s: &Segment, out: &mut String) {
    match s {
        Segment::Text(t) => out.push_str(&t.text),
        Segment::ToolUse(u) => {
            out.push_str(&u.header);
            out.push_str(&u.gap);
            if let Some(f) = &u.fence {
                f.write_to(out);
            }
        }
        Segment::ToolResult(r) => {
            out.push_str(&r.header);
            out.push_str(&r.gap);
            if let Some(f) = &r.fence {
                f.write_to(out);
            }
        }
        Segment::Thinking(t) => {
            out.push_str(&t.opener);
            out.push_str(&t.content);
            if let Some(c) = &t.closer {
                out.push_str(c);
            }
        }
        Segment::Aborted(a) => out.push_str(&a.line_text),
    }
}

/// A header's extra tokens without any that reads as a status (a second
/// status word, `status=…`): a rewritten status is the only one.
fn other_meta(meta: &[String]) -> Vec<String> {
    meta.iter()
        .filter(|t| Status::parse(t).is_none() && !t.starts_with("status="))
        .cloned()
        .collect()
}

/// The line ending of `line` (of its first line): `\r\n` or `\n`.
fn ending_of(line: &str) -> &'static str {
    match line.find('\n') {
        Some(i) if i > 0 && line.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// A fence for `content`: one backtick more than its longest run of
/// backticks, and at least three.
pub fn fence_for(content: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for b in content.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The role line of `speaker`, without its line ending: `@You:`.
pub fn role_line(speaker: &Speaker) -> String {
    format!("@{}:", speaker.name())
}

/// A new `@You:` line and the empty line after it, as wield writes after a
/// reply.
pub fn new_prompt() -> &'static str {
    "@You:\n\n"
}

/// A tool use as wield writes it: the header, a blank line, and a ```json
/// fence holding `input_json` (written as given: keep the provider's text).
pub fn tool_use_block(name: &str, id: &str, input_json: &str) -> String {
    format!(
        "**Tool Use:** `{name}` (`{id}`)\n\n{}",
        Fence::around("json", input_json)
    )
}

/// A tool result's header line, without its line ending.
pub fn result_header(id: &str, status: Option<Status>, meta: &[String]) -> String {
    let mut tokens: Vec<&str> = status.map(Status::as_str).into_iter().collect();
    tokens.extend(meta.iter().map(String::as_str));
    if tokens.is_empty() {
        format!("**Tool Result:** `{id}`")
    } else {
        format!("**Tool Result:** `{id}` ({})", tokens.join(" "))
    }
}

/// A tool result as wield writes it: the header with `status`, a blank
/// line, and a fence (tagged `language`, or bare) holding `content`.
pub fn tool_result_block(id: &str, status: Option<Status>, language: &str, content: &str) -> String {
    format!(
        "{}\n\n{}",
        result_header(id, status, &[]),
        Fence::around(language, content)
    )
}

/// An empty placeholder with `status`, as the first phase of the cycle
/// writes it.
pub fn placeholder(id: &str, status: Status) -> String {
    tool_result_block(id, Some(status), "", "")
}

/// The abort marker ending a reply that was cut off. `message` is kept on
/// one line, and cannot end the comment early.
pub fn abort_marker(message: &str) -> String {
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("<!-- wield:aborted: {} -->\n", one_line.replace("-->", "-- >"))
}

/// A thinking block as wield writes it after a reply, read back by
/// [`Document::conversation`] as the same [`wield_llm::Thinking`]: signed
/// with the `.chat` tag of the provider that made it (`anthropic`,
/// `openai`, `vertex`), redacted data as `<thinking redacted>`, a Responses
/// reasoning item as an `openai` signature (its JSON, base64), unsigned
/// reasoning as `<thinking>`. Returns `None` for an empty block.
pub fn thinking_block(thinking: &wield_llm::Thinking) -> Option<String> {
    use base64::Engine as _;
    let kind = thinking.origin.as_ref().map_or("", |o| o.provider.as_str());
    let tag = provider_tag(kind);
    let body = |text: &str| {
        if text.is_empty() {
            String::new()
        } else {
            format!("{}\n", text.trim_end_matches('\n'))
        }
    };
    let signed = |signature: &str| {
        if thinking.text.is_empty() {
            format!("<thinking {tag}:signature=\"{signature}\" />\n")
        } else {
            format!(
                "<thinking {tag}:signature=\"{signature}\">\n{}</thinking>\n",
                body(&thinking.text)
            )
        }
    };
    // What goes between quotes or on lines of its own must be what
    // providers send there (base64): anything else could end the tag.
    let opaque = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-' | b'.'))
    };
    let signature = thinking.signature.as_deref().filter(|s| opaque(s));
    let redacted = thinking.redacted_data.as_deref().filter(|s| opaque(s));
    match (signature, redacted) {
        (Some(signature), _) if !tag.is_empty() => Some(signed(signature)),
        // Wrapped in base64 here, whatever it holds.
        (None, _) if kind == "openai-responses" && thinking.redacted_data.is_some() => {
            let data = thinking.redacted_data.as_deref().unwrap_or_default();
            let item = serde_json::json!({
                "type": "reasoning",
                "id": thinking.item_id,
                "encrypted_content": data,
                "summary": [],
            });
            Some(signed(
                &base64::engine::general_purpose::STANDARD.encode(item.to_string()),
            ))
        }
        (None, Some(data)) => Some(format!("<thinking redacted>\n{}</thinking>\n", body(data))),
        _ if thinking.text.is_empty() => None,
        _ => Some(format!("<thinking>\n{}</thinking>\n", body(&thinking.text))),
    }
}

/// The `.chat` tag of a provider kind: the inverse of
/// [`crate::provider_kind`].
fn provider_tag(kind: &str) -> String {
    match kind {
        "openai-responses" => "openai".to_string(),
        "gemini" => "vertex".to_string(),
        other => other.chars().filter(char::is_ascii_alphanumeric).collect(),
    }
}

impl Fence<'_> {
    /// A canonical fence around `content` (tagged `language`).
    pub fn around(language: &str, content: &str) -> String {
        let fence = fence_for(content);
        let body = if content.is_empty() || content.ends_with('\n') {
            content.to_string()
        } else {
            format!("{content}\n")
        };
        format!("{fence}{language}\n{body}{fence}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_longer_than_any_backtick_run() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a ``` b"), "````");
        assert_eq!(fence_for("`````"), "``````");
    }

    #[test]
    fn canonical_blocks() {
        assert_eq!(
            tool_use_block("calc", "t1", r#"{"x":1}"#),
            "**Tool Use:** `calc` (`t1`)\n\n```json\n{\"x\":1}\n```\n"
        );
        assert_eq!(
            placeholder("t1", Status::Pending),
            "**Tool Result:** `t1` (pending)\n\n```\n```\n"
        );
        assert_eq!(
            tool_result_block("t1", Some(Status::Error), "", "boom"),
            "**Tool Result:** `t1` (error)\n\n```\nboom\n```\n"
        );
        assert_eq!(abort_marker("cut\noff -->"), "<!-- wield:aborted: cut off -- > -->\n");
        assert_eq!(
            result_header("t", Some(Status::Approved), &["sandbox=false".into()]),
            "**Tool Result:** `t` (approved sandbox=false)"
        );
    }
}
