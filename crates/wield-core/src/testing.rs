//! Small tools for tests and benchmarks of code built on wield-core.

use async_trait::async_trait;
use serde_json::Value;

use crate::context::Context;
use crate::tool::{Tool, ToolResult, ToolSpec, ToolTraits};

/// A tool that echoes its input as output, at once.
pub struct StaticTool {
    spec: ToolSpec,
    traits: ToolTraits,
}

impl StaticTool {
    pub fn new(name: &str, schema: Value) -> Self {
        Self {
            spec: ToolSpec::new(name, format!("Test tool {name}"), schema),
            traits: ToolTraits::default(),
        }
    }

    #[must_use]
    pub fn strict(mut self) -> Self {
        self.spec.strict = true;
        self
    }

    #[must_use]
    pub fn traits(mut self, traits: ToolTraits) -> Self {
        self.traits = traits;
        self
    }
}

#[async_trait]
impl Tool for StaticTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn traits(&self) -> &ToolTraits {
        &self.traits
    }

    async fn execute(&self, input: Value, _ctx: &Context) -> ToolResult {
        ToolResult::ok(input.to_string())
    }
}
