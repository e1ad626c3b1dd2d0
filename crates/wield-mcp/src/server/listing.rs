//! wield's tools as MCP `Tool` entries: names MCP accepts, input schemas that
//! are always objects, titles, and annotations derived from the traits.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use wield_core::{Registered, ToolTraits};

/// The name a client sees and calls: the tool's own name when MCP accepts it
/// (`A-Z a-z 0-9 _ - .`, 1 to 128 characters), else its provider-safe API
/// name. The executor resolves either.
pub fn mcp_name(entry: &Registered) -> String {
    let name = &entry.tool.spec().name;
    if is_mcp_name(name) {
        name.clone()
    } else {
        entry.api_name.clone()
    }
}

fn is_mcp_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// One registered tool as an MCP tool.
pub fn to_mcp_tool(entry: &Registered) -> Tool {
    let spec = entry.tool.spec();
    let traits = entry.tool.traits();
    let title = spec.title.clone().unwrap_or_else(|| title_from_name(&spec.name));
    // A strict tool's optional fields are listed as optional: an MCP client
    // (and the form it may build) leaves them out, the executor fills them.
    let schema = if spec.strict {
        wield_core::schema::optional_nulls_relaxed(&spec.input_schema)
    } else {
        spec.input_schema.clone()
    };
    let mut tool = Tool::new(
        mcp_name(entry),
        spec.description.clone(),
        Arc::new(object_schema(&schema)),
    )
    .with_title(title.clone())
    .with_annotations(annotations(traits, title));
    if let Some(Value::Object(schema)) = &spec.output_schema {
        tool.output_schema = Some(Arc::new(schema.clone()));
    }
    tool
}

/// MCP requires `inputSchema` to be a JSON object schema (`type: object`).
/// wield's tools take objects already (the executor refuses anything else);
/// a schema that does not say so is completed, one of another type replaced.
pub fn object_schema(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => {
            let mut map = map.clone();
            match map.get("type") {
                Some(Value::String(t)) if t == "object" => {}
                None => {
                    map.insert("type".into(), Value::String("object".into()));
                }
                Some(_) => {
                    // Not an object schema: advertise an open object rather
                    // than a schema clients would reject.
                    let mut open = JsonObject::new();
                    open.insert("type".into(), Value::String("object".into()));
                    return open;
                }
            }
            map
        }
        _ => {
            let mut open = JsonObject::new();
            open.insert("type".into(), Value::String("object".into()));
            open
        }
    }
}

/// The hints MCP clients use to decide how careful to be:
/// read-only tools are neither destructive nor world-changing and are
/// idempotent; every other tool may be destructive (the MCP default) unless
/// it only adds ([`wield_core::ADDITIVE`], like `mkdir`), and is idempotent
/// when it says so ([`wield_core::IDEMPOTENT`]); `openWorldHint` is the
/// tool's `open_world` trait (network access).
pub fn annotations(traits: &ToolTraits, title: String) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(traits.read_only)
        .destructive(!traits.read_only && !traits.has_capability(wield_core::ADDITIVE))
        .idempotent(traits.read_only || traits.has_capability(wield_core::IDEMPOTENT))
        .open_world(traits.open_world)
}

/// `read` → `Read`, `load_tools` → `Load tools`, `mcp__srv__get_sum` →
/// `srv: get sum`.
pub fn title_from_name(name: &str) -> String {
    let (prefix, rest) = match name.strip_prefix("mcp__").and_then(|r| r.split_once("__")) {
        Some((server, tool)) => (Some(server), tool),
        None => (None, name),
    };
    let words = rest.replace(['_', '.', '-'], " ");
    let words = words.trim();
    let mut chars = words.chars();
    let cap = match chars.next() {
        Some(c) if prefix.is_none() => c.to_uppercase().chain(chars).collect(),
        _ => words.to_owned(),
    };
    match prefix {
        Some(server) => format!("{server}: {cap}"),
        None => cap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_are_always_objects() {
        assert_eq!(object_schema(&json!({}))["type"], "object");
        assert_eq!(object_schema(&json!(true))["type"], "object");
        let s = object_schema(&json!({"type": "string"}));
        assert_eq!(Value::Object(s), json!({"type": "object"}));
        let s = object_schema(&json!({"type": "object", "properties": {"a": {"type": "string"}}}));
        assert_eq!(s["properties"]["a"]["type"], "string");
    }

    #[test]
    fn titles_and_names() {
        assert_eq!(title_from_name("read"), "Read");
        assert_eq!(title_from_name("load_tools"), "Load tools");
        assert_eq!(title_from_name("mcp__srv__get_sum"), "srv: get sum");
        assert!(is_mcp_name("file.read"));
        assert!(!is_mcp_name("srv:tool"));
        assert!(!is_mcp_name(""));
    }

    #[test]
    fn annotations_follow_traits() {
        let ro = ToolTraits {
            read_only: true,
            ..ToolTraits::default()
        };
        let a = annotations(&ro, "Read".into());
        assert_eq!(a.read_only_hint, Some(true));
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(a.open_world_hint, Some(false));
        let web = ToolTraits {
            open_world: true,
            ..ToolTraits::default()
        };
        let a = annotations(&web, "Fetch".into());
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.destructive_hint, Some(true));
        assert_eq!(a.open_world_hint, Some(true));
        let mkdir = ToolTraits {
            capabilities: vec![wield_core::ADDITIVE.into(), wield_core::IDEMPOTENT.into()],
            ..ToolTraits::default()
        };
        let a = annotations(&mkdir, "Make directory".into());
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(a.destructive_hint, Some(false));
        assert_eq!(a.idempotent_hint, Some(true));
    }
}
