//! [`AgentSession`]: an agent on a wield [`Runtime`], as every front-end
//! drives one.
//!
//! A front-end loads a runtime with the agent's own tools
//! ([`AgentTools`]), then builds a session:
//! `AgentSession::builder(&rt).tools(&agent_tools).agent(name).provider(…)
//! .approver(…).asker(…).max_steps(…).build()`. The session owns what
//! makes a run behave as it does: the agent's layer (`[agents.NAME]`), the
//! provider and model choice, the system prompt and project instructions,
//! the limits (shared budgets that its subagents draw from), `ask`, the
//! subagents `task` starts (each narrowed to its own agent's layer and
//! never wider than the parent's), resuming a saved session and saving
//! it. The front-end renders its events and maps how it stopped to what
//! its users see.

mod saved;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use wield_core::ask::Asker;
use wield_core::policy::Status;
use wield_core::{Approver, Config, Driver, Registered, ToolRef, approval};
use wield_llm::Provider;
use wield_llm::settings::{ProviderSettings, Providers};
use wield_runtime::Runtime;

pub use saved::{Listed, SavedSession, list, load, save, sessions_dir};

use crate::task::{NOT_FOR_SUBAGENTS, Subagents, Task};
use crate::{Agent, AgentEvent, AgentSettings, Outcome, SystemPrompt};

/// Why a session cannot be built, resumed or saved.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The person fixes this in the configuration, the arguments or the
    /// environment (an unknown agent or provider, a missing key, a session
    /// that cannot be resumed).
    #[error("{0}")]
    Invalid(String),
    /// No provider can be used: none is configured, the one named is not,
    /// or its key is not set. The configuration itself is well-formed.
    #[error("{0}")]
    Provider(String),
    /// The runtime cannot make the session's executor.
    #[error(transparent)]
    Runtime(#[from] wield_runtime::Error),
    /// The session could not be saved.
    #[error("{0}")]
    Save(String),
}

/// The agent's own tools (`done`, `ask`, `task`), registered with the
/// runtime's ([`AgentTools::tools`]) and tied to the session built with
/// them ([`AgentSessionBuilder::tools`]), whose subagents `task` starts.
#[derive(Clone, Default)]
pub struct AgentTools {
    task: Arc<Task>,
}

impl AgentTools {
    pub fn new() -> Self {
        Self::default()
    }

    /// The tools, for [`wield_runtime::RuntimeOptions::tools`].
    pub fn tools(&self) -> Vec<ToolRef> {
        let mut tools = crate::tools::agent_tools();
        tools.push(Arc::clone(&self.task) as ToolRef);
        tools
    }
}

/// The providers of `config` (or of the SDKs' environment variables).
pub fn providers(config: &Config) -> Result<Providers, SessionError> {
    let table = config
        .value("providers")
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| SessionError::Invalid(format!("providers: {e}")))?;
    let default = config.value("default_provider").and_then(toml::Value::as_str);
    Providers::from_config(table.as_ref(), default, |var| std::env::var(var).ok())
        .map_err(|e| SessionError::Invalid(e.to_string()))
}

/// Whether `provider` serves the model of `settings`: listed by an
/// OpenAI-compatible server, else answering a one-token request.
async fn check_model(settings: &ProviderSettings, provider: &Provider) -> Result<(), SessionError> {
    let model = &settings.model;
    let name = &settings.name;
    if settings.kind == wield_llm::Kind::OpenAiCompatible
        && let Ok(found) = wield_llm::discover::discover(&settings.base_url, Duration::from_secs(5)).await
        && !found.models.is_empty()
    {
        if found.models.iter().any(|m| m == model) {
            return Ok(());
        }
        return Err(SessionError::Provider(format!(
            "`{model}` is neither a configured provider nor a model {name} serves (it serves: {}); the model is unchanged",
            found.models.join(", ")
        )));
    }
    provider
        .stream(&wield_llm::Request::probe(), &CancellationToken::new(), |_| {})
        .await
        .map(|_| ())
        .map_err(|e| {
            SessionError::Provider(format!(
                "`{model}` is not a configured provider, and {name} did not answer for it as a model: {e}; the model \
                 is unchanged"
            ))
        })
}

