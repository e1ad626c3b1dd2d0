//! `wield man --out DIR` (hidden): the manual pages, from the same command
//! definition as `--help`, so they cannot tell another story. The project
//! keeps them in `docs/man`; a test fails when they are stale.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::Cli;

pub fn run(out: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot make {}", out.display()))?;
    let pages = pages().context("cannot render the manual pages")?;
    for (name, page) in &pages {
        wield_runtime::write_atomic(&out.join(name), page)?;
    }
    // A page of a command that no longer exists would go on describing it.
    let entries = std::fs::read_dir(out).with_context(|| format!("cannot read {}", out.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_page_name(&name) && !pages.iter().any(|(page, _)| *page == name) {
            std::fs::remove_file(entry.path()).with_context(|| format!("cannot remove {}", entry.path().display()))?;
        }
    }
    let mut stdout = std::io::stdout().lock();
    use std::io::Write as _;
    writeln!(stdout, "wrote {} manual pages to {}", pages.len(), out.display())?;
    Ok(ExitCode::SUCCESS)
}

/// `wield.1`, `wield-run.1`, `wield-tools-list.1`: the names [`pages`] gives.
fn is_page_name(name: &str) -> bool {
    name.strip_suffix(".1")
        .is_some_and(|stem| stem == "wield" || stem.starts_with("wield-"))
}

/// Each page's file name and its roff text: `wield.1`, then one for every
/// command that is not hidden, nested ones included (`wield-tools-list.1`).
fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn add(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut page = Vec::new();
        man.render(&mut page)?;
        pages.push((man.get_filename(), page));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            add(sub, pages)?;
        }
        Ok(())
    }
    // Built, the commands have their full names (`wield-run`); the `help`
    // command clap adds needs no page.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    add(&cmd, &mut pages)?;
    Ok(pages)
}
