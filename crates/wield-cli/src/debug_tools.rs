//! Tools registered only when `WIELD_DEBUG_TOOLS=1`: they let tests drive
//! failure paths (a panicking tool, a slow tool) through the real binary.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolRef, ToolResult, ToolSpec, ToolTraits};

struct Panic {
    spec: ToolSpec,
    traits: ToolTraits,
}

#[async_trait]
impl Tool for Panic {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn traits(&self) -> &ToolTraits {
        &self.traits
    }
    async fn execute(&self, _input: Value, _ctx: &Context) -> ToolResult {
        panic!("debug_panic was called")
    }
}

struct Sleep {
    spec: ToolSpec,
    traits: ToolTraits,
}

#[async_trait]
impl Tool for Sleep {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn traits(&self) -> &ToolTraits {
        &self.traits
    }
    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let secs = input.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs_f64(secs.max(0.0))) => ToolResult::ok(format!("slept {secs}s")),
            () = ctx.cancel.cancelled() => ToolResult::error("cancelled"),
        }
    }
}

pub fn tools() -> Vec<ToolRef> {
    let read_only = ToolTraits {
        read_only: true,
        groups: vec!["debug".into()],
        ..ToolTraits::default()
    };
    vec![
        Arc::new(Panic {
            spec: ToolSpec::new(
                "debug_panic",
                "Panics (for testing).",
                json!({"type":"object","properties":{}}),
            ),
            traits: read_only.clone(),
        }),
        Arc::new(Sleep {
            spec: ToolSpec::new(
                "debug_sleep",
                "Sleeps (for testing).",
                json!({"type":"object","properties":{"seconds":{"type":"number"},"timeout":{"type":"number"}}}),
            ),
            traits: read_only,
        }),
    ]
}
