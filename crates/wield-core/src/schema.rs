//! Input schemas: compiled validators, error messages a model can act on,
//! the OpenAI strict-mode check, and provider payload exports.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::tool::ToolSpec;

/// The most memory one compiled `pattern` may take (and its matching
/// cache): a schema comes from a tool, possibly a bridged server's, and a
/// short pattern such as `(?:\w{100}){50}` compiles to megabytes. A pattern
/// past it makes the schema invalid.
const MAX_PATTERN_SIZE: usize = 256 << 10;

/// A compiled validator for one tool's input schema.
pub struct InputValidator {
    validator: jsonschema::Validator,
}

impl InputValidator {
    pub fn new(schema: &Value) -> Result<Self, String> {
        jsonschema::options()
            .with_pattern_options(
                jsonschema::PatternOptions::fancy_regex()
                    .size_limit(MAX_PATTERN_SIZE)
                    .dfa_size_limit(MAX_PATTERN_SIZE),
            )
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|e| format!("invalid input schema: {e}"))
    }

    /// `Ok` or one line per failure naming the JSON path and the expectation.
    pub fn validate(&self, input: &Value) -> Result<(), Vec<String>> {
        if self.validator.is_valid(input) {
            return Ok(());
        }
        let errors: Vec<String> = self
            .validator
            .iter_errors(input)
            .map(|e| {
                let path = e.instance_path().to_string();
                let at = if path.is_empty() { "(root)".to_owned() } else { path };
                format!("at {at}: {e}")
            })
            .collect();
        Err(errors)
    }
}

/// The error text for a call whose input failed validation.
pub fn validation_message(tool: &str, errors: &[String], schema: &Value) -> String {
    let mut msg = format!("Invalid arguments for tool `{tool}`:\n");
    for e in errors {
        msg.push_str("- ");
        msg.push_str(e);
        msg.push('\n');
    }
    if let Some(req) = optional_nulls_relaxed(schema).get("required").and_then(Value::as_array) {
        let names: Vec<&str> = req.iter().filter_map(Value::as_str).collect();
        if !names.is_empty() {
            msg.push_str(&format!("Required: {}. ", names.join(", ")));
        }
    }
    msg.push_str("Fix the arguments to match the tool's input schema and call it again.");
    msg
}

/// Check a schema against OpenAI strict-mode rules; `Err` says what to fix.
pub fn check_strict(schema: &Value) -> Result<(), String> {
    check_strict_at(schema, "#")
}

fn check_strict_at(schema: &Value, at: &str) -> Result<(), String> {
    let Some(obj) = schema.as_object() else {
        return Ok(());
    };
    let is_object = match obj.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => obj.contains_key("properties"),
    };
    if is_object {
        if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
            return Err(format!(
                "{at}: strict mode requires \"additionalProperties\": false on every object"
            ));
        }
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                if !required.contains(&name.as_str()) {
                    return Err(format!(
                        "{at}: strict mode requires every property in \"required\"; `{name}` is missing (make an optional field nullable, e.g. \"type\": [\"integer\", \"null\"], and list it)"
                    ));
                }
                check_strict_at(sub, &format!("{at}/properties/{name}"))?;
            }
        }
    }
    if let Some(items) = obj.get("items") {
        check_strict_at(items, &format!("{at}/items"))?;
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(subs)) = obj.get(key) {
            for (i, s) in subs.iter().enumerate() {
                check_strict_at(s, &format!("{at}/{key}/{i}"))?;
            }
        }
    }
    Ok(())
}

/// Whether a property schema accepts `null`.
fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|subs| subs.iter().any(accepts_null)),
    }
}

/// For strict tools, a caller may leave out nullable (optional) fields:
/// fill them with `null` so validation and the tool see the strict shape.
pub fn fill_nullable(schema: &Value, input: &mut Value) {
    let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        input.as_object_mut(),
    ) else {
        return;
    };
    for (name, sub) in props {
        if !obj.contains_key(name) && accepts_null(sub) {
            obj.insert(name.clone(), Value::Null);
        }
    }
}

/// A strict schema as callers that are not strict see it: properties that
/// accept `null` are optional (left out, they are filled with `null`), so
/// they leave the top-level `required` list. Other schemas are unchanged.
pub fn optional_nulls_relaxed(schema: &Value) -> Value {
    let mut out = schema.clone();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|name| {
            name.as_str()
                .and_then(|n| props.get(n))
                .is_none_or(|sub| !accepts_null(sub))
        });
    }
    out
}

/// Provider payload formats for exporting the visible tool set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    Anthropic,
    Openai,
    Responses,
    Gemini,
    Mcp,
}

