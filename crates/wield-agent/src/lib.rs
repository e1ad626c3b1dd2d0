//! The agent loop: the model asks, the executor decides and runs, the model
//! sees the results, until the work is done or a limit is reached.
//!
//! One step sends the conversation with the visible tools, streams the
//! reply, runs its tool calls through the executor (policy, approval,
//! sandbox, limits; parallel-safe calls together) and appends their results
//! in call order. Its rules:
//!
//! - **Every tool call gets exactly one result before the next request**:
//!   denied, refused, failed, cancelled, or with arguments that are not JSON.
//! - **Failed-call pruning**: a call refused before it ran (unknown tool,
//!   invalid arguments, denied, blocked by a hook, unreadable arguments) and
//!   its error result leave the history as a pair once the model has seen
//!   them; an assistant message left empty goes too. Errors of tools that
//!   ran stay.
//! - **Result guard**: a result over `result_max_tokens` (estimated), or one
//!   that would take the conversation past `result_max_percentage` of the
//!   context window, is replaced by an error giving the size, the limit and
//!   what to do.
//! - **Limits**: after `max_steps` steps the tools are withheld and the model
//!   is told to answer in text, one last turn; `token_budget` counts the input and
//!   output tokens of every request and stops hard; `timeout` is wall time,
//!   running calls included; cancelling stops at once, every call still
//!   answered. The steps, tokens and deadline are one pool shared with the
//!   subagents the run's `task` calls start: what they use, the run no
//!   longer has, and they stop where the run would.
//! - **Compaction**: when a request would pass `compact_at` of the context
//!   window (or the provider says it did, once per step), the model writes
//!   a hand-off summary and the history becomes the most recent user
//!   messages and that summary ([`Agent::compact`] does it on demand).
//! - **Audit**: each model turn is written to the executor's audit log
//!   beside the calls it caused (provider, model, usage, stop, call ids).

mod budget;
mod compact;
mod guard;
mod prune;
#[cfg(feature = "runtime")]
pub mod session;
mod settings;
mod system_prompt;
pub mod task;
pub mod tools;
mod turn_audit;
mod wire_names;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use wield_core::events::Event;
use wield_core::{Call, Executor, Registered, Session, ToolResult};
use wield_llm::{Block, LlmError, Message, Provider, Request, ResultPart, Role, StreamEvent, ToolChoice, Usage};

pub use compact::{Compaction, KEEP_USER_TOKENS};
pub use guard::{conversation_tokens, estimate_tokens};
#[cfg(feature = "runtime")]
pub use session::{AgentSession, AgentSessionBuilder, AgentTools, SavedSession, SessionError};
pub use settings::{AgentSettings, CONFIG_KEYS, SettingsError, subagents};
pub use system_prompt::{PROJECT_FILES, SystemPrompt, project_instructions};
pub use wire_names::{registry_names, tool_defs};

/// The loop's limits and settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_steps: u32,
    pub token_budget: Option<u64>,
    pub timeout: Option<Duration>,
    pub result_max_tokens: usize,
    pub result_max_percentage: u8,
    pub context_window: Option<u64>,
    /// Compact when a request would pass this percentage of the window.
    pub compact_at: u8,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 50,
            token_budget: None,
            timeout: None,
            result_max_tokens: 20_000,
            result_max_percentage: 95,
            context_window: None,
            compact_at: 85,
        }
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The model answered without calling a tool.
    Done,
    /// The last allowed step was taken; the model answered in text.
    MaxSteps,
    TokenBudget,
    Timeout,
    Cancelled,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::MaxSteps => "max_steps",
            Self::TokenBudget => "token_budget",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub stop: StopReason,
    /// The model's last text.
    pub answer: String,
    pub steps: u32,
    pub usage: Usage,
    /// Calls by tool name.
    pub tool_calls: BTreeMap<String, u32>,
    pub wall: Duration,
    /// The model's closing report, when it called `done`.
    pub done: Option<tools::DoneReport>,
}

