//! Approval: may this call run now?
//!
//! A chain of [`Resolver`]s, highest priority first; the first answer that is
//! not [`Decision::Pass`] wins; when none answers, the call requires approval
//! and an [`Approver`] (a person, `--yes`, or a headless refusal) decides.
//!
//! | priority | resolver |
//! |---|---|
//! | 100 | [`ConfigResolver`]: `approval.deny`, `auto_approve`, `confirm` |
//! | 90  | a document's frontmatter (a [`ConfigResolver::named`]) |
//! | 80  | [`RulesResolver`]: remembered (project, global) and session rules |
//! | 50  | the default for resolvers library users add |
//! | 25  | [`SandboxResolver`]: tools with `auto_approve_if_sandboxed` |
//! | 0   | [`CatchAllResolver`], only when `approval.require = false` |
//!
//! A resolver that returns an error or panics is logged and skipped. Pattern
//! syntax and the remembered-pattern derivation live in [`patterns`].

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::Session;
use crate::refusal::{BoxError, error_chain};
use crate::tool::ToolTraits;

mod display;
pub mod patterns;
mod resolvers;
pub mod subject;

pub use display::{Shown, arguments_text, printable};
pub use patterns::{DerivedPattern, PatternSet, TWO_WORD_COMMANDS, derive_pattern, normalize_lexically};
pub use resolvers::{CatchAllResolver, ConfigResolver, FnResolver, RulesResolver, SandboxResolver, standard_chain};
pub use subject::{CommandLine, PathSubject, RunCommand, Subject};

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
    /// What argument patterns match: the tool's [`Subject`], a path's
    /// resolved form added by the executor.
    pub subject: &'a Subject,
    pub traits: &'a ToolTraits,
    pub session: &'a Session,
    pub workspace: &'a Path,
    /// Whether a process sandbox is active for this runtime.
    pub sandboxed: bool,
}

pub trait Resolver: Send + Sync {
    fn name(&self) -> &str;
    fn priority(&self) -> i32 {
        PRIORITY_DEFAULT
    }
    /// An `Err` is logged and the resolver skipped.
    fn resolve(&self, call: &ApprovalCall<'_>) -> Result<Decision, ResolveError>;
    /// Why this resolver asks a person for `call` (it answered
    /// [`Decision::RequireApproval`]): the one rule, and the key that
    /// changes it, for the person and the model to read. `None` when it
    /// has nothing more to say than that it asks.
    fn why_ask(&self, _call: &ApprovalCall<'_>) -> Option<String> {
        None
    }
}

/// Why a resolver could not decide. Nothing of it reaches the model (a
/// [`Decision::Deny`] carries what the model reads): the chain logs it and
/// asks the next resolver.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The resolver cannot decide for the reason given.
    #[error("{0}")]
    Undecided(String),
    /// Something the resolver needs broke (a file, a script, a lock).
    #[error("{what}: {source}")]
    Failed {
        what: String,
        #[source]
        source: BoxError,
    },
}

/// Why a remembered approval was not saved. The approval still holds for
/// the session; the error is logged.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The pattern cannot be remembered (say, a command with expansions).
    #[error("{0}")]
    Rejected(String),
    /// The store could not be read or written.
    #[error("{what}: {source}")]
    Failed {
        what: String,
        #[source]
        source: BoxError,
    },
}

/// The decision of the chain and who made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    /// The resolver that decided, or `default` when none did.
    pub resolver: String,
    /// When it asks a person: the rule that asks, in words naming the key
    /// that changes it ([`Resolver::why_ask`]).
    pub reason: Option<String>,
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

    /// The resolver registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Resolver>> {
        self.resolvers.iter().find(|r| r.name() == name)
    }

    pub fn len(&self) -> usize {
        self.resolvers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.resolvers.is_empty()
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
                    let reason = if decision == Decision::RequireApproval {
                        std::panic::catch_unwind(AssertUnwindSafe(|| r.why_ask(call)))
                            .ok()
                            .flatten()
                    } else {
                        None
                    };
                    return Verdict {
                        decision,
                        resolver: r.name().to_owned(),
                        reason,
                    };
                }
                Ok(Err(e)) => tracing::warn!("approval resolver `{}` failed: {}; skipped", r.name(), error_chain(&e)),
                Err(_) => tracing::warn!("approval resolver `{}` panicked; skipped", r.name()),
            }
        }
        Verdict {
            decision: Decision::RequireApproval,
            resolver: "default".into(),
            reason: None,
        }
    }
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
    /// Remembering a pattern would not spare the next ask, so only "allow
    /// once" is offered: a rule asks for this call every time (an
    /// `approval.confirm` rule, decided above the remembered rules), or no
    /// pattern can approve the call (a command line that is not one simple
    /// command of literal words).
    pub always_asks: bool,
    /// Why it asks every time, when it does: the rule and the key that
    /// changes it, or why no pattern can approve it.
    pub reason: Option<String>,
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
        ApprovalAnswer::Deny(Some(needs_approval_message(request)))
    }
}

/// Why a call that needs approval was refused, and how a person can grant
/// it: a remembered approval, or, when remembered approvals do not apply
/// (a `confirm` rule asks every time, or no pattern can approve the
/// command), `--yes` or a change of the rules.
pub fn needs_approval_message(request: &ApprovalRequest) -> String {
    let tool = &request.tool;
    if request.always_asks {
        let why = request
            .reason
            .as_deref()
            .unwrap_or("a rule above the remembered approvals asks for it every time");
        format!(
            "approval required: the call to `{tool}` needs approval and no one can approve it here. \
             It asks every time, so a remembered approval does not apply: {why}. \
             A person can allow this one call with --yes."
        )
    } else {
        format!(
            "approval required: the call to `{tool}` needs approval and no one can approve it here. \
             A person can allow it with --yes, with `wield approvals add '{}'`, \
             or by adding a pattern to approval.auto_approve in .wield/config.toml.",
            request.pattern
        )
    }
}

/// Why no remembered pattern can approve a command line: what the person
/// reads when it asks every time for that reason.
pub const NOT_ONE_PLAIN_COMMAND: &str = "it is not one plain command (several commands, or words with expansions, \
     substitutions, globs or redirections), which no remembered pattern approves; split it into plain commands \
     to have it approved without asking";

/// Where remembered approvals go (project or global files).
pub trait ApprovalStore: Send + Sync {
    fn remember(&self, scope: Scope, pattern: &str) -> Result<(), StoreError>;
    /// Patterns currently remembered (project and global), for the resolver.
    fn patterns(&self) -> Vec<String>;
}

#[cfg(test)]
mod tests;
