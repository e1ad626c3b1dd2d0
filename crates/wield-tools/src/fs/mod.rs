//! File tools on the confined workspace: read, write, edit, ls, mkdir, glob,
//! grep.
//!
//! No tool here touches a path by itself: every path goes through the
//! [`Confinement`] installed as a service (see [`install_services`]), which
//! resolves it beneath a root directory handle. Directory walks (ls, glob,
//! grep) start at a directory the confinement resolved, use the `ignore`
//! crate's walker (which does not follow links) and open files with
//! [`Confinement::open_walked`].
//!
//! Read-before-write: when a model drives the session, write and edit refuse
//! to change an existing file the session has not read (or that changed on
//! disk since it was read), so a model never overwrites what it has not
//! seen. `wield call` is driven by a person and skips the check.

// Helpers fail with the `ToolResult` the model will read. That is a cold
// path taken at most once per call, so the size of the `Err` variant costs
// nothing worth boxing for.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde_json::Value;
use wield_core::truncate::{Limits, SavedOutputs};
use wield_core::{
    Access as CoreAccess, Config, Context, PathGuard, PathUse, Refusal, Services, Session, ToolRef, ToolResult,
};
use wield_sandbox::fs::{Access, ConfineError, Confinement, Guarded, Resolved};

use crate::SetupError;

/// The file tools' own keys outside their `[tool]` tables.
pub const CONFIG_KEYS: &[&str] = &["read_before.write"];

mod ask_paths;
pub(crate) mod diff;
mod edit;
mod glob;
mod grep;
mod ls;
mod mkdir;
mod read;
mod text;
mod walk;
mod write;

pub use ask_paths::{AskPathsResolver, DEFAULT_ASK_PATHS, PRIORITY_ASK_PATHS, ask_path_globs};
pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use mkdir::MkdirTool;
pub use read::ReadTool;
pub use write::WriteTool;

/// The file tools.
pub fn tools() -> Vec<ToolRef> {
    vec![
        Arc::new(ReadTool::new()),
        Arc::new(WriteTool::new()),
        Arc::new(EditTool::new()),
        Arc::new(LsTool::new()),
        Arc::new(MkdirTool::new()),
        Arc::new(GlobTool::new()),
        Arc::new(GrepTool::new()),
    ]
}

/// Settings of the file tools that come from the global configuration.
#[derive(Clone, Debug)]
pub struct FsSettings {
    /// `read_before.write` (default true).
    pub read_before_write: bool,
}

impl Default for FsSettings {
    fn default() -> Self {
        Self {
            read_before_write: true,
        }
    }
}

/// Install the [`Confinement`] for `workspace` built from `[sandbox]`
/// (`read`, `write`, `protected`) and the [`FsSettings`].
pub fn install_services(
    services: &mut Services,
    config: &Config,
    workspace: &Path,
    guarded: &[Guarded],
) -> Result<(), SetupError> {
    services.insert(Arc::new(confinement_from_config(config, workspace, guarded)?));
    let read_before_write = match config.value("read_before.write") {
        None => true,
        Some(toml::Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(SetupError::Invalid(format!(
                "read_before.write must be true or false, not {other}"
            )));
        }
    };
    services.insert(Arc::new(FsSettings { read_before_write }));
    Ok(())
}

/// The confinement for a workspace from `[sandbox] read`, `write` and
/// `protected` (relative entries are inside the workspace; they add to
/// `.wield`, which is always protected, as is wield's global config
/// directory), and `guarded`, protected with their reasons.
pub fn confinement_from_config(
    config: &Config,
    workspace: &Path,
    guarded: &[Guarded],
) -> Result<Confinement, SetupError> {
    let list = |key: &str| -> Result<Option<Vec<PathBuf>>, SetupError> {
        match config.value(key) {
            None => Ok(None),
            Some(toml::Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(expand_home(s)),
                    other => Err(SetupError::Invalid(format!(
                        "{key} must be a list of paths, found {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(SetupError::Invalid(format!(
                "{key} must be a list of paths, e.g. [\"~/notes\"], found {other}"
            ))),
        }
    };
    let mut builder = Confinement::builder(workspace).skip_missing_roots(true);
    for p in list("sandbox.read")?.unwrap_or_default() {
        builder = builder.read_root(p);
    }
    for p in list("sandbox.write")?.unwrap_or_default() {
        builder = builder.write_root(p);
    }
    // `.wield` stays protected whatever the config says: it holds the
    // approvals that decide what tools may do.
    for p in list("sandbox.protected")?.unwrap_or_default() {
        builder = builder.protect(p);
    }
    if let Some(dir) = &config.global_dir {
        builder = builder.protect(dir);
    }
    for g in guarded {
        builder = builder.guard(g.clone());
    }
    builder
        .build()
        .map_err(|e| SetupError::Invalid(format!("sandbox: {e}")))
}

fn expand_home(s: &str) -> PathBuf {
    match (s.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ if s == "~" => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| s.into()),
        _ => PathBuf::from(s),
    }
}

