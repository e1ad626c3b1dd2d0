//! The XML tool protocol, for models without native tool calling.
//!
//! The tools are described in the system prompt ([`describe_tools`]), with
//! one example call per tool and one of several calls. The model answers in
//! text, and its calls are read from it ([`parse_calls`]):
//!
//! ```xml
//! <tool_call name="read" id="1">
//!   <path>src/main.rs</path>
//!   <limit>20</limit>
//! </tool_call>
//! ```
//!
//! CodeCompanion's older shape is read too: `<tools><tool name="read">
//! <action><path>…</path></action></tool></tools>`. Calls may sit inside a
//! ```` ```xml ```` fence or not; values may use CDATA and entities; a
//! parameter of type object holds one element per property, an array repeats
//! its element; values are typed by the schema (`"2"` → 2, `"true"` →
//! true). Malformed XML becomes a [`BadCall`] that says what is wrong and
//! shows the expected shape — never a crash. Results go back as
//! `<tool_result>` blocks ([`results_text`]).

use std::fmt::Write as _;

use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::{Map, Value, json};

use crate::conversation::{BadCall, Block, Response, Stop};
use crate::request::ToolDef;

/// The system prompt section that tells the model its tools and how to
/// call them.
pub fn describe_tools(tools: &[ToolDef]) -> String {
    let mut out = String::from(
        "# Tools\n\nYou can call the tools below. To call one, write a tool_call element with the tool's name, a \
         unique id, and one child element per parameter, as in the examples; then stop and wait: the results come \
         back in the next message as tool_result elements with the same ids. Use CDATA for values holding <, > or \
         &. An array parameter repeats its element once per item; an object parameter holds one element per \
         property.\n",
    );
    for tool in tools {
        let _ = write!(
            out,
            "\n## {}\n\n{}\n\nParameters:\n",
            tool.name,
            tool.description.trim()
        );
        let props = tool.input_schema.get("properties").and_then(Value::as_object);
        let required: Vec<&str> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match props {
            Some(props) if !props.is_empty() => {
                for (name, schema) in props {
                    let kind = schema.get("type").and_then(Value::as_str).unwrap_or("string");
                    let need = if required.contains(&name.as_str()) {
                        "required"
                    } else {
                        "optional"
                    };
                    let about = schema.get("description").and_then(Value::as_str).unwrap_or("");
                    let _ = writeln!(
                        out,
                        "- {name} ({kind}, {need}){}{about}",
                        if about.is_empty() { "" } else { ": " }
                    );
                }
            }
            _ => out.push_str("(none)\n"),
        }
        let _ = write!(out, "\nExample:\n```xml\n{}```\n", example_call(tool, "1"));
    }
    if let [first, second, ..] = tools {
        let _ = write!(
            out,
            "\n## Several calls at once\n\n```xml\n{}{}```\n",
            example_call(first, "1"),
            example_call(second, "2")
        );
    }
    out
}

/// One example call of `tool`, with a placeholder for each parameter.
fn example_call(tool: &ToolDef, id: &str) -> String {
    let mut out = format!("<tool_call name=\"{}\" id=\"{id}\">\n", escape(&tool.name));
    if let Some(props) = tool.input_schema.get("properties").and_then(Value::as_object) {
        for (name, schema) in props {
            let value = match schema.get("type").and_then(Value::as_str) {
                Some("integer") => "1".to_owned(),
                Some("number") => "1.5".to_owned(),
                Some("boolean") => "true".to_owned(),
                Some("array") => "<item>...</item><item>...</item>".to_owned(),
                Some("object") => "<key>...</key>".to_owned(),
                _ => "...".to_owned(),
            };
            let _ = writeln!(out, "  <{name}>{value}</{name}>");
        }
    }
    out.push_str("</tool_call>\n");
    out
}

/// A call read from a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct XmlCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What a reply's text holds: the text around the calls, the calls, and
/// what could not be read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub text: String,
    pub calls: Vec<XmlCall>,
    pub bad: Vec<BadCall>,
}

