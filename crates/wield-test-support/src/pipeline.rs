//! A runtime loaded on a workspace in the test's own process, and calls
//! through its pipeline as `wield call --json` makes them: the harness of
//! the behaviour tests of the crates whose tools the runtime loads.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_core::config::GlobalDir;
use wield_core::{Approver, Call, Driver, Session};
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