/// The executor's path pre-filter over the confinement: a call whose
/// declared paths are outside the roots (or protected, for writing) is
/// refused before it runs. Missing files and the like are left to the tool.
pub struct ConfinementGuard(pub Arc<Confinement>);

impl PathGuard for ConfinementGuard {
    fn check(&self, path: &str, access: CoreAccess, ctx: &Context) -> Result<(), Refusal> {
        let access = match access {
            CoreAccess::Read => Access::Read,
            CoreAccess::Write => Access::Write,
        };
        match self.0.resolve(path, access) {
            Err(e) if e.is_refusal() => Err(Refusal::to_model(e.to_string())),
            Ok(resolved) if resolved.exists() => {
                // The tool resolves the same path next: it takes this one.
                ctx.scratch.put(Checked {
                    conf: Arc::clone(&self.0),
                    path: path.to_owned(),
                    access,
                    resolved,
                });
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A resolution the path guard made for this call.
struct Checked {
    conf: Arc<Confinement>,
    path: String,
    access: Access,
    resolved: Resolved,
}

/// Resolve `path` for this call: the path guard's resolution of the same
/// path, for the same access in the same confinement, when it made one
/// (saving a second walk); otherwise a fresh one.
pub(crate) fn resolve_for_call(
    ctx: &Context,
    conf: &Arc<Confinement>,
    path: &str,
    access: Access,
) -> Result<Resolved, ConfineError> {
    if let Some(c) = ctx
        .scratch
        .take::<Checked>(|c| c.access == access && c.path == path && Arc::ptr_eq(&c.conf, conf))
    {
        return Ok(c.resolved);
    }
    conf.resolve(path, access)
}

/// The confinement a call works in: the installed service, or (for a tool
/// used without services, as in a bare library embedding) a default one over
/// the context's workspace.
pub fn confinement(ctx: &Context) -> Result<Arc<Confinement>, ToolResult> {
    if let Some(c) = ctx.service::<Confinement>() {
        return Ok(c);
    }
    Confinement::builder(&ctx.cwd)
        .build()
        .map(Arc::new)
        .map_err(|e| ToolResult::error(format!("cannot confine the workspace: {e}")))
}

pub(crate) fn settings(ctx: &Context) -> FsSettings {
    ctx.service::<FsSettings>().map(|s| (*s).clone()).unwrap_or_default()
}

/// A refusal or file-system failure as a tool result; refusals are marked so
/// front-ends and audits can tell them apart.
pub(crate) fn fail(err: &ConfineError) -> ToolResult {
    let r = ToolResult::error(err.to_string());
    if err.is_refusal() {
        r.with_meta("refused", true)
    } else {
        r
    }
}

/// Parse a tool's input into its typed form, or an error result naming what
/// was wrong.
pub(crate) fn parse<T: DeserializeOwned>(tool: &str, input: Value) -> Result<T, ToolResult> {
    serde_json::from_value(input).map_err(|e| ToolResult::error(format!("invalid arguments for {tool}: {e}")))
}

/// Run blocking file work off the async runtime.
pub(crate) async fn blocking<F>(work: F) -> ToolResult
where
    F: FnOnce() -> ToolResult + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| ToolResult::error(format!("the file operation failed unexpectedly: {e}")))
}

pub(crate) fn path_use(input: &Value, key: &str, default: Option<&str>, access: CoreAccess) -> Vec<PathUse> {
    match input.get(key).and_then(Value::as_str).or(default) {
        Some(p) => vec![PathUse {
            path: p.to_owned(),
            access,
        }],
        None => Vec::new(),
    }
}

/// How a call's listing is cut: its output limits and where the full text
/// is saved, taken from the call's context before the listing is made off
/// the async runtime.
#[derive(Clone)]
pub(crate) struct ListingCut {
    limits: Limits,
    saved: Arc<SavedOutputs>,
}

impl ListingCut {
    pub(crate) fn of(ctx: &Context) -> Self {
        Self {
            limits: ctx.limits,
            saved: ctx.saved_outputs(),
        }
    }
}

/// A listing (ls, glob, grep) as a result: cut to the output limits with the
/// full text saved in the runtime's saved-output directory, and marked
/// truncated when either the tool's own `limit` or the output limits left
/// something out.
pub(crate) fn listing(how: &ListingCut, text: String, limited: bool) -> ToolResult {
    let limits = how.limits;
    let cut = wield_core::truncate::truncate_head(&text, limits.max_lines, limits.max_bytes, &how.saved);
    let mut r = ToolResult::ok(cut.text.clone());
    r.metadata.extend(cut.metadata());
    r.with_meta("truncated", limited || cut.truncated)
}

/// A path as one line of a listing (ls, glob, grep): a name holding a
/// newline or another control character would otherwise print as lines of
/// its own and pass for other entries, so such a name is shown quoted, with
/// its control characters escaped (`"a\nb"`). So are names holding a
/// Unicode line or paragraph separator (shown as a line break by many
/// readers), a direction override (which shows text reordered), or a `"`
/// or `\` (so that a name cannot pass for a quoted one). Other names are
/// shown as they are.
pub(crate) fn listed(path: &str) -> std::borrow::Cow<'_, str> {
    let shown_escaped = |c: char| {
        c.is_control()
            || matches!(
                c,
                '"' | '\\'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{200e}'
                    | '\u{200f}'
                    | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}'
                    | '\u{feff}'
            )
    };
    if path.chars().any(shown_escaped) {
        std::borrow::Cow::Owned(format!("{path:?}"))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// `2.3KB`, `512B`, `1.5MB`.
pub fn human_size(bytes: u64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if b < KB {
        format!("{bytes}B")
    } else if b < KB * KB {
        format!("{:.1}KB", b / KB)
    } else if b < KB * KB * KB {
        format!("{:.1}MB", b / (KB * KB))
    } else {
        format!("{:.1}GB", b / (KB * KB * KB))
    }
}

/// What the session knew of a file when it last read or wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    size: u64,
}

/// Per-session record of the files read (a session extension the file
/// tools own), with their state at that time, so a write can tell a file
/// changed on disk since the model saw it.
#[derive(Default)]
struct ReadLedger {
    read: Mutex<std::collections::HashSet<PathBuf>>,
    stamps: Mutex<std::collections::HashMap<PathBuf, Stamp>>,
}

/// Record that the session has read the file at `real` (its real path).
pub fn mark_read(session: &Session, real: &Path) {
    let ledger = session.extension(ReadLedger::default);
    let mut read = ledger.read.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    read.insert(real.to_path_buf());
}

/// Whether the session has read the file at `real` (its real path).
pub fn was_read(session: &Session, real: &Path) -> bool {
    session.get_extension::<ReadLedger>().is_some_and(|ledger| {
        ledger
            .read
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(real)
    })
}

fn stamp_of(conf: &Confinement, real: &Path) -> Option<Stamp> {
    conf.metadata(real).ok().map(|m| Stamp {
        modified: m.modified().ok(),
        size: m.len(),
    })
}

/// Record that the session has seen `real` as it is now.
pub(crate) fn mark_seen(ctx: &Context, conf: &Confinement, real: &Path) {
    mark_read(&ctx.session, real);
    if let Some(stamp) = stamp_of(conf, real) {
        remember(ctx, real, stamp);
    }
}

/// [`mark_seen`] with the status of the file as it was read (from the open
/// handle), instead of looking the path up again.
pub(crate) fn mark_seen_as(ctx: &Context, real: &Path, meta: &std::fs::Metadata) {
    mark_read(&ctx.session, real);
    remember(
        ctx,
        real,
        Stamp {
            modified: meta.modified().ok(),
            size: meta.len(),
        },
    );
}

fn remember(ctx: &Context, real: &Path, stamp: Stamp) {
    let ledger = ctx.session.extension(ReadLedger::default);
    let mut map = ledger.stamps.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    map.insert(real.to_path_buf(), stamp);
}

/// Read-before-write: `Err` with a message for the model when an existing
/// file may not be changed yet.
pub(crate) fn check_read_before_write(ctx: &Context, path: &str) -> Result<(), Refusal> {
    if !ctx.session.model_driven() || !settings(ctx).read_before_write {
        return Ok(());
    }
    let conf = confinement(ctx).map_err(|r| {
        Refusal::failed(
            "could not check that the file was read first",
            r.error.unwrap_or_else(|| "the workspace confinement is missing".into()),
        )
    })?;
    let Ok(resolved) = conf.resolve(path, Access::Write) else {
        // Refusals are reported by the tool itself with the full message.
        return Ok(());
    };
    if !resolved.exists() {
        return Ok(());
    }
    let real = resolved.real_path();
    let shown = conf.display_path(real);
    if !was_read(&ctx.session, real) {
        return Err(Refusal::to_model(format!(
            "{shown} exists and has not been read in this session: read it first with the read tool, then write or edit it"
        )));
    }
    let ledger = ctx.session.extension(ReadLedger::default);
    let known = ledger
        .stamps
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(real)
        .copied();
    if let (Some(known), Some(now)) = (known, stamp_of(&conf, real))
        && known != now
    {
        return Err(Refusal::to_model(format!(
            "{shown} changed on disk since it was last read: read it again before writing or editing it"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