/// What the loop tells its front-end as it goes.
#[derive(Clone, Debug)]
pub enum AgentEvent<'a> {
    StepStarted {
        step: u32,
    },
    Stream(&'a StreamEvent),
    ToolStarted {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
        /// The tool's one-line preview of the call.
        preview: String,
    },
    ToolFinished {
        id: &'a str,
        name: &'a str,
        result: &'a ToolResult,
        /// How long the step's calls took (they may run together).
        duration: Duration,
    },
    /// A piece of a running call's output (a command's lines as they come).
    ToolOutput {
        id: &'a str,
        delta: &'a str,
    },
    StepFinished {
        step: u32,
        usage: Usage,
    },
    /// The conversation was compacted (estimated tokens of the request).
    Compacted {
        before_tokens: usize,
        after_tokens: usize,
    },
}

/// One agent session: the conversation and what it runs with.
pub struct Agent {
    provider: Provider,
    executor: Executor,
    session: Arc<Session>,
    /// The tools the model may call, by their wire names.
    tools: Vec<Arc<Registered>>,
    system: Option<String>,
    tool_choice: ToolChoice,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    limits: Limits,
    messages: Vec<Message>,
    pruner: prune::Pruner,
    /// The deferred tools: offered once `load_tools` loaded them.
    deferred: Vec<Arc<Registered>>,
    /// The provider and model, as the audit log names them.
    names: (String, String),
    /// The tokens the provider said the last request and its reply held.
    reported_tokens: usize,
    /// Running calls' output, from the executor's events.
    output: mpsc::UnboundedReceiver<(String, String)>,
    /// The parent run's limits, for a subagent: drawn from with its own.
    within: Option<budget::Budget>,
}

/// The text the last turn is told when the steps run out.
const LAST_TURN: &str = "You have used every step allowed for this task. Do not call tools any more: answer now, \
                         in text, with what you have found and what remains.";

