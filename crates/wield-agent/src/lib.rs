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
//!   output tokens of every request and stops hard; `timeout` is wall time;
//!   cancelling stops at once, every call still answered.

mod guard;
mod prune;
mod wire_names;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_core::{Call, Executor, Registered, Session, ToolResult};
use wield_llm::{Block, LlmError, Message, Provider, Request, ResultPart, Role, StreamEvent, ToolChoice, Usage};

pub use guard::{conversation_tokens, estimate_tokens};
pub use wire_names::{registry_names, tool_defs};

/// The loop's limits and settings.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_steps: u32,
    pub token_budget: Option<u64>,
    pub timeout: Option<Duration>,
    pub result_max_tokens: usize,
    pub result_max_percentage: u8,
    pub context_window: Option<u64>,
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
    StepFinished {
        step: u32,
        usage: Usage,
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
        }
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
    /// conversation stays.
    pub fn switch_provider(
        &mut self,
        provider: Provider,
        tool_choice: ToolChoice,
        max_tokens: Option<u32>,
        temperature: Option<f64>,
        context_window: Option<u64>,
    ) {
        self.provider = provider;
        self.tool_choice = tool_choice;
        self.max_tokens = max_tokens;
        self.temperature = temperature;
        self.limits.context_window = context_window;
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
        };
        let deadline = self.limits.timeout.map(|t| started + t);
        loop {
            outcome.steps += 1;
            let step = outcome.steps;
            // After `max_steps` steps with tools, one last turn without.
            let last = step > self.limits.max_steps;
            if last {
                match self.messages.last_mut() {
                    Some(m) if m.role == Role::User => m.content.push(Block::Text { text: LAST_TURN.into() }),
                    _ => self.messages.push(Message::text(Role::User, LAST_TURN)),
                }
            }
            self.pruner.prune(&mut self.messages, step);
            let request = self.request(last);
            on_event(AgentEvent::StepStarted { step });
            let step_cancel = cancel.child_token();
            let timer = deadline.map(|d| {
                let token = step_cancel.clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(d.into()).await;
                    token.cancel();
                })
            });
            let reply = self
                .provider
                .stream(&request, &step_cancel, |e| on_event(AgentEvent::Stream(e)))
                .await;
            if let Some(t) = timer {
                t.abort();
            }
            let mut reply = reply?;
            outcome.usage.add(reply.usage);
            registry_names(&mut reply, &self.tools);
            let text = reply.text();
            if !text.trim().is_empty() {
                outcome.answer = text;
            }
            let calls: Vec<(String, String, Value)> = reply
                .tool_calls()
                .map(|(id, name, input)| (id.to_owned(), name.to_owned(), input.clone()))
                .collect();
            if !reply.content.is_empty() {
                self.messages.push(Message {
                    role: Role::Assistant,
                    content: reply.content.clone(),
                });
            }
            let timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            let stop = if cancel.is_cancelled() {
                Some(StopReason::Cancelled)
            } else if timed_out {
                Some(StopReason::Timeout)
            } else {
                None
            };
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
                let preview = self
                    .tools
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
            let batch_started = Instant::now();
            let ran = self.executor.run_batch(to_run, &self.session, &step_cancel).await;
            let duration = batch_started.elapsed();
            // In call order; a call refused before it ran is marked so.
            let mut ran = ran.into_iter();
            let results: Vec<(ToolResult, bool)> = answered
                .into_iter()
                .map(|pre| match pre {
                    Some(error) => (error, true),
                    None => {
                        let result = ran
                            .next()
                            .unwrap_or_else(|| ToolResult::error("internal error: no result"));
                        let refused = result.metadata.contains_key("refused");
                        (result, refused)
                    }
                })
                .collect();
            for ((id, name, _), (result, _)) in calls.iter().zip(&results) {
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
            if cancel.is_cancelled() {
                outcome.stop = StopReason::Cancelled;
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                outcome.stop = StopReason::Timeout;
                break;
            }
            if self
                .limits
                .token_budget
                .is_some_and(|b| outcome.usage.total_input() + outcome.usage.output >= b)
            {
                outcome.stop = StopReason::TokenBudget;
                break;
            }
        }
        outcome.wall = started.elapsed();
        Ok(outcome)
    }

    /// The request of a step; the last one goes without tools.
    fn request(&self, last: bool) -> Request {
        let tools = if last { Vec::new() } else { tool_defs(&self.tools) };
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
