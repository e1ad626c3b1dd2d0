//! Confinement for everything a tool touches.
//!
//! Two halves share this crate:
//! - [`fs`]: path confinement. Every path a file tool touches is resolved
//!   beneath a root directory handle, never by comparing strings.
//! - [`process`]: command spawning (own process group, bounded capture,
//!   kill-tree, environment scrubbing) and the Landlock/seccomp and
//!   bubblewrap backends that confine what a command may write or reach.

pub mod fs;
pub mod process;
