//! Commands through the real binary: the bash tool, the process sandbox
//! (Landlock and bubblewrap), background processes.

mod bash;
mod processes;
mod sandbox;
pub(crate) mod support;