impl Agent {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        provider: Provider,
        executor: Executor,
        session: Arc<Session>,
        tools: Vec<Arc<Registered>>,
        system: Option<String>,
        tool_choice: ToolChoice,
        max_tokens: Option<u32>,
        temperature: Option<f64>,
        limits: Limits,
    ) -> Self {
        let (tx, output) = mpsc::unbounded_channel();
        executor.events().subscribe(Arc::new(move |event: &Event| {
            if let Event::OutputDelta { call_id, text, .. } = event {
                let _ = tx.send((call_id.clone(), text.clone()));
            }
        }));
        Self {
            provider,
            executor,
            session,
            tools,
            system,
            tool_choice,
            max_tokens,
            temperature,
            limits,
            messages: Vec::new(),
            pruner: prune::Pruner::default(),
            deferred: Vec::new(),
            names: (String::new(), String::new()),
            reported_tokens: 0,
            output,
            within: None,
        }
    }

    /// A subagent of the run whose limits are `budget`: its steps, tokens
    /// and time come out of that run's.
    #[must_use]
    pub(crate) fn within(mut self, budget: budget::Budget) -> Self {
        self.within = Some(budget);
        self
    }

    /// The deferred tools: listed by name in the system prompt, offered
    /// with their schemas once `load_tools` loaded them in this session.
    #[must_use]
    pub fn with_deferred(mut self, tools: Vec<Arc<Registered>>) -> Self {
        self.deferred = tools;
        self
    }

    /// The provider's and the model's names, for the audit log.
    #[must_use]
    pub fn with_names(mut self, provider: impl Into<String>, model: impl Into<String>) -> Self {
        self.names = (provider.into(), model.into());
        self
    }

    /// The tools offered now: the visible ones and the deferred ones
    /// loaded so far.
    fn offered(&self) -> Vec<Arc<Registered>> {
        let mut tools = self.tools.clone();
        tools.extend(
            self.deferred
                .iter()
                .filter(|r| self.session.is_loaded(&r.tool.spec().name))
                .cloned(),
        );
        tools
    }

    /// The session the agent's calls run in (its tools' state: the todo
    /// list, loaded tools).
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The conversation so far (every call answered).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Goes on with an earlier conversation (a resumed session): the next
    /// task is appended to it.
    pub fn resume(&mut self, messages: Vec<Message>) {
        self.messages = messages;
    }

    /// Talks to another provider or model from the next step on; the
    /// conversation stays. `settings` gives the tool choice, limits and
    /// names (for the audit) of the new one.
    pub fn switch_provider(&mut self, provider: Provider, settings: &wield_llm::settings::ProviderSettings) {
        self.provider = provider;
        self.tool_choice = settings.tool_choice.clone();
        self.max_tokens = settings.max_tokens;
        self.temperature = settings.temperature;
        self.limits.context_window = settings.context_window;
        self.names = (settings.name.clone(), settings.model.clone());
    }

    /// Runs `prompt` to its end: a text answer, a limit, or cancellation.
    /// A provider failure is an error; the conversation stays well-formed.
    pub async fn run(
        &mut self,
        prompt: &str,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(AgentEvent<'_>),
    ) -> Result<Outcome, LlmError> {
        let started = Instant::now();
        self.messages.push(Message::text(Role::User, prompt));
        let mut outcome = Outcome {
            stop: StopReason::Done,
            answer: String::new(),
            steps: 0,
            usage: Usage::default(),
            tool_calls: BTreeMap::new(),
            wall: Duration::ZERO,
            done: None,
        };
        let budget = self
            .within
            .clone()
            .unwrap_or_else(|| budget::Budget::new(&self.limits, started));
        // The `task` calls of this run draw from its budget.
        budget::publish(&self.session, &budget);
        let deadline = budget.deadline(self.limits.timeout, started);
        loop {
            // Checked before each request, so a subagent started when the
            // run's time or tokens are gone stops without one.
            if let Some(stop) = interrupted(cancel, deadline) {
                outcome.stop = stop;
                break;
            }
            let own_tokens = self
                .limits
                .token_budget
                .is_some_and(|b| outcome.usage.total_input() + outcome.usage.output >= b);
            if budget.tokens_spent() || own_tokens {
                outcome.stop = StopReason::TokenBudget;
                break;
            }
            outcome.steps += 1;
            let step = outcome.steps;
            // After `max_steps` steps with tools, or when the run's steps
            // are used up, one last turn without.
            let own_last = step > self.limits.max_steps;
            let last = own_last || !budget.take_step();
            if last && !own_last && step == 1 {
                // A subagent started after the run's steps were used up has
                // done nothing to report: it makes no request, or each
                // `task` call of a step would buy one past the limit.
                outcome.steps = 0;
                outcome.stop = StopReason::MaxSteps;
                break;
            }
            if last {
                match self.messages.last_mut() {
                    Some(m) if m.role == Role::User => m.content.push(Block::Text { text: LAST_TURN.into() }),
                    _ => self.messages.push(Message::text(Role::User, LAST_TURN)),
                }
            }
            self.pruner.prune(&mut self.messages, step);
            on_event(AgentEvent::StepStarted { step });
            let step_cancel = cancel.child_token();
            let timer = deadline.map(|d| cut_at(d, &step_cancel));
            // Compacted first when the request would pass `compact_at`;
            // when the provider says it was too long anyway, once more.
            let mut overflowed = false;
            let reply = loop {
                if overflowed || self.needs_compaction(last) {
                    match self.compact(&step_cancel).await {
                        Ok(Some(c)) => {
                            outcome.usage.add(c.usage);
                            budget.spend(c.usage);
                            on_event(AgentEvent::Compacted {
                                before_tokens: c.before_tokens,
                                after_tokens: c.after_tokens,
                            });
                        }
                        Ok(None) => {}
                        Err(e) => break Err(e),
                    }
                }
                let request = self.request(last);
                let reply = self
                    .provider
                    .stream(&request, &step_cancel, |e| on_event(AgentEvent::Stream(e)))
                    .await;
                match reply {
                    Err(e) if e.is_context_overflow() && !overflowed && !step_cancel.is_cancelled() => {
                        overflowed = true;
                    }
                    r => break r,
                }
            };
            if let Some(t) = timer {
                t.abort();
            }
            let mut reply = reply?;
            outcome.usage.add(reply.usage);
            budget.spend(reply.usage);
            self.reported_tokens =
                usize::try_from(reply.usage.total_input() + reply.usage.output).unwrap_or(usize::MAX);
            let offered = self.offered();
            registry_names(&mut reply, &offered);
            let text = reply.text();
            if !text.trim().is_empty() {
                outcome.answer = text;
            }
            let calls: Vec<(String, String, Value)> = reply
                .tool_calls()
                .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
                .collect();
            self.audit_turn(Some(step), &reply, &calls);
            if !reply.content.is_empty() {
                self.messages.push(Message {
                    role: Role::Assistant,
                    content: reply.content.clone(),
                });
            }
            let stop = interrupted(cancel, deadline);
            if calls.is_empty() || stop.is_some() || last {
                self.answer_unrun(&calls, stop);
                on_event(AgentEvent::StepFinished {
                    step,
                    usage: outcome.usage,
                });
                outcome.stop = stop.unwrap_or(if last { StopReason::MaxSteps } else { StopReason::Done });
                break;
            }
            // The calls: unreadable ones answered at once, the rest run.
            let bad: BTreeMap<&str, String> = reply.bad_calls.iter().map(|b| (b.id.as_str(), b.message())).collect();
            // Per call: its error when it cannot run, `None` when it runs.
            let mut answered: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
            let mut to_run = Vec::new();
            for (id, name, input) in &calls {
                *outcome.tool_calls.entry(name.clone()).or_default() += 1;
                let preview = offered
                    .iter()
                    .find(|r| r.tool.spec().name == *name)
                    .map_or_else(|| name.clone(), |r| r.tool.preview(input, 120));
                on_event(AgentEvent::ToolStarted {
                    id,
                    name,
                    input,
                    preview,
                });
                if let Some(message) = bad.get(id.as_str()) {
                    answered.push(Some(ToolResult::error(message.clone())));
                } else {
                    to_run.push(Call::new(id.clone(), name.clone(), input.clone()));
                    answered.push(None);
                }
            }
            // The deadline cuts the calls too. A subagent's are cut at it;
            // the run's own a moment later, since a subagent stops at the
            // deadline by itself and its answer should reach its result
            // before the `task` call still waiting for it is cut.
            let timer = deadline.map(|d| {
                let grace = if self.within.is_some() {
                    Duration::ZERO
                } else {
                    CUT_GRACE
                };
                cut_at(d.checked_add(grace).unwrap_or(d), &step_cancel)
            });
            while self.output.try_recv().is_ok() {}
            let ran = {
                let batch = self.executor.run_batch_timed(to_run, &self.session, &step_cancel);
                tokio::pin!(batch);
                loop {
                    tokio::select! {
                        ran = &mut batch => break ran,
                        Some((id, delta)) = self.output.recv() => on_event(AgentEvent::ToolOutput { id: &id, delta: &delta }),
                    }
                }
            };
            if let Some(t) = timer {
                t.abort();
            }
            // Calls the deadline cut say so, not that someone cancelled them.
            let time_up = deadline.is_some_and(|d| Instant::now() >= d) && !cancel.is_cancelled();
            // What the last output flush sent as the calls ended.
            while let Ok((id, delta)) = self.output.try_recv() {
                on_event(AgentEvent::ToolOutput { id: &id, delta: &delta });
            }
            // In call order; a call refused before it ran is marked so.
            let mut ran = ran.into_iter();
            let mut durations = Vec::with_capacity(calls.len());
            let results: Vec<(ToolResult, bool)> = answered
                .into_iter()
                .map(|pre| match pre {
                    Some(error) => {
                        durations.push(Duration::ZERO);
                        (error, true)
                    }
                    None => {
                        let (mut result, took) = ran
                            .next()
                            .unwrap_or_else(|| (ToolResult::error("internal error: no result"), Duration::ZERO));
                        durations.push(took);
                        if time_up && result.metadata.contains_key("cancelled") {
                            result = ToolResult::error(TIME_UP).with_meta("cancelled", true);
                        }
                        let refused = result.metadata.contains_key("refused");
                        (result, refused)
                    }
                })
                .collect();
            // A subagent's tokens are the run's too.
            for (result, _) in &results {
                if let Some(Ok(used)) = result
                    .metadata
                    .get(task::SUBAGENT_USAGE)
                    .map(|u| serde_json::from_value::<Usage>(u.clone()))
                {
                    outcome.usage.add(used);
                }
            }
            for (((id, name, _), (result, _)), duration) in calls.iter().zip(&results).zip(durations) {
                on_event(AgentEvent::ToolFinished {
                    id,
                    name,
                    result,
                    duration,
                });
            }
            let used = guard::conversation_tokens(&self.messages);
            let content: Vec<Block> = calls
                .iter()
                .zip(&results)
                .map(|((id, ..), (result, _))| result_block(id, guard::guard(result, used, &self.limits)))
                .collect();
            self.messages.push(Message {
                role: Role::User,
                content,
            });
            for ((id, ..), (_, refused)) in calls.iter().zip(&results) {
                if *refused {
                    self.pruner.mark(id, step);
                }
            }
            on_event(AgentEvent::StepFinished {
                step,
                usage: outcome.usage,
            });
            // `done`: the run ends after the step that called it.
            if let Some(report) = tools::AgentSignals::of(&self.session).take_done() {
                outcome.answer.clone_from(&report.summary);
                outcome.done = Some(report);
                outcome.stop = StopReason::Done;
                break;
            }
        }
        outcome.wall = started.elapsed();
        Ok(outcome)
    }

    /// The request a run on `task` would start with, from a fresh
    /// conversation: the system prompt, every tool offered, the limits. A
    /// front-end checks with it that a model can take wield's requests (the
    /// context they fill, tool calling).
    pub fn first_request(&self, task: &str) -> Request {
        Request {
            messages: vec![Message::text(wield_llm::Role::User, task)],
            ..self.request(false)
        }
    }

    /// The request of a step; the last one goes without tools.
    fn request(&self, last: bool) -> Request {
        let tools = if last { Vec::new() } else { tool_defs(&self.offered()) };
        Request {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tool_choice: if tools.is_empty() {
                ToolChoice::Auto
            } else {
                self.tool_choice.clone()
            },
            tools,
            parallel_tool_calls: None,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            foreign_thinking: Default::default(),
        }
    }

    /// Calls of a reply that will not run (the run stops): each still gets
    /// its result, so the saved conversation stays well-formed.
    fn answer_unrun(&mut self, calls: &[(String, String, Value)], stop: Option<StopReason>) {
        if calls.is_empty() {
            return;
        }
        let why = match stop {
            Some(StopReason::Cancelled) => "cancelled by the user before it ran",
            Some(StopReason::Timeout) => "not run: the run's time limit was reached",
            _ => "not run: the run ended",
        };
        let content = calls
            .iter()
            .map(|(id, ..)| result_block(id, ToolResult::error(why)))
            .collect();
        self.messages.push(Message {
            role: Role::User,
            content,
        });
    }
}

