//! The tools only an agent has: `done` (the model ends the run with a
//! summary and a status) and `ask` (the model asks the person). They go
//! through the same pipeline as every tool (schema, policy, approval,
//! events); what they do reaches the loop and the front-end through the
//! session: [`AgentSignals`].

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wield_core::{Context, Session, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};

/// How the model says the task went (`done {status}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoneStatus {
    Success,
    Partial,
    Failed,
}

impl DoneStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Partial => "partial",
            Self::Failed => "failed",
        }
    }
}

/// The model's closing report (`done`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneReport {
    pub summary: String,
    pub status: DoneStatus,
}

pub use wield_core::ask::{AskOption, Asker, Question};

/// What the agent tools leave for the loop and take from the front-end, kept
/// in the session.
#[derive(Default)]
pub struct AgentSignals {
    done: Mutex<Option<DoneReport>>,
}

impl AgentSignals {
    /// The signals of `session`.
    pub fn of(session: &Session) -> Arc<Self> {
        session.extension(Self::default)
    }

    /// The report `done` left, taken (the loop reads it once).
    pub fn take_done(&self) -> Option<DoneReport> {
        self.done.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Whether `done` was called (and not yet taken).
    pub fn is_done(&self) -> bool {
        self.done.lock().unwrap_or_else(PoisonError::into_inner).is_some()
    }
}

/// The agent's tools, for the runtime's registry.
pub fn agent_tools() -> Vec<ToolRef> {
    vec![Arc::new(Done::new()), ask_tool()]
}

/// `ask` alone, for front-ends where a run cannot end or start subagents
/// (an MCP server: the client's user answers through a form).
pub fn ask_tool() -> ToolRef {
    Arc::new(Ask::new())
}

fn traits(parallel: bool) -> ToolTraits {
    ToolTraits {
        parallel,
        // They change nothing outside the run.
        read_only: true,
        groups: vec!["agent".into()],
        ..ToolTraits::default()
    }
}

/// `done {summary, status}`.
pub struct Done {
    base: ToolBase,
}

impl Done {
    fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "done",
                    "End the task: give a short summary of what you did and found, and whether the task succeeded \
                     (success), was partly done (partial) or could not be done (failed). The run ends after this \
                     step; call it alone, after the work is finished.",
                    json!({
                        "type": "object",
                        "properties": {
                            "summary": {"type": "string", "description": "What was done and what remains, for the person."},
                            "status": {"type": "string", "enum": ["success", "partial", "failed"]}
                        },
                        "required": ["summary", "status"],
                        "additionalProperties": false
                    }),
                ),
                traits(true),
            ),
        }
    }
}

#[async_trait]
impl Tool for Done {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let report: DoneReport = match serde_json::from_value(input) {
            Ok(r) => r,
            Err(e) => return ToolResult::error(format!("invalid arguments: {e}")),
        };
        let status = report.status;
        *AgentSignals::of(&ctx.session)
            .done
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(report);
        ToolResult::ok(format!("Recorded ({}); the run ends after this step.", status.as_str()))
    }
}

/// `ask {question, options?, multi_select?}`.
pub struct Ask {
    base: ToolBase,
}

impl Ask {
    fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "ask",
                    "Ask the person a question when you cannot go on without their decision (not for things \
                     you can find out yourself). Give options when there are a few clear choices.",
                    json!({
                        "type": "object",
                        "properties": {
                            "question": {"type": "string"},
                            "options": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "label": {"type": "string"},
                                        "description": {"type": "string"}
                                    },
                                    "required": ["label"],
                                    "additionalProperties": false
                                }
                            },
                            "multi_select": {"type": "boolean", "description": "Several options may be chosen."}
                        },
                        "required": ["question"],
                        "additionalProperties": false
                    }),
                ),
                traits(false),
            ),
        }
    }
}

/// What `ask` answers when nobody can answer.
pub const NOBODY_TO_ASK: &str = "Nobody can answer questions here (a headless run, or a client that cannot ask its \
                                 user). Do not ask again: go on with the task on reasonable assumptions, and state the \
                                 assumptions you made in your answer.";

#[async_trait]
impl Tool for Ask {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let question: Question = match serde_json::from_value(input) {
            Ok(q) => q,
            Err(e) => return ToolResult::error(format!("invalid arguments: {e}")),
        };
        let Some(asker) = wield_core::ask::asker(&ctx.session) else {
            return ToolResult::error(NOBODY_TO_ASK);
        };
        tokio::select! {
            answer = asker.ask(&question) => match answer {
                Ok(text) => ToolResult::ok(format!("The person answered: {text}")),
                Err(e) => ToolResult::error(e),
            },
            () = ctx.cancel.cancelled() => ToolResult::error("cancelled: the question was not answered"),
        }
    }
}
