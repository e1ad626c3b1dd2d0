//! Approval: may this call run now?
//!
//! A chain of [`Resolver`]s, highest priority first; the first answer that is
//! not [`Decision::Pass`] wins; when none answers, the call requires approval
//! and an [`Approver`] (a person, `--yes`, or a headless refusal) decides.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ApprovalConfig;
use crate::context::Session;
use crate::names::glob_match;
use crate::tool::{AUTO_APPROVE_IF_SANDBOXED, ToolTraits};

pub const PRIORITY_CONFIG: i32 = 100;
pub const PRIORITY_FRONTMATTER: i32 = 90;
pub const PRIORITY_RULES: i32 = 80;
pub const PRIORITY_DEFAULT: i32 = 50;
pub const PRIORITY_SANDBOX: i32 = 25;
pub const PRIORITY_CATCH_ALL: i32 = 0;

/// What a resolver says about a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Approve,
    RequireApproval,
    /// Refused, with the reason (which rule).
    Deny(String),
    /// No opinion: ask the next resolver.
    Pass,
}

/// The call as resolvers see it.
pub struct ApprovalCall<'a> {
    pub tool: &'a str,
    pub input: &'a Value,
    pub traits: &'a ToolTraits,
    pub session: &'a Session,
    pub workspace: &'a Path,
    /// Whether a process sandbox is active for this runtime.
    pub sandboxed: bool,
}

impl ApprovalCall<'_> {
    /// The argument patterns match against: bash's `command`, else `path`.
    pub fn argument(&self) -> Option<&str> {
        self.input
            .get("command")
            .and_then(Value::as_str)
            .or_else(|| self.input.get("path").and_then(Value::as_str))
    }
}

pub trait Resolver: Send + Sync {
    fn name(&self) -> &str;
    fn priority(&self) -> i32 {
        PRIORITY_DEFAULT
    }
    /// An `Err` is logged and the resolver skipped.
    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, String>;
}

/// The decision of the chain and who made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The resolver that decided, or `default` when none did.
    pub resolver: String,
}

#[derive(Default, Clone)]
pub struct ResolverChain {
    resolvers: Vec<Arc<dyn Resolver>>,
}

impl ResolverChain {
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a resolver; one with the same name is replaced.
    pub fn add(&mut self, resolver: Arc<dyn Resolver>) {
        self.remove(resolver.name());
        self.resolvers.push(resolver);
        // Stable sort: equal priorities keep registration order.
        self.resolvers.sort_by_key(|r| std::cmp::Reverse(r.priority()));
    }

    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.resolvers.len();
        self.resolvers.retain(|r| r.name() != name);
        before != self.resolvers.len()
    }

    /// `(name, priority)` in the order they are asked.
    pub fn list(&self) -> Vec<(String, i32)> {
        self.resolvers
            .iter()
            .map(|r| (r.name().to_owned(), r.priority()))
            .collect()
    }

    pub fn resolve(&self, call: &ApprovalCall<'_>) -> Verdict {
        for r in &self.resolvers {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| r.resolve(call)));
            match outcome {
                Ok(Ok(Decision::Pass)) => {}
                Ok(Ok(decision)) => {
                    return Verdict {
                        decision,
                        resolver: r.name().to_owned(),
                    };
                }
                Ok(Err(e)) => tracing::warn!("approval resolver `{}` failed: {e}; skipped", r.name()),
                Err(_) => tracing::warn!("approval resolver `{}` panicked; skipped", r.name()),
            }
        }
        Verdict {
            decision: Decision::RequireApproval,
            resolver: "default".into(),
        }
    }
}

/// Tool names `$standard` adds to `$readonly`.
pub const STANDARD_WRITE_TOOLS: &[&str] = &["write", "edit", "patch", "mkdir"];

/// One entry of an approval list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    Tool(String),
    Group(String),
    Preset(String),
    Argument { tool: String, arg: String },
}

fn parse_pattern(entry: &str) -> Pattern {
    let e = entry.trim();
    if let Some(p) = e.strip_prefix('$') {
        return Pattern::Preset(p.to_owned());
    }
    if let Some(g) = e.strip_prefix("group:") {
        return Pattern::Group(g.to_owned());
    }
    if let Some((tool, arg)) = e.split_once(':') {
        return Pattern::Argument {
            tool: tool.to_owned(),
            arg: arg.to_owned(),
        };
    }
    Pattern::Tool(e.to_owned())
}

