//! What an MCP tool result becomes in wield: text, attachments, and
//! structured content.

use rmcp::model::{CallToolResult, ContentBlock, Resource, ResourceContents};
use serde_json::{Value, json};
use wield_core::ToolResult;

/// An MCP result as a wield result: `isError` → `success: false`; text
/// joined with newlines; images and audio as attachments (with a line in
/// the text saying so); embedded text resources inline, binary ones as
/// attachments; resource links as lines; structured content as JSON text
/// after the text unless the text already holds it (the SDKs write the
/// same JSON as text for older clients), and always in the metadata.
pub fn map_result(result: CallToolResult) -> ToolResult {
    let mut text: Vec<String> = Vec::new();
    let mut attachments: Vec<Value> = Vec::new();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => text.push(t.text.clone()),
            ContentBlock::Image(i) => {
                text.push(format!("[image: {}, {} bytes base64]", i.mime_type, i.data.len()));
                attachments.push(json!({"mime": i.mime_type, "data": i.data}));
            }
            ContentBlock::Audio(a) => {
                text.push(format!("[audio: {}, {} bytes base64]", a.mime_type, a.data.len()));
                attachments.push(json!({"mime": a.mime_type, "data": a.data}));
            }
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text: t, .. } => {
                    text.push(format!("[resource {uri}]\n{t}"));
                }
                ResourceContents::BlobResourceContents {
                    uri, mime_type, blob, ..
                } => {
                    let mime = mime_type.clone().unwrap_or_else(|| "application/octet-stream".into());
                    text.push(format!("[resource {uri}: {mime}, {} bytes base64]", blob.len()));
                    attachments.push(json!({"mime": mime, "data": blob, "uri": uri}));
                }
                other => text.push(serde_json::to_string(other).unwrap_or_default()),
            },
            ContentBlock::ResourceLink(link) => text.push(link_line(link)),
            // A content kind newer than this build: keep it as JSON.
            #[allow(unreachable_patterns)]
            other => text.push(serde_json::to_string(other).unwrap_or_default()),
        }
    }
    let mut output = text.join("\n");
    let mut extra: Vec<(&str, Value)> = Vec::new();
    if let Some(structured) = result.structured_content {
        if !text_holds(&text, &output, &structured) {
            let json = serde_json::to_string_pretty(&structured).unwrap_or_default();
            if output.trim().is_empty() {
                output = json;
            } else {
                output.push('\n');
                output.push_str(&json);
            }
        }
        extra.push(("structured_content", structured));
    }
    let mut r = if result.is_error == Some(true) {
        // An error is printed as wield's own (`error: …`), so what the
        // server put in it is shown, never obeyed by a terminal.
        let message = if output.trim().is_empty() {
            "the MCP server reported an error without a message".to_owned()
        } else {
            wield_core::approval::printable(&output)
        };
        ToolResult::error(message)
    } else {
        ToolResult::ok(output)
    };
    if !attachments.is_empty() {
        r = r.with_meta("attachments", Value::Array(attachments));
    }
    for (k, v) in extra {
        r = r.with_meta(k, v);
    }
    r
}

/// Whether the text of a result already says what its structured content
/// says: a text block (or all of them) is that JSON, a list is sent as one
/// block per item, or the content is an object of one field whose value the
/// text says (the `{"result": …}` wrapper SDKs put around a plain return
/// value, the filesystem server's `{"content": …}`).
fn text_holds(blocks: &[String], joined: &str, structured: &Value) -> bool {
    let same = |text: &str, v: &Value| {
        v.as_str().is_some_and(|s| s == text) || serde_json::from_str::<Value>(text).is_ok_and(|t| &t == v)
    };
    let says = |v: &Value| {
        blocks.iter().any(|t| same(t, v))
            || same(joined, v)
            || v.as_array().is_some_and(|items| {
                !items.is_empty() && items.len() == blocks.len() && items.iter().zip(blocks).all(|(i, t)| same(t, i))
            })
    };
    if says(structured) {
        return true;
    }
    // `{"result": 42}`, `{"content": "the file's text"}`: one field that
    // the text already says.
    match structured.as_object() {
        Some(o) if o.len() == 1 => o.values().next().is_some_and(says),
        _ => false,
    }
}

