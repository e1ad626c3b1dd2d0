//! Visibility: which tools a model sees and may call.
//!
//! A pipeline of filters over the registry, each deciding with `enabled` /
//! `disabled` lists of `*` globs and `group:NAME` entries:
//!
//! 1. **global** — `[tools] enabled/disabled`; `--include-tools` replaces
//!    `[tools] enabled`, `--exclude-tools` adds to `[tools] disabled`;
//! 2. **profile** — `minimal`, `messaging`, `coding` or `full` ([`Profile`]);
//! 3. **agent**, 4. **mode**, 5. **task** — `[agents.X.tools]`,
//!    `[modes.X.tools]`, `[tasks.X.tools]` for the selected names;
//! 6. **opt-in** — tools listed in `[tools] opt_in` (or whose traits say
//!    `opt_in`) stay hidden unless some enabled list names them explicitly:
//!    a bare `*` does not count;
//! 7. **deferred** — tools listed in `[tools] deferred` (or whose traits say
//!    `deferred`, or from an MCP server with `deferred = true`) are offered by
//!    name only, in a system-prompt block ([`ToolPolicy::deferred_prompt`]);
//!    a tool with the [`LOADS_DEFERRED`] capability (`load_tools`) loads their
//!    schemas for the rest of the session.
//!
//! A tool removed at one stage cannot come back at a later one, and within a
//! stage `disabled` wins over `enabled`. Every tool gets a [`ToolDecision`]:
//! in, deferred or out, the stage that decided and the exact rule.
//!
//! The executor asks a [`Visibility`] before running a call. [`ToolPolicy`]
//! implements it: hidden tools cannot be called; deferred tools can be called
//! once loaded in the session, and always in a session no model drives (a
//! person running `wield call` names the tool on purpose, and there is no
//! model whose context the deferral protects).

mod pipeline;
mod profiles;
mod rules;

use serde::Serialize;
use thiserror::Error;

use crate::context::Session;

pub use pipeline::{PolicyBuilder, PolicyOptions, ToolDecision, ToolPolicy};
pub use profiles::Profile;
pub use rules::{Entry, Layer, RuleList};

/// Capability of the tool that loads deferred tools (`load_tools`): it is
/// offered only while some tool is deferred.
pub const LOADS_DEFERRED: &str = "loads_deferred_tools";

/// Why a tool may not be called: a reason for the model (hidden by a policy
/// stage, deferred and not loaded yet) saying what to do if anything.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotCallable(pub String);

pub trait Visibility: Send + Sync {
    /// `Err` with the reason when the tool is hidden by policy.
    fn check_callable(&self, tool: &str, session: &Session) -> Result<(), NotCallable>;
}

/// Everything registered is callable.
pub struct AllVisible;

impl Visibility for AllVisible {
    fn check_callable(&self, _tool: &str, _session: &Session) -> Result<(), NotCallable> {
        Ok(())
    }
}

/// The stages of the pipeline, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Registry,
    Global,
    Profile,
    Agent,
    Mode,
    Task,
    OptIn,
    Deferred,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Registry => "registry",
            Self::Global => "global",
            Self::Profile => "profile",
            Self::Agent => "agent",
            Self::Mode => "mode",
            Self::Task => "task",
            Self::OptIn => "opt_in",
            Self::Deferred => "deferred",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a tool ended up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Sent to the model with its schema.
    In,
    /// Listed by name; its schema is loaded on demand.
    Deferred,
    /// Hidden and not callable.
    Out,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::Deferred => "deferred",
            Self::Out => "out",
        }
    }
}

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PolicyError {
    #[error("invalid entry `{entry}` in {list}: {message}")]
    InvalidEntry {
        list: String,
        entry: String,
        message: String,
    },
    #[error("unknown profile `{name}`{}; the profiles are minimal, messaging, coding and full", hint(.suggestion))]
    UnknownProfile { name: String, suggestion: Option<String> },
    #[error("unknown {kind} `{name}`{}; {}", hint(.suggestion), known_text(.kind, .known))]
    UnknownLayer {
        kind: &'static str,
        name: String,
        known: Vec<String>,
        suggestion: Option<String>,
    },
    #[error("invalid value for `{path}`: {message}")]
    Invalid { path: String, message: String },
}

fn hint(s: &Option<String>) -> String {
    s.as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

fn known_text(kind: &str, known: &[String]) -> String {
    if known.is_empty() {
        format!("no {kind}s are defined: add a [{kind}s.NAME] table to the config")
    } else {
        format!("the defined {kind}s are: {}", known.join(", "))
    }
}
