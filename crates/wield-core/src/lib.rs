//! The core of wield, a tool runtime for LLM agents.
//!
//! A model asks for actions; wield decides whether each call may run and runs
//! it safely. This crate holds the seams and the pipeline, and knows nothing
//! of any particular tool, provider or front-end:
//!
//! - the tool model: [`ToolSpec`], [`ToolTraits`], the object-safe async
//!   [`Tool`] trait, [`ToolResult`] and the per-call [`Context`];
//! - the [`Registry`], with provider-safe API names and async sources;
//! - schema validation with errors a model can act on, the OpenAI
//!   strict-mode check, and provider exports ([`schema`]);
//! - the three-phase [`Executor`] (pre-flight, execution, post-processing);
//! - approval: a chain of [`Resolver`]s and an [`Approver`] ([`approval`]);
//! - visibility ([`policy`]), hooks ([`hooks`]), events and the audit log
//!   ([`events`]), truncation ([`truncate`]) and layered configuration
//!   ([`config`]).
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use wield_core::{Call, Config, ExecutorBuilder, Registry, Session};
//! use wield_core::testing::StaticTool;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mut registry = Registry::new();
//! let echo = StaticTool::new("echo", json!({"type": "object"}));
//! registry.register(Arc::new(echo)).unwrap();
//! let mut config = Config::default();
//! config.approval.auto_approve = vec!["echo".into()];
//! let executor = ExecutorBuilder::new(Arc::new(registry), Arc::new(config), ".").build();
//! let session = Arc::new(Session::new("doc", true));
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let result = executor.run_one(Call::new("1", "echo", json!({"a": 1})), &session, &cancel).await;
//! assert!(result.success);
//! # });
//! ```

pub mod approval;
pub mod ask;
pub mod config;
mod context;
pub mod events;
mod executor;
mod handoff;
pub mod hooks;
pub mod names;
pub mod policy;
pub mod private_dir;
mod refusal;
mod registry;
pub mod schema;
mod session_hooks;
pub mod testing;
mod tool;
pub mod truncate;

pub use approval::{
    ApprovalAnswer, ApprovalRequest, Approver, Decision, ResolveError, Resolver, ResolverChain, Scope, StoreError,
};
pub use config::{Config, ConfigError, ConfigKey, ConfigLoader, KeyTree};
pub use context::{CallScratch, Context, Driver, Services, Session};
pub use events::{Event, EventListener, EventSink, Stream};
pub use executor::{Call, Executor, ExecutorBuilder, PathGuard, Precheck, human_duration};
pub use handoff::HandOff;
pub use policy::NotCallable;
pub use refusal::{BoxError, Refusal, error_chain};
pub use registry::{
    DEFAULT_SOURCE_TIMEOUT, Registered, Registry, RegistryError, SourceDone, SourceFn, SourceMeta, SourceRegister,
    SourceWarning,
};
pub use schema::ExportFormat;
pub use session_hooks::{SessionHooks, end_session};
pub use tool::{
    ADDITIVE, AUTO_APPROVE_IF_SANDBOXED, Access, HANDLES_TIMEOUT, IDEMPOTENT, PathUse, TIMEOUT_ARGUMENT, Tool,
    ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits, default_preview, one_line,
};
