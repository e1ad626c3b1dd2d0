//! A runtime loaded on a workspace in the test's own process, and calls
//! through its pipeline as `wield call --json` makes them: the harness of
//! the behaviour tests of the crates whose tools the runtime loads.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_core::config::GlobalDir;
use wield_core::{ApprovalAnswer, ApprovalRequest, Approver, Call, Driver, Scope, Session};
use wield_runtime::{Runtime, RuntimeOptions};

/// A [`Runtime`] with the async runtime it was loaded on (two workers, as
/// on the machines the tests run on), which runs its calls.
pub struct Loaded {
    // Dropped before the async runtime its tasks run on.
    pub runtime: Runtime,
    tokio: tokio::runtime::Runtime,
}

impl Loaded {
    /// The runtime of `workspace` with `sets` (`--set`), or the error
    /// loading it ends with (`wield` exits 2 on a usage error).
    pub fn load(workspace: &Path, sets: &[&str]) -> Result<Self, wield_runtime::Error> {
        Self::with_options(workspace, RuntimeOptions::builder().set(sets.iter().copied()).build())
    }

    /// The runtime of `workspace` with `options`, or the error loading it
    /// ends with. Unless the options name a global configuration directory,
    /// it has none: a test never reads the global settings, tools, skills,
    /// memory or approvals of whoever runs it.
    pub fn with_options(workspace: &Path, mut options: RuntimeOptions) -> Result<Self, wield_runtime::Error> {
        if options.global_dir == GlobalDir::FromEnvironment {
            options.global_dir = GlobalDir::Nowhere;
        }
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let runtime = tokio.block_on(Runtime::load(workspace, options))?;
        Ok(Self { runtime, tokio })
    }

    /// The runtime of `workspace` with `options` and the debug tools
    /// (`wield_tools::debug`), as `wield` loads it with
    /// `WIELD_DEBUG_TOOLS=1`, or the error loading it ends with.
    pub fn with_debug_tools(workspace: &Path, mut options: RuntimeOptions) -> Result<Self, wield_runtime::Error> {
        options.tools.extend(wield_tools::debug::tools());
        Self::with_options(workspace, options)
    }

    /// The runtime of `workspace` with `sets` (`--set`) and the debug tools
    /// (see [`Loaded::with_debug_tools`]).
    pub fn debug(workspace: &Path, sets: &[&str]) -> Result<Self, wield_runtime::Error> {
        Self::with_debug_tools(workspace, RuntimeOptions::builder().set(sets.iter().copied()).build())
    }

    /// What the tool policy decided for `tool` (as `wield tools debug`
    /// prints it): (its status, the stage that decided, the rule).
    pub fn decision(&self, tool: &str) -> (String, String, String) {
        let tools = self.runtime.tools().current();
        let d = tools
            .policy
            .get(tool)
            .unwrap_or_else(|| panic!("the policy has no decision for {tool}"));
        (
            d.status.as_str().to_owned(),
            d.stage.as_str().to_owned(),
            d.rule.clone(),
        )
    }

    /// The block naming the deferred tools in the system prompt of a fresh
    /// model-driven session, if any tool is deferred.
    pub fn deferred_prompt(&self) -> Option<String> {
        let tools = self.runtime.tools().current();
        tools.policy.deferred_prompt(&Session::new("deferred", true))
    }

    /// A session a person drives, as `wield call`'s: model-honesty checks
    /// (read-before-write) are off.
    pub fn session(&self) -> Arc<Session> {
        self.runtime.session("call", Driver::Person)
    }

    /// One call of `tool` in `session`, `approver` deciding what needs a
    /// person → (the exit code `wield call` would have: 0 when the call
    /// succeeded, else 1; the result as JSON).
    pub fn call_in(
        &self,
        session: &Arc<Session>,
        approver: Arc<dyn Approver>,
        tool: &str,
        args: Value,
    ) -> (i32, Value) {
        self.tokio.block_on(async {
            let executor = self.runtime.executor(approver).unwrap();
            let result = executor
                .run_one(Call::new("call-1", tool, args), session, &CancellationToken::new())
                .await;
            (i32::from(!result.success), serde_json::to_value(&result).unwrap())
        })
    }

    /// One call of `tool` in a session of its own (see [`Loaded::call_in`]).
    pub fn call(&self, approver: Arc<dyn Approver>, tool: &str, args: Value) -> (i32, Value) {
        self.call_in(&self.session(), approver, tool, args)
    }

    /// Ends `session` as a front-end does when its client goes (an MCP
    /// connection closing): through every session hook of the runtime's
    /// services, which kill its background processes
    /// ([`wield_core::end_session`]).
    pub fn end_session(&self, session: &Arc<Session>) {
        self.tokio
            .block_on(wield_core::end_session(self.runtime.services(), session));
    }

    /// Ends the runtime's bridged MCP servers, as a front-end does on its
    /// way out ([`Runtime::shutdown`]).
    pub fn end(&self) {
        self.tokio
            .block_on(self.runtime.shutdown(wield_runtime::Ending::Graceful));
    }

    /// The names and descriptions of the tools a model sees, one
    /// `NAME  DESCRIPTION` line each, in name order.
    pub fn listed(&self) -> String {
        self.runtime
            .visible()
            .iter()
            .map(|r| format!("{}  {}\n", r.tool.spec().name, r.tool.spec().description))
            .collect()
    }

    /// The warnings loading left (tool files that failed, tools left out,
    /// async sources that failed), each `SOURCE: MESSAGE`.
    pub fn warnings(&self) -> String {
        self.runtime
            .tools()
            .current()
            .registry
            .warnings()
            .iter()
            .map(|w| format!("{}: {}\n", w.source, w.message))
            .collect()
    }
}

/// One call of `tool` in a person-driven session of a runtime loaded on
/// `workspace` with `sets` (`--set`), `approver` deciding what needs a
/// person, as `wield call --json` makes it → (its exit code: 0 when the
/// call succeeded, else 1; the result as JSON).
pub fn call(workspace: &Path, sets: &[&str], approver: Arc<dyn Approver>, tool: &str, args: Value) -> (i32, Value) {
    Loaded::load(workspace, sets).unwrap().call(approver, tool, args)
}

/// The message of the usage error (which `wield` exits 2 on) loading the
/// runtime of `workspace` with `sets` ends with; the test fails when it
/// loads, or fails otherwise.
pub fn usage_error(workspace: &Path, sets: &[&str]) -> String {
    match Loaded::load(workspace, sets) {
        Ok(_) => panic!("the runtime loaded"),
        Err(e) if e.is_usage() => e.to_string(),
        Err(e) => panic!("not a usage error: {e}"),
    }
}

/// The error of a call's result as JSON (empty when it has none).
pub fn error_of(result: &Value) -> String {
    result["error"].as_str().unwrap_or_default().to_owned()
}

/// An approver that gives every request the same answer, as a person
/// choosing it each time would (`WIELD_TEST_APPROVER` with one answer): an
/// allow for longer than once is an allow once where a rule asks every
/// time, since only that is offered then.
pub struct Answers(pub ApprovalAnswer);

impl Answers {
    /// Allows every call, remembering its pattern for `scope`.
    pub fn allow(scope: Scope) -> Arc<dyn Approver> {
        Arc::new(Self(ApprovalAnswer::Allow(scope)))
    }
}

#[async_trait]
impl Approver for Answers {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        match &self.0 {
            ApprovalAnswer::Allow(_) if request.always_asks => ApprovalAnswer::Allow(Scope::Once),
            other => other.clone(),
        }
    }
}
