//! Hook points around every call, for user hooks (shell commands from
//! config) and library users alike.

use async_trait::async_trait;
use serde_json::Value;

use crate::tool::ToolResult;

/// What a pre hook decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PreHookOutcome {
    /// Refuse the call with this reason.
    pub block: Option<String>,
    /// Replace the input (validated again before the call goes on).
    pub input: Option<Value>,
    /// Text passed back to the model alongside the result.
    pub feedback: Vec<String>,
}

/// What a hook sees of a call.
pub struct HookCall<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub input: &'a Value,
    pub cwd: &'a std::path::Path,
    /// Paths the call declares it touches.
    pub file_paths: Vec<String>,
}

#[async_trait]
pub trait Hook: Send + Sync {
    fn name(&self) -> &str;

    /// Before approval; may block or rewrite the input.
    async fn pre(&self, _call: &HookCall<'_>) -> PreHookOutcome {
        PreHookOutcome::default()
    }

    /// After execution; may add feedback to the result or change it.
    async fn post(&self, _call: &HookCall<'_>, _result: &mut ToolResult) {}
}
