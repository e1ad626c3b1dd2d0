//! `wield completions SHELL`: a completion script on stdout, made from the
//! command definition itself.

use std::process::ExitCode;

use clap::CommandFactory as _;

use crate::cli::Cli;

pub fn run(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "wield", &mut script);
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(&script).and_then(|()| stdout.flush()) {
        // Read only in part (`| head`): nothing is wrong.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        result => result.map(|()| ExitCode::SUCCESS).map_err(Into::into),
    }
}