/// A client for `settings`, its key read from the environment.
pub fn connect(settings: &ProviderSettings) -> Result<Provider, SessionError> {
    let endpoint = settings
        .endpoint(|var| std::env::var(var).ok())
        .map_err(|e| SessionError::Provider(e.to_string()))?;
    Provider::new(endpoint).map_err(|e| SessionError::Provider(e.to_string()))
}

/// The provider `name` names in `config` (else the default one), with
/// `model` instead of its own when given, ready to send requests.
pub fn choose(
    config: &Config,
    name: Option<&str>,
    model: Option<&str>,
) -> Result<(ProviderSettings, Provider), SessionError> {
    let all = providers(config)?;
    let mut settings = all
        .pick(name)
        .map_err(|e| SessionError::Provider(e.to_string()))?
        .clone();
    if let Some(model) = model {
        settings.model = model.to_owned();
    }
    let provider = connect(&settings)?;
    Ok((settings, provider))
}

/// An agent on a runtime: see the module docs.
pub struct AgentSession {
    agent: Agent,
    runtime: Runtime,
    provider: ProviderSettings,
    settings: AgentSettings,
    id: String,
}

/// How to build an [`AgentSession`].
pub struct AgentSessionBuilder<'a> {
    rt: &'a Runtime,
    tools: Option<AgentTools>,
    agent: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    approver: Option<Arc<dyn Approver>>,
    asker: Option<Arc<dyn Asker>>,
    max_steps: Option<u32>,
    token_budget: Option<u64>,
    timeout: Option<Duration>,
    id: Option<String>,
    resume: Option<SavedSession>,
}

impl AgentSession {
    /// A builder on `rt` (loaded with [`AgentTools::tools`] among its
    /// tools, for `task` to start subagents).
    pub fn builder(rt: &Runtime) -> AgentSessionBuilder<'_> {
        AgentSessionBuilder {
            rt,
            tools: None,
            agent: None,
            provider: None,
            model: None,
            approver: None,
            asker: None,
            max_steps: None,
            token_budget: None,
            timeout: None,
            id: None,
            resume: None,
        }
    }

    /// The session's id (the saved session's, when resumed).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The agent: its conversation, its session, compaction.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The agent, to switch its provider, compact or clear it.
    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    /// The provider and model the session talks to.
    pub fn provider(&self) -> &ProviderSettings {
        &self.provider
    }

    /// The agent's settings, its limits as the session applies them.
    pub fn settings(&self) -> &AgentSettings {
        &self.settings
    }

    /// The runtime the session runs on.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Runs `task` to its end (see [`Agent::run`]).
    pub async fn run(
        &mut self,
        task: &str,
        cancel: &CancellationToken,
        on_event: impl FnMut(AgentEvent<'_>),
    ) -> Result<Outcome, wield_llm::LlmError> {
        self.agent.run(task, cancel, on_event).await
    }

    /// Talks to the provider `name` (or, when it names none, another model
    /// of the current one) from the next step on.
    pub fn switch(&mut self, name: &str) -> Result<(), SessionError> {
        let (settings, provider, _) = self.switching(name)?;
        self.agent.switch_provider(provider, &settings);
        self.provider = settings;
        Ok(())
    }

    /// As [`AgentSession::switch`], once the provider shows it serves the
    /// model: an OpenAI-compatible server lists it (`GET /models`), or a
    /// one-token request to it is answered. Otherwise nothing changes and
    /// the error says what the server serves or answered.
    pub async fn switch_checked(&mut self, name: &str) -> Result<(), SessionError> {
        let (settings, provider, other_model) = self.switching(name)?;
        if other_model {
            check_model(&settings, &provider).await?;
        }
        self.agent.switch_provider(provider, &settings);
        self.provider = settings;
        Ok(())
    }

    /// The provider `name` switches to, and whether it is another model of
    /// the current provider rather than a configured provider.
    fn switching(&self, name: &str) -> Result<(ProviderSettings, Provider, bool), SessionError> {
        let config = self.runtime.config();
        let all = providers(config)?;
        if all.providers.contains_key(name) {
            let (settings, provider) = choose(config, Some(name), None)?;
            Ok((settings, provider, false))
        } else {
            let (settings, provider) = choose(config, Some(&self.provider.name), Some(name))?;
            Ok((settings, provider, true))
        }
    }

    /// Starts a new conversation under the new `id`: the messages and the
    /// session's state (its todo list) are cleared.
    pub fn clear(&mut self, id: impl Into<String>) {
        self.agent.resume(Vec::new());
        wield_tools::todo::restore(self.agent.session(), Vec::new());
        self.id = id.into();
    }

    /// The session as it is now, to save: how it stopped, after how many
    /// steps and what they used.
    pub fn saved(&self, end: Ended<'_>, steps: u32, usage: wield_llm::Usage) -> SavedSession {
        let (stop, error) = match end {
            Ended::Stopped(stop) => (Some(stop.to_owned()), None),
            Ended::Failed(error) => (None, Some(error.to_owned())),
        };
        SavedSession {
            id: self.id.clone(),
            provider: self.provider.name.clone(),
            model: self.provider.model.clone(),
            messages: self.agent.messages().to_vec(),
            stop,
            error,
            steps,
            usage,
            todo: wield_tools::todo::items(self.agent.session()),
        }
    }

    /// Saves the session in the workspace ([`save`]); returns where.
    pub fn save(
        &self,
        end: Ended<'_>,
        steps: u32,
        usage: wield_llm::Usage,
    ) -> Result<std::path::PathBuf, SessionError> {
        save(self.runtime.workspace(), &self.saved(end, steps, usage))
    }
}

