//! `batch {calls: [{name, arguments}]}`: several tool calls in one,
//! dispatched as a model's own parallel calls are (parallel-safe ones
//! together, the rest in order), each through validation, policy, hooks,
//! approval and the sandbox, with the calling session's services (its
//! roots, its background processes). A failure does not stop the others.
//!
//! Nobody can be asked inside a batch: a call that needs a person's
//! approval is refused with an error telling the model to call it directly.
//! The tools that steer the run (`batch`, `ask`, `done`, `task`,
//! `load_tools`) are refused inside it.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::approval::{ApprovalAnswer, ApprovalRequest, Approver};
use wield_core::events::EventSink;
use wield_core::policy::ToolPolicy;
use wield_core::{Call, Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

use crate::runtime::{Inner, Runtime};

/// The most calls one batch may hold.
pub const MAX_CALLS: usize = 25;

/// Tools that cannot run inside a batch.
const NOT_IN_BATCH: [&str; 5] = ["batch", "ask", "done", "task", "load_tools"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    calls: Vec<Item>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// The runtime a batch's executors come from, set once it is built; weak,
/// since the runtime's registry holds the tool.
pub(crate) type RuntimeCell = Arc<OnceLock<Weak<Inner>>>;

/// The `batch` tool.
pub(crate) struct Batch {
    base: ToolBase,
    runtime: RuntimeCell,
}

impl Batch {
    /// A batch tool whose executors the runtime in `runtime` will make.
    pub(crate) fn new(runtime: RuntimeCell) -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "batch",
                    format!(
                        "Run several independent tool calls in one step (1 to {MAX_CALLS}): each is checked and run \
                         as if called directly, read-only ones at the same time, and one failing does not stop \
                         the others. The results come back as one document, a section per call. Calls that need \
                         a person's approval, and batch, ask, done, task and load_tools, cannot run inside it."
                    ),
                    json!({
                        "type": "object",
                        "properties": {
                            "calls": {
                                "type": "array",
                                "minItems": 1,
                                "maxItems": MAX_CALLS,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "name": {"type": "string", "description": "The tool's name."},
                                        "arguments": {"type": "object", "description": "The tool's arguments."}
                                    },
                                    "required": ["name", "arguments"],
                                    "additionalProperties": false
                                }
                            }
                        },
                        "required": ["calls"],
                        "additionalProperties": false
                    }),
                ),
                ToolTraits {
                    // Its calls are not known to be parallel-safe.
                    parallel: false,
                    // It changes nothing itself: each call in it is checked
                    // and approved on its own, and one that would need a
                    // person is refused.
                    read_only: true,
                    groups: vec!["runtime".into()],
                    ..ToolTraits::default()
                },
            ),
            runtime,
        }
    }
}

/// The approver inside a batch: nobody to ask.
struct NobodyInBatch;

#[async_trait]
impl Approver for NobodyInBatch {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny(Some(format!(
            "`{}` needs a person's approval, which cannot be asked inside batch: call it directly",
            request.tool
        )))
    }
}

#[async_trait]
impl Tool for Batch {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match serde_json::from_value(input) {
            Ok(i) => i,
            Err(e) => return ToolResult::error(format!("invalid arguments: {e}")),
        };
        if input.calls.is_empty() || input.calls.len() > MAX_CALLS {
            return ToolResult::error(format!(
                "a batch holds 1 to {MAX_CALLS} calls, not {}",
                input.calls.len()
            ));
        }
        let Some(inner) = self.runtime.get().and_then(Weak::upgrade) else {
            return ToolResult::error("batch is not available here: call the tools directly");
        };
        // Its calls are checked by the policy this call was checked by: a
        // subagent's batch runs only what the subagent itself may call, not
        // everything the runtime's own policy allows.
        let runtime = Runtime { inner };
        let runtime = match ctx.service::<ToolPolicy>() {
            Some(policy) => runtime.checked_by(policy),
            None => runtime,
        };
        let factory = match runtime.executor_factory() {
            Ok(f) => f,
            Err(e) => return ToolResult::error(format!("batch cannot run: {e}")),
        };
        // The calling session's services: its roots, its processes.
        let executor = factory(Arc::new(NobodyInBatch), (*ctx.services).clone(), EventSink::default());
        // Refused ones answered here; the rest run together.
        let mut to_run = Vec::new();
        let mut refused: Vec<Option<String>> = Vec::with_capacity(input.calls.len());
        for (k, item) in input.calls.iter().enumerate() {
            if NOT_IN_BATCH.contains(&item.name.as_str()) {
                refused.push(Some(format!(
                    "`{}` cannot run inside batch: call it directly",
                    item.name
                )));
            } else {
                let arguments = if item.arguments.is_null() {
                    json!({})
                } else {
                    item.arguments.clone()
                };
                to_run.push(Call::new(format!("{}.{k}", ctx.call_id), item.name.clone(), arguments));
                refused.push(None);
            }
        }
        let mut ran = executor.run_batch(to_run, &ctx.session, &ctx.cancel).await.into_iter();
        let mut doc = String::new();
        let mut failed = 0;
        for (k, (item, refusal)) in input.calls.iter().zip(refused).enumerate() {
            let result = match refusal {
                Some(why) => ToolResult::error(why),
                None => ran
                    .next()
                    .unwrap_or_else(|| ToolResult::error("internal error: no result")),
            };
            let state = if result.success { "ok" } else { "failed" };
            if !result.success {
                failed += 1;
            }
            let _ = writeln!(doc, "## {}. `{}` — {state}\n", k + 1, item.name);
            if !result.output.is_empty() {
                let _ = writeln!(doc, "{}\n", result.output.trim_end());
            }
            if let Some(e) = &result.error {
                let _ = writeln!(doc, "error: {}\n", e.trim_end());
            }
        }
        let total = input.calls.len();
        let summary = format!("{} of {total} calls succeeded.", total - failed);
        let text = format!("{summary}\n\n{}", doc.trim_end());
        if failed == total {
            ToolResult::error(text)
        } else {
            ToolResult::ok(text)
        }
    }
}
