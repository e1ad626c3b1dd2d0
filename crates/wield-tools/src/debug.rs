//! The debug tools: `debug_panic` panics, `debug_sleep` sleeps, and
//! `debug_echo` echoes its input. They let tests drive failure paths,
//! argument patterns, derived approvals, diffs and hook file globs without
//! touching anything: the `wield` binary registers them when
//! `WIELD_DEBUG_TOOLS=1` (a build with its `test-hooks` feature), and an
//! in-process runtime of the tests (`wield_test_support::pipeline::Loaded::debug`).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};

struct Panic {
    base: ToolBase,
}

#[async_trait]
impl Tool for Panic {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, _input: Value, _ctx: &Context) -> ToolResult {
        panic!("debug_panic was called")
    }
}

struct Sleep {
    base: ToolBase,
}

#[async_trait]
impl Tool for Sleep {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let secs = input.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
        tokio::select! {
            () = tokio::time::sleep(wield_core::config::seconds(secs).unwrap_or_default()) => ToolResult::ok(format!("slept {secs}s")),
            () = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
        }
    }
}

/// Echoes its input. Takes bash's `command` or a file tool's `path` (declared
/// as a write), and offers a diff for approval when given `content`: it lets
/// tests drive argument patterns, derived approvals, diffs and hook file
/// globs without touching anything.
struct Echo {
    base: ToolBase,
}

#[async_trait]
impl Tool for Echo {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    fn paths(&self, input: &Value) -> Vec<wield_core::PathUse> {
        input
            .get("path")
            .and_then(Value::as_str)
            .map(|p| wield_core::PathUse {
                path: p.to_owned(),
                access: wield_core::Access::Write,
            })
            .into_iter()
            .collect()
    }
    /// A `command` is read as the shell tools read theirs, so approval
    /// rules can be tried on it without running anything.
    fn approval_subject(&self, input: &Value) -> wield_core::approval::Subject {
        if input.get("command").is_some() {
            return crate::shell::approval_subject(input);
        }
        wield_core::approval::Subject::from_paths(&self.paths(input))
    }
    async fn approval_detail(&self, input: &Value, _ctx: &Context) -> Option<String> {
        let path = input.get("path").and_then(Value::as_str)?;
        let content = input.get("content").and_then(Value::as_str)?;
        let mut diff = format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-old\n");
        for line in content.lines() {
            diff.push_str(&format!("+{line}\n"));
        }
        Some(diff)
    }
    async fn execute(&self, input: Value, _ctx: &Context) -> ToolResult {
        ToolResult::ok(input.to_string())
    }
}

/// `debug_panic`, `debug_sleep` and `debug_echo` (group `debug`; the first
/// two read-only).
pub fn tools() -> Vec<ToolRef> {
    let read_only = ToolTraits {
        read_only: true,
        groups: vec!["debug".into()],
        ..ToolTraits::default()
    };
    vec![
        Arc::new(Panic {
            base: ToolBase::new(
                ToolSpec::new(
                    "debug_panic",
                    "Panics (for testing).",
                    json!({"type":"object","properties":{}}),
                ),
                read_only.clone(),
            ),
        }),
        Arc::new(Sleep {
            base: ToolBase::new(
                ToolSpec::new(
                    "debug_sleep",
                    "Sleeps (for testing).",
                    json!({"type":"object","properties":{"seconds":{"type":"number"},"timeout":{"type":"number"}}}),
                ),
                ToolTraits {
                    capabilities: vec![wield_core::TIMEOUT_ARGUMENT.into()],
                    ..read_only
                },
            ),
        }),
        Arc::new(Echo {
            base: ToolBase::new(
                ToolSpec::new(
                    "debug_echo",
                    "Echoes its input (for testing).",
                    json!({"type":"object","properties":{"command":{"type":"string"},"path":{"type":"string"},"content":{"type":"string"}},"additionalProperties":false}),
                ),
                ToolTraits {
                    groups: vec!["debug".into()],
                    ..ToolTraits::default()
                },
            ),
        }),
    ]
}
