//! Any text as a model's reply under the XML tool protocol: never a panic;
//! every call has an id and an object input; every unreadable call says
//! what is wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use wield_llm::ToolDef;
use wield_llm::xml::parse_calls;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let tools = [ToolDef {
        name: "read".into(),
        description: "Read".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": { "type": "string" },
                "n": { "type": "integer" },
                "list": { "type": "array", "items": { "type": "object", "properties": { "a": { "type": "boolean" } } } }
            }
        }),
        strict: false,
    }];
    let parsed = parse_calls(&text, &tools, "f");
    for call in &parsed.calls {
        assert!(!call.id.is_empty());
        assert!(call.input.is_object());
    }
    for bad in &parsed.bad {
        assert!(!bad.error.is_empty());
    }
});