impl std::str::FromStr for ExportFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::Openai),
            "responses" => Ok(Self::Responses),
            "gemini" => Ok(Self::Gemini),
            "mcp" => Ok(Self::Mcp),
            other => Err(format!(
                "unknown format `{other}`: use anthropic, openai, responses, gemini or mcp"
            )),
        }
    }
}

/// A schema with `type: object` guaranteed at the top (MCP requires it).
pub fn object_schema(schema: &Value) -> Value {
    let mut s = match schema {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    s.insert("type".into(), Value::String("object".into()));
    if !s.contains_key("properties") {
        s.insert("properties".into(), json!({}));
    }
    Value::Object(s)
}

/// Gemini accepts an OpenAPI subset: drop keywords it rejects.
fn gemini_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                if matches!(k.as_str(), "additionalProperties" | "$schema" | "strict") {
                    continue;
                }
                if k == "type"
                    && let Value::Array(ts) = v
                {
                    // ["string","null"] becomes type string + nullable.
                    let non_null: Vec<&Value> = ts.iter().filter(|t| *t != "null").collect();
                    if let Some(first) = non_null.first() {
                        out.insert("type".into(), (*first).clone());
                    }
                    if non_null.len() < ts.len() {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                    continue;
                }
                out.insert(k.clone(), gemini_schema(v));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(gemini_schema).collect()),
        other => other.clone(),
    }
}

/// Whether `schema` uses a JSON Schema keyword Gemini's OpenAPI subset
/// (`parameters`) lacks.
fn beyond_openapi(schema: &Value) -> bool {
    const KEYWORDS: [&str; 12] = [
        "$ref",
        "$defs",
        "definitions",
        "$dynamicRef",
        "allOf",
        "oneOf",
        "not",
        "if",
        "patternProperties",
        "prefixItems",
        "dependentSchemas",
        "const",
    ];
    match schema {
        Value::Object(m) => m.iter().any(|(k, v)| {
            // A property may be named like a keyword.
            if k == "properties"
                && let Value::Object(props) = v
            {
                return props.values().any(beyond_openapi);
            }
            KEYWORDS.contains(&k.as_str()) || beyond_openapi(v)
        }),
        Value::Array(a) => a.iter().any(beyond_openapi),
        _ => false,
    }
}

/// One tool in a provider's format. `api_name` is the provider-safe name.
pub fn export_tool(spec: &ToolSpec, api_name: &str, format: ExportFormat) -> Value {
    let schema = object_schema(&spec.input_schema);
    match format {
        ExportFormat::Anthropic => json!({
            "name": api_name,
            "description": spec.description,
            "input_schema": schema,
        }),
        ExportFormat::Openai => json!({
            "type": "function",
            "function": {
                "name": api_name,
                "description": spec.description,
                "parameters": schema,
                "strict": spec.strict,
            }
        }),
        ExportFormat::Responses => json!({
            "type": "function",
            "name": api_name,
            "description": spec.description,
            "parameters": schema,
            "strict": spec.strict,
        }),
        // A schema beyond Gemini's OpenAPI subset (references, `oneOf`,
        // `allOf`, ...), which an MCP server's tool often has, goes whole as
        // `parametersJsonSchema` instead.
        ExportFormat::Gemini if beyond_openapi(&schema) => json!({
            "name": api_name,
            "description": spec.description,
            "parametersJsonSchema": schema,
        }),
        ExportFormat::Gemini => json!({
            "name": api_name,
            "description": spec.description,
            "parameters": gemini_schema(&schema),
        }),
        ExportFormat::Mcp => {
            let schema = if spec.strict {
                optional_nulls_relaxed(&schema)
            } else {
                schema
            };
            let mut v = json!({
                "name": spec.name,
                "description": spec.description,
                "inputSchema": schema,
            });
            if let (Some(t), Some(o)) = (&spec.title, v.as_object_mut()) {
                o.insert("title".into(), Value::String(t.clone()));
            }
            v
        }
    }
}

