//! Providers as configured: `[providers.NAME]` tables, `default_provider`,
//! and, with none configured, the official SDKs' environment conventions.
//!
//! ```toml
//! default_provider = "local"
//!
//! [providers.local]
//! kind = "openai-compatible"
//! base_url = "http://127.0.0.1:8080/v1"
//! model = "smollm2-135m"
//! tool_protocol = "native"   # or "xml" for models without tool calling
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::provider::{Endpoint, Kind, ThinkingLevel};
use crate::request::ToolChoice;

/// The configuration keys this crate reads, for the configuration's check of
/// unknown keys (`*` is any provider name; `headers` is free-form).
pub const CONFIG_KEYS: &[&str] = &[
    "default_provider",
    "providers.*.kind",
    "providers.*.model",
    "providers.*.base_url",
    "providers.*.api_key_env",
    "providers.*.headers.**",
    "providers.*.max_tokens",
    "providers.*.temperature",
    "providers.*.thinking",
    "providers.*.thinking_budget",
    "providers.*.reasoning_effort",
    "providers.*.context_window",
    "providers.*.tool_protocol",
    "providers.*.tool_choice",
    "providers.*.timeout",
    "providers.*.max_retries",
    "providers.*.foreign_thinking",
];

/// The output limit of an `openai-compatible` provider whose settings give
/// none.
pub const DEFAULT_COMPATIBLE_MAX_TOKENS: u32 = 8_192;

/// The keys a `[providers.NAME]` table takes.
pub const KEYS: [&str; 16] = [
    "kind",
    "model",
    "base_url",
    "api_key_env",
    "headers",
    "max_tokens",
    "temperature",
    "thinking",
    "thinking_budget",
    "reasoning_effort",
    "context_window",
    "tool_protocol",
    "tool_choice",
    "timeout",
    "max_retries",
    "foreign_thinking",
];

/// How tools reach the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ToolProtocol {
    /// The provider's own tool calling.
    #[default]
    Native,
    /// Tools described in the system prompt, calls written as XML.
    Xml,
}

/// One provider's settings, checked.
#[derive(Clone, Debug)]
pub struct ProviderSettings {
    pub name: String,
    pub kind: Kind,
    pub model: String,
    pub base_url: String,
    /// The variable the key is read from (`None`: no key, a local server).
    pub api_key_env: Option<String>,
    pub headers: Vec<(String, String)>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub thinking: ThinkingLevel,
    /// Wins over `thinking` for Anthropic and Gemini.
    pub thinking_budget: Option<u32>,
    /// Wins over `thinking` for OpenAI Responses.
    pub reasoning_effort: Option<String>,
    /// What to do with reasoning another provider or model produced.
    pub foreign_thinking: crate::conversation::ForeignThinking,
    pub context_window: Option<u64>,
    pub tool_protocol: ToolProtocol,
    pub tool_choice: ToolChoice,
    pub timeout: Duration,
    pub max_retries: u32,
}

/// A mistake in the providers' settings: the key and what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

impl ProviderSettings {
    /// The endpoint to send requests to, with the key read from the
    /// environment `env` gives; a missing key names its variable.
    pub fn endpoint(&self, env: impl Fn(&str) -> Option<String>) -> Result<Endpoint, SettingsError> {
        let api_key = match &self.api_key_env {
            None => None,
            Some(var) => Some(env(var).filter(|k| !k.trim().is_empty()).ok_or_else(|| {
                SettingsError(format!(
                    "provider `{}` needs an API key in the environment variable {var}, which is not set; set it, or \
                     name another variable with providers.{}.api_key_env",
                    self.name, self.name
                ))
            })?),
        };
        Ok(Endpoint {
            kind: self.kind,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            api_key,
            headers: self.headers.clone(),
            max_retries: self.max_retries,
            timeout: self.timeout,
            thinking: self.thinking,
            thinking_budget: self.thinking_budget,
            reasoning_effort: self.reasoning_effort.clone(),
        })
    }
}

/// Every configured provider and the default one.
#[derive(Clone, Debug, Default)]
pub struct Providers {
    pub providers: BTreeMap<String, ProviderSettings>,
    pub default: Option<String>,
}