/// A resource link as a line that says what a client would show of it: its
/// URI, its title or name, its type and size, its description.
fn link_line(link: &Resource) -> String {
    let mut line = format!("[resource link: {}", link.uri);
    let label = link.title.as_deref().filter(|t| !t.is_empty()).unwrap_or(&link.name);
    if !label.is_empty() {
        line.push_str(&format!(" \"{label}\""));
    }
    if let Some(mime) = link.mime_type.as_deref().filter(|m| !m.is_empty()) {
        line.push_str(&format!(", {mime}"));
    }
    if let Some(size) = link.size {
        line.push_str(&format!(", {size} bytes"));
    }
    if let Some(description) = link.description.as_deref().filter(|d| !d.is_empty()) {
        line.push_str(&format!(": {description}"));
    }
    line.push(']');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn results_map_to_wield_results() {
        let r = map_result(result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        ));
        assert!(r.success);
        assert_eq!(r.output, "a\nb");

        let r = map_result(result(
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
        ));
        assert!(!r.success);
        assert_eq!(r.error.as_deref(), Some("boom"));

        let r = map_result(result(
            json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}),
        ));
        assert_eq!(r.metadata["attachments"][0]["mime"], "image/png");
        assert!(r.output.contains("[image: image/png"));

        let r = map_result(result(json!({"content": [], "structuredContent": {"sum": 3}})));
        assert!(r.output.contains("\"sum\": 3"));
        assert_eq!(r.metadata["structured_content"], json!({"sum": 3}));
    }

    #[test]
    fn structured_content_is_text_unless_the_text_holds_it() {
        // A summary that leaves the data out: the data follows it.
        let r = map_result(result(json!({
            "content": [{"type": "text", "text": "Mild in Oslo."}],
            "structuredContent": {"temperature": 21}
        })));
        assert_eq!(r.output, "Mild in Oslo.\n{\n  \"temperature\": 21\n}");
        // The same JSON as text (what SDKs send older clients): once.
        let r = map_result(result(json!({
            "content": [{"type": "text", "text": "{\"temperature\":21}"}],
            "structuredContent": {"temperature": 21}
        })));
        assert_eq!(r.output, "{\"temperature\":21}");
        // A list sent one item per block, with and without the wrapper: once.
        for structured in [json!({"result": [2, "three", 5]}), json!([2, "three", 5])] {
            let r = map_result(result(json!({
                "content": [
                    {"type": "text", "text": "2"},
                    {"type": "text", "text": "three"},
                    {"type": "text", "text": "5"}
                ],
                "structuredContent": structured
            })));
            assert_eq!(r.output, "2\nthree\n5");
        }
        // Blocks that say something else: the data follows.
        let r = map_result(result(json!({
            "content": [{"type": "text", "text": "2"}, {"type": "text", "text": "3"}],
            "structuredContent": {"result": [2, 4]}
        })));
        assert!(r.output.starts_with("2\n3\n{"), "{}", r.output);
        // A plain return value and its `result` wrapper: once.
        for (text, value) in [("hello", json!("hello")), ("42", json!(42))] {
            let r = map_result(result(json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"result": value}
            })));
            assert_eq!(r.output, text);
            assert_eq!(r.metadata["structured_content"]["result"], value);
        }
        // Any one-field object whose value is the text (the filesystem
        // server's reads): once.
        let r = map_result(result(json!({
            "content": [{"type": "text", "text": "hello\n"}],
            "structuredContent": {"content": "hello\n"}
        })));
        assert_eq!(r.output, "hello\n");
    }

    /// Regression: a server's error text reached the terminal raw on
    /// `wield call`'s `error:` line, escape sequences and all.
    #[test]
    fn an_error_s_escape_sequences_are_shown_not_obeyed() {
        let r = map_result(result(json!({
            "content": [{"type": "text", "text": "\u{1b}]0;TITLE\u{7}\u{1b}[31mred\nnext"}],
            "isError": true
        })));
        let error = r.error.unwrap();
        assert!(!error.contains('\u{1b}') && !error.contains('\u{7}'), "{error:?}");
        assert!(
            error.contains("\\u{1b}]0;TITLE") && error.ends_with("red\nnext"),
            "{error:?}"
        );
    }

    #[test]
    fn resource_links_say_what_they_link_to() {
        let r = map_result(result(json!({"content": [
            {"type": "resource_link", "uri": "file:///x.md", "name": "x.md", "title": "Notes",
             "mimeType": "text/markdown", "size": 12, "description": "the meeting's notes"},
            {"type": "resource_link", "uri": "file:///y", "name": "y"}
        ]})));
        assert_eq!(
            r.output,
            "[resource link: file:///x.md \"Notes\", text/markdown, 12 bytes: the meeting's notes]\n\
             [resource link: file:///y \"y\"]"
        );
    }
}
