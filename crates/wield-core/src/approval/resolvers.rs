//! The built-in resolvers and the standard chain: config (100), remembered
//! and session rules (80), sandbox (25), catch-all (0). A `.chat` document's
//! frontmatter is a [`ConfigResolver`] at priority 90.

use std::sync::Arc;

use crate::config::ApprovalConfig;
use crate::tool::AUTO_APPROVE_IF_SANDBOXED;

use super::patterns::PatternSet;
use super::{
    ApprovalCall, ApprovalStore, Decision, PRIORITY_CATCH_ALL, PRIORITY_CONFIG, PRIORITY_RULES, PRIORITY_SANDBOX,
    ResolveError, Resolver, ResolverChain,
};

/// `deny`, then the deny lists of the presets used, then `auto_approve`,
/// then `confirm`, from one approval table. Priority 100 as `config`; the
/// same logic serves a document's frontmatter at 90.
pub struct ConfigResolver {
    name: String,
    priority: i32,
    /// How rules are named in messages: `approval` → `approval.deny`.
    origin: String,
    config: ApprovalConfig,
}

impl ConfigResolver {
    /// The `config` resolver at priority 100.
    pub fn new(config: ApprovalConfig) -> Self {
        Self::named("config", PRIORITY_CONFIG, "approval", config)
    }

    /// The same rules under another name and priority (frontmatter: 90).
    pub fn named(name: impl Into<String>, priority: i32, origin: impl Into<String>, config: ApprovalConfig) -> Self {
        Self {
            name: name.into(),
            priority,
            origin: origin.into(),
            config,
        }
    }
}

impl Resolver for ConfigResolver {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        let set = PatternSet::new(&self.config);
        let origin = &self.origin;
        if let Some(hit) = set.list_denies(&self.config.deny, call) {
            return Ok(Decision::Deny(format!("rule `{hit}` in {origin}.deny")));
        }
        for (list, key) in [
            (&self.config.auto_approve, "auto_approve"),
            (&self.config.confirm, "confirm"),
        ] {
            if let Some(hit) = set.preset_denies(list, call) {
                return Ok(Decision::Deny(format!("rule `{hit}` via {origin}.{key}")));
            }
        }
        // auto_approve wins over confirm; a confirm rule then asks every
        // time, even when a remembered rule would approve.
        if set.list_matches(&self.config.auto_approve, call, 0).is_some() {
            return Ok(Decision::Approve);
        }
        // Read as broadly as deny rules: a confirm rule on a command asks
        // for any line that may run it, and for any line that cannot be
        // analysed.
        if set.list_denies(&self.config.confirm, call).is_some() {
            return Ok(Decision::RequireApproval);
        }
        Ok(Decision::Pass)
    }

    fn why_ask(&self, call: &ApprovalCall<'_>) -> Option<String> {
        let hit = PatternSet::new(&self.config).list_denies(&self.config.confirm, call)?;
        let origin = &self.origin;
        Some(format!(
            "the rule `{hit}` in {origin}.confirm asks for it every time (take it out of {origin}.confirm to stop that)"
        ))
    }
}

/// Priority 25: approve tools with `auto_approve_if_sandboxed` while a
/// process sandbox is active, unless a `-name` entry of `auto_approve`
/// removes the tool.
#[derive(Default)]
pub struct SandboxResolver {
    auto_approve: Vec<String>,
}

impl SandboxResolver {
    /// `auto_approve` is read for its `-name` removals only.
    pub fn new(auto_approve: Vec<String>) -> Self {
        Self { auto_approve }
    }
}

impl Resolver for SandboxResolver {
    fn name(&self) -> &str {
        "sandbox"
    }

    fn priority(&self) -> i32 {
        PRIORITY_SANDBOX
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        if !call.sandboxed || !call.traits.has_capability(AUTO_APPROVE_IF_SANDBOXED) {
            return Ok(Decision::Pass);
        }
        let empty = ApprovalConfig::default();
        if PatternSet::new(&empty).removal(&self.auto_approve, call, 0).is_some() {
            return Ok(Decision::Pass);
        }
        Ok(Decision::Approve)
    }
}

