//! The subagents `task` starts in `wield run`: the parent's runtime and
//! approver, its policy narrowed by the named agent's tool layer; the named
//! agent's provider, model, prompt and steps.

use std::sync::Arc;

use wield_agent::task::{NOT_FOR_SUBAGENTS, Subagents};
use wield_agent::{Agent, AgentSettings};
use wield_core::Approver;
use wield_llm::settings::ProviderSettings;

use super::providers::choose;
use super::run_agent::build_agent;
use crate::app::Runtime;

pub struct CliSubagents {
    pub rt: Runtime,
    pub approver: Arc<dyn Approver>,
    /// The parent's provider and agent settings (a general subagent's).
    pub parent: ProviderSettings,
    pub parent_agent: AgentSettings,
    pub session_id: String,
    pub started: std::sync::atomic::AtomicU32,
}

impl Subagents for CliSubagents {
    fn list(&self) -> Vec<(String, String)> {
        wield_agent::subagents(self.rt.config()).unwrap_or_default()
    }

    fn make(&self, name: Option<&str>) -> Result<Agent, String> {
        let settings = match name {
            None => self.parent_agent.clone(),
            Some(n) => {
                let list = wield_agent::subagents(self.rt.config()).map_err(|e| e.to_string())?;
                if !list.iter().any(|(k, _)| k == n) {
                    let names: Vec<&str> = list.iter().map(|(k, _)| k.as_str()).collect();
                    return Err(if names.is_empty() {
                        format!("unknown subagent `{n}`: none is configured; omit `agent` for a general one")
                    } else {
                        format!("unknown subagent `{n}`; the configured ones: {}", names.join(", "))
                    });
                }
                AgentSettings::from_config(self.rt.config(), Some(n)).map_err(|e| e.to_string())?
            }
        };
        let provider_name = settings.provider.clone().unwrap_or_else(|| self.parent.name.clone());
        let model = settings
            .model
            .clone()
            .or_else(|| (provider_name == self.parent.name).then(|| self.parent.model.clone()));
        let (provider_settings, provider) =
            choose(&self.rt, Some(&provider_name), model.as_deref()).map_err(|e| format!("{e:#}"))?;
        // Its tools and the executor that checks its calls come from one
        // narrowed tool set, as `--agent` gives a run its own.
        let rt = Runtime {
            global: self.rt.global.clone(),
            inner: self
                .rt
                .inner
                .for_subagent(name, &NOT_FOR_SUBAGENTS)
                .map_err(|e| e.to_string())?,
        };
        let executor = rt
            .inner
            .executor(Arc::clone(&self.approver))
            .map_err(|e| e.to_string())?;
        let k = self.started.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let session = rt.session(format!("{}-task-{k}", self.session_id), wield_core::Driver::Model);
        Ok(build_agent(
            &rt,
            session,
            rt.visible(),
            &settings,
            &provider_settings,
            provider,
            executor,
        ))
    }
}
