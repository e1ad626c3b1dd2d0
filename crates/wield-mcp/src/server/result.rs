//! A wield [`ToolResult`] as an MCP `CallToolResult`.
//!
//! Failures of every kind (denied, needs approval, invalid arguments, the
//! tool failed, timed out, cancelled) are results with `isError: true` and a
//! message the model can act on, never JSON-RPC errors: MCP clients show
//! protocol errors to nobody, while a result reaches the model.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject, ResourceContents};
use serde_json::{Map, Value};
use wield_core::ToolResult;

/// The `_meta` key under which the result's metadata (exit code, truncation,
/// the path of a saved full output, …) travels.
pub const META_KEY: &str = "dev.wield/metadata";

pub fn to_call_tool_result(result: ToolResult) -> CallToolResult {
    let ToolResult {
        success,
        output,
        error,
        mut metadata,
    } = result;
    let attachments = metadata.remove("attachments");
    // A bridged tool's structured content goes back out as such.
    let structured = metadata.remove("structured_content");
    let text = match (success, error) {
        (true, _) | (false, None) => output,
        (false, Some(e)) if output.is_empty() => e,
        // The output already ends with what went wrong (`timed out after
        // 30s` after a command's output): once is enough.
        (false, Some(e)) if output.trim_end().ends_with(e.trim()) => output,
        (false, Some(e)) => format!("{output}\n\n{e}"),
    };
    let mut content = vec![ContentBlock::text(text)];
    if let Some(Value::Array(items)) = attachments {
        content.extend(items.iter().enumerate().filter_map(|(i, a)| attachment(i, a)));
    }
    let mut out = if success {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    out.structured_content = structured;
    if !metadata.is_empty() {
        let mut meta = Map::new();
        meta.insert(META_KEY.into(), Value::Object(metadata));
        out.meta = Some(MetaObject(meta));
    }
    out
}

/// `{"mime": "image/png", "data": BASE64}` as image or audio content, any
/// other type as an embedded blob resource.
fn attachment(index: usize, a: &Value) -> Option<ContentBlock> {
    let mime = a
        .get("mime")
        .or_else(|| a.get("mime_type"))
        .or_else(|| a.get("mimeType"))
        .and_then(Value::as_str)?;
    let data = a.get("data").and_then(Value::as_str)?;
    Some(if mime.starts_with("image/") {
        ContentBlock::image(data, mime)
    } else if mime.starts_with("audio/") {
        ContentBlock::audio(data, mime)
    } else {
        let uri = a
            .get("uri")
            .and_then(Value::as_str)
            .map_or_else(|| format!("attachment:{index}"), str::to_owned);
        ContentBlock::resource(ResourceContents::BlobResourceContents {
            uri,
            mime_type: Some(mime.to_owned()),
            blob: data.to_owned(),
            meta: None,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failures_are_error_results_with_the_message() {
        let r = to_call_tool_result(ToolResult::error("denied by policy: no"));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["isError"], true);
        assert_eq!(v["content"][0]["text"], "denied by policy: no");

        let r = to_call_tool_result(ToolResult::failed_with_output("partial", "exit 2").with_meta("exit_code", 2));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["content"][0]["text"], "partial\n\nexit 2");
        assert_eq!(v["_meta"][META_KEY]["exit_code"], 2);

        // Output that already ends with the failure says it once.
        let r = to_call_tool_result(ToolResult::failed_with_output(
            "line\ntimed out after 1s\n",
            "timed out after 1s",
        ));
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["content"][0]["text"], "line\ntimed out after 1s\n");
    }

    #[test]
    fn attachments_become_content() {
        let r = ToolResult::ok("see image").with_meta(
            "attachments",
            json!([{"mime": "image/png", "data": "aGk="}, {"mime": "application/pdf", "data": "aGk="}]),
        );
        let v = serde_json::to_value(to_call_tool_result(r)).unwrap();
        assert_eq!(v["isError"], false);
        assert_eq!(v["content"][1]["type"], "image");
        assert_eq!(v["content"][1]["mimeType"], "image/png");
        assert_eq!(v["content"][2]["type"], "resource");
        assert!(v.get("_meta").is_none());
    }
}