/// How long after the deadline the run's own calls are cut (a subagent's
/// are cut at it).
const CUT_GRACE: Duration = Duration::from_secs(2);

/// The result of a call the run's deadline cut.
const TIME_UP: &str = "stopped: the run's time limit was reached while it ran";

/// Cancels `token` at `when`.
fn cut_at(when: Instant, token: &CancellationToken) -> tokio::task::JoinHandle<()> {
    let token = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(when.into()).await;
        token.cancel();
    })
}

/// Why a run must stop now, if it must: its deadline passed, or it was
/// cancelled. The deadline is asked first: a subagent's cancellation comes
/// from its parent's step, which its parent's timer cancels just after the
/// same deadline, and the subagent should say it ran out of time.
fn interrupted(cancel: &CancellationToken, deadline: Option<Instant>) -> Option<StopReason> {
    if deadline.is_some_and(|d| Instant::now() >= d) {
        Some(StopReason::Timeout)
    } else if cancel.is_cancelled() {
        Some(StopReason::Cancelled)
    } else {
        None
    }
}

fn result_block(id: &str, result: ToolResult) -> Block {
    let text = match (&result.error, result.output.is_empty()) {
        (Some(e), true) => e.clone(),
        (Some(e), false) => format!("{}\n{e}", result.output),
        (None, _) => result.output.clone(),
    };
    Block::ToolResult {
        tool_use_id: id.to_owned(),
        content: vec![ResultPart::Text { text }],
        is_error: !result.success,
    }
}