/// Reads the calls in a reply's `text`, typing each parameter by the
/// schema of the tool it names (a tool not in `tools` keeps its values as
/// strings; the executor will say it does not exist). Calls without an id
/// get one starting with `id_prefix`.
pub fn parse_calls(text: &str, tools: &[ToolDef], id_prefix: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut rest = text;
    let mut n = 0;
    while let Some((start, tag)) = next_open(rest) {
        parsed.text.push_str(&rest[..start]);
        let region = &rest[start..];
        let close = format!("</{tag}>");
        let Some(end) = region.find(&close).map(|e| e + close.len()) else {
            let id = format!("{id_prefix}{n}");
            parsed.bad.push(bad(
                &id,
                "",
                region,
                &format!("a <{tag}> element is opened and never closed with {close}"),
            ));
            rest = "";
            break;
        };
        match element(&region[..end]) {
            Ok(root) => read_root(&root, tools, id_prefix, &mut n, &mut parsed, &region[..end]),
            Err(why) => {
                let id = format!("{id_prefix}{n}");
                n += 1;
                parsed.bad.push(bad(&id, "", &region[..end], &why));
            }
        }
        rest = &region[end..];
    }
    parsed.text.push_str(rest);
    parsed.text = strip_empty_fences(&parsed.text);
    parsed
}

/// A reply given in text, with its calls read: the text, then the calls as
/// tool-use blocks, and a `tool_use` stop when there are any. Unreadable
/// calls stay as calls (with `{}`) listed in `bad_calls`, so that each gets
/// its error result.
pub fn read_reply(mut response: Response, tools: &[ToolDef], id_prefix: &str) -> Response {
    let text = response.text();
    let parsed = parse_calls(&text, tools, id_prefix);
    if parsed.calls.is_empty() && parsed.bad.is_empty() {
        return response;
    }
    response.content.retain(|b| !matches!(b, Block::Text { .. }));
    if !parsed.text.trim().is_empty() {
        response.content.push(Block::Text {
            text: parsed.text.trim().to_owned(),
        });
    }
    for call in parsed.calls {
        response.content.push(Block::ToolUse {
            id: call.id,
            name: call.name,
            input: call.input,
        });
    }
    for b in &parsed.bad {
        response.content.push(Block::ToolUse {
            id: b.id.clone(),
            name: b.name.clone(),
            input: Value::Object(Map::new()),
        });
    }
    response.bad_calls.extend(parsed.bad);
    response.stop = Stop::ToolUse;
    response
}

/// Results as the user message text the XML protocol uses: one
/// `<tool_result id name status>` block per result, the output in CDATA.
pub fn results_text<'a>(results: impl IntoIterator<Item = (&'a str, &'a str, bool, &'a str)>) -> String {
    let mut out = String::new();
    for (id, name, ok, output) in results {
        let status = if ok { "ok" } else { "error" };
        let _ = writeln!(
            out,
            "<tool_result id=\"{}\" name=\"{}\" status=\"{status}\"><![CDATA[{}]]></tool_result>",
            escape(id),
            escape(name),
            output.replace("]]>", "]]]]><![CDATA[>")
        );
    }
    out
}

/// The next `<tool_call` or `<tools` opening in `text`: its offset and tag.
fn next_open(text: &str) -> Option<(usize, &'static str)> {
    let find = |tag: &str| {
        let mut from = 0;
        while let Some(at) = text[from..].find(&format!("<{tag}")) {
            let at = from + at;
            let after = text[at + 1 + tag.len()..].chars().next();
            if matches!(after, Some(c) if c == '>' || c == '/' || c.is_whitespace()) {
                return Some(at);
            }
            from = at + 1;
        }
        None
    };
    match (find("tool_call"), find("tools")) {
        (Some(a), Some(b)) if b < a => Some((b, "tools")),
        (Some(a), _) => Some((a, "tool_call")),
        (None, Some(b)) => Some((b, "tools")),
        (None, None) => None,
    }
}

