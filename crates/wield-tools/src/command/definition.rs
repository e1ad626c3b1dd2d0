//! A command tool's definition, read from one TOML table and checked:
//! known fields only, a valid name, commands that are non-empty lists of
//! strings, placeholders that name fields of the input schema.

use std::time::Duration;

use serde_json::Value;

use super::template::Template;
use crate::SetupError;

/// The fields a definition may have.
const FIELDS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "cmds",
    "requires_approval",
    "timeout",
    "preview",
    "parallel",
];

/// A command tool as configured.
#[derive(Clone, Debug)]
pub struct CommandDef {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// Each command's argv, as templates.
    pub cmds: Vec<Vec<Template>>,
    /// The commands as written, for previews and results.
    pub cmds_text: Vec<Vec<String>>,
    pub requires_approval: bool,
    pub timeout: Option<Duration>,
    pub preview: Option<Template>,
    pub parallel: bool,
    /// Where it was defined: a config file or a tool file.
    pub origin: String,
}

impl CommandDef {
    /// Read a definition from `table`, found in `origin` (named in errors).
    pub fn from_table(table: &toml::Table, origin: &str) -> Result<Self, SetupError> {
        let name = match table.get("name") {
            Some(toml::Value::String(n)) => n.clone(),
            _ => {
                return Err(SetupError::Invalid(format!(
                    "a command tool in {origin} has no `name`: give it one (letters, digits, `_` and `-`)"
                )));
            }
        };
        let err = |message: String| SetupError::Invalid(format!("command tool `{name}` in {origin}: {message}"));
        wield_core::names::check_tool_name(&name).map_err(err)?;
        for key in table.keys() {
            if !FIELDS.contains(&key.as_str()) {
                let hint = wield_core::names::closest(key, FIELDS.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(err(format!(
                    "unknown field `{key}`{hint} (known: {})",
                    FIELDS.join(", ")
                )));
            }
        }
        let description = match table.get("description") {
            Some(toml::Value::String(d)) if !d.trim().is_empty() => d.clone(),
            _ => {
                return Err(err(
                    "`description` must be a non-empty string: the model reads it".into()
                ));
            }
        };
        let input_schema = match table.get("input_schema") {
            None => serde_json::json!({ "type": "object", "properties": {} }),
            Some(v) => {
                let schema = serde_json::to_value(v).map_err(|e| err(format!("`input_schema`: {e}")))?;
                if schema.get("type").and_then(Value::as_str) != Some("object") {
                    return Err(err(
                        "`input_schema` must be a JSON schema with `type = \"object\"`".into()
                    ));
                }
                schema
            }
        };
        let properties: Vec<String> = input_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let check = |template: &Template, place: &str| -> Result<(), SetupError> {
            for field in template.fields() {
                if !properties.iter().any(|p| p == field) {
                    let hint = wield_core::names::closest(field, properties.iter().map(String::as_str))
                        .map(|s| format!("; did you mean `${{{s}}}`?"))
                        .unwrap_or_default();
                    return Err(err(format!(
                        "{place} uses the placeholder `${{{field}}}`, which names no property of `input_schema`{hint}"
                    )));
                }
            }
            Ok(())
        };
        let (cmds, cmds_text) = commands(table.get("cmds")).map_err(err)?;
        for (i, argv) in cmds.iter().enumerate() {
            for t in argv {
                check(t, &format!("command {}", i + 1))?;
            }
        }
        let flag = |key: &str| -> Result<bool, SetupError> {
            match table.get(key) {
                None => Ok(false),
                Some(toml::Value::Boolean(b)) => Ok(*b),
                Some(other) => Err(err(format!("`{key}` must be true or false, found {other}"))),
            }
        };
        let timeout = match table.get("timeout") {
            None => None,
            Some(v) => Some(duration(v).ok_or_else(|| {
                err(format!(
                    "`timeout` must be a positive duration such as 120, \"120s\" or \"2m\", found {v}"
                ))
            })?),
        };
        let preview = match table.get("preview") {
            None => None,
            Some(toml::Value::String(p)) => {
                let t = Template::parse(p).map_err(|e| err(format!("`preview`: {e}")))?;
                check(&t, "`preview`")?;
                Some(t)
            }
            Some(other) => return Err(err(format!("`preview` must be a string, found {other}"))),
        };
        Ok(Self {
            requires_approval: flag("requires_approval")?,
            parallel: flag("parallel")?,
            name,
            description,
            input_schema,
            cmds,
            cmds_text,
            timeout,
            preview,
            origin: origin.to_owned(),
        })
    }
}

/// `cmds`: a non-empty list of non-empty argvs of strings.
type Commands = (Vec<Vec<Template>>, Vec<Vec<String>>);

fn commands(v: Option<&toml::Value>) -> Result<Commands, String> {
    const SHAPE: &str = "`cmds` must be a non-empty list of commands, each a non-empty list of strings (its argv), \
                         as in cmds = [[\"cargo\", \"test\", \"-p\", \"${package}\"]]";
    let Some(toml::Value::Array(list)) = v else {
        return Err(SHAPE.into());
    };
    if list.is_empty() {
        return Err(SHAPE.into());
    }
    let mut cmds = Vec::new();
    let mut texts = Vec::new();
    for (i, cmd) in list.iter().enumerate() {
        let Some(argv) = cmd.as_array().filter(|a| !a.is_empty()) else {
            return Err(format!("{SHAPE}; command {} is {cmd}", i + 1));
        };
        let mut templates = Vec::new();
        let mut text = Vec::new();
        for arg in argv {
            let Some(s) = arg.as_str() else {
                return Err(format!("{SHAPE}; command {} has {arg}", i + 1));
            };
            templates.push(Template::parse(s).map_err(|e| format!("command {}: {e}", i + 1))?);
            text.push(s.to_owned());
        }
        if templates[0].fields().next().is_none() && text[0].trim().is_empty() {
            return Err(format!("command {} has an empty program name", i + 1));
        }
        cmds.push(templates);
        texts.push(text);
    }
    Ok((cmds, texts))
}

fn duration(v: &toml::Value) -> Option<Duration> {
    let d = match v {
        toml::Value::Integer(n) => u64::try_from(*n).ok().map(Duration::from_secs),
        toml::Value::Float(f) => wield_core::config::seconds(*f),
        toml::Value::String(s) => wield_core::config::parse_duration(s),
        _ => None,
    }?;
    (!d.is_zero()).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(text: &str) -> Result<CommandDef, String> {
        let table: toml::Table = toml::from_str(text).unwrap();
        CommandDef::from_table(&table, "x.toml").map_err(|e| e.to_string())
    }

    const OK: &str = r#"
        name = "run_tests"
        description = "Run tests"
        input_schema = { type = "object", properties = { package = { type = "string" } }, required = ["package"] }
        cmds = [["cargo", "test", "-p", "${package}"], ["echo", "done"]]
        requires_approval = true
        timeout = "2m"
        preview = "cargo test -p ${package}"
    "#;

    #[test]
    fn a_full_definition_reads() {
        let d = def(OK).unwrap();
        assert_eq!(d.name, "run_tests");
        assert_eq!(d.cmds.len(), 2);
        assert_eq!(d.cmds_text[0], ["cargo", "test", "-p", "${package}"]);
        assert!(d.requires_approval && !d.parallel);
        assert_eq!(d.timeout, Some(Duration::from_secs(120)));
        assert_eq!(d.origin, "x.toml");
    }

    #[test]
    fn a_placeholder_naming_no_property_is_refused_with_the_tool_and_the_placeholder() {
        let e = def(&OK.replace("\"-p\", \"${package}\"", "\"-p\", \"${pakage}\"")).unwrap_err();
        assert!(e.contains("`run_tests`") && e.contains("`${pakage}`"), "{e}");
        assert!(e.contains("did you mean `${package}`"), "{e}");
        let e = def(&OK.replace("-p ${package}\"", "-p ${other}\"")).unwrap_err();
        assert!(e.contains("`preview`") && e.contains("`${other}`"), "{e}");
    }

    #[test]
    fn mistakes_are_named() {
        for (text, part) in [
            (
                OK.replace("requires_approval", "require_approval"),
                "did you mean `requires_approval`",
            ),
            (OK.replace("\"run_tests\"", "\"run tests\""), "run tests"),
            (OK.replace("\"run_tests\"", "\"mcp__x__y\""), "mcp__"),
            (OK.replace("timeout = \"2m\"", "timeout = \"soon\""), "`timeout`"),
            (OK.replace("[\"echo\", \"done\"]", "[]"), "command 2"),
            (
                OK.replace("type = \"object\", properties", "type = \"array\", properties"),
                "input_schema",
            ),
            (OK.replace("description = \"Run tests\"", ""), "description"),
            (
                OK.replace("requires_approval = true", "requires_approval = 1"),
                "true or false",
            ),
        ] {
            let e = def(&text).unwrap_err();
            assert!(e.contains(part), "{part}: {e}");
        }
        assert!(
            def("description = \"d\"\ncmds = [[\"x\"]]")
                .unwrap_err()
                .contains("no `name`")
        );
    }
}
