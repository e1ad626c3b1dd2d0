use serde_json::json;

use super::*;

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "read".into(),
            description: "Read a file".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "limit": { "type": "integer" },
                    "raw": { "type": "boolean" },
                    "globs": { "type": "array", "items": { "type": "string" } },
                    "range": { "type": "object", "properties": { "from": { "type": "integer" }, "to": { "type": "integer" } } }
                },
                "required": ["path"]
            }),
            strict: false,
        },
        ToolDef {
            name: "files".into(),
            description: "Edit files".into(),
            input_schema: json!({ "type": "object", "properties": { "type": { "type": "string" }, "path": { "type": "string" } } }),
            strict: false,
        },
    ]
}

#[test]
fn a_call_with_typed_nested_and_repeated_values() {
    let text = "I will read it.\n\n```xml\n<tool_call name=\"read\" id=\"7\">\n  <path>src/a &amp; b.rs</path>\n  <limit>20</limit>\n  <raw>true</raw>\n  <globs>*.rs</globs>\n  <globs>*.toml</globs>\n  <range><from>1</from><to>9</to></range>\n</tool_call>\n```\nDone.";
    let p = parse_calls(text, &tools(), "x_");
    assert_eq!(
        p.calls,
        [XmlCall {
            id: "7".into(),
            name: "read".into(),
            input: json!({
                "path": "src/a & b.rs",
                "limit": 20,
                "raw": true,
                "globs": ["*.rs", "*.toml"],
                "range": { "from": 1, "to": 9 }
            })
        }]
    );
    assert!(p.bad.is_empty());
    assert_eq!(p.text.trim(), "I will read it.\n\n\nDone.".trim());
}

#[test]
fn cdata_item_lists_and_several_calls_without_ids() {
    let text = "<tool_call name=\"read\"><path><![CDATA[a<b>&c.txt]]></path><globs><item>x</item><item>y</item></globs></tool_call>\n<tool_call name=\"read\"><path>second</path></tool_call>";
    let p = parse_calls(text, &tools(), "gen_");
    assert_eq!(p.calls.len(), 2);
    assert_eq!(p.calls[0].id, "gen_0");
    assert_eq!(p.calls[0].input, json!({ "path": "a<b>&c.txt", "globs": ["x", "y"] }));
    assert_eq!(p.calls[1].id, "gen_1");
}

#[test]
fn codecompanion_s_tools_shape() {
    let text = "<tools>\n  <tool name=\"files\">\n    <action type=\"create\"><path>a.txt</path></action>\n    <action type=\"delete\"><path>b.txt</path></action>\n  </tool>\n</tools>";
    let p = parse_calls(text, &tools(), "g");
    let inputs: Vec<Value> = p.calls.iter().map(|c| c.input.clone()).collect();
    assert_eq!(
        inputs,
        [
            json!({ "path": "a.txt", "type": "create" }),
            json!({ "path": "b.txt", "type": "delete" })
        ]
    );
    assert!(p.calls.iter().all(|c| c.name == "files"));
}

#[test]
fn malformed_xml_is_a_bad_call_that_shows_the_expected_shape() {
    for (text, why) in [
        ("<tool_call name=\"read\"><path>a</tool_call>", "malformed"),
        ("<tool_call name=\"read\"><path>a</path>", "never closed"),
        ("<tool_call id=\"3\"><path>a</path></tool_call>", "no name"),
    ] {
        let p = parse_calls(text, &tools(), "g");
        assert!(p.calls.is_empty(), "{text}");
        let [bad] = p.bad.as_slice() else {
            panic!("{text}: {:?}", p.bad)
        };
        assert!(bad.error.contains(why), "{text}: {}", bad.error);
        assert!(bad.error.contains("<tool_call name=\"TOOL\""), "{}", bad.error);
    }
}

#[test]
fn text_without_calls_is_left_alone() {
    let p = parse_calls("Use <b>bold</b> and a <tool_caller> tag.", &tools(), "g");
    assert!(p.calls.is_empty() && p.bad.is_empty());
    assert_eq!(p.text, "Use <b>bold</b> and a <tool_caller> tag.");
}

#[test]
fn the_prompt_shows_each_tool_and_an_example_of_several_calls() {
    let prompt = describe_tools(&tools());
    assert!(
        prompt.contains("## read") && prompt.contains("- path (string, required)"),
        "{prompt}"
    );
    assert!(prompt.contains("<tool_call name=\"read\" id=\"1\">"), "{prompt}");
    assert!(prompt.contains("## Several calls at once"), "{prompt}");
    // The examples parse back.
    let p = parse_calls(&prompt, &tools(), "g");
    assert!(p.bad.is_empty(), "{:?}", p.bad);
    assert!(p.calls.len() >= 4);
}

#[test]
fn results_are_tool_result_blocks_with_cdata() {
    let text = results_text([("1", "read", true, "a]]>b"), ("2", "read", false, "no such file")]);
    assert!(
        text.contains("<tool_result id=\"1\" name=\"read\" status=\"ok\"><![CDATA[a]]]]><![CDATA[>b]]></tool_result>"),
        "{text}"
    );
    assert!(text.contains("status=\"error\""), "{text}");
}

#[test]
fn a_reply_in_text_becomes_a_tool_turn() {
    let response = Response {
        content: vec![Block::Text {
            text: "Let me look.\n<tool_call name=\"read\" id=\"a\"><path>x</path></tool_call>\n<tool_call name=\"read\"><path>".into(),
        }],
        usage: Default::default(),
        stop: Stop::EndTurn,
        bad_calls: Vec::new(),
    };
    let r = read_reply(response, &tools(), "g");
    assert_eq!(r.stop, Stop::ToolUse);
    assert_eq!(r.text(), "Let me look.");
    let calls: Vec<&str> = r.tool_calls().map(|(id, _, _)| id).collect();
    assert_eq!(calls, ["a", "g1"]);
    assert_eq!(r.bad_calls.len(), 1);
}
