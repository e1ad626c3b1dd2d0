//! Small tools for tests and benchmarks of code built on wield-core.

use async_trait::async_trait;
use serde_json::Value;

use crate::context::Context;
use crate::tool::{Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

/// A tool that echoes its input as output, at once.
pub struct StaticTool {
    base: ToolBase,
}

impl StaticTool {
    pub fn new(name: &str, schema: Value) -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(name, format!("Test tool {name}"), schema),
                ToolTraits::default(),
            ),
        }
    }

    #[must_use]
    pub fn strict(mut self) -> Self {
        self.base.spec.strict = true;
        self
    }

    #[must_use]
    pub fn traits(mut self, traits: ToolTraits) -> Self {
        self.base.traits = traits;
        self
    }
}

#[async_trait]
impl Tool for StaticTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, _ctx: &Context) -> ToolResult {
        ToolResult::ok(input.to_string())
    }
}
