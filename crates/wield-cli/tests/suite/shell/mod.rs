//! Commands through the real binary where only it shows them: the bash
//! tool's plain output and the environment wield was started with, `wield
//! sandbox check` and the Landlock helper. The bash tool, the sandbox and
//! background processes are tested in wield-tools' `shell` suite.

mod bash;
mod sandbox;
pub(crate) mod support;