/// Reads a `<tool_call>` (one call) or a `<tools>` block (CodeCompanion's:
/// each `<tool name>` holding `<action>` elements, each a call).
fn read_root(root: &Element, tools: &[ToolDef], id_prefix: &str, n: &mut usize, parsed: &mut Parsed, raw: &str) {
    let mut next_id = |given: Option<&str>| {
        let id = given.map_or_else(|| format!("{id_prefix}{n}"), str::to_owned);
        *n += 1;
        id
    };
    if root.name == "tool_call" {
        let id = next_id(root.attr("id").filter(|s| !s.trim().is_empty()));
        let Some(name) = root.attr("name").filter(|s| !s.trim().is_empty()) else {
            parsed
                .bad
                .push(bad(&id, "", raw, "the <tool_call> element has no name attribute"));
            return;
        };
        parsed.calls.push(call(id, name, &root.children, tools));
        return;
    }
    for tool in root.elements().filter(|e| e.name == "tool") {
        let Some(name) = tool.attr("name").filter(|s| !s.trim().is_empty()) else {
            let id = next_id(None);
            parsed
                .bad
                .push(bad(&id, "", raw, "a <tool> element has no name attribute"));
            continue;
        };
        let actions: Vec<&Element> = tool.elements().filter(|e| e.name == "action").collect();
        if actions.is_empty() {
            let id = next_id(tool.attr("id"));
            parsed.calls.push(call(id, name, &tool.children, tools));
        }
        for action in actions {
            let id = next_id(action.attr("id").or(tool.attr("id")));
            let mut c = call(id, name, &action.children, tools);
            // The action's attributes (`type="create"`) are parameters too.
            if let Value::Object(map) = &mut c.input {
                for (k, v) in &action.attrs {
                    if k != "id" {
                        map.entry(k.clone())
                            .or_insert_with(|| typed(v, prop_schema(tools, name, k)));
                    }
                }
            }
            parsed.calls.push(c);
        }
    }
}

fn call(id: String, name: &str, children: &[Node], tools: &[ToolDef]) -> XmlCall {
    let schema = tools
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.input_schema.clone())
        .unwrap_or_else(|| json!({ "type": "object" }));
    XmlCall {
        id,
        name: name.to_owned(),
        input: object(children, &schema),
    }
}

fn prop_schema<'a>(tools: &'a [ToolDef], tool: &str, prop: &str) -> Option<&'a Value> {
    tools
        .iter()
        .find(|t| t.name == tool)
        .and_then(|t| t.input_schema.get("properties"))
        .and_then(|p| p.get(prop))
}

/// Child elements as an object's properties, typed by `schema`.
fn object(children: &[Node], schema: &Value) -> Value {
    let props = schema.get("properties");
    let mut map = Map::new();
    for child in children.iter().filter_map(Node::element) {
        let prop = props.and_then(|p| p.get(&child.name));
        let is_array = prop.and_then(|p| p.get("type")).and_then(Value::as_str) == Some("array");
        let value = if is_array {
            let items = prop.and_then(|p| p.get("items"));
            // Either repeated <name> elements, or <name> holding <item>s.
            let inner: Vec<&Element> = child.elements().collect();
            if !inner.is_empty() && inner.iter().all(|e| e.name == inner[0].name) && child.text().trim().is_empty() {
                Value::Array(inner.iter().map(|e| value_of(e, items)).collect())
            } else {
                Value::Array(vec![value_of(child, items)])
            }
        } else {
            value_of(child, prop)
        };
        match (map.get_mut(&child.name), value) {
            // A repeated element: one more item.
            (Some(Value::Array(items)), Value::Array(more)) if is_array => items.extend(more),
            (Some(existing), value) if !is_array => {
                let first = existing.take();
                *existing = Value::Array(vec![first, value]);
            }
            (_, value) => {
                map.insert(child.name.clone(), value);
            }
        }
    }
    Value::Object(map)
}

fn value_of(e: &Element, schema: Option<&Value>) -> Value {
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("object") => object(&e.children, schema.unwrap_or(&Value::Null)),
        _ if e.elements().next().is_some() && schema.is_none() => object(&e.children, &Value::Null),
        _ => typed(&e.text(), schema),
    }
}

/// A text value typed by its schema: numbers, booleans, null, JSON for
/// arrays and objects written as JSON; otherwise the text (without the
/// line breaks that only lay out the XML).
fn typed(text: &str, schema: Option<&Value>) -> Value {
    let trimmed = text.trim();
    match schema.and_then(|s| s.get("type")).and_then(Value::as_str) {
        Some("integer") => trimmed
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| json!(trimmed)),
        Some("number") => trimmed
            .parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            .unwrap_or_else(|| json!(trimmed)),
        Some("boolean") => match trimmed.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => json!(true),
            "false" | "no" | "0" => json!(false),
            _ => json!(trimmed),
        },
        Some("null") => Value::Null,
        Some("array" | "object") => serde_json::from_str(trimmed).unwrap_or_else(|_| json!(trimmed)),
        _ => json!(text.trim_matches(['\n', '\r'])),
    }
}

