//! Tools on the wire: offered under their provider-safe names, and calls
//! brought back to the names the registry knows them by.

use std::sync::Arc;

use wield_core::Registered;
use wield_llm::{Block, Response, ToolDef};

/// The tools as a model is offered them.
pub fn tool_defs(tools: &[Arc<Registered>]) -> Vec<ToolDef> {
    tools
        .iter()
        .map(|r| ToolDef {
            name: r.api_name.clone(),
            description: r.tool.spec().description.clone(),
            input_schema: r.tool.spec().input_schema.clone(),
            strict: r.tool.spec().strict,
        })
        .collect()
}

/// The reply's calls under their registry names (a name no tool has on
/// the wire stays as it came; the executor will say it is unknown).
pub fn registry_names(response: &mut Response, tools: &[Arc<Registered>]) {
    for block in &mut response.content {
        if let Block::ToolUse { name, .. } = block
            && let Some(r) = tools.iter().find(|r| &r.api_name == name)
        {
            *name = r.tool.spec().name.clone();
        }
    }
}
