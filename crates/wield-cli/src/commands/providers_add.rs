//! `wield providers add NAME [--kind K] [--base-url URL] [--model M]
//! [--default]`: a `[providers.NAME]` table in the project's
//! `.wield/config.toml`, with what a local server says of itself.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use wield_llm::Kind;
use wield_llm::discover::{DiscoverError, Discovered, discover};
use wield_runtime::update_file;

use crate::app::{usage, workspace};
use crate::cli::GlobalArgs;

/// Where a local OpenAI-compatible server listens unless told otherwise
/// (llama.cpp's `llama-server`).
const LOCAL_URL: &str = "http://127.0.0.1:8080/v1";

/// What the command line asked for.
pub struct Adding {
    pub name: String,
    pub kind: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub default: bool,
}

pub async fn run(global: &GlobalArgs, adding: Adding) -> anyhow::Result<ExitCode> {
    let name = adding.name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(usage(format!(
            "`{name}` cannot name a provider: use letters, digits, `-` and `_`"
        )));
    }
    let kind = match adding.kind.as_deref() {
        None => Kind::OpenAiCompatible,
        Some(k) => Kind::from_name(k).ok_or_else(|| {
            usage(format!(
                "--kind {k}: not a provider kind; use anthropic, openai, openai-responses, gemini or openai-compatible"
            ))
        })?,
    };
    let mut table = vec![("kind", kind.name().to_owned())];
    let mut said = Vec::new();
    let mut reachable = true;
    if kind == Kind::OpenAiCompatible {
        let base_url = adding.base_url.clone().unwrap_or_else(|| LOCAL_URL.to_owned());
        let found = match discover(&base_url, Duration::from_secs(5)).await {
            Ok(found) => found,
            Err(e) => {
                reachable = false;
                said.push(match &e {
                    DiscoverError::Unreachable { .. } => format!(
                        "{e}: the provider is added as given; start the server (docs/local-models.md shows how), \
                         then run `wield providers check {name}`"
                    ),
                    DiscoverError::NotAModelServer { .. } => e.to_string(),
                });
                Discovered::default()
            }
        };
        let model = match (&adding.model, found.models.first()) {
            (Some(m), _) => m.clone(),
            (None, Some(first)) => {
                if found.models.len() > 1 {
                    said.push(format!(
                        "the server lists {} models ({}); chose {first}, --model picks another",
                        found.models.len(),
                        found.models.join(", ")
                    ));
                }
                first.clone()
            }
            // llama-server answers to any model name; others need the real one.
            (None, None) => "local".to_owned(),
        };
        table.push(("base_url", base_url));
        table.push(("model", model));
        if let Some(context) = found.context {
            table.push(("context_window", context.to_string()));
        }
    } else {
        if let Some(url) = &adding.base_url {
            table.push(("base_url", url.clone()));
        }
        if let Some(model) = &adding.model {
            table.push(("model", model.clone()));
        }
    }
    let file = workspace(global)?.join(".wield").join("config.toml");
    let mut made_default = false;
    update_file(&file, |text| -> anyhow::Result<_> {
        let (new, default) = with_provider(text, name, &table, adding.default).map_err(usage)?;
        made_default = default;
        Ok(Some(new))
    })?;
    let mut out = std::io::stdout().lock();
    let shown: Vec<String> = table.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    writeln!(
        out,
        "added [providers.{name}] to {}: {}{}",
        file.display(),
        shown.join(", "),
        if made_default { " (the default provider)" } else { "" }
    )?;
    for line in &said {
        writeln!(out, "note: {line}")?;
    }
    let key = match kind {
        Kind::Anthropic => Some("ANTHROPIC_API_KEY"),
        Kind::OpenAi | Kind::OpenAiResponses => Some("OPENAI_API_KEY"),
        Kind::Gemini => Some("GEMINI_API_KEY"),
        Kind::OpenAiCompatible => None,
    };
    match key {
        Some(var) if std::env::var_os(var).is_none_or(|v| v.is_empty()) => {
            writeln!(out, "next: set {var}, then `wield providers check {name}`")?;
        }
        _ if !reachable => {}
        _ => writeln!(out, "next: `wield providers check {name}`, then `wield run`")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `text` (a configuration file) with a `[providers.NAME]` table of
/// `table` appended, and `default_provider = NAME` among its top-level
/// keys when `make_default` or when it names no default and has no other
/// provider; also whether it did that. Comments and the rest stay as they
/// are. An error when the file is not TOML or has that provider already.
fn with_provider(
    text: &str,
    name: &str,
    table: &[(&str, String)],
    make_default: bool,
) -> Result<(String, bool), String> {
    let parsed: toml::Table = text
        .parse()
        .map_err(|e| format!("the configuration is not valid TOML, so nothing was added: {e}"))?;
    let providers = parsed.get("providers").and_then(toml::Value::as_table);
    if providers.is_some_and(|p| p.contains_key(name)) {
        return Err(format!(
            "[providers.{name}] exists already; edit it in .wield/config.toml, or add this one under another name"
        ));
    }
    let has_default = parsed.contains_key("default_provider");
    let others = providers.is_some_and(|p| !p.is_empty());
    let default = make_default || (!has_default && !others);
    let quoted = |v: &str| toml::Value::String(v.to_owned()).to_string();
    let default_line = format!("default_provider = {}", quoted(name));
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if default {
        // Top-level keys go before the first table.
        let first_table = lines
            .iter()
            .position(|l| l.trim_start().starts_with('['))
            .unwrap_or(lines.len());
        match lines[..first_table]
            .iter()
            .position(|l| l.trim_start().starts_with("default_provider"))
        {
            Some(i) => lines[i] = default_line,
            None => lines.insert(0, default_line),
        }
    }
    let mut out = lines.join("\n");
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&format!("[providers.{name}]\n"));
    for (key, value) in table {
        let value = if *key == "context_window" {
            value.clone()
        } else {
            quoted(value)
        };
        out.push_str(&format!("{key} = {value}\n"));
    }
    out.parse::<toml::Table>()
        .map_err(|e| format!("the configuration would not be valid TOML, so nothing was added: {e}"))?;
    Ok((out, default))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<(&'static str, String)> {
        vec![
            ("kind", "openai-compatible".to_owned()),
            ("model", "qwen \"3\"".to_owned()),
            ("context_window", "16384".to_owned()),
        ]
    }

    #[test]
    fn a_provider_is_appended_and_the_first_becomes_the_default() {
        let (text, default) = with_provider("", "local", &table(), false).unwrap();
        assert!(default);
        let parsed: toml::Table = text.parse().unwrap();
        assert_eq!(parsed["default_provider"].as_str(), Some("local"));
        assert_eq!(parsed["providers"]["local"]["model"].as_str(), Some("qwen \"3\""));
        assert_eq!(parsed["providers"]["local"]["context_window"].as_integer(), Some(16384));
    }

    #[test]
    fn comments_stay_the_default_goes_before_the_first_table_and_a_second_provider_is_not_made_default() {
        let before = "# mine\nbash.timeout = \"10s\"\n\n[providers.cloud]\nkind = \"anthropic\"\n";
        let (text, default) = with_provider(before, "local", &table(), false).unwrap();
        assert!(!default, "another provider exists");
        assert!(text.starts_with(before.trim_end()), "{text}");
        let (text, default) = with_provider(before, "local", &table(), true).unwrap();
        assert!(default);
        assert!(text.starts_with("default_provider = \"local\"\n# mine"), "{text}");
        let parsed: toml::Table = text.parse().unwrap();
        assert_eq!(parsed["providers"]["cloud"]["kind"].as_str(), Some("anthropic"));

        // A default already named is replaced in place, not doubled.
        let before = "default_provider = \"cloud\"\n[providers.cloud]\nkind = \"anthropic\"\n";
        let (text, _) = with_provider(before, "local", &table(), true).unwrap();
        assert_eq!(text.matches("default_provider").count(), 1, "{text}");
        assert!(text.starts_with("default_provider = \"local\""), "{text}");
    }

    #[test]
    fn an_existing_provider_or_a_broken_file_is_left_alone_with_an_error_saying_so() {
        let before = "[providers.local]\nkind = \"openai-compatible\"\n";
        let err = with_provider(before, "local", &table(), false).unwrap_err();
        assert!(err.contains("exists already"), "{err}");
        let err = with_provider("[providers\n", "local", &table(), false).unwrap_err();
        assert!(err.contains("not valid TOML"), "{err}");
    }
}
