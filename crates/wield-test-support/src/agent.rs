//! An [`AgentSession`] on a runtime loaded in the test's own process, built
//! and run as `wield run` headless builds and runs it
//! (`crates/wield-cli/src/commands/run_agent.rs`), against the scripted
//! provider: the harness of the agent's behaviour tests, which assert on
//! the events the session emits, its outcome, the requests the provider
//! got and the saved session instead of a binary's output.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_agent::session::Ended;
use wield_agent::{AgentEvent, AgentSession, AgentTools, Outcome};
use wield_core::config::GlobalDir;
use wield_core::policy::{PolicyOptions, RuleList};
use wield_llm::{LlmError, StreamEvent, Usage};
use wield_runtime::{Runtime, RuntimeOptions};

use crate::scripted::Scripted;

/// A workspace whose configuration talks to `provider`, then `extra` (its
/// lines right after `[providers.fake]` belong to that table until the
/// next header), with `notes.txt` saying "the answer is 42".
pub fn project(provider: &Scripted, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".wield/config.toml",
        &format!("{}\n{extra}", provider.config()),
    );
    write(dir.path(), "notes.txt", "the answer is 42\n");
    dir
}

/// Writes `text` to `path` under `dir`, making its directories.
pub fn write(dir: &Path, path: &str, text: &str) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What `wield`'s global flags give the runtime: `--set`,
/// `--include-tools`, `--exclude-tools` (comma-separated, as typed),
/// `--agent` (its policy layer) and `--audit`.
#[derive(Clone, Copy, Default)]
pub struct Flags<'a> {
    pub set: &'a [&'a str],
    pub include_tools: Option<&'a str>,
    pub exclude_tools: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub audit: Option<&'a Path>,
}

/// The runtime of `dir` with the agent's own `tools`, as `wield` loads it
/// with `flags`; no global configuration directory and no environment, so
/// a test never reads the settings of whoever runs it.
pub async fn load(dir: &Path, tools: &AgentTools, flags: Flags<'_>) -> Runtime {
    let list = |flag: &str, entries: Option<&str>| {
        entries.map(|e| {
            let entries: Vec<&str> = e.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
            RuleList::parse(flag, &entries).unwrap()
        })
    };
    let options = RuntimeOptions {
        tools: tools.tools(),
        config_keys: [wield_llm::settings::CONFIG_KEYS, wield_agent::CONFIG_KEYS].concat(),
        global_dir: GlobalDir::Nowhere,
        set: flags.set.iter().map(|s| (*s).to_owned()).collect(),
        audit: flags.audit.map(Path::to_path_buf),
        policy: PolicyOptions {
            agent: flags.agent.map(str::to_owned),
            include: list("--include-tools", flags.include_tools),
            exclude: list("--exclude-tools", flags.exclude_tools),
            ..PolicyOptions::default()
        },
        ..RuntimeOptions::default()
    };
    Runtime::load(dir, options).await.unwrap()
}

/// What an [`AgentEvent`] said, kept past the callback.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    StepStarted(u32),
    Text(String),
    Retrying {
        attempt: u32,
        of: u32,
    },
    ToolStarted {
        id: String,
        name: String,
        input: Value,
        preview: String,
    },
    ToolOutput {
        id: String,
        delta: String,
    },
    ToolFinished {
        id: String,
        name: String,
        success: bool,
        output: String,
        error: Option<String>,
    },
    StepFinished {
        step: u32,
        usage: Usage,
    },
    Compacted {
        before_tokens: usize,
        after_tokens: usize,
    },
}

impl Event {
    fn of(event: &AgentEvent<'_>) -> Option<Self> {
        Some(match event {
            AgentEvent::StepStarted { step } => Self::StepStarted(*step),
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => Self::Text(text.clone()),
            AgentEvent::Stream(StreamEvent::Retrying { attempt, of, .. }) => Self::Retrying {
                attempt: *attempt,
                of: *of,
            },
            AgentEvent::Stream(_) => return None,
            AgentEvent::ToolStarted {
                id,
                name,
                input,
                preview,
            } => Self::ToolStarted {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                input: (*input).clone(),
                preview: preview.clone(),
            },
            AgentEvent::ToolOutput { id, delta } => Self::ToolOutput {
                id: (*id).to_owned(),
                delta: (*delta).to_owned(),
            },
            AgentEvent::ToolFinished { id, name, result, .. } => Self::ToolFinished {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                success: result.success,
                output: result.output.clone(),
                error: result.error.clone(),
            },
            AgentEvent::StepFinished { step, usage } => Self::StepFinished {
                step: *step,
                usage: *usage,
            },
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
            } => Self::Compacted {
                before_tokens: *before_tokens,
                after_tokens: *after_tokens,
            },
        })
    }
}

