//! `wield providers list | check [NAME] | add NAME`, and reading the
//! providers' settings for the commands that talk to a model.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use wield_llm::Provider;
use wield_llm::settings::{ProviderSettings, Providers};

use crate::app::{Runtime, Servers};
use crate::cli::{GlobalArgs, ProvidersCommand};

/// The providers of the runtime's configuration (or of the SDKs'
/// environment variables).
pub fn providers(rt: &Runtime) -> anyhow::Result<Providers> {
    wield_agent::session::providers(rt.config()).map_err(super::session_error)
}

/// The provider `name` names (else the default one), with `model` instead
/// of its own when given, ready to send requests.
pub fn choose(rt: &Runtime, name: Option<&str>, model: Option<&str>) -> anyhow::Result<(ProviderSettings, Provider)> {
    wield_agent::session::choose(rt.config(), name, model).map_err(super::session_error)
}

/// A client for `settings`.
pub fn connect(settings: &ProviderSettings) -> anyhow::Result<Provider> {
    wield_agent::session::connect(settings).map_err(super::session_error)
}

pub async fn run(global: &GlobalArgs, cmd: ProvidersCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ProvidersCommand::List { json } => list(global, json).await,
        ProvidersCommand::Check { name } => super::providers_check::run(global, name.as_deref()).await,
        ProvidersCommand::Add {
            name,
            kind,
            base_url,
            model,
            default,
        } => {
            super::providers_add::run(
                global,
                super::providers_add::Adding {
                    name,
                    kind,
                    base_url,
                    model,
                    default,
                },
            )
            .await
        }
    }
}

async fn list(global: &GlobalArgs, json: bool) -> anyhow::Result<ExitCode> {
    let rt = Runtime::load_servers(global, Servers::None).await?;
    let all = providers(&rt)?;
    let mut out = std::io::stdout().lock();
    let rows: Vec<serde_json::Value> = all
        .providers
        .values()
        .map(|p| {
            json!({
                "name": p.name,
                "kind": p.kind.name(),
                "model": p.model,
                "base_url": p.base_url,
                "key_env": p.api_key_env,
                "key_set": p.api_key_env.as_deref().map(|v| std::env::var_os(v).is_some_and(|k| !k.is_empty())),
                "default": all.default.as_deref() == Some(p.name.as_str()),
            })
        })
        .collect();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&json!({ "providers": rows }))?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        writeln!(
            out,
            "No model provider is configured. Add one to .wield/config.toml, e.g.\n\n\
             [providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n\
             model = \"my-model\"\n\nor set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY.\n\
             next: `wield providers add local` sets up a model server on this machine"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for p in all.providers.values() {
        let key = match &p.api_key_env {
            None => "no key".to_owned(),
            Some(var) if std::env::var_os(var).is_some_and(|k| !k.is_empty()) => format!("{var} set"),
            Some(var) => format!("{var} NOT SET"),
        };
        let mark = if all.default.as_deref() == Some(p.name.as_str()) {
            " (default)"
        } else {
            ""
        };
        writeln!(
            out,
            "{}{mark}  {}  {}  {}  {key}",
            p.name,
            p.kind.name(),
            p.model,
            p.base_url
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