impl Providers {
    /// From the configuration's `providers` table and `default_provider`
    /// (JSON values of the merged configuration). With no provider
    /// configured, from the environment: `ANTHROPIC_API_KEY` (and
    /// `ANTHROPIC_BASE_URL`), else `OPENAI_API_KEY` (and `OPENAI_BASE_URL`),
    /// else `GEMINI_API_KEY`.
    pub fn from_config(
        providers: Option<&Value>,
        default: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, SettingsError> {
        let mut out = Providers::default();
        if let Some(table) = providers {
            let Some(table) = table.as_object() else {
                return Err(SettingsError(
                    "`providers` must be a table of [providers.NAME] tables".into(),
                ));
            };
            for (name, value) in table {
                out.providers.insert(name.clone(), parse(name, value)?);
            }
        }
        if out.providers.is_empty() {
            let from_env = [
                ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", Kind::Anthropic, "anthropic"),
                ("OPENAI_API_KEY", "OPENAI_BASE_URL", Kind::OpenAiResponses, "openai"),
                ("GEMINI_API_KEY", "GEMINI_BASE_URL", Kind::Gemini, "gemini"),
            ]
            .into_iter()
            .find(|(key, ..)| env(key).is_some_and(|k| !k.trim().is_empty()));
            if let Some((key, base, kind, name)) = from_env {
                let mut settings = defaults(name, kind);
                settings.api_key_env = Some(key.to_owned());
                if let Some(url) = env(base).filter(|u| !u.trim().is_empty()) {
                    settings.base_url = url;
                }
                out.providers.insert(name.to_owned(), settings);
                out.default = Some(name.to_owned());
            }
        }
        if let Some(d) = default {
            if !out.providers.contains_key(d) {
                return Err(SettingsError(format!(
                    "default_provider = \"{d}\" names no provider; configured: {}",
                    names(&out)
                )));
            }
            out.default = Some(d.to_owned());
        } else if out.default.is_none() && out.providers.len() == 1 {
            out.default = out.providers.keys().next().cloned();
        }
        Ok(out)
    }

    /// The provider `name` names, else the default one.
    pub fn pick(&self, name: Option<&str>) -> Result<&ProviderSettings, SettingsError> {
        let name = match name.or(self.default.as_deref()) {
            Some(n) => n,
            None if self.providers.is_empty() => {
                return Err(SettingsError(
                    "no model provider is configured: `wield providers add local` sets up a model server on \
                     this machine; or add a [providers.NAME] table to .wield/config.toml, or set \
                     ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY"
                        .into(),
                ));
            }
            None => {
                return Err(SettingsError(format!(
                    "several providers are configured ({}); choose one with --provider or default_provider",
                    names(self)
                )));
            }
        };
        self.providers
            .get(name)
            .ok_or_else(|| SettingsError(format!("no provider named `{name}`; configured: {}", names(self))))
    }
}

fn names(p: &Providers) -> String {
    if p.providers.is_empty() {
        return "none".into();
    }
    p.providers.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// The defaults of a kind.
fn defaults(name: &str, kind: Kind) -> ProviderSettings {
    let (model, base_url, key) = match kind {
        Kind::Anthropic => (
            "claude-sonnet-4-5",
            "https://api.anthropic.com/v1",
            Some("ANTHROPIC_API_KEY"),
        ),
        Kind::OpenAi => ("gpt-5", "https://api.openai.com/v1", Some("OPENAI_API_KEY")),
        Kind::OpenAiResponses => ("gpt-5", "https://api.openai.com/v1", Some("OPENAI_API_KEY")),
        Kind::Gemini => (
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta",
            Some("GEMINI_API_KEY"),
        ),
        Kind::OpenAiCompatible => ("", "", None),
    };
    // A local server given no limit may generate until its context is full
    // (a small model can loop for minutes): compatible servers get one.
    let max_tokens = (kind == Kind::OpenAiCompatible).then_some(DEFAULT_COMPATIBLE_MAX_TOKENS);
    ProviderSettings {
        name: name.to_owned(),
        kind,
        model: model.to_owned(),
        base_url: base_url.to_owned(),
        api_key_env: key.map(str::to_owned),
        headers: Vec::new(),
        max_tokens,
        temperature: None,
        thinking: ThinkingLevel::Off,
        thinking_budget: None,
        reasoning_effort: None,
        foreign_thinking: crate::conversation::ForeignThinking::Text,
        context_window: None,
        tool_protocol: ToolProtocol::Native,
        tool_choice: ToolChoice::Auto,
        timeout: Duration::from_secs(120),
        max_retries: 4,
    }
}

fn parse(name: &str, value: &Value) -> Result<ProviderSettings, SettingsError> {
    let key = |k: &str| format!("providers.{name}.{k}");
    let Some(t) = value.as_object() else {
        return Err(SettingsError(format!("`providers.{name}` must be a table")));
    };
    for k in t.keys() {
        if !KEYS.contains(&k.as_str()) {
            return Err(SettingsError(format!(
                "unknown key `{}`; a provider takes {}",
                key(k),
                KEYS.join(", ")
            )));
        }
    }
    let string = |k: &str| -> Result<Option<String>, SettingsError> {
        match t.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(SettingsError(format!("`{}` must be a string, found {other}", key(k)))),
        }
    };
    let number = |k: &str| -> Result<Option<u64>, SettingsError> {
        match t.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| SettingsError(format!("`{}` must be a whole number, found {v}", key(k)))),
        }
    };
    let kind_name = string("kind")?.ok_or_else(|| {
        SettingsError(format!(
            "`{}` is missing; use one of {}",
            key("kind"),
            Kind::ALL.map(Kind::name).join(", ")
        ))
    })?;
    let kind = Kind::from_name(&kind_name).ok_or_else(|| {
        SettingsError(format!(
            "`{}` = \"{kind_name}\" is not a provider kind; use one of {}",
            key("kind"),
            Kind::ALL.map(Kind::name).join(", ")
        ))
    })?;
    let mut s = defaults(name, kind);
    if let Some(model) = string("model")? {
        s.model = model;
    }
    if let Some(url) = string("base_url")? {
        s.base_url = url;
    }
    if s.model.is_empty() {
        return Err(SettingsError(format!(
            "`{}` is missing: name the model to use",
            key("model")
        )));
    }
    if s.base_url.is_empty() {
        return Err(SettingsError(format!(
            "`{}` is missing: an openai-compatible provider needs the server's address, e.g. \"http://127.0.0.1:8080/v1\"",
            key("base_url")
        )));
    }
    if let Some(var) = string("api_key_env")? {
        s.api_key_env = Some(var).filter(|v| !v.is_empty());
    }
    if let Some(headers) = t.get("headers") {
        let Some(map) = headers.as_object() else {
            return Err(SettingsError(format!(
                "`{}` must be a table of strings",
                key("headers")
            )));
        };
        for (h, v) in map {
            let v = v
                .as_str()
                .ok_or_else(|| SettingsError(format!("`{}.{h}` must be a string", key("headers"))))?;
            s.headers.push((h.clone(), v.to_owned()));
        }
    }
    s.max_tokens = number("max_tokens")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    if let Some(v) = t.get("temperature") {
        s.temperature = Some(
            v.as_f64()
                .ok_or_else(|| SettingsError(format!("`{}` must be a number", key("temperature"))))?,
        );
    }
    s.thinking = match string("thinking")?.as_deref() {
        None | Some("off") => ThinkingLevel::Off,
        Some("low") => ThinkingLevel::Low,
        Some("medium") => ThinkingLevel::Medium,
        Some("high") => ThinkingLevel::High,
        Some("adaptive") => ThinkingLevel::Adaptive,
        Some(other) => {
            return Err(SettingsError(format!(
                "`{}` = \"{other}\": use \"off\", \"low\", \"medium\", \"high\" or \"adaptive\"",
                key("thinking")
            )));
        }
    };
    s.thinking_budget = number("thinking_budget")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    s.reasoning_effort = string("reasoning_effort")?;
    s.foreign_thinking = match string("foreign_thinking")?.as_deref() {
        None | Some("text") => crate::conversation::ForeignThinking::Text,
        Some("drop") => crate::conversation::ForeignThinking::Drop,
        Some(other) => {
            return Err(SettingsError(format!(
                "`{}` = \"{other}\": use \"text\" or \"drop\"",
                key("foreign_thinking")
            )));
        }
    };
    s.context_window = number("context_window")?;
    s.tool_protocol = match string("tool_protocol")?.as_deref() {
        None | Some("native") => ToolProtocol::Native,
        Some("xml") => ToolProtocol::Xml,
        Some(other) => {
            return Err(SettingsError(format!(
                "`{}` = \"{other}\": use \"native\" or \"xml\"",
                key("tool_protocol")
            )));
        }
    };
    s.tool_choice = match string("tool_choice")?.as_deref() {
        None | Some("auto") => ToolChoice::Auto,
        Some("required") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        Some(other) => {
            return Err(SettingsError(format!(
                "`{}` = \"{other}\": use \"auto\", \"required\" or \"none\"",
                key("tool_choice")
            )));
        }
    };
    if let Some(text) = string("timeout")? {
        s.timeout = duration(&text).ok_or_else(|| {
            SettingsError(format!(
                "`{}` = \"{text}\": write e.g. \"90s\" or \"2m\"",
                key("timeout")
            ))
        })?;
    }
    if let Some(n) = number("max_retries")? {
        s.max_retries = u32::try_from(n).unwrap_or(u32::MAX).min(10);
    }
    Ok(s)
}

