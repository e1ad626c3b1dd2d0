//! Path confinement: every path a file tool touches is resolved beneath a
//! root directory handle, never by comparing strings.
//!
//! A [`Confinement`] holds open handles to its roots: the workspace (read
//! and write; relative paths start there), extra read roots, extra write
//! roots and the temp dir (writable). Protected paths (`.wield` inside the
//! workspace by default: wield's own config and approvals; more paths and
//! globs from `sandbox.protected`) are never writable, and neither is
//! anything inside a `.git` or `.wield` directory or a `.git` file at any
//! depth (see [`PROJECT_STATE`]): every write of every tool resolves here,
//! so this is the one place the rule is kept.
//!
//! Resolution walks the path one component at a time, each lookup done by
//! the kernel relative to a directory handle we hold, with `O_NOFOLLOW`
//! (see [`resolve`](self) internals). `..` pops our own stack of handles and
//! symbolic links are read and followed by us, so:
//!
//! - `..` climbing out of the roots, absolute paths outside every root,
//!   a path that only shares a string prefix with a root (`/srv/app-evil`
//!   vs `/srv/app`), NUL bytes, and symbolic links (to files, directories,
//!   or dangling) whose target is outside are refused with a
//!   [`ConfineError::Outside`] that names the root set;
//! - links that stay inside the roots work, absolute ones included;
//! - the object an operation acts on is the one resolution reached: files
//!   are opened by name in the directory handle resolution holds, without
//!   following links, and checked to be the same inode, so swapping a
//!   directory for a link between check and use cannot redirect anything.
//!
//! Directory walkers (the `ignore` crate, which does not follow links) start
//! at [`Confinement::real_dir`], test what they yield with
//! [`Confinement::contains`] and open files with
//! [`Confinement::open_walked`] (`openat2` beneath the root with
//! `RESOLVE_NO_SYMLINKS`: one syscall, as cheap as a plain open).
//!
//! Files wield reads for itself rather than for a tool (attachments,
//! skills, memory, Lua modules) are opened with
//! [`Confinement::open_ordinary`] or [`open_ordinary_path`]: what was opened
//! is checked to be a regular file outside the kernel's pseudo file systems
//! (procfs, sysfs, devtmpfs, ...), and read from the same descriptor.
//!
//! Linux only: it relies on `O_PATH` and `openat2`.

pub mod chat;
mod error;
mod narrow;
mod ops;
mod ordinary;
mod protect;
mod resolve;
mod roots;

pub use error::ConfineError;
pub use ops::{DirEntry, WriteOutcome};
pub use ordinary::{check_ordinary, open_ordinary_path};
pub use protect::{PROJECT_STATE, ProtectedGlobs, is_glob, split_protected};
pub use resolve::{Kind, MAX_SYMLINK_HOPS, Resolved};
pub use roots::{Confinement, ConfinementBuilder, DEFAULT_PROTECTED, Guarded, RootKind};

/// What a path is used for: reading, or writing (create, replace, remove,
/// rename, mkdir).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
}

impl Access {
    /// `read` or `write`, as used in messages ("outside the write roots").
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
        }
    }
}
