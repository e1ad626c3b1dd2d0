//! What a document's frontmatter sets for it: the provider and its
//! parameters, the tool list, the approval rules at the frontmatter's
//! priority, autopilot and the sandbox.
//!
//! wield's own form is TOML with the keys at the top. Flemma's JSON form
//! puts them under `"flemma"` (or `"wield"`), each a value or Flemma's
//! list operations (`{"$append": "grep"}`); its other keys are template
//! variables, which wield does not use. Flemma's Lua form runs in
//! wield's Lua sandbox with `wield.opt` (or `flemma.opt`) as the options
//! it writes to.

use std::sync::Arc;

use serde_json::Value;
use wield_core::approval::Resolver;
use wield_lua::frontmatter::Op;

use crate::syntax::Document;

/// The function form of `auto_approve` (Lua frontmatter): a resolver at
/// the frontmatter's priority.
#[derive(Clone)]
pub struct ApproveFn(pub Arc<dyn Resolver>);

impl std::fmt::Debug for ApproveFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ApproveFn").field(&self.0.name()).finish()
    }
}

/// The settings a frontmatter gives a document.
#[derive(Clone, Debug, Default)]
pub struct ChatOptions {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `minimal`…`max`, `false`, or a token budget, as written.
    pub thinking: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    /// Edits of the tool list: a plain name (or glob, `group:`) names the
    /// tools to offer (only those), `+name` adds one, `-name` removes one.
    pub tools: Vec<String>,
    /// Approved for this document (the resolver at priority 90); `-name`
    /// entries make a tool ask even when the configuration approves it.
    pub auto_approve: Vec<String>,
    /// Denied for this document, whatever else approves them.
    pub deny: Vec<String>,
    pub autopilot: Option<bool>,
    pub max_steps: Option<u32>,
    /// `sandbox = true` (or `{ enabled = true }`) turns the sandbox on.
    pub sandbox_on: bool,
    /// `sandbox.network = false`: commands reach no network.
    pub no_network: bool,
    /// Lua frontmatter's `auto_approve = function(tool, input, ctx) … end`:
    /// it answers instead of the `auto_approve` list.
    pub approve_fn: Option<ApproveFn>,
    /// What the Lua frontmatter's author should know (did-you-mean).
    pub warnings: Vec<String>,
}

/// Keys wield's TOML frontmatter knows.
const KEYS: &[&str] = &[
    "provider",
    "model",
    "thinking",
    "max_tokens",
    "temperature",
    "tools",
    "auto_approve",
    "deny",
    "autopilot",
    "max_steps",
    "sandbox",
];

impl ChatOptions {
    /// The options of `doc`'s frontmatter (none without one). A mistake is
    /// an error naming the key and what to write instead.
    pub fn of(doc: &Document<'_>) -> Result<Self, String> {
        let Some(front) = &doc.frontmatter else {
            return Ok(Self::default());
        };
        match front.language.as_ref() {
            "toml" => {
                let table: toml::Table = toml::from_str(front.code())
                    .map_err(|e| format!("the TOML frontmatter is not valid: {}", e.message()))?;
                let value = serde_json::to_value(table).map_err(|e| e.to_string())?;
                Self::from_object(&value, true)
            }
            "json" => {
                let value: Value = serde_json::from_str(front.code())
                    .map_err(|e| format!("the JSON frontmatter is not valid: {e}"))?;
                match value.get("wield").or_else(|| value.get("flemma")) {
                    Some(options) => Self::from_object(options, false),
                    None => Ok(Self::default()),
                }
            }
            "lua" => Self::from_lua(front.code()),
            other => Err(format!(
                "```{other} frontmatter cannot be read: write it as ```toml, ```json or ```lua"
            )),
        }
    }

    fn from_object(value: &Value, strict: bool) -> Result<Self, String> {
        let Some(object) = value.as_object() else {
            return Err("the frontmatter must be a table of settings".into());
        };
        let mut o = Self::default();
        for (key, v) in object {
            o.set(key, v, strict)?;
        }
        Ok(o)
    }

