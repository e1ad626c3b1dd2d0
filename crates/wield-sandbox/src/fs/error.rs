//! Errors of the confined file layer. Every message names the path as the
//! caller gave it and says what to do, because it usually ends up in front of
//! a model that has to pick another path.

use std::io;

use super::Access;

/// Why a confined operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The path (or where a symbolic link on it leads) is outside every root
    /// that allows this access.
    #[error("path {path} is outside the {} roots ({roots}){detail}: use a path inside them", access.as_str())]
    Outside {
        path: String,
        access: Access,
        /// The roots that allow this access, comma-separated.
        roots: String,
        /// Extra explanation, e.g. which symbolic link led outside.
        detail: String,
    },
    /// A write into a protected path: wield's own state (`.wield/`, its
    /// global config directory) or one listed in `sandbox.protected`.
    #[error(
        "path {path} is protected: {protected} is a protected path (wield's own configuration and approvals, or \
         listed in sandbox.protected), which tools may not change"
    )]
    Protected { path: String, protected: String },
    /// A write into a path wield guards while it runs (see
    /// [`Guarded`](super::Guarded)), saying why.
    #[error("path {path} is protected: {guarded} is {why}, which tools may not change while wield runs")]
    Guarded { path: String, guarded: String, why: String },
    /// A write inside a `.git` or `.wield` directory, or to a `.git` file,
    /// at any depth: version control and wield read these and run what they
    /// name (hooks, `core.fsmonitor`, wield's own hooks) later, outside any
    /// sandbox.
    #[error(
        "path {path} is protected project state ({component}): file tools never create or change anything in a \
         `.git` or `.wield` directory, or a `.git` file, at any depth, because git and wield run what these \
         name (hooks, core.fsmonitor, wield hooks) later, outside the sandbox. Change it with a command a person \
         approves, or by hand"
    )]
    ProjectState { path: String, component: String },
    /// A glob (of `sandbox.protected`, say) that does not compile.
    #[error("invalid glob {glob:?}: {reason}; globs use `*`, `**`, `?`, `[abc]` and `{{a,b}}`")]
    BadGlob { glob: String, reason: String },
    #[error("path contains a NUL byte: {path:?}; file names cannot contain NUL")]
    Nul { path: String },
    #[error("the path is empty: give a file or directory path")]
    Empty,
    #[error("{path}: no such file or directory")]
    NotFound { path: String },
    #[error("{path}: not a directory (a component of the path is a file)")]
    NotADirectory { path: String },
    #[error("{path} is a directory, not a file")]
    IsADirectory { path: String },
    #[error("{path} is not a regular file (it is a {kind})")]
    NotRegular { path: String, kind: &'static str },
    /// A file of one of the kernel's pseudo file systems (procfs, sysfs,
    /// devtmpfs, ...): the process's environment or the machine's state,
    /// never a document, so wield does not read it for itself.
    #[error(
        "{path} is a system file (on {fs}, one of the kernel's file systems), not a document: wield reads only \
         regular files on ordinary file systems here"
    )]
    SystemFile { path: String, fs: &'static str },
    #[error("{path} already exists and is not a directory")]
    ExistsNotDirectory { path: String },
    #[error("{path}: too many levels of symbolic links (more than {limit})")]
    SymlinkLoop { path: String, limit: usize },
    #[error("{path} changed while it was being opened; try again")]
    Changed { path: String },
    #[error("{path}: permission denied")]
    PermissionDenied { path: String },
    /// An existing file the process may not write. Replacing it through a
    /// temp file and a rename would succeed (the directory is writable) and
    /// silently defeat its permissions, so file tools refuse instead.
    #[error(
        "{path} is read-only ({reason}): file tools do not replace a file its permissions protect. If it \
         should change, make it writable first (chmod u+w {path}), or leave it as it is"
    )]
    ReadOnly { path: String, reason: String },
    #[error("root {path}: {reason}")]
    BadRoot { path: String, reason: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl ConfineError {
    /// Whether the refusal is a confinement decision (outside the roots,
    /// protected, NUL byte) rather than an ordinary file-system failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::Outside { .. }
                | Self::Protected { .. }
                | Self::Guarded { .. }
                | Self::ProjectState { .. }
                | Self::Nul { .. }
                | Self::Changed { .. }
                | Self::SystemFile { .. }
        )
    }

    /// Whether the path does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Map an errno from a syscall on `path` to the matching variant.
    pub(crate) fn from_errno(path: &str, err: rustix::io::Errno) -> Self {
        use rustix::io::Errno;
        match err {
            Errno::NOENT => Self::NotFound { path: path.to_owned() },
            Errno::NOTDIR => Self::NotADirectory { path: path.to_owned() },
            Errno::ISDIR => Self::IsADirectory { path: path.to_owned() },
            Errno::ACCESS | Errno::PERM => Self::PermissionDenied { path: path.to_owned() },
            Errno::LOOP => Self::Changed { path: path.to_owned() },
            other => Self::Io {
                path: path.to_owned(),
                source: io::Error::from_raw_os_error(other.raw_os_error()),
            },
        }
    }

    pub(crate) fn from_io(path: &str, err: io::Error) -> Self {
        match err.raw_os_error() {
            Some(code) => Self::from_errno(path, rustix::io::Errno::from_raw_os_error(code)),
            None => Self::Io {
                path: path.to_owned(),
                source: err,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_told_from_failures() {
        let outside = ConfineError::Outside {
            path: "p".into(),
            access: Access::Read,
            roots: "/w".into(),
            detail: String::new(),
        };
        assert!(outside.is_refusal() && !outside.is_not_found());
        let missing = ConfineError::NotFound { path: "p".into() };
        assert!(!missing.is_refusal() && missing.is_not_found());
        assert!(!ConfineError::Empty.is_refusal());
    }

    #[test]
    fn system_errors_map_to_what_they_mean() {
        use rustix::io::Errno;
        assert!(ConfineError::from_errno("p", Errno::NOENT).is_not_found());
        assert!(matches!(
            ConfineError::from_errno("p", Errno::LOOP),
            ConfineError::Changed { .. }
        ));
        assert!(matches!(
            ConfineError::from_io("p", io::Error::from_raw_os_error(libc::EACCES)),
            ConfineError::PermissionDenied { .. }
        ));
        assert!(matches!(
            ConfineError::from_io("p", io::Error::other("x")),
            ConfineError::Io { .. }
        ));
    }
}
