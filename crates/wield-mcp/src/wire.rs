//! JSON-RPC 2.0 on the wire, shared by the server and the client, over
//! stdio and HTTP: the bound on a line's length, passing over
//! a byte order mark, reading a string cut inside a surrogate pair, telling
//! the id a reply goes to, and writing an error reply.
//!
//! Every place that reads or answers raw JSON-RPC goes through here, so a
//! line, a POST body and an event's data are taken alike, and an error is
//! written the same way whichever transport carries it.

use rmcp::ErrorData;
use rmcp::model::{NumberOrString, RequestId};

/// The longest line accepted (the SDK's own default): a longer one is
/// dropped, without being buffered, and the connection stays open.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The id an error reply goes to, as the client wrote it: a request id the
/// SDK can hold, or a number it cannot (an integer past `i64`, a fraction),
/// which is refused but still answered to its own id.
pub type ReplyId = serde_json::Value;

/// `id` as an error reply's id.
pub fn reply_id(id: RequestId) -> ReplyId {
    match id {
        RequestId::Number(n) => n.into(),
        RequestId::String(s) => s.as_ref().into(),
    }
}

/// `bytes` without a leading UTF-8 byte order mark, which some writers put
/// before a message (the SDK's own reader passes over it too).
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

/// An error reply to `id` as JSON text. JSON-RPC wants `"id": null` when
/// the id cannot be read, which the SDK's message type cannot say (it
/// leaves the member out), so the reply is written here.
pub fn error_body(id: Option<&ReplyId>, error: &ErrorData) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// [`error_body`] as one line, ending in a newline, for a stream of lines.
pub fn error_line(id: Option<&ReplyId>, error: &ErrorData) -> Vec<u8> {
    let mut line = error_body(id, error).into_bytes();
    line.push(b'\n');
    line
}

/// `line` with every `\uD800`–`\uDFFF` escape that is not half of a pair
/// written `\uFFFD`; `None` when there is none.
pub fn repair_lone_surrogates(line: &[u8]) -> Option<Vec<u8>> {
    fn escape_at(line: &[u8], at: usize) -> Option<u16> {
        let hex = line.get(at..at + 6)?.strip_prefix(b"\\u")?;
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let high = |u: u16| (0xD800..0xDC00).contains(&u);
    let low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < line.len() {
        let step = if line[i] != b'\\' {
            1
        } else {
            match escape_at(line, i) {
                Some(u) if high(u) && escape_at(line, i + 6).is_some_and(low) => 12,
                Some(u) if high(u) || low(u) => {
                    let out = out.get_or_insert_with(|| line[..i].to_vec());
                    out.extend_from_slice(b"\\uFFFD");
                    i += 6;
                    continue;
                }
                Some(_) => 6,
                // `\\`, `\"`, …: two bytes, so an escaped backslash
                // before a `u` is not taken for an escape.
                None => 2,
            }
        };
        let end = (i + step).min(line.len());
        if let Some(out) = out.as_mut() {
            out.extend_from_slice(&line[i..end]);
        }
        i = end;
    }
    out
}

/// The request id of the message in `line`, read without parsing it (it
/// may not parse): its top-level `"id"` member, a number or a string
/// without escapes.
pub fn request_id_in(line: &[u8]) -> Option<RequestId> {
    match id_token(line)? {
        (text, true) => Some(NumberOrString::String(text.into())),
        (text, false) => text.parse().ok().map(NumberOrString::Number),
    }
}

/// The text of the top-level `"id"` member's value in `head`, and whether
/// it is a string.
pub fn id_token(head: &[u8]) -> Option<(String, bool)> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i + 1;
                let mut end = start;
                while end < head.len() && head[end] != b'"' {
                    end += if head[end] == b'\\' { 2 } else { 1 };
                }
                if end >= head.len() {
                    return None;
                }
                i = end;
                if depth == 1
                    && &head[start..end] == b"id"
                    && let Some(value) = head[end + 1..].trim_ascii_start().strip_prefix(b":")
                {
                    return scalar(value.trim_ascii_start());
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A JSON number or a string without escapes at the start of `text`, as
/// its text, and whether it is a string; `None` when it is cut off or is
/// something else.
fn scalar(text: &[u8]) -> Option<(String, bool)> {
    let quoted = text.strip_prefix(b"\"");
    let value = if let Some(quoted) = quoted {
        let end = memchr::memchr2(b'"', b'\\', quoted)?;
        (quoted[end] == b'"').then_some(&quoted[..end])?
    } else {
        let end = text.iter().position(|b| !(b.is_ascii_digit() || *b == b'-'))?;
        (end > 0).then_some(&text[..end])?
    };
    Some((String::from_utf8(value.to_vec()).ok()?, quoted.is_some()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_byte_order_mark_is_passed_over_once() {
        assert_eq!(strip_bom(b"\xEF\xBB\xBF{}"), b"{}");
        assert_eq!(strip_bom(b"\xEF\xBB\xBF\xEF\xBB\xBF{}"), b"\xEF\xBB\xBF{}");
        assert_eq!(strip_bom(b"{}"), b"{}");
    }

    #[test]
    fn an_error_reply_names_its_id_or_null() {
        let error = ErrorData::invalid_request("Invalid request", None);
        assert_eq!(
            error_body(None, &error),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}"#
        );
        let line = error_line(Some(&reply_id(RequestId::String("a".into()))), &error);
        assert_eq!(
            line,
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32600,\"message\":\"Invalid request\"}}\n"
        );
    }
}
