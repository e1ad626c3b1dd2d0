//! The `wield` binary: argument parsing and wiring only.

mod app;
mod cli;
mod commands;
mod debug_tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    commands::main()
}