/// Priority 0: approve everything, used only when `approval.require = false`.
pub struct CatchAllResolver;

impl Resolver for CatchAllResolver {
    fn name(&self) -> &str {
        "catch_all"
    }

    fn priority(&self) -> i32 {
        PRIORITY_CATCH_ALL
    }

    fn resolve(&self, _call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        Ok(Decision::Approve)
    }
}

/// Priority 80: patterns granted for this session, and remembered project
/// and global rules supplied by the front-end.
pub struct RulesResolver {
    remembered: Remembered,
}

/// Where the remembered rules come from.
enum Remembered {
    /// Read once, by the front-end.
    Fixed(Vec<String>),
    /// Asked of the store at every call.
    Store(Arc<dyn ApprovalStore>),
}

impl RulesResolver {
    pub fn new(remembered: Vec<String>) -> Self {
        Self {
            remembered: Remembered::Fixed(remembered),
        }
    }

    /// Remembered rules asked of `store` at every call it decides, so a rule
    /// remembered while a session runs (`wield approvals add` in another
    /// terminal, another session's "allow for this project") applies to the
    /// session's next call. The store should keep what it read while its
    /// files do not change.
    pub fn from_store(store: Arc<dyn ApprovalStore>) -> Self {
        Self {
            remembered: Remembered::Store(store),
        }
    }
}

impl Resolver for RulesResolver {
    fn name(&self) -> &str {
        "rules"
    }

    fn priority(&self) -> i32 {
        PRIORITY_RULES
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        // Remembered rules are plain patterns: presets in them mean the
        // built-in ones, never a user's redefinition.
        let empty = ApprovalConfig::default();
        let set = PatternSet::new(&empty);
        let stored;
        let remembered: &[String] = match &self.remembered {
            Remembered::Fixed(rules) => rules,
            Remembered::Store(store) => {
                stored = store.patterns();
                &stored
            }
        };
        if set.list_matches(remembered, call, 0).is_some() || set.list_matches(&call.session.rules(), call, 0).is_some()
        {
            return Ok(Decision::Approve);
        }
        Ok(Decision::Pass)
    }
}

type ResolveFn = dyn Fn(&ApprovalCall<'_>) -> Result<Decision, ResolveError> + Send + Sync;

/// A resolver from a closure, for library users:
/// `chain.add(FnResolver::arc("no-rm", 200, |c| ...))`.
pub struct FnResolver {
    name: String,
    priority: i32,
    f: Box<ResolveFn>,
}

impl FnResolver {
    pub fn new(
        name: impl Into<String>,
        priority: i32,
        f: impl Fn(&ApprovalCall<'_>) -> Result<Decision, ResolveError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            priority,
            f: Box::new(f),
        }
    }

    pub fn arc(
        name: impl Into<String>,
        priority: i32,
        f: impl Fn(&ApprovalCall<'_>) -> Result<Decision, ResolveError> + Send + Sync + 'static,
    ) -> Arc<dyn Resolver> {
        Arc::new(Self::new(name, priority, f))
    }
}

impl Resolver for FnResolver {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError> {
        (self.f)(call)
    }
}

/// The standard chain for a configuration and the remembered rules.
pub fn standard_chain(config: &ApprovalConfig, remembered: Vec<String>) -> ResolverChain {
    let mut chain = ResolverChain::new();
    chain.add(Arc::new(ConfigResolver::new(config.clone())));
    chain.add(Arc::new(RulesResolver::new(remembered)));
    if config.auto_approve_sandboxed {
        chain.add(Arc::new(SandboxResolver::new(config.auto_approve.clone())));
    }
    if !config.require {
        chain.add(Arc::new(CatchAllResolver));
    }
    chain
}
