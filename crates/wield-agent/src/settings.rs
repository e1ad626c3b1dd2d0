//! The agent's configuration: `[agent]` for every run, `[agents.NAME]` for
//! one agent (its provider, model, system prompt, steps; its `tools` layer
//! is the policy's), and the loop's `[result]` and `[context]` limits.
//!
//! ```toml
//! [agent]
//! instructions = "Answer in French."   # appended to the system prompt
//! max_steps = 30
//!
//! [agents.review]
//! provider = "local"
//! system_prompt = "You review code; you change nothing."   # replaces the built-in one
//! max_steps = 10
//! tools.enabled = ["read", "grep"]
//!
//! [context]
//! compact_at = 85   # % of the context window
//! ```

use wield_core::Config;

use crate::Limits;

/// The configuration keys this crate reads (the `[agents.NAME.tools]`
/// layer and `agent` as a name are the core's).
pub const CONFIG_KEYS: &[&str] = &[
    "agent.name",
    "agent.system_prompt",
    "agent.instructions",
    "agent.max_steps",
    "agents.*.provider",
    "agents.*.model",
    "agents.*.system_prompt",
    "agents.*.instructions",
    "agents.*.max_steps",
    "agents.*.subagent",
    "agents.*.description",
    "result.max_tokens",
    "result.max_percentage",
    "context.compact_at",
];

/// A mistake in the agent's settings: the key and what it takes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct SettingsError {
    pub key: String,
    pub message: String,
}

/// The settings of one run, from the configuration and the chosen agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentSettings {
    /// The chosen agent (`--agent`, else `agent` / `agent.name`).
    pub name: Option<String>,
    /// `agents.NAME.provider`.
    pub provider: Option<String>,
    /// `agents.NAME.model`.
    pub model: Option<String>,
    /// `agents.NAME.system_prompt`, else `agent.system_prompt`: replaces
    /// the built-in prompt.
    pub system_prompt: Option<String>,
    /// `agent.instructions`, then `agents.NAME.instructions`: appended.
    pub instructions: Vec<String>,
    /// The limits the configuration sets (the rest are the defaults).
    pub limits: Limits,
}

impl AgentSettings {
    /// The settings for `agent` (else the configured one).
    pub fn from_config(config: &Config, agent: Option<&str>) -> Result<Self, SettingsError> {
        let name = match agent {
            Some(a) => Some(a.to_owned()),
            None => match config.value("agent") {
                Some(toml::Value::String(s)) => Some(s.clone()),
                _ => string(config, "agent.name")?,
            },
        }
        .filter(|n| !n.trim().is_empty());
        let own = |key: &str| name.as_ref().map(|n| format!("agents.{n}.{key}"));
        let pick_string = |key: &str| -> Result<Option<String>, SettingsError> {
            match own(key) {
                Some(path) => string(config, &path),
                None => Ok(None),
            }
        };
        let mut limits = Limits::default();
        let steps = match own("max_steps") {
            Some(path) => number(config, &path, 1, u64::from(u32::MAX))?,
            None => None,
        };
        if let Some(n) = steps.or(number(config, "agent.max_steps", 1, u64::from(u32::MAX))?) {
            limits.max_steps = u32::try_from(n).unwrap_or(u32::MAX);
        }
        if let Some(n) = number(config, "result.max_tokens", 1, u64::from(u32::MAX))? {
            limits.result_max_tokens = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = number(config, "result.max_percentage", 1, 100)? {
            limits.result_max_percentage = u8::try_from(n).unwrap_or(100);
        }
        if let Some(n) = number(config, "context.compact_at", 1, 100)? {
            limits.compact_at = u8::try_from(n).unwrap_or(100);
        }
        let instructions = [string(config, "agent.instructions")?, pick_string("instructions")?]
            .into_iter()
            .flatten()
            .filter(|t| !t.trim().is_empty())
            .collect();
        Ok(Self {
            provider: pick_string("provider")?,
            model: pick_string("model")?,
            system_prompt: pick_string("system_prompt")?.or(string(config, "agent.system_prompt")?),
            instructions,
            limits,
            name,
        })
    }
}

/// The agents `task` may start (`[agents.NAME] subagent = true`): each
/// name with its `description` (else its system prompt's first line).
pub fn subagents(config: &Config) -> Result<Vec<(String, String)>, SettingsError> {
    let Some(toml::Value::Table(agents)) = config.value("agents") else {
        return Ok(Vec::new());
    };
    let mut list = Vec::new();
    for name in agents.keys() {
        let key = format!("agents.{name}.subagent");
        match config.value(&key) {
            None | Some(toml::Value::Boolean(false)) => continue,
            Some(toml::Value::Boolean(true)) => {}
            Some(other) => {
                return Err(SettingsError {
                    key,
                    message: format!("expected true or false, got {other}"),
                });
            }
        }
        let about = string(config, &format!("agents.{name}.description"))?
            .or(string(config, &format!("agents.{name}.system_prompt"))?)
            .map(|t| t.lines().next().unwrap_or("").trim().to_owned())
            .unwrap_or_else(|| "a subagent".into());
        list.push((name.clone(), about));
    }
    Ok(list)
}

fn string(config: &Config, path: &str) -> Result<Option<String>, SettingsError> {
    match config.value(path) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(SettingsError {
            key: path.to_owned(),
            message: format!("expected a string, got {}", other.type_str()),
        }),
    }
}

fn number(config: &Config, path: &str, min: u64, max: u64) -> Result<Option<u64>, SettingsError> {
    match config.value(path) {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if u64::try_from(*n).is_ok_and(|n| (min..=max).contains(&n)) => {
            Ok(u64::try_from(*n).ok())
        }
        Some(other) => Err(SettingsError {
            key: path.to_owned(),
            message: format!("expected a whole number from {min} to {max}, got {other}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::from_table(toml::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn an_agents_own_settings_win_over_the_shared_ones() {
        let c = config(
            "[agent]\nsystem_prompt = \"shared\"\ninstructions = \"be brief\"\nmax_steps = 30\n\n\
             [agents.rev]\nprovider = \"local\"\nmodel = \"m2\"\nsystem_prompt = \"reviewer\"\n\
             instructions = \"change nothing\"\nmax_steps = 7\n\n[context]\ncompact_at = 70\n",
        );
        let s = AgentSettings::from_config(&c, Some("rev")).unwrap();
        assert_eq!(s.provider.as_deref(), Some("local"));
        assert_eq!(s.model.as_deref(), Some("m2"));
        assert_eq!(s.system_prompt.as_deref(), Some("reviewer"));
        assert_eq!(s.instructions, ["be brief", "change nothing"]);
        assert_eq!((s.limits.max_steps, s.limits.compact_at), (7, 70));
        let s = AgentSettings::from_config(&c, None).unwrap();
        assert_eq!(s.system_prompt.as_deref(), Some("shared"));
        assert_eq!(s.limits.max_steps, 30);
        assert_eq!(s.provider, None);
    }

    #[test]
    fn a_wrong_value_names_its_key_and_what_it_takes() {
        let c = config("[context]\ncompact_at = 150\n");
        let e = AgentSettings::from_config(&c, None).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("context.compact_at: expected a whole number from 1 to 100, got 150")
        );
    }
}