fn bad(id: &str, name: &str, raw: &str, why: &str) -> BadCall {
    BadCall {
        id: id.to_owned(),
        name: name.to_owned(),
        raw: raw.chars().take(500).collect(),
        error: format!(
            "{why}. Write each call as <tool_call name=\"TOOL\" id=\"1\"><param>value</param></tool_call>, with \
             CDATA for values holding <, > or &"
        ),
    }
}

/// Fences left empty once their calls are taken out.
fn strip_empty_fences(text: &str) -> String {
    let mut out = text.to_owned();
    for fence in ["```xml", "```"] {
        while let Some(at) = out.find(fence) {
            let after = &out[at + fence.len()..];
            let Some(close) = after.find("```") else { break };
            if after[..close].trim().is_empty() {
                out.replace_range(at..at + fence.len() + close + 3, "");
            } else {
                break;
            }
        }
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A parsed element.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Node>,
}

#[derive(Debug)]
enum Node {
    Text(String),
    Element(Element),
}

impl Node {
    fn element(&self) -> Option<&Element> {
        match self {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        }
    }
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(Node::element)
    }

    /// The text directly inside, CDATA and entities resolved.
    fn text(&self) -> String {
        self.children
            .iter()
            .filter_map(|n| match n {
                Node::Text(t) => Some(t.as_str()),
                Node::Element(_) => None,
            })
            .collect()
    }
}

/// Parses one element (and everything in it) from `xml`.
fn element(xml: &str) -> Result<Element, String> {
    let mut reader = Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let err = |reader: &Reader<&[u8]>, e: &dyn std::fmt::Display| {
        format!("the XML is malformed at byte {}: {e}", reader.buffer_position())
    };
    loop {
        let event = reader.read_event().map_err(|e| err(&reader, &e))?;
        match event {
            Event::Start(start) => stack.push(open(&start).map_err(|e| err(&reader, &e))?),
            Event::Empty(start) => {
                let e = open(&start).map_err(|e| err(&reader, &e))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(e)),
                    None => return Ok(e),
                }
            }
            Event::End(_) => {
                let Some(done) = stack.pop() else {
                    return Err("a closing tag has no opening tag".into());
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(Node::Element(done)),
                    None => return Ok(done),
                }
            }
            Event::Text(t) => {
                let text = t.decode().map_err(|e| err(&reader, &e))?.into_owned();
                push_text(&mut stack, &text);
            }
            Event::CData(c) => {
                let text = c.decode().map_err(|e| err(&reader, &e))?.into_owned();
                push_text(&mut stack, &text);
            }
            Event::GeneralRef(r) => {
                let name = r.decode().map_err(|e| err(&reader, &e))?.into_owned();
                let resolved = match name.as_str() {
                    "lt" => "<".to_owned(),
                    "gt" => ">".to_owned(),
                    "amp" => "&".to_owned(),
                    "quot" => "\"".to_owned(),
                    "apos" => "'".to_owned(),
                    _ => match r.resolve_char_ref() {
                        Ok(Some(c)) => c.to_string(),
                        // Unknown entities stay as written.
                        _ => format!("&{name};"),
                    },
                };
                push_text(&mut stack, &resolved);
            }
            Event::Eof => return Err("the element ends before its closing tag".into()),
            _ => {}
        }
    }
}

fn open(start: &quick_xml::events::BytesStart<'_>) -> Result<Element, String> {
    let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for attr in start.attributes() {
        let attr = attr.map_err(|e| e.to_string())?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).into_owned();
        let value = attr.unescape_value().map_err(|e| e.to_string())?.into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
    })
}

fn push_text(stack: &mut [Element], text: &str) {
    if let Some(top) = stack.last_mut() {
        match top.children.last_mut() {
            Some(Node::Text(t)) => t.push_str(text),
            _ => top.children.push(Node::Text(text.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests;
