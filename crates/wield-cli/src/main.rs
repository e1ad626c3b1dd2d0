//! The `wield` binary: argument parsing and wiring only.

mod app;
mod approvals_store;
mod cli;
mod commands;
mod debug_tools;
mod session_temp;
mod shell_hooks;
mod terminal_approver;
mod tool_set;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main()
}