/// Does a list of entries (with `-name` removals and `+name` additions)
/// approve the call? Returns the matching entry.
pub struct PatternSet<'c> {
    config: &'c ApprovalConfig,
}

impl<'c> PatternSet<'c> {
    pub fn new(config: &'c ApprovalConfig) -> Self {
        Self { config }
    }

    fn pattern_matches(&self, p: &Pattern, call: &ApprovalCall<'_>, depth: usize) -> bool {
        match p {
            Pattern::Tool(g) => glob_match(g, call.tool, true),
            Pattern::Group(g) => call.traits.in_group(g),
            Pattern::Argument { tool, arg } => {
                glob_match(tool, call.tool, true)
                    && call.argument().is_some_and(|a| {
                        glob_match(arg, a, false)
                            || (!a.starts_with('/')
                                && glob_match(arg, &call.workspace.join(a).to_string_lossy(), false))
                    })
            }
            Pattern::Preset(name) => match name.as_str() {
                "readonly" => call.traits.read_only,
                "standard" => {
                    call.traits.read_only || STANDARD_WRITE_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(call.tool))
                }
                other => {
                    depth < 8
                        && self
                            .config
                            .presets
                            .get(&format!("${other}"))
                            .or_else(|| self.config.presets.get(other))
                            .is_some_and(|preset| self.list_matches(&preset.approve, call, depth + 1).is_some())
                }
            },
        }
    }

    /// The first entry of `list` that matches, honouring `-name` removals.
    pub fn list_matches(&self, list: &[String], call: &ApprovalCall<'_>, depth: usize) -> Option<String> {
        let removed = list
            .iter()
            .filter_map(|e| e.trim().strip_prefix('-'))
            .any(|e| self.pattern_matches(&parse_pattern(e), call, depth));
        if removed {
            return None;
        }
        list.iter()
            .filter(|e| !e.trim().starts_with('-'))
            .find(|e| {
                let e = e.trim();
                let e = e.strip_prefix('+').unwrap_or(e);
                self.pattern_matches(&parse_pattern(e), call, depth)
            })
            .cloned()
    }

    /// Deny entries of the user presets named in `list`.
    fn preset_denies(&self, list: &[String], call: &ApprovalCall<'_>) -> Option<String> {
        for e in list {
            let Some(name) = e.trim().strip_prefix('$') else {
                continue;
            };
            let preset = self
                .config
                .presets
                .get(&format!("${name}"))
                .or_else(|| self.config.presets.get(name));
            if let Some(p) = preset
                && let Some(hit) = self.list_matches(&p.deny, call, 1)
            {
                return Some(format!("{hit} (preset ${name})"));
            }
        }
        None
    }
}

/// Priority 100: `approval.deny`, `approval.auto_approve`, `approval.confirm`.
pub struct ConfigResolver {
    config: ApprovalConfig,
}

impl ConfigResolver {
    pub fn new(config: ApprovalConfig) -> Self {
        Self { config }
    }
}

impl Resolver for ConfigResolver {
    fn name(&self) -> &str {
        "config"
    }

    fn priority(&self) -> i32 {
        PRIORITY_CONFIG
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, String> {
        let set = PatternSet::new(&self.config);
        if let Some(hit) = set.list_matches(&self.config.deny, call, 0) {
            return Ok(Decision::Deny(format!("rule `{hit}` in approval.deny")));
        }
        for (list, key) in [
            (&self.config.auto_approve, "auto_approve"),
            (&self.config.confirm, "confirm"),
        ] {
            if let Some(hit) = set.preset_denies(list, call) {
                return Ok(Decision::Deny(format!("rule `{hit}` via approval.{key}")));
            }
        }
        if set.list_matches(&self.config.auto_approve, call, 0).is_some() {
            return Ok(Decision::Approve);
        }
        if set.list_matches(&self.config.confirm, call, 0).is_some() {
            return Ok(Decision::RequireApproval);
        }
        Ok(Decision::Pass)
    }
}

/// Priority 25: approve tools with `auto_approve_if_sandboxed` while a
/// process sandbox is active.
pub struct SandboxResolver;

impl Resolver for SandboxResolver {
    fn name(&self) -> &str {
        "sandbox"
    }

