//! `${field}` templates: the arguments of a command tool's commands and its
//! preview, filled from the call's validated input.
//!
//! Substitution never goes through a shell: an argument stays one argument
//! whatever the value holds (`; rm -rf ~`, `$(…)`, newlines, a value that
//! looks like `${other}` — values are not templates). The rules:
//!
//! - an argument that is exactly one placeholder (`"${package}"`): a string
//!   is the argument as it is; a number or boolean its JSON text (`3`,
//!   `true`); an array one argument per item (items that are `null` are
//!   left out, nested arrays and objects become their JSON text); an object
//!   its compact JSON text; `null` or an absent (optional) field drops the
//!   argument;
//! - a placeholder inside a longer argument (`"--pkg=${package}"`) is
//!   replaced by the value's text (strings as they are, anything else its
//!   compact JSON); `null` or an absent field is an error result naming the
//!   field, since the argument would make no sense without it;
//! - `$${` is a literal `${`; any other `$` is itself.

use std::fmt;

use serde_json::Value;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Field(String),
}

/// A parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// A template that does not parse: an unterminated or empty placeholder.
#[derive(Debug, PartialEq, Eq)]
pub struct TemplateError(String);

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Template {
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            literal.push_str(&rest[..at]);
            let after = &rest[at..];
            if let Some(tail) = after.strip_prefix("$${") {
                literal.push_str("${");
                rest = tail;
            } else if let Some(tail) = after.strip_prefix("${") {
                let Some(end) = tail.find('}') else {
                    return Err(TemplateError(format!(
                        "`{text}` has a `${{` without its closing `}}` (write `$${{` for a literal `${{`)"
                    )));
                };
                let name = tail[..end].trim();
                if name.is_empty() {
                    return Err(TemplateError(format!(
                        "`{text}` has an empty placeholder `${{}}`; name an input field, as in `${{path}}`"
                    )));
                }
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Field(name.to_owned()));
                rest = &tail[end + 1..];
            } else {
                literal.push('$');
                rest = &after[1..];
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() || pieces.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Self { pieces })
    }

    /// The fields the template names, in order.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Field(f) => Some(f.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// The arguments this template makes from `input` (none, one, or one
    /// per item of an array), or the field a longer argument needs and the
    /// call did not give.
    pub fn arguments(&self, input: &Value) -> Result<Vec<String>, MissingField> {
        if let [Piece::Field(name)] = self.pieces.as_slice() {
            return Ok(match input.get(name) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items.iter().filter(|i| !i.is_null()).map(text_of).collect(),
                Some(v) => vec![text_of(v)],
            });
        }
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Field(name) => match input.get(name) {
                    None | Some(Value::Null) => return Err(MissingField(name.clone())),
                    Some(v) => out.push_str(&text_of(v)),
                },
            }
        }
        Ok(vec![out])
    }

    /// The template as one line of text for a person (a preview): absent
    /// fields are empty, other values their text.
    pub fn render_text(&self, input: &Value) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Field(name) => match input.get(name) {
                    None | Some(Value::Null) => {}
                    Some(v) => out.push_str(&text_of(v)),
                },
            }
        }
        out
    }
}

/// A field a command needs that the call left out.
#[derive(Debug, PartialEq, Eq)]
pub struct MissingField(pub String);

/// A value as argument text: strings as they are, the rest compact JSON.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(t: &str, input: &Value) -> Result<Vec<String>, MissingField> {
        Template::parse(t).unwrap().arguments(input)
    }

    #[test]
    fn a_whole_placeholder_is_one_argument_whatever_it_holds() {
        let input = json!({ "p": "; rm -rf ~ $(touch x) `id`\n--all ${q}", "n": 3, "b": true, "o": {"k": 1} });
        assert_eq!(
            args("${p}", &input).unwrap(),
            ["; rm -rf ~ $(touch x) `id`\n--all ${q}"]
        );
        assert_eq!(args("${n}", &input).unwrap(), ["3"]);
        assert_eq!(args("${b}", &input).unwrap(), ["true"]);
        assert_eq!(args("${o}", &input).unwrap(), [r#"{"k":1}"#]);
    }

    #[test]
    fn arrays_spread_and_absent_fields_drop_a_whole_argument() {
        let input = json!({ "xs": ["a b", null, 2, ["c"]], "nil": null });
        assert_eq!(args("${xs}", &input).unwrap(), ["a b", "2", r#"["c"]"#]);
        assert!(args("${missing}", &input).unwrap().is_empty());
        assert!(args("${nil}", &input).unwrap().is_empty());
    }

    #[test]
    fn a_placeholder_inside_an_argument_needs_its_field() {
        let input = json!({ "p": "x y", "xs": [1, 2] });
        assert_eq!(args("--pkg=${p}!", &input).unwrap(), ["--pkg=x y!"]);
        assert_eq!(args("-${xs}", &input).unwrap(), ["-[1,2]"]);
        assert_eq!(args("--pkg=${q}", &input), Err(MissingField("q".into())));
    }

    #[test]
    fn dollars_and_escapes() {
        let input = json!({ "p": "v" });
        assert_eq!(args("$${p} $HOME $ ${p}$", &input).unwrap(), ["${p} $HOME $ v$"]);
        assert_eq!(args("", &input).unwrap(), [""]);
        let t = Template::parse("a${ x }b${y}").unwrap();
        assert_eq!(t.fields().collect::<Vec<_>>(), ["x", "y"]);
        assert!(Template::parse("${open").unwrap_err().to_string().contains("closing"));
        assert!(Template::parse("${}").unwrap_err().to_string().contains("empty"));
    }

    #[test]
    fn previews_show_values_as_text() {
        let t = Template::parse("cargo test -p ${p} ${absent}").unwrap();
        assert_eq!(t.render_text(&json!({ "p": "core" })), "cargo test -p core ");
    }
}