/// How the run a session saves ended.
#[derive(Clone, Copy, Debug)]
pub enum Ended<'a> {
    /// It stopped: `done`, a limit, a cancellation ([`crate::StopReason::as_str`]).
    Stopped(&'a str),
    /// It failed, for this reason; `--resume` without an id passes it over.
    Failed(&'a str),
}

impl<'a> AgentSessionBuilder<'a> {
    /// The agent tools the runtime was loaded with: `task` starts this
    /// session's subagents. Without them `task` is not available.
    #[must_use]
    pub fn tools(mut self, tools: &AgentTools) -> Self {
        self.tools = Some(tools.clone());
        self
    }

    /// The agent whose layer (`[agents.NAME]`) applies, else the
    /// configuration's `agent`.
    #[must_use]
    pub fn agent(mut self, name: Option<&str>) -> Self {
        self.agent = name.map(str::to_owned);
        self
    }

    /// The provider to talk to (else the agent's, else the default one).
    #[must_use]
    pub fn provider(mut self, name: Option<&str>) -> Self {
        self.provider = name.map(str::to_owned);
        self
    }

    /// The model (else the agent's, else the provider's).
    #[must_use]
    pub fn model(mut self, model: Option<&str>) -> Self {
        self.model = model.map(str::to_owned);
        self
    }

    /// Who decides the calls that need a person; without one, such a call
    /// is refused with a result that tells the model so (headless).
    #[must_use]
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Who answers the model's `ask`; without one, nobody is asked.
    #[must_use]
    pub fn asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// The most steps (else the agent's limit).
    #[must_use]
    pub fn max_steps(mut self, steps: Option<u32>) -> Self {
        self.max_steps = steps;
        self
    }

    /// The most tokens the run and its subagents may use.
    #[must_use]
    pub fn token_budget(mut self, tokens: Option<u64>) -> Self {
        self.token_budget = tokens;
        self
    }

    /// How long the run and its subagents may take.
    #[must_use]
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The session's id (else a fresh one).
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Goes on with a saved session: its conversation, its state and its
    /// id.
    #[must_use]
    pub fn resume(mut self, saved: Option<SavedSession>) -> Self {
        self.resume = saved;
        self
    }

    pub fn build(self) -> Result<AgentSession, SessionError> {
        let rt = self.rt;
        let mut settings = AgentSettings::from_config(rt.config(), self.agent.as_deref())
            .map_err(|e| SessionError::Invalid(e.to_string()))?;
        let (provider_settings, provider) = choose(
            rt.config(),
            self.provider.as_deref().or(settings.provider.as_deref()),
            self.model.as_deref().or(settings.model.as_deref()),
        )?;
        let approver = self.approver.unwrap_or_else(|| Arc::new(approval::HeadlessApprover));
        let executor = rt.executor(Arc::clone(&approver))?;
        let id = self.id.unwrap_or_else(new_session_id);
        let session = rt.session(id.clone(), Driver::Model);
        if let Some(tools) = &self.tools {
            tools.task.set(Arc::new(RuntimeSubagents {
                rt: rt.clone(),
                approver,
                parent: provider_settings.clone(),
                parent_agent: settings.clone(),
                session_id: id.clone(),
                started: AtomicU32::new(0),
            }));
        }
        if let Some(asker) = self.asker {
            wield_core::ask::set_asker(&session, Some(asker));
        }
        let limits = &mut settings.limits;
        limits.max_steps = self.max_steps.unwrap_or(limits.max_steps);
        limits.token_budget = self.token_budget;
        limits.timeout = self.timeout;
        let mut agent = build_agent(
            rt,
            session,
            rt.visible(),
            &settings,
            &provider_settings,
            provider,
            executor,
        );
        let id = match self.resume {
            Some(saved) => {
                saved.restore_into(agent.session());
                agent.resume(saved.messages);
                saved.id
            }
            None => id,
        };
        Ok(AgentSession {
            agent,
            runtime: rt.clone(),
            provider: provider_settings,
            settings,
            id,
        })
    }
}

/// A new session's id.
pub fn new_session_id() -> String {
    format!(
        "run-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis())
    )
}

/// The system prompt of an agent run and its deferred tools (listed in
/// the prompt by name, offered once loaded), for the tool set as it is now.
pub fn prompt_and_deferred(
    rt: &Runtime,
    session: &wield_core::Session,
    settings: &AgentSettings,
) -> (String, Vec<Arc<Registered>>) {
    let tool_set = rt.tools().current();
    let deferred = tool_set
        .registry
        .list()
        .filter(|r| {
            tool_set
                .policy
                .get(&r.tool.spec().name)
                .is_some_and(|d| d.status == Status::Deferred)
        })
        .cloned()
        .collect();
    let system = SystemPrompt::new(rt.workspace())
        .sandboxed(rt.sandboxed())
        .deferred(tool_set.policy.deferred_prompt(session))
        .replace(settings.system_prompt.clone())
        .instructions(settings.instructions.clone())
        .build();
    (system, deferred)
}

/// An agent on `session` offering `tools`: the system prompt, deferred
/// tools and limits of `agent_settings`, and the provider `settings`
/// describe (its context window among the limits).
fn build_agent(
    rt: &Runtime,
    session: Arc<wield_core::Session>,
    tools: Vec<Arc<Registered>>,
    agent_settings: &AgentSettings,
    settings: &ProviderSettings,
    provider: Provider,
    executor: wield_core::Executor,
) -> Agent {
    let mut limits = agent_settings.limits.clone();
    limits.context_window = settings.context_window;
    let (system, deferred) = prompt_and_deferred(rt, &session, agent_settings);
    Agent::new(
        provider,
        executor,
        session,
        tools,
        Some(system),
        settings.tool_choice.clone(),
        settings.max_tokens,
        settings.temperature,
        limits,
    )
    .with_deferred(deferred)
    .with_names(settings.name.clone(), settings.model.clone())
}

/// The subagents `task` starts: the parent's runtime and approver, its
/// policy narrowed by the named agent's tool layer (never wider than the
/// parent's); the named agent's provider, model, prompt and steps.
struct RuntimeSubagents {
    rt: Runtime,
    approver: Arc<dyn Approver>,
    /// The parent's provider and agent settings (a general subagent's).
    parent: ProviderSettings,
    parent_agent: AgentSettings,
    session_id: String,
    started: AtomicU32,
}

impl Subagents for RuntimeSubagents {
    fn list(&self) -> Vec<(String, String)> {
        crate::subagents(self.rt.config()).unwrap_or_default()
    }

    fn make(&self, name: Option<&str>) -> Result<Agent, String> {
        let settings = match name {
            None => self.parent_agent.clone(),
            Some(n) => {
                let list = crate::subagents(self.rt.config()).map_err(|e| e.to_string())?;
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
            choose(self.rt.config(), Some(&provider_name), model.as_deref()).map_err(|e| e.to_string())?;
        // Its tools and the executor that checks its calls come from one
        // narrowed tool set, as `--agent` gives a run its own.
        let rt = self
            .rt
            .for_subagent(name, &NOT_FOR_SUBAGENTS)
            .map_err(|e| e.to_string())?;
        let executor = rt.executor(Arc::clone(&self.approver)).map_err(|e| e.to_string())?;
        let k = self.started.fetch_add(1, Ordering::Relaxed) + 1;
        let session = rt.session(format!("{}-task-{k}", self.session_id), Driver::Model);
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