    fn priority(&self) -> i32 {
        PRIORITY_SANDBOX
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, String> {
        if call.sandboxed && call.traits.has_capability(AUTO_APPROVE_IF_SANDBOXED) {
            Ok(Decision::Approve)
        } else {
            Ok(Decision::Pass)
        }
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

    fn resolve(&self, _call: &ApprovalCall<'_>) -> Result<Decision, String> {
        Ok(Decision::Approve)
    }
}

/// Priority 80: patterns granted for this session (and, when a front-end
/// supplies them, remembered project and global rules).
pub struct RulesResolver {
    remembered: Vec<String>,
}

impl RulesResolver {
    pub fn new(remembered: Vec<String>) -> Self {
        Self { remembered }
    }
}

impl Resolver for RulesResolver {
    fn name(&self) -> &str {
        "rules"
    }

    fn priority(&self) -> i32 {
        PRIORITY_RULES
    }

    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, String> {
        let empty = ApprovalConfig {
            auto_approve: Vec::new(),
            ..ApprovalConfig::default()
        };
        let set = PatternSet::new(&empty);
        let session = call.session.rules();
        if set.list_matches(&self.remembered, call, 0).is_some() || set.list_matches(&session, call, 0).is_some() {
            return Ok(Decision::Approve);
        }
        Ok(Decision::Pass)
    }
}

/// The standard chain for a configuration.
pub fn standard_chain(config: &ApprovalConfig, remembered: Vec<String>) -> ResolverChain {
    let mut chain = ResolverChain::new();
    chain.add(Arc::new(ConfigResolver::new(config.clone())));
    chain.add(Arc::new(RulesResolver::new(remembered)));
    if config.auto_approve_sandboxed {
        chain.add(Arc::new(SandboxResolver));
    }
    if !config.require {
        chain.add(Arc::new(CatchAllResolver));
    }
    chain
}

/// How long a person's "allow" lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Once,
    Session,
    Project,
    Global,
}

/// What an approver answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalAnswer {
    Allow(Scope),
    /// Refused; the message (if any) goes to the model as the error.
    Deny(Option<String>),
    /// Refuse this call and every call after it in the batch.
    CancelBatch,
}

/// A call waiting for a decision by someone.
#[derive(Clone, Debug)]
pub struct ApprovalRequest {
    pub call_id: String,
    pub tool: String,
    pub input: Value,
    pub preview: String,
    /// A diff or other detail supplied by the tool.
    pub detail: Option<String>,
    /// The pattern "allow for session/project/global" would remember.
    pub pattern: String,
}

#[async_trait]
pub trait Approver: Send + Sync {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// `--yes`: approve what would need confirmation (deny rules still win,
/// because they are decided before anyone is asked).
pub struct YesApprover;

#[async_trait]
impl Approver for YesApprover {
    async fn ask(&self, _request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Allow(Scope::Once)
    }
}

/// No one to ask: refuse with a message that says how to grant approval.
pub struct HeadlessApprover;

#[async_trait]
impl Approver for HeadlessApprover {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        ApprovalAnswer::Deny(Some(needs_approval_message(&request.tool, &request.pattern)))
    }
}

pub fn needs_approval_message(tool: &str, pattern: &str) -> String {
    format!(
        "approval required: the call to `{tool}` needs approval and no one can approve it here. \
         A person can allow it with --yes, with `wield approvals add '{pattern}'`, \
         or by adding a pattern to approval.auto_approve in .wield/config.toml."
    )
}

/// Where remembered approvals go (project or global files).
pub trait ApprovalStore: Send + Sync {
    fn remember(&self, scope: Scope, pattern: &str) -> Result<(), String>;
    /// Patterns currently remembered (project and global), for the resolver.
    fn patterns(&self) -> Vec<String>;
}

/// Commands whose first two words make the remembered pattern.
const TWO_WORD_COMMANDS: &[&str] = &[
    "git", "cargo", "npm", "npx", "pnpm", "yarn", "docker", "kubectl", "go", "pip", "make",
];

/// The pattern a remembered approval stores for a call: bash → the command's
/// first word (two for git, cargo, …) plus `*`; file tools → the file's
/// directory plus `/*`; anything else → the bare tool name.
pub fn derive_pattern(tool: &str, input: &Value) -> String {
    if let Some(cmd) = input.get("command").and_then(Value::as_str) {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let Some(first) = words.first() else {
            return tool.to_owned();
        };
        let n = if TWO_WORD_COMMANDS.contains(first) && words.len() > 1 {
            2
        } else {
            1
        };
        return format!("{tool}:{}*", words[..n].join(" "));
    }
    if let Some(path) = input.get("path").and_then(Value::as_str) {
        let dir = Path::new(path)
            .parent()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = if dir.is_empty() { ".".to_owned() } else { dir };
        return format!("{tool}:{dir}/*");
    }
    tool.to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn decide(cfg: &ApprovalConfig, tool: &str, input: Value, read_only: bool) -> Decision {
        let traits = ToolTraits {
            read_only,
            groups: vec!["fs".into()],
            ..ToolTraits::default()
        };
        let session = Session::new("t", true);
        let call = ApprovalCall {
            tool,
            input: &input,
            traits: &traits,
            session: &session,
            workspace: Path::new("/ws"),
            sandboxed: false,
        };
        standard_chain(cfg, vec![]).resolve(&call).decision
    }

    #[test]
    fn defaults_gate_bash_and_approve_standard() {
        let cfg = ApprovalConfig::default();
        assert_eq!(decide(&cfg, "read", json!({}), true), Decision::Approve);
        assert_eq!(decide(&cfg, "write", json!({}), false), Decision::Approve);
        assert_eq!(
            decide(&cfg, "bash", json!({"command":"ls"}), false),
            Decision::RequireApproval
        );
    }

    #[test]
    fn deny_wins_and_removals_apply() {
        let cfg = ApprovalConfig {
            auto_approve: vec!["$standard".into(), "-write".into(), "bash:git status*".into()],
            deny: vec!["bash:rm *".into()],
            ..ApprovalConfig::default()
        };
        assert_eq!(decide(&cfg, "write", json!({}), false), Decision::RequireApproval);
        assert_eq!(
            decide(&cfg, "bash", json!({"command":"git status -s"}), false),
            Decision::Approve
        );
        assert!(
            matches!(decide(&cfg, "bash", json!({"command":"rm -rf /"}), false), Decision::Deny(r) if r.contains("bash:rm *"))
        );
        assert_eq!(decide(&cfg, "x", json!({}), false), Decision::RequireApproval);
    }

    #[test]
    fn groups_presets_and_paths() {
        let mut cfg = ApprovalConfig {
            auto_approve: vec!["$mine".into()],
            ..ApprovalConfig::default()
        };
        cfg.presets.insert(
            "$mine".into(),
            crate::config::PresetConfig {
                approve: vec!["group:fs".into()],
                deny: vec!["write:/etc/*".into()],
            },
        );
        assert_eq!(decide(&cfg, "ls", json!({}), false), Decision::Approve);
        assert!(matches!(
            decide(&cfg, "write", json!({"path":"/etc/x"}), false),
            Decision::Deny(_)
        ));
        let cfg2 = ApprovalConfig {
            auto_approve: vec!["write:/ws/tmp/*".into()],
            ..ApprovalConfig::default()
        };
        assert_eq!(
            decide(&cfg2, "write", json!({"path":"tmp/a/b"}), false),
            Decision::Approve
        );
    }

    #[test]
    fn derived_patterns() {
        assert_eq!(
            derive_pattern("bash", &json!({"command":"git commit -m x"})),
            "bash:git commit*"
        );
        assert_eq!(derive_pattern("bash", &json!({"command":"ls -la"})), "bash:ls*");
        assert_eq!(derive_pattern("write", &json!({"path":"src/a.rs"})), "write:src/*");
        assert_eq!(derive_pattern("calculator", &json!({})), "calculator");
    }

    struct Panicky;
    impl Resolver for Panicky {
        fn name(&self) -> &str {
            "panicky"
        }
        fn priority(&self) -> i32 {
            200
        }
        fn resolve(&self, _c: &ApprovalCall<'_>) -> Result<Decision, String> {
            panic!("boom")
        }
    }

    #[test]
    fn panicking_resolver_is_skipped() {
        let mut chain = standard_chain(&ApprovalConfig::default(), vec![]);
        chain.add(Arc::new(Panicky));
        let traits = ToolTraits {
            read_only: true,
            ..ToolTraits::default()
        };
        let session = Session::new("t", true);
        let input = json!({});
        let call = ApprovalCall {
            tool: "read",
            input: &input,
            traits: &traits,
            session: &session,
            workspace: Path::new("/"),
            sandboxed: false,
        };
        let v = chain.resolve(&call);
        assert_eq!(v.decision, Decision::Approve);
        assert_eq!(v.resolver, "config");
    }
}
