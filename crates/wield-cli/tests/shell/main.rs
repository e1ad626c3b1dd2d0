//! Commands through the real binary: the bash tool, the process sandbox
//! (Landlock and bubblewrap), background processes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash;
mod processes;
mod sandbox;
mod support;
