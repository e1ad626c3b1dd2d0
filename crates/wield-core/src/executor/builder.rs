//! [`ExecutorBuilder`]: an [`Executor`] from a registry, a configuration
//! and the parts a front-end chooses (approver, resolvers, hooks, audit).

use std::path::PathBuf;
use std::sync::Arc;

use super::{Executor, PathGuard};
use crate::approval::{ApprovalStore, Approver, HeadlessApprover, ResolverChain};
use crate::config::Config;
use crate::context::Services;
use crate::events::{AuditLog, EventSink};
use crate::hooks::Hook;
use crate::policy::{AllVisible, Visibility};
use crate::registry::Registry;
use crate::truncate::Limits;

/// Collects what an [`Executor`] is made of; [`ExecutorBuilder::build`]
/// resolves the configuration once.
pub struct ExecutorBuilder {
    registry: Arc<Registry>,
    config: Arc<Config>,
    workspace: PathBuf,
    chain: Option<ResolverChain>,
    approver: Arc<dyn Approver>,
    store: Option<Arc<dyn ApprovalStore>>,
    events: EventSink,
    services: Services,
    visibility: Arc<dyn Visibility>,
    hooks: Vec<Arc<dyn Hook>>,
    path_guard: Option<Arc<dyn PathGuard>>,
    audit: Option<Arc<AuditLog>>,
    sandboxed: bool,
}

impl ExecutorBuilder {
    pub fn new(registry: Arc<Registry>, config: Arc<Config>, workspace: impl Into<PathBuf>) -> Self {
        Self {
            registry,
            config,
            workspace: workspace.into(),
            chain: None,
            approver: Arc::new(HeadlessApprover),
            store: None,
            events: EventSink::default(),
            services: Services::new(),
            visibility: Arc::new(AllVisible),
            hooks: Vec::new(),
            path_guard: None,
            audit: None,
            sandboxed: false,
        }
    }

    #[must_use]
    pub fn chain(mut self, chain: ResolverChain) -> Self {
        self.chain = Some(chain);
        self
    }

    #[must_use]
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    #[must_use]
    pub fn store(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.store = Some(store);
        self
    }

    #[must_use]
    pub fn events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    #[must_use]
    pub fn services(mut self, services: Services) -> Self {
        self.services = services;
        self
    }

    #[must_use]
    pub fn visibility(mut self, visibility: Arc<dyn Visibility>) -> Self {
        self.visibility = visibility;
        self
    }

    #[must_use]
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    #[must_use]
    pub fn path_guard(mut self, guard: Arc<dyn PathGuard>) -> Self {
        self.path_guard = Some(guard);
        self
    }

    #[must_use]
    pub fn audit(mut self, audit: Arc<AuditLog>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Whether a process sandbox is active (for the sandbox resolver).
    #[must_use]
    pub fn sandboxed(mut self, sandboxed: bool) -> Self {
        self.sandboxed = sandboxed;
        self
    }

    pub fn build(self) -> Executor {
        let chain = self
            .chain
            .unwrap_or_else(|| crate::approval::standard_chain(&self.config.approval, Vec::new()));
        let tool_configs = self
            .registry
            .list()
            .map(|r| {
                let name = r.tool.spec().name.clone();
                let table = Arc::new(self.config.table_at(&name));
                (name, table)
            })
            .collect();
        let limits = Limits {
            max_lines: self.config.truncation.max_lines,
            max_bytes: self.config.truncation.max_bytes,
        };
        Executor {
            registry: self.registry,
            max_parallel: self.config.executor.max_parallel.max(1),
            default_timeout: self.config.executor.timeout,
            config: self.config,
            workspace: self.workspace,
            chain,
            approver: self.approver,
            store: self.store,
            events: self.events,
            services: Arc::new(self.services),
            visibility: self.visibility,
            hooks: self.hooks,
            path_guard: self.path_guard,
            audit: self.audit,
            sandboxed: self.sandboxed,
            tool_configs,
            limits,
        }
    }
}