    /// Sets `key` to `v`. `strict` refuses keys wield does not know (its
    /// TOML form); Flemma's forms let them pass.
    fn set(&mut self, key: &str, v: &Value, strict: bool) -> Result<(), String> {
        match key {
            "provider" => self.provider = Some(string(key, v)?),
            "model" => self.model = Some(string(key, v)?),
            "thinking" => self.thinking = Some(thinking(v)?),
            "max_tokens" => self.max_tokens = Some(number(key, v)?),
            "temperature" => {
                self.temperature = Some(v.as_f64().ok_or("`temperature` must be a number, like 0.2")?);
            }
            "tools" => self.tools_value(v)?,
            "auto_approve" | "approve" => self.auto_approve.extend(edits(key, v)?),
            "deny" => self.deny.extend(names(key, v)?),
            "autopilot" => self.autopilot = Some(autopilot(v)?),
            "max_steps" => self.max_steps = Some(number(key, v)?),
            "sandbox" => self.sandbox_value(v)?,
            "parameters" if !strict => {
                if let Some(p) = v.as_object() {
                    for (key, v) in p {
                        if matches!(key.as_str(), "thinking" | "max_tokens" | "temperature") {
                            self.set(key, v, false)?;
                        }
                    }
                }
            }
            other if strict => {
                let hint = wield_core::names::closest(other, KEYS.iter().copied())
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown frontmatter key `{other}`{hint}; the keys are {}",
                    KEYS.join(", ")
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Lua frontmatter, run in the sandbox: its `wield.opt` operations in
    /// order.
    fn from_lua(code: &str) -> Result<Self, String> {
        let outcome = wield_lua::off_worker(|| wield_lua::frontmatter::evaluate(code, &[]))
            .map_err(|e| format!("the Lua frontmatter failed: {e}"))?;
        let mut o = Self {
            warnings: outcome.warnings,
            ..Self::default()
        };
        for op in outcome.ops {
            // Flemma keeps these under `tools`.
            let key = match op.key.as_str() {
                "tools.auto_approve" | "tools.approve" | "approve" => "auto_approve",
                "tools.autopilot" => "autopilot",
                "tools.deny" => "deny",
                "tools.max_steps" => "max_steps",
                other => other,
            };
            let list = match key {
                "tools" => Some(&mut o.tools),
                "auto_approve" => Some(&mut o.auto_approve),
                "deny" => Some(&mut o.deny),
                _ => None,
            };
            match (list, op.op) {
                (_, Op::SetFunction(f)) => o.approve_fn = Some(ApproveFn(f)),
                (Some(list), Op::Set(v)) => *list = names(key, &v)?,
                (Some(list), Op::Append(items) | Op::Prepend(items)) => {
                    // Adding to the tool list adds a tool; to `deny`, a rule.
                    let plus = if key == "tools" { "+" } else { "" };
                    list.extend(items.into_iter().map(|n| format!("{plus}{n}")));
                }
                (Some(list), Op::Remove(items)) if key == "deny" => list.retain(|n| !items.contains(n)),
                (Some(list), Op::Remove(items)) => list.extend(items.into_iter().map(|n| format!("-{n}"))),
                (None, Op::Set(v)) => o.set(key, &v, true)?,
                (None, _) => return Err(format!("`opt.{key}` is not a list")),
            }
        }
        Ok(o)
    }

    /// `tools`: a list of edits, or Flemma's object of list operations
    /// with `auto_approve` and `autopilot` inside.
    fn tools_value(&mut self, v: &Value) -> Result<(), String> {
        let Some(object) = v.as_object() else {
            self.tools.extend(edits("tools", v)?);
            return Ok(());
        };
        for (key, v) in object {
            match key.as_str() {
                "auto_approve" | "approve" => self.auto_approve.extend(edits(key, v)?),
                "autopilot" => self.autopilot = Some(autopilot(v)?),
                "deny" => self.deny.extend(names(key, v)?),
                op if op.starts_with('$') => self.tools.extend(operation("tools", op, v)?),
                _ => {}
            }
        }
        Ok(())
    }

    fn sandbox_value(&mut self, v: &Value) -> Result<(), String> {
        let refuse = || {
            "a document cannot turn the sandbox off or widen it: only `sandbox = true` and `sandbox.network = false` \
             are read (change the configuration for the rest)"
                .to_string()
        };
        match v {
            Value::Bool(true) => self.sandbox_on = true,
            Value::Object(t) => {
                for (key, v) in t {
                    match (key.as_str(), v) {
                        ("enabled", Value::Bool(true)) => self.sandbox_on = true,
                        ("network", Value::Bool(false)) => self.no_network = true,
                        ("policy", Value::Object(p)) if p.get("network") == Some(&Value::Bool(false)) => {
                            self.no_network = true;
                        }
                        _ => return Err(refuse()),
                    }
                }
            }
            _ => return Err(refuse()),
        }
        Ok(())
    }

    /// The `--set` settings the sandbox options make.
    pub fn sandbox_settings(&self) -> Vec<String> {
        let mut set = Vec::new();
        if self.sandbox_on {
            set.push("sandbox.enabled=true".to_string());
        }
        if self.no_network {
            set.push("sandbox.network=false".to_string());
        }
        set
    }

    /// The tool names the edits name (not globs, groups or presets), for a
    /// check against the registry.
    pub fn named_tools(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .chain(&self.auto_approve)
            .chain(&self.deny)
            .map(|e| e.trim_start_matches(['+', '-']))
            .filter(|n| !n.starts_with('$') && !n.contains([':', '*', '?', '[']))
    }
}

fn string(key: &str, v: &Value) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("`{key}` must be a string"))
}

fn number(key: &str, v: &Value) -> Result<u32, String> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("`{key}` must be a whole number"))
}

fn thinking(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(false) => Ok("off".into()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Object(o) => o.get("level").map_or(Ok("high".into()), thinking),
        _ => Err("`thinking` must be a level (minimal, low, medium, high, max), false, or a token budget".into()),
    }
}

