//! The `wield` binary: argument parsing and wiring only.

mod app;
mod cli;
mod commands;
mod session_temp;
mod terminal_approver;
mod test_hooks;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main()
}
