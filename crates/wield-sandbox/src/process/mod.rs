//! Process spawning and isolation.
//!
//! - [`Runner`] runs one command to completion: its own process group,
//!   stdin from `/dev/null`, stdout and stderr read as they arrive and
//!   capped per stream ([`CaptureLimit`]; the excess is counted, not
//!   stored), an optional listener for streaming, a timeout and a
//!   cancellation token that SIGTERM the whole tree, then SIGKILL it after a
//!   grace period. No process of the tree survives, including descendants
//!   that left the group or were orphaned (see [`MARKER_VAR`] and the
//!   `tree` module: wield makes itself a child subreaper, walks the tree
//!   through `/proc` and signals through pidfds).
//! - [`Runner::spawn_background`] starts a [`Background`] process whose
//!   output goes to a log file and whose tree dies with it.
//! - [`EnvPolicy`] builds the environment: a core set (or all, or none),
//!   minus names that look like secrets, plus explicit settings.
//! - [`sandbox`] confines commands with Landlock + seccomp or bubblewrap.
//!
//! The runner knows nothing of the sandbox: a caller wraps the argv with
//! [`SandboxPlan::wrap`] and runs the result.

mod background;
mod capture;
mod env;
mod runner;
pub mod sandbox;
mod signal_scope;
mod tree;

use std::path::PathBuf;

pub use background::{Background, StopSignal};
pub use capture::{CaptureLimit, Captured, OutputCallback, OutputStream};
pub use env::{CORE_VARS, EnvPolicy, Inherit, SECRET_PATTERNS, is_secret_name};
pub use runner::{DEFAULT_GRACE, Exit, RunOutput, Runner, signal_name};
pub use sandbox::{
    Backend, BackendChoice, Enabled, Probe, RunGuard, SandboxError, SandboxPlan, SandboxSettings, denial_hints,
    sandbox_exec_main, token_dirs,
};
pub use tree::{MARKER_VAR, ProcessTree, ensure_subreaper, new_marker};

/// Why a command could not be run (its own failure is a [`RunOutput`]).
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("empty command: give at least the program to run")]
    EmptyCommand,
    #[error("cannot start `{program}`: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("cannot create a pipe for the command's output: {0}")]
    Pipe(std::io::Error),
    #[error("cannot read the command's output: {0}")]
    Read(std::io::Error),
    #[error("cannot wait for the command: {0}")]
    Wait(std::io::Error),
    #[error("cannot open the log file {path}: {source}")]
    Log { path: PathBuf, source: std::io::Error },
}