fn autopilot(v: &Value) -> Result<bool, String> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Object(o) => match o.get("enabled") {
            Some(Value::Bool(b)) => Ok(*b),
            _ => Ok(true),
        },
        _ => Err("`autopilot` must be true or false".into()),
    }
}

fn names(key: &str, v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("`{key}` must be a list of tool names"))
            })
            .collect(),
        _ => Err(format!("`{key}` must be a list of tool names")),
    }
}

/// A list of edits, or Flemma's operations object.
fn edits(key: &str, v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Object(ops) => {
            let mut out = Vec::new();
            for (op, v) in ops {
                out.extend(operation(key, op, v)?);
            }
            Ok(out)
        }
        v => names(key, v),
    }
}

/// Flemma's `$set`, `$append`, `$prepend`, `$remove` as edits.
fn operation(key: &str, op: &str, v: &Value) -> Result<Vec<String>, String> {
    let items = names(key, v)?;
    Ok(match op {
        "$set" => items,
        "$append" | "$prepend" => items.into_iter().map(|n| format!("+{n}")).collect(),
        "$remove" => items.into_iter().map(|n| format!("-{n}")).collect(),
        other => {
            return Err(format!(
                "`{key}`: unknown operation `{other}` (use $set, $append, $prepend, $remove)"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(text: &str) -> Result<ChatOptions, String> {
        ChatOptions::of(&crate::parse(text))
    }

    #[test]
    fn toml_sets_every_key_and_names_a_misspelled_one() {
        let o = opts(
            "```toml\nprovider = \"local\"\nmodel = \"m\"\nthinking = \"low\"\nmax_tokens = 100\ntemperature = 0.5\ntools = [\"+bash\", \"-write\"]\nauto_approve = [\"bash\"]\ndeny = [\"edit\"]\nautopilot = false\nmax_steps = 3\nsandbox = { enabled = true, network = false }\n```\n@You:\nhi\n",
        )
        .unwrap();
        assert_eq!(o.provider.as_deref(), Some("local"));
        assert_eq!(o.thinking.as_deref(), Some("low"));
        assert_eq!(o.max_tokens, Some(100));
        assert_eq!(o.tools, ["+bash", "-write"]);
        assert_eq!(o.auto_approve, ["bash"]);
        assert_eq!(o.deny, ["edit"]);
        assert_eq!(o.autopilot, Some(false));
        assert_eq!(o.max_steps, Some(3));
        assert_eq!(o.sandbox_settings(), ["sandbox.enabled=true", "sandbox.network=false"]);
        let err = opts("```toml\nautopilott = false\n```\n@You:\nhi\n").unwrap_err();
        assert!(err.contains("did you mean `autopilot`"), "{err}");
    }

    #[test]
    fn flemma_json_operations_become_edits() {
        let o = opts(
            "```json\n{\"flemma\": {\"tools\": {\"$append\": \"bash\", \"auto_approve\": {\"$remove\": \"write\"}, \"autopilot\": false}, \"provider\": \"openai\"}, \"name\": \"x\"}\n```\n@You:\nhi\n",
        )
        .unwrap();
        assert_eq!(o.tools, ["+bash"]);
        assert_eq!(o.auto_approve, ["-write"]);
        assert_eq!(o.autopilot, Some(false));
        assert_eq!(o.provider.as_deref(), Some("openai"));
    }

    #[test]
    fn lua_operations_become_edits_in_order() {
        let o = opts(
            "```lua\nflemma.opt.tools.auto_approve = { \"$standard\" }\nflemma.opt.tools.auto_approve:remove(\"write\")\nwield.opt.tools = wield.opt.tools + \"bash\" - \"grep\"\nwield.opt.provider = \"local\"\nwield.opt.tools.autopilot = false\n```\n@You:\nhi\n",
        )
        .unwrap();
        assert_eq!(o.auto_approve, ["$standard", "-write"]);
        assert_eq!(o.tools, ["+bash", "-grep"]);
        assert_eq!(o.provider.as_deref(), Some("local"));
        assert_eq!(o.autopilot, Some(false));
        let o =
            opts("```lua\nwield.opt.tools.auto_approve = function(tool) return tool == \"bash\" end\n```\n@You:\nhi\n")
                .unwrap();
        assert!(o.approve_fn.is_some());
        let err = opts("```lua\nos.execute(\"true\")\n```\n@You:\nhi\n").unwrap_err();
        assert!(err.contains("the Lua frontmatter failed"), "{err}");
        let err = opts("```lua\nwield.opt.nonsense = 1\n```\n@You:\nhi\n").unwrap_err();
        assert!(err.contains("unknown frontmatter key `nonsense`"), "{err}");
    }

    #[test]
    fn a_document_cannot_loosen_the_sandbox() {
        for bad in [
            "sandbox = false",
            "sandbox = { enabled = false }",
            "sandbox = { network = true }",
        ] {
            let err = opts(&format!("```toml\n{bad}\n```\n@You:\nhi\n")).unwrap_err();
            assert!(err.contains("cannot turn the sandbox off"), "{bad}: {err}");
        }
    }
}
