//! `requires_approval = true`: every call of the tool asks a person,
//! whatever `approval.auto_approve`, remembered approvals or the sandbox
//! would answer; a deny anywhere in the chain still denies.

use std::sync::Arc;

use wield_core::Registry;
use wield_core::approval::{ApprovalCall, Decision, ResolveError, Resolver, ResolverChain};

use super::tool::ALWAYS_ASKS;

/// Above the configuration's rules (100), like `approval.ask_paths`.
pub const PRIORITY_ALWAYS_ASK: i32 = 110;

/// Asks for every call of a tool with the [`ALWAYS_ASKS`] capability.
pub struct AlwaysAskResolver {
    registry: Arc<Registry>,
    /// The rest of the chain, asked first so that its deny answers win.
    below: ResolverChain,
}

impl AlwaysAskResolver {
    /// `below` is the chain this resolver is added to, as it is before.
    pub fn new(registry: Arc<Registry>, below: ResolverChain) -> Self {
        Self { registry, below }
    }
}

impl Resolver for AlwaysAskResolver {
    fn name(&self) -> &str {
        "requires_approval"
    }

    fn priority(&self) -> i32 {
        PRIORITY_ALWAYS_ASK
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        let asks = self
            .registry
            .get(call.tool)
            .is_some_and(|r| r.tool.traits().has_capability(ALWAYS_ASKS));
        if !asks {
            return Ok(Decision::Pass);
        }
        match self.below.resolve(call).decision {
            deny @ Decision::Deny(_) => Ok(deny),
            _ => Ok(Decision::RequireApproval),
        }
    }

    fn why_ask(&self, call: &ApprovalCall<'_>) -> Option<String> {
        Some(format!(
            "the command tool `{}` is defined with requires_approval = true, so every call asks (change it in \
             the tool's definition)",
            call.tool
        ))
    }
}
