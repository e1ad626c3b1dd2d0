//! What can stop a runtime from being built or used.

use std::path::PathBuf;

/// Why a [`crate::Runtime`] could not be built, or a runtime operation
/// failed. [`Error::is_usage`] tells a mistake the user fixes in the
/// configuration or the options (a command line exits 2 for it) from a
/// failure of the machine.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration or the options are wrong: the message says which
    /// key or option and what to write instead.
    #[error("{0}")]
    Usage(String),
    /// A stop was requested (see [`crate::RuntimeOptions::stop`]) while
    /// bridged MCP servers were starting.
    #[error("interrupted")]
    Interrupted,
    /// A file the runtime needs could not be opened or written.
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Remembered approvals could not be read or changed.
    #[error(transparent)]
    Approvals(#[from] crate::approvals::ApprovalsError),
}

impl Error {
    /// Whether the user fixes this in the configuration or the options.
    pub fn is_usage(&self) -> bool {
        matches!(self, Self::Usage(_))
    }

    pub(crate) fn usage(msg: impl std::fmt::Display) -> Self {
        Self::Usage(msg.to_string())
    }
}