/// One run of a session: how it ended and what it said on the way.
pub struct Ran {
    pub outcome: Result<Outcome, LlmError>,
    pub events: Vec<Event>,
}

impl Ran {
    /// The outcome of a run that did not fail.
    pub fn ok(&self) -> &Outcome {
        match &self.outcome {
            Ok(o) => o,
            Err(e) => panic!("the run failed: {e}"),
        }
    }

    /// The `Compacted` events, as (before, after) estimates.
    pub fn compactions(&self) -> Vec<(usize, usize)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Compacted {
                    before_tokens,
                    after_tokens,
                } => Some((*before_tokens, *after_tokens)),
                _ => None,
            })
            .collect()
    }
}

/// How a session is built, as `wield run` builds it from its flags.
#[derive(Clone, Copy, Default)]
pub struct Build<'a> {
    /// `--agent`.
    pub agent: Option<&'a str>,
    /// `--yes`: every call approved; else headless, a call that needs a
    /// person is refused.
    pub yes: bool,
    pub max_steps: Option<u32>,
    pub token_budget: Option<u64>,
    /// `--resume [NAME]`: `Some("")` the newest that ended.
    pub resume: Option<&'a str>,
}

/// The session `wield run` builds on `rt` with `build`.
pub fn session(rt: &Runtime, tools: &AgentTools, build: Build<'_>) -> AgentSession {
    let approver: Arc<dyn wield_core::Approver> = if build.yes {
        Arc::new(wield_core::approval::YesApprover)
    } else {
        Arc::new(wield_core::approval::HeadlessApprover)
    };
    let resumed = build
        .resume
        .map(|name| wield_agent::session::load(rt.workspace(), name).unwrap());
    AgentSession::builder(rt)
        .tools(tools)
        .agent(build.agent)
        .provider(None)
        .model(None)
        .approver(approver)
        .max_steps(build.max_steps)
        .token_budget(build.token_budget)
        .timeout(None)
        .id(wield_agent::session::new_session_id())
        .resume(resumed)
        .build()
        .unwrap()
}

/// Runs `task` in `session`, keeping its events.
pub async fn run(session: &mut AgentSession, task: &str) -> Ran {
    let mut events = Vec::new();
    let outcome = session
        .run(task, &CancellationToken::new(), |e| events.extend(Event::of(&e)))
        .await;
    Ran { outcome, events }
}

/// Saves the session as `wield run` does after `ran` (unless
/// `--ephemeral`): how it stopped, or, when it failed, its error named
/// after the provider. Returns the file.
pub fn save(session: &AgentSession, ran: &Ran) -> std::path::PathBuf {
    match &ran.outcome {
        Ok(o) => session.save(Ended::Stopped(o.stop.as_str()), o.steps, o.usage),
        Err(e) => {
            let error = format!("{}: {e}", session.provider().name);
            session.save(Ended::Failed(&error), 0, Usage::default())
        }
    }
    .unwrap()
}

/// One `wield run` on `dir`, as the binary makes it: the runtime loaded
/// with `flags`, the session built with `build`, run on `task` and saved.
pub async fn run_once(dir: &Path, flags: Flags<'_>, build: Build<'_>, task: &str) -> Ran {
    let tools = AgentTools::new();
    let rt = load(dir, &tools, flags).await;
    let mut session = session(&rt, &tools, build);
    let ran = run(&mut session, task).await;
    save(&session, &ran);
    ran
}

/// The saved sessions' files of `dir` (beside them, the directory's
/// `.gitignore`).
pub fn session_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(wield_agent::session::sessions_dir(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect()
}

/// The contents of the `tool` messages of a request, in order.
pub fn tool_contents(request: &Value) -> Vec<String> {
    crate::scripted::tool_results(request)
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}