/// "500ms", "30s", "2m", "1h".
fn duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (n, unit) = t.split_at(split);
    let n: f64 = n.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(secs).ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {

    use serde_json::json;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        move |k| vars.iter().find(|(name, _)| name == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_configured_provider_with_every_key() {
        let config = json!({ "local": {
            "kind": "openai-compatible", "base_url": "http://127.0.0.1:8080/v1", "model": "smollm2",
            "headers": { "x-team": "a" }, "max_tokens": 100, "temperature": 0.5, "thinking": "low",
            "context_window": 4096, "tool_protocol": "xml", "tool_choice": "required", "timeout": "90s",
            "max_retries": 2, "thinking_budget": 3000, "reasoning_effort": "minimal", "foreign_thinking": "drop"
        }});
        let p = Providers::from_config(Some(&config), None, env(&[])).unwrap();
        let s = p.pick(None).unwrap();
        assert_eq!(
            (s.kind, s.model.as_str(), s.api_key_env.clone()),
            (Kind::OpenAiCompatible, "smollm2", None)
        );
        assert_eq!(
            (s.tool_protocol, s.tool_choice.clone()),
            (ToolProtocol::Xml, ToolChoice::Required)
        );
        assert_eq!(
            (s.timeout, s.max_retries, s.thinking),
            (Duration::from_secs(90), 2, ThinkingLevel::Low)
        );
        assert_eq!(s.foreign_thinking, crate::conversation::ForeignThinking::Drop);
        let e = s.endpoint(env(&[])).unwrap();
        assert_eq!(
            (e.thinking_budget, e.reasoning_effort.as_deref()),
            (Some(3000), Some("minimal"))
        );
        assert_eq!((e.api_key, e.headers), (None, vec![("x-team".into(), "a".into())]));
    }

    #[test]
    fn mistakes_name_the_key_and_what_to_write() {
        for (config, says) in [
            (
                json!({ "x": { "kind": "openai-compatible", "model": "m" } }),
                "providers.x.base_url` is missing",
            ),
            (json!({ "x": { "kind": "claude" } }), "is not a provider kind"),
            (
                json!({ "x": { "kind": "anthropic", "modle": "m" } }),
                "unknown key `providers.x.modle`",
            ),
            (
                json!({ "x": { "kind": "anthropic", "thinking": "max" } }),
                "use \"off\", \"low\"",
            ),
            (
                json!({ "x": { "kind": "anthropic", "timeout": "soon" } }),
                "write e.g. \"90s\"",
            ),
        ] {
            let e = Providers::from_config(Some(&config), None, env(&[])).unwrap_err();
            assert!(e.0.contains(says), "{e}");
        }
        let e = Providers::from_config(None, Some("nope"), env(&[])).unwrap_err();
        assert!(e.0.contains("names no provider"), "{e}");
    }

    #[test]
    fn with_nothing_configured_the_sdk_conventions_apply_in_order() {
        let p = Providers::from_config(None, None, env(&[("OPENAI_API_KEY", "k"), ("GEMINI_API_KEY", "g")])).unwrap();
        let s = p.pick(None).unwrap();
        assert_eq!((s.name.as_str(), s.kind), ("openai", Kind::OpenAiResponses));
        let p = Providers::from_config(
            None,
            None,
            env(&[
                ("ANTHROPIC_API_KEY", "k"),
                ("ANTHROPIC_BASE_URL", "http://proxy/v1"),
                ("OPENAI_API_KEY", "o"),
            ]),
        )
        .unwrap();
        let s = p.pick(None).unwrap();
        assert_eq!((s.kind, s.base_url.as_str()), (Kind::Anthropic, "http://proxy/v1"));
        let e = Providers::from_config(None, None, env(&[]))
            .unwrap()
            .pick(None)
            .unwrap_err();
        assert!(e.0.contains("no model provider is configured"), "{e}");
    }

    #[test]
    fn a_missing_key_names_its_variable_and_a_key_is_never_shown() {
        let config = json!({ "a": { "kind": "anthropic" } });
        let p = Providers::from_config(Some(&config), None, env(&[])).unwrap();
        let e = p.pick(Some("a")).unwrap().endpoint(env(&[])).unwrap_err();
        assert!(e.0.contains("ANTHROPIC_API_KEY"), "{e}");
        let endpoint = p
            .pick(Some("a"))
            .unwrap()
            .endpoint(env(&[("ANTHROPIC_API_KEY", "sk-secret")]))
            .unwrap();
        assert!(!format!("{endpoint:?}").contains("sk-secret"), "{endpoint:?}");
        assert_eq!(endpoint.api_key.as_deref(), Some("sk-secret"));
    }
}
