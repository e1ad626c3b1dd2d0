//! `wield approvals list | add PATTERN [--scope project|global] | remove PATTERN [--scope ..]`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use wield_core::Scope;
use wield_runtime::FileApprovalStore;

use crate::app::{usage, workspace};
use crate::cli::{ApprovalsCommand, GlobalArgs};

fn scope(text: &str) -> anyhow::Result<Scope> {
    match text.trim() {
        "project" => Ok(Scope::Project),
        "global" => Ok(Scope::Global),
        other => Err(usage(format!("--scope must be `project` or `global`, got `{other}`"))),
    }
}

fn name(scope: Scope) -> &'static str {
    if scope == Scope::Global { "global" } else { "project" }
}

pub fn run(global: &GlobalArgs, cmd: ApprovalsCommand) -> anyhow::Result<ExitCode> {
    // Deliberately light: no registry or config is loaded, so many
    // concurrent `add`s stay cheap and a broken config cannot block them.
    let store = FileApprovalStore::new(&workspace(global)?, wield_core::config::global_config_dir().as_deref());
    let mut out = std::io::stdout().lock();
    match cmd {
        ApprovalsCommand::List { json } => list(&store, json, &mut out)?,
        ApprovalsCommand::Add { pattern, scope: s } => {
            let s = scope(&s)?;
            wield_runtime::check_pattern(&pattern).map_err(|e| usage(e.to_string()))?;
            let added = store.add(s, &pattern)?;
            let path = store.path(s)?.display();
            let p = pattern.trim();
            if added {
                writeln!(out, "remembered `{p}` ({}) in {path}", name(s))?;
            } else {
                writeln!(out, "`{p}` was already remembered ({}) in {path}", name(s))?;
            }
        }
        ApprovalsCommand::Remove { pattern, scope: s } => {
            let scopes = match s {
                Some(s) => vec![scope(&s)?],
                None => vec![Scope::Project, Scope::Global],
            };
            let mut removed = false;
            for s in scopes {
                if store.path(s).is_ok() && store.remove(s, &pattern)? {
                    writeln!(
                        out,
                        "forgot `{}` ({}) in {}",
                        pattern.trim(),
                        name(s),
                        store.path(s)?.display()
                    )?;
                    removed = true;
                }
            }
            if !removed {
                anyhow::bail!(
                    "`{}` is not a remembered approval; `wield approvals list` shows them",
                    pattern.trim()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The remembered approvals, project and global (`wield approvals list`
/// and the interactive agent's `/approvals`).
pub fn list(store: &FileApprovalStore, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let mut files = Vec::new();
    for s in [Scope::Project, Scope::Global] {
        let path = store.path(s).ok().map(|p| p.display().to_string());
        let patterns = if path.is_some() { store.load(s)? } else { Vec::new() };
        files.push((s, path, patterns));
    }
    if json {
        let mut v = serde_json::Map::new();
        for (s, path, patterns) in &files {
            v.insert(name(*s).into(), json!({"path": path, "auto": patterns}));
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else if files.iter().all(|(_, _, p)| p.is_empty()) {
        let paths: Vec<String> = files
            .iter()
            .filter_map(|(s, p, _)| p.as_ref().map(|p| format!("{}: {p}", name(*s))))
            .collect();
        writeln!(out, "no remembered approvals ({})", paths.join(", "))?;
    } else {
        for (s, _, patterns) in &files {
            for p in patterns {
                writeln!(out, "{:8} {p}", name(*s))?;
            }
        }
    }
    Ok(())
}
