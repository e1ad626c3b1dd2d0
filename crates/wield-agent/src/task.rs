//! `task {description, prompt, agent?}`: a subagent with its own
//! conversation, system prompt and step budget, under the parent's policy
//! and approval rules. It has no `task` or `ask` of its own (depth 1), runs
//! at the same time as the other `task` calls of a step, and draws from the
//! run's limits: its steps with tools, its tokens and its time come out of
//! the parent run's, and cancelling the run cancels it. Its usage is shown
//! in the parent's (the result's `subagent_usage` metadata, which the loop
//! adds to the run's usage).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_llm::{Role, Usage};

use crate::{Agent, StopReason};

/// The metadata key carrying a subagent's usage to its parent.
pub const SUBAGENT_USAGE: &str = "subagent_usage";

/// The tools a subagent does not get.
pub const NOT_FOR_SUBAGENTS: [&str; 2] = ["task", "ask"];

/// Makes the subagents `task` runs: the front-end, which knows the
/// providers, the runtime and the approver.
pub trait Subagents: Send + Sync {
    /// The configured subagents (`[agents.NAME] subagent = true`): name and
    /// what they are for.
    fn list(&self) -> Vec<(String, String)>;

    /// A fresh subagent: `name`'s, or a general one.
    fn make(&self, name: Option<&str>) -> Result<Agent, String>;
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    description: String,
    prompt: String,
    #[serde(default)]
    agent: Option<String>,
}

/// The `task` tool. Its subagents come from the front-end once it has built
/// them ([`Task::set`]).
pub struct Task {
    base: ToolBase,
    /// The description naming the configured subagents, once known.
    listed: OnceLock<ToolBase>,
    subagents: OnceLock<Arc<dyn Subagents>>,
}

const DESCRIPTION: &str = "Hand a self-contained piece of work to a subagent: it gets its own conversation, uses \
                           the same tools under the same rules (a configured subagent may have fewer; none can start \
                           tasks or ask the person), and returns its final answer. Its steps, tokens and time come \
                           out of this run's limits. Several task calls in one step run at the same time. Give it \
                           everything it needs in `prompt`; it does not see this conversation.";

fn base(description: String) -> ToolBase {
    ToolBase::new(
        ToolSpec::new(
            "task",
            description,
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A few words on what the subagent is for."},
                    "prompt": {"type": "string", "description": "The whole task, with every detail it needs."},
                    "agent": {"type": "string", "description": "A configured subagent (the description lists them); omit for a general one."}
                },
                "required": ["description", "prompt"],
                "additionalProperties": false
            }),
        ),
        ToolTraits {
            parallel: true,
            // Its calls are checked and approved one by one.
            read_only: true,
            groups: vec!["agent".into()],
            ..ToolTraits::default()
        },
    )
}

impl Task {
    pub fn new() -> Self {
        Self {
            base: base(DESCRIPTION.into()),
            listed: OnceLock::new(),
            subagents: OnceLock::new(),
        }
    }

    /// Where subagents come from; the description lists the configured ones.
    pub fn set(&self, subagents: Arc<dyn Subagents>) {
        let list = subagents.list();
        if !list.is_empty() {
            let names: Vec<String> = list.iter().map(|(n, d)| format!("`{n}`: {d}")).collect();
            let _ = self.listed.set(base(format!(
                "{DESCRIPTION} Configured subagents: {}.",
                names.join("; ")
            )));
        }
        let _ = self.subagents.set(subagents);
    }
}

impl Default for Task {
    fn default() -> Self {
        Self::new()
    }
}

/// One line on the subagent's tool use: `read ×2, grep ×1`.
fn tool_use(calls: &BTreeMap<String, u32>) -> String {
    if calls.is_empty() {
        return "no tools".into();
    }
    calls
        .iter()
        .map(|(n, k)| format!("{n} ×{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The line saying which limit stopped a subagent: `[stopped by the step
/// limit after 3 steps]`.
fn stopped_by(limit: &str, steps: u32) -> String {
    if steps == 0 {
        format!("[stopped by {limit} before its first step]")
    } else {
        format!(
            "[stopped by {limit} after {steps} step{}]",
            if steps == 1 { "" } else { "s" }
        )
    }
}

fn usage_metadata(result: &mut ToolResult, usage: Usage) {
    if let Ok(v) = serde_json::to_value(usage) {
        result.metadata.insert(SUBAGENT_USAGE.into(), v);
    }
}

#[async_trait]
impl Tool for Task {
    fn base(&self) -> &ToolBase {
        self.listed.get().unwrap_or(&self.base)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match serde_json::from_value(input) {
            Ok(i) => i,
            Err(e) => return ToolResult::error(format!("invalid arguments: {e}")),
        };
        let Some(subagents) = self.subagents.get() else {
            return ToolResult::error("task is not available here: do the work yourself");
        };
        let child = match subagents.make(input.agent.as_deref()) {
            Ok(a) => a,
            Err(e) => return ToolResult::error(e),
        };
        // The calling run's limits are the subagent's too.
        let child = match crate::budget::of(&ctx.session) {
            Some(budget) => child.within(budget),
            None => child,
        };
        // The loop's future holds the stream's callback, which is not
        // `Send`: the subagent runs on a thread of its own, in this runtime.
        let cancel = ctx.cancel.clone();
        let prompt = input.prompt.clone();
        let handle = tokio::runtime::Handle::current();
        let mut child = child;
        let ran = tokio::task::spawn_blocking(move || {
            let outcome = handle.block_on(child.run(&prompt, &cancel, |_| {}));
            (child, outcome)
        })
        .await;
        let (child, outcome) = match ran {
            Ok(r) => r,
            Err(e) => return ToolResult::error(format!("the subagent failed: {e}")),
        };
        match outcome {
            Ok(o) => {
                let summary = format!(
                    "[subagent `{}`: {} step{}, {}]",
                    input.description,
                    o.steps,
                    if o.steps == 1 { "" } else { "s" },
                    tool_use(&o.tool_calls)
                );
                let answer = o.answer.trim_end();
                let mut result = match o.stop {
                    StopReason::Done => ToolResult::ok(format!("{answer}\n\n{summary}")),
                    StopReason::MaxSteps => ToolResult::ok(format!(
                        "{answer}\n\n{}\n{summary}",
                        stopped_by("the step limit", o.steps)
                    )),
                    StopReason::TokenBudget => ToolResult::ok(format!(
                        "{answer}\n\n{}\n{summary}",
                        stopped_by("the run's token budget", o.steps)
                    )),
                    StopReason::Timeout => ToolResult::error(format!(
                        "{answer}\n\n{}\n{summary}",
                        stopped_by("the run's time limit", o.steps)
                    )),
                    StopReason::Cancelled => {
                        ToolResult::error(format!("{answer}\n\n[interrupted: {}]\n{summary}", o.stop.as_str()))
                    }
                };
                usage_metadata(&mut result, o.usage);
                result
            }
            Err(e) => {
                // Whatever it had said before the failure.
                let partial = child
                    .messages()
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::Assistant)
                    .map(wield_llm::Message::joined_text)
                    .unwrap_or_default();
                ToolResult::error(format!("{}\n\n[interrupted: {e}]", partial.trim_end()))
            }
        }
    }
}