/// The whole set; Gemini wraps declarations in one tool object.
pub fn export_tools<'a>(tools: impl IntoIterator<Item = (&'a ToolSpec, &'a str)>, format: ExportFormat) -> Value {
    let items: Vec<Value> = tools.into_iter().map(|(s, n)| export_tool(s, n, format)).collect();
    match format {
        ExportFormat::Gemini => json!([{ "functionDeclarations": items }]),
        _ => Value::Array(items),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_strict_schemas_require_only_non_nullable_fields() {
        let strict = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": ["integer", "null"]},
                "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["path", "offset", "mode"],
            "additionalProperties": false
        });
        let relaxed = optional_nulls_relaxed(&strict);
        assert_eq!(relaxed["required"], json!(["path"]));
        assert_eq!(relaxed["properties"], strict["properties"]);
        let msg = validation_message("read", &["x".into()], &strict);
        assert!(msg.contains("Required: path. "), "{msg}");
    }

    /// Regression: a short pattern that compiles to megabytes was taken, so
    /// a bridged server listing a thousand of them made wield take 1.5 GB
    /// and 14 s; it makes the schema invalid now, and everyday patterns
    /// still compile.
    #[test]
    fn a_pattern_too_large_to_compile_is_refused() {
        let schema =
            |pattern: &str| json!({"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}});
        let started = std::time::Instant::now();
        let e = InputValidator::new(&schema(r"(?:\w{100}){50}x")).err().unwrap();
        assert!(e.contains("invalid input schema"), "{e}");
        assert!(
            started.elapsed() < std::time::Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        for fine in [
            r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$",
            r"^v?\d+\.\d+\.\d+(-[\w.]+)?$",
            r"\w{1,64}",
        ] {
            InputValidator::new(&schema(fine)).unwrap_or_else(|e| panic!("{fine}: {e}"));
        }
        let date = InputValidator::new(&schema(r"^\d{4}-\d{2}-\d{2}$")).unwrap();
        assert!(date.validate(&json!({"s": "2026-11-25"})).is_ok());
        assert!(date.validate(&json!({"s": "25.11.2026"})).is_err());
    }

    #[test]
    fn validation_names_paths() {
        let v = InputValidator::new(&json!({
            "type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false
        }))
        .unwrap();
        let errs = v.validate(&json!({"n":"x"})).unwrap_err();
        assert!(errs[0].starts_with("at /n:"), "{errs:?}");
        let errs = v.validate(&json!({})).unwrap_err();
        assert!(errs[0].contains("(root)") && errs[0].contains("\"n\""), "{errs:?}");
    }

    #[test]
    fn strict_rules() {
        let ok = json!({"type":"object","properties":{"a":{"type":["string","null"]}},"required":["a"],"additionalProperties":false});
        assert!(check_strict(&ok).is_ok());
        let missing =
            json!({"type":"object","properties":{"a":{"type":"string"}},"required":[],"additionalProperties":false});
        assert!(check_strict(&missing).unwrap_err().contains("`a`"));
        let open = json!({"type":"object","properties":{}});
        assert!(check_strict(&open).unwrap_err().contains("additionalProperties"));
        let nested = json!({"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}}}},"required":["o"],"additionalProperties":false});
        assert!(check_strict(&nested).unwrap_err().contains("/properties/o"));
    }

    #[test]
    fn fills_nullable_fields() {
        let schema = json!({"properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}}});
        let mut input = json!({"a":"x"});
        fill_nullable(&schema, &mut input);
        assert_eq!(input, json!({"a":"x","b":null}));
    }

    #[test]
    fn exports() {
        let spec = ToolSpec::new(
            "file.read",
            "Reads",
            json!({"properties":{"p":{"type":["string","null"]}}}),
        );
        let a = export_tool(&spec, "file_read", ExportFormat::Anthropic);
        assert_eq!(a["input_schema"]["type"], "object");
        let o = export_tool(&spec, "file_read", ExportFormat::Openai);
        assert_eq!(o["function"]["name"], "file_read");
        let g = export_tool(&spec, "file_read", ExportFormat::Gemini);
        assert_eq!(g["parameters"]["properties"]["p"]["nullable"], true);
        assert!(g.get("parametersJsonSchema").is_none(), "{g}");
        // References (an MCP server's pydantic model): the whole schema as
        // `parametersJsonSchema`; a property named like a keyword is not one.
        let nested = json!({
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
            "properties": {"at": {"$ref": "#/$defs/Point"}},
        });
        let g = export_tool(
            &ToolSpec::new("area", "Area", nested.clone()),
            "area",
            ExportFormat::Gemini,
        );
        assert!(g.get("parameters").is_none(), "{g}");
        assert_eq!(g["parametersJsonSchema"]["properties"]["at"]["$ref"], "#/$defs/Point");
        let named = json!({"properties": {"not": {"type": "string"}, "if": {"type": "integer"}}});
        let g = export_tool(&ToolSpec::new("t", "T", named), "t", ExportFormat::Gemini);
        assert_eq!(g["parameters"]["properties"]["not"]["type"], "string", "{g}");
        let m = export_tool(&spec, "file_read", ExportFormat::Mcp);
        assert_eq!(m["inputSchema"]["type"], "object");
        assert_eq!(m["name"], "file.read");
    }
}
