//! Confining what a command may write and reach.
//!
//! Two backends, chosen by [`SandboxSettings::resolve`]:
//!
//! - **Landlock** (+ seccomp): the command is started through a re-executed
//!   helper, the wield binary's hidden `__sandbox-exec` subcommand
//!   ([`sandbox_exec_main`]), which restricts itself and then `execvp`s the
//!   command. Nothing is prepared between fork and exec in wield's
//!   multithreaded process: the helper is spawned like any other program and
//!   does its work single-threaded. Network access is cut by Landlock's TCP
//!   rules where the kernel has them (ABI 4+) and by a seccomp filter that
//!   refuses `socket(AF_INET | AF_INET6 | AF_PACKET)` and io_uring.
//! - **bubblewrap**: `bwrap --ro-bind / /` with read-write binds for the
//!   write roots, read-only re-binds for protected paths, a fresh `/dev`,
//!   a PID namespace with its own `/proc`, `--unshare-net`,
//!   `--die-with-parent`, `--new-session`.
//!
//! Under both, the command runs under a keeper (the helper again, see
//! [`keeper`]) that adopts the orphans it leaves and ends them when it
//! exits, so no process of a command outlives it.
//!
//! `auto` prefers bubblewrap when a trial run works here, because it
//! enforces protected paths inside a writable workspace exactly (see
//! below); then Landlock (best effort: ABI 1-2 kernels cannot refuse
//! truncating a file outside the write roots, `wield sandbox check` says
//! so). Asking for a backend that does not work is an error, never a silent
//! downgrade.
//!
//! # Protected paths inside a write root
//!
//! Bubblewrap mounts protected paths (`.wield`, `.git`) read-only over the
//! writable workspace: everything else in the workspace stays writable.
//! Landlock cannot express "this tree except that subtree": rights granted
//! on a directory hold for everything beneath it. So when a write root
//! holds a protected path, Landlock grants write on each entry of the root
//! (and, recursively, of any directory leading to a protected path) except
//! the protected ones, and not on the root directory itself. The cost:
//! under Landlock, files and directories cannot be created, deleted or
//! renamed directly in such a directory (the workspace's top level), only
//! inside its subdirectories and in existing top-level files. The same
//! holds for every directory on the way from a write root to a protected
//! path: with the workspace under `/tmp` and `/tmp` a write root, nothing
//! can be created directly in `/tmp` either. The failure hint says so and
//! suggests `backend = "bwrap"`.
//!
//! # Hidden paths
//!
//! Some of wield's own state must not even be read by a command of the same
//! user: the MCP server's token directory ([`token_dirs`]), whose token lets
//! anything that reads it call every tool over HTTP. Bubblewrap mounts an
//! empty tmpfs over each hidden directory. Landlock, which only grants,
//! grants read on each entry of every directory on the way from a read root
//! to a hidden path instead of on the directory itself (as for protected
//! paths above), and none on the hidden path; entries created in those
//! directories after the command started are not readable by it.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

mod bwrap;
mod hint;
mod keeper;
mod landlock_exec;
pub mod placeholder;
mod privileges;
mod probe;
mod sockets;

pub use hint::denial_hints;
pub use keeper::leftover_note;
pub use landlock_exec::{SANDBOX_EXEC_SUBCOMMAND, SandboxExecArgs, sandbox_exec_main};
pub use placeholder::RunGuard;
pub use privileges::{is_dumpable, make_non_dumpable};
pub use probe::{BwrapStatus, Probe, bwrap_status, bwrap_status_fresh, landlock_abi, probe, seccomp_available};

static CURRENT_EXE_IS_HELPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Declare that this executable runs [`sandbox_exec_main`] for the
/// `__sandbox-exec` subcommand (the wield binary does, first thing in
/// `main`), so bubblewrap runs commands under their keeper too.
pub fn declare_helper() {
    CURRENT_EXE_IS_HELPER.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this executable runs the helper ([`declare_helper`]).
pub fn helper_declared() -> bool {
    CURRENT_EXE_IS_HELPER.load(std::sync::atomic::Ordering::Relaxed)
}

/// `argv` under a keeper (see the `keeper` module) without a sandbox, so
/// that no process of an unconfined command outlives it either: `None`
/// when this executable is not a declared helper ([`declare_helper`]).
/// Run it with [`Runner::leader_reaps`](crate::process::Runner::leader_reaps).
pub fn keep_unconfined(argv: &[OsString], grace: std::time::Duration) -> Option<Vec<OsString>> {
    if !helper_declared() {
        return None;
    }
    let helper = std::env::current_exe().ok()?;
    let args = SandboxExecArgs {
        network: true,
        keep: Some(grace),
        keep_only: true,
        argv: argv.to_vec(),
        ..SandboxExecArgs::default()
    };
    let mut out = vec![helper.into_os_string(), SANDBOX_EXEC_SUBCOMMAND.into()];
    out.extend(args.to_args());
    Some(out)
}

/// `sandbox.enabled`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Enabled {
    /// On when some backend works here, off otherwise.
    #[default]
    Auto,
    Yes,
    No,
}

/// `sandbox.backend`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    #[default]
    Auto,
    Landlock,
    Bwrap,
    None,
}

impl FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "landlock" => Ok(Self::Landlock),
            "bwrap" | "bubblewrap" => Ok(Self::Bwrap),
            "none" => Ok(Self::None),
            other => Err(format!(
                "unknown sandbox backend `{other}`: use \"auto\", \"landlock\", \"bwrap\" or \"none\""
            )),
        }
    }
}

/// A backend that confines a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Landlock,
    Bwrap,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Landlock => "landlock",
            Self::Bwrap => "bwrap",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "sandbox backend `{backend}` is not available here: {reason}. Run `wield sandbox check` to see what this machine supports, or set sandbox.backend to another backend"
    )]
    Unavailable { backend: Backend, reason: String },
    #[error(
        "sandbox.enabled = true but no sandbox backend works here ({reason}). Run `wield sandbox check`; set sandbox.enabled = false to run commands unconfined"
    )]
    NoneAvailable { reason: String },
    #[error(
        "sandbox.enabled = true contradicts sandbox.backend = \"none\": choose a backend (\"auto\", \"landlock\", \"bwrap\") or set sandbox.enabled = false"
    )]
    Contradiction,
    #[error("cannot locate the wield executable to run the Landlock helper: {0}")]
    Helper(io::Error),
}

/// What the sandbox allows. Paths should be absolute; missing ones are
/// skipped when the sandbox is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSettings {
    pub enabled: Enabled,
    pub backend: BackendChoice,
    /// Whether commands may use the network.
    pub network: bool,
    /// Where commands may write.
    pub write: Vec<PathBuf>,
    /// Where commands may read; `None` means everywhere. System directories
    /// (`/usr`, `/etc`, …) and the write roots stay readable either way.
    pub read: Option<Vec<PathBuf>>,
    /// Never writable, even inside a write root.
    pub protected: Vec<PathBuf>,
    /// Unix sockets commands may connect to with the network off. Empty
    /// (the default): no `connect` at all (see the `sockets` module).
    pub allow_unix_sockets: Vec<PathBuf>,
    /// The workspace, whose `.wield` directory is created before a
    /// bubblewrap run so that it can be mounted read-only.
    pub workspace: Option<PathBuf>,
    /// Never readable nor writable by commands, wherever the roots are:
    /// wield's own secrets (see the module docs).
    pub hidden: Vec<PathBuf>,
}

impl SandboxSettings {
    /// The defaults for a workspace: write the workspace and the temp dir
    /// (`std::env::temp_dir()`: the wield binary makes it a private dir of
    /// the session's, never the shared `/tmp`), read everything, no
    /// network, `.wield` and `.git` protected.
    pub fn for_workspace(workspace: &Path) -> Self {
        Self {
            enabled: Enabled::Auto,
            backend: BackendChoice::Auto,
            network: false,
            write: vec![workspace.to_path_buf(), std::env::temp_dir()],
            read: None,
            protected: vec![workspace.join(".wield"), workspace.join(".git")],
            allow_unix_sockets: Vec::new(),
            workspace: Some(workspace.to_path_buf()),
            hidden: token_dirs(),
        }
    }

    /// The plan for this machine, `None` when commands run unconfined.
    /// Probing bubblewrap runs it once per process, and only when needed.
    pub fn resolve(&self) -> Result<Option<SandboxPlan>, SandboxError> {
        self.resolve_with(landlock_abi(), seccomp_available(), &|| match bwrap_status() {
            BwrapStatus::Works { path } => Ok(path.clone()),
            other => Err(other.reason()),
        })
    }

    /// [`resolve`](Self::resolve) against given capabilities.
    pub fn resolve_with(
        &self,
        landlock_abi: Option<i32>,
        seccomp: bool,
        bwrap: &dyn Fn() -> Result<PathBuf, String>,
    ) -> Result<Option<SandboxPlan>, SandboxError> {
        let landlock = || -> Result<(), String> {
            match landlock_abi {
                None => Err("the kernel has no Landlock support (or it is disabled)".into()),
                Some(_) if !self.network && !seccomp => {
                    Err("seccomp is unavailable, so Landlock alone cannot cut all network access".into())
                }
                Some(_) => Ok(()),
            }
        };
        let plan = |backend: Backend, bwrap_path: Option<PathBuf>| SandboxPlan {
            backend,
            bwrap: bwrap_path,
            helper: None,
            network: self.network,
            write: normalize_all(&self.write),
            read: self.read.as_deref().map(normalize_all),
            protected: self.protected.iter().map(|p| normalize(p)).collect(),
            allow_unix_sockets: normalize_all(&self.allow_unix_sockets),
            workspace: self.workspace.clone(),
            hidden: self.hidden.iter().map(|p| normalize(p)).collect(),
            landlock_abi,
            grace: crate::process::DEFAULT_GRACE,
        };
        if self.enabled == Enabled::No {
            return Ok(None);
        }
        make_hidden(&self.hidden);
        match self.backend {
            BackendChoice::None if self.enabled == Enabled::Yes => Err(SandboxError::Contradiction),
            BackendChoice::None => Ok(None),
            BackendChoice::Landlock => landlock()
                .map(|()| Some(plan(Backend::Landlock, None)))
                .map_err(|reason| SandboxError::Unavailable {
                    backend: Backend::Landlock,
                    reason,
                }),
            BackendChoice::Bwrap => bwrap()
                .map(|path| Some(plan(Backend::Bwrap, Some(path))))
                .map_err(|reason| SandboxError::Unavailable {
                    backend: Backend::Bwrap,
                    reason,
                }),
            BackendChoice::Auto => {
                let bw = bwrap();
                if let Ok(path) = bw {
                    return Ok(Some(plan(Backend::Bwrap, Some(path))));
                }
                let ll = landlock();
                if ll.is_ok() {
                    return Ok(Some(plan(Backend::Landlock, None)));
                }
                if self.enabled == Enabled::Yes {
                    let reason = format!(
                        "bwrap: {}; landlock: {}",
                        bw.err().unwrap_or_default(),
                        ll.err().unwrap_or_default()
                    );
                    return Err(SandboxError::NoneAvailable { reason });
                }
                Ok(None)
            }
        }
    }
}

/// Where the MCP server writes a token it made, in order of preference:
/// `wield/tokens` in `$XDG_RUNTIME_DIR`, in `$XDG_STATE_HOME`, and in
/// `~/.local/state`. Every one of them is hidden from commands (see the
/// module docs), so a token written to any is out of their reach.
pub fn token_dirs() -> Vec<PathBuf> {
    let from = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    [
        from("XDG_RUNTIME_DIR"),
        from("XDG_STATE_HOME"),
        from("HOME").map(|h| h.join(".local/state")),
    ]
    .into_iter()
    .flatten()
    .filter(|d| d.is_absolute())
    .map(|d| d.join("wield").join("tokens"))
    .collect()
}

/// Makes each hidden directory that is missing (mode 0700): a directory
/// made only after a command started (the MCP server's token directory, at
/// its first token) could not be hidden from it. One that cannot be made
/// (a read-only home) cannot be written to by wield either.
fn make_hidden(hidden: &[PathBuf]) {
    use std::os::unix::fs::DirBuilderExt as _;
    for dir in hidden {
        if dir.symlink_metadata().is_err() {
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
        }
    }
}

/// The hidden paths that exist, as the kernel names them (a link on the way
/// resolved), so that rules and mounts apply to the real directories.
pub(crate) fn existing_hidden(hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = hidden.iter().filter_map(|p| std::fs::canonicalize(p).ok()).collect();
    out.sort();
    out.dedup();
    out
}

/// A resolved sandbox: how to wrap a command's argv.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxPlan {
    backend: Backend,
    bwrap: Option<PathBuf>,
    helper: Option<PathBuf>,
    network: bool,
    write: Vec<PathBuf>,
    read: Option<Vec<PathBuf>>,
    protected: Vec<PathBuf>,
    allow_unix_sockets: Vec<PathBuf>,
    workspace: Option<PathBuf>,
    hidden: Vec<PathBuf>,
    landlock_abi: Option<i32>,
    /// How long what a command leaves running gets between SIGTERM and
    /// SIGKILL when the command exits (the keeper's grace period).
    grace: std::time::Duration,
}

impl SandboxPlan {
    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn network(&self) -> bool {
        self.network
    }

    pub fn write_roots(&self) -> &[PathBuf] {
        &self.write
    }

    pub fn read_roots(&self) -> Option<&[PathBuf]> {
        self.read.as_deref()
    }

    pub fn protected(&self) -> &[PathBuf] {
        &self.protected
    }

    /// What commands may neither read nor write (see the module docs).
    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// `sandbox.allow_unix_sockets`, normalized.
    pub fn allowed_unix_sockets(&self) -> &[PathBuf] {
        &self.allow_unix_sockets
    }

    /// The executable that understands `__sandbox-exec` (default: the
    /// current executable, i.e. the wield binary). Programs embedding the
    /// library either call [`sandbox_exec_main`] from their own `main` or
    /// point this at a wield binary.
    #[must_use]
    pub fn with_helper(mut self, exe: impl Into<PathBuf>) -> Self {
        self.helper = Some(exe.into());
        self
    }

    /// The grace period the keeper gives what a command leaves running
    /// (default [`DEFAULT_GRACE`](crate::process::DEFAULT_GRACE)).
    #[must_use]
    pub fn with_grace(mut self, grace: std::time::Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Whether the wrapped command's leader is a keeper that adopts the
    /// command's orphans (the Landlock backend; see the `keeper` module):
    /// run it with [`Runner::leader_reaps`](crate::process::Runner::leader_reaps).
    /// Under bubblewrap the keeper runs inside the PID namespace, and
    /// killing bubblewrap kills the namespace, so no such care is needed.
    pub fn leader_reaps(&self) -> bool {
        self.backend == Backend::Landlock
    }

    /// The helper for bubblewrap's keeper: only one known to understand
    /// `__sandbox-exec` (set with [`with_helper`](Self::with_helper), or
    /// this executable after [`declare_helper`]). Without one, bubblewrap
    /// runs the command directly: its PID namespace still ends everything
    /// the command left when it exits, at once and without a report.
    fn bwrap_keeper(&self) -> Option<PathBuf> {
        match &self.helper {
            Some(h) => Some(h.clone()),
            None if helper_declared() => std::env::current_exe().ok(),
            None => None,
        }
    }

    fn helper(&self) -> Result<PathBuf, SandboxError> {
        match &self.helper {
            Some(h) => Ok(h.clone()),
            None => std::env::current_exe().map_err(SandboxError::Helper),
        }
    }

    /// The same sandbox with `more` protected too (the `.chat` documents of
    /// the workspace, say, read again for each command).
    pub fn with_protected(&self, more: impl IntoIterator<Item = PathBuf>) -> Self {
        let mut plan = self.clone();
        for p in more {
            let p = normalize(&p);
            if !plan.protected.contains(&p) {
                plan.protected.push(p);
            }
        }
        plan
    }

    /// Side effects a run needs first, under bubblewrap, so that the
    /// protected paths inside a write root exist to be mounted read-only (a
    /// missing one cannot be, and the command could create it): the
    /// workspace's `.wield` directory is created for good; a missing `.git`
    /// gets an empty stand-in for as long as the returned guard lives (see
    /// [`placeholder`]). Keep the guard until the run's processes are gone.
    /// A protected path that is a link to nothing is refused: the command
    /// could create what it points to.
    pub fn prepare(&self) -> io::Result<RunGuard> {
        let mut guard = RunGuard::default();
        if self.backend != Backend::Bwrap {
            return Ok(guard);
        }
        let wield_dir = self.workspace.as_ref().map(|ws| ws.join(".wield"));
        for path in &self.protected {
            if !self.write.iter().any(|w| path.starts_with(w) && path != w) {
                continue;
            }
            if path.symlink_metadata().is_ok_and(|m| m.is_symlink()) && !path.exists() {
                return Err(io::Error::other(format!(
                    "the protected path {} is a symbolic link to nothing: a command could create its target and write through it; remove the link",
                    path.display()
                )));
            }
            if Some(path) == wield_dir.as_ref() {
                if path.symlink_metadata().is_err() {
                    std::fs::create_dir_all(path)?;
                }
            } else if let Some(root) = self.outermost_write_root(path)
                && let Some(missing) = topmost_missing(path, root)
            {
                // A missing protected path (a `.git`, wield's global config
                // directory, a `sandbox.protected` entry) gets a stand-in at
                // its first missing directory, mounted read-only, so a
                // command cannot create it.
                guard.hold(&missing)?;
            }
        }
        Ok(guard)
    }

    /// The outermost write root holding `path` (not `path` itself).
    pub(crate) fn outermost_write_root(&self, path: &Path) -> Option<&Path> {
        self.write
            .iter()
            .filter(|w| path.starts_with(w) && path != *w)
            .min_by_key(|w| w.components().count())
            .map(PathBuf::as_path)
    }

    /// The argv that runs `argv` inside this sandbox.
    pub fn wrap(&self, argv: &[OsString]) -> Result<Vec<OsString>, SandboxError> {
        match self.backend {
            Backend::Bwrap => {
                let bwrap = self.bwrap.clone().unwrap_or_else(|| PathBuf::from("bwrap"));
                let Some(helper) = self.bwrap_keeper() else {
                    return Ok(bwrap::argv(&bwrap, None, self, argv));
                };
                let keeper = SandboxExecArgs {
                    network: self.network,
                    allow_unix: self.allow_unix_sockets.clone(),
                    keep: Some(self.grace),
                    keep_only: true,
                    argv: argv.to_vec(),
                    ..SandboxExecArgs::default()
                };
                let mut inner = vec![helper.clone().into_os_string(), SANDBOX_EXEC_SUBCOMMAND.into()];
                inner.extend(keeper.to_args());
                Ok(bwrap::argv(&bwrap, Some(&helper), self, &inner))
            }
            Backend::Landlock => {
                let helper = self.helper()?;
                let args = SandboxExecArgs {
                    read: self.read.clone(),
                    write: self.write.clone(),
                    protect: self.protected.clone(),
                    hide: self.hidden.clone(),
                    network: self.network,
                    allow_unix: self.allow_unix_sockets.clone(),
                    keep: Some(self.grace),
                    keep_only: false,
                    argv: argv.to_vec(),
                };
                let mut out = vec![helper.into_os_string(), SANDBOX_EXEC_SUBCOMMAND.into()];
                out.extend(args.to_args());
                Ok(out)
            }
        }
    }

    /// Whether writing `path` is refused by this plan, and why (for hints).
    pub(crate) fn write_refusal(&self, path: &Path) -> Option<Refusal> {
        if let Some(p) = self.protected.iter().find(|p| path.starts_with(p)) {
            return Some(Refusal::Protected(p.clone()));
        }
        let Some(root) = self
            .write
            .iter()
            .filter(|w| path.starts_with(w))
            .max_by_key(|w| w.components().count())
        else {
            return Some(Refusal::OutsideRoots);
        };
        if self.backend == Backend::Landlock {
            let parent = path.parent()?;
            // Directories on the way to a protected path do not get
            // create/delete rights under Landlock (see the module docs).
            let on_protected_route =
                parent.starts_with(root) && self.protected.iter().any(|p| p.starts_with(parent) && p != parent);
            if on_protected_route {
                return Some(Refusal::LandlockTopLevel(parent.to_path_buf()));
            }
        }
        None
    }
}

/// The first path from `root` down to `path` that is missing or a
/// stand-in already (whose parent is a directory): where a stand-in is
/// held for `path`. `None` when `path` exists.
fn topmost_missing(path: &Path, root: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        if at.symlink_metadata().is_err() || RunGuard::is_stand_in(&at) {
            return at.parent().is_some_and(Path::is_dir).then(|| at.clone());
        }
    }
    None
}

/// Why a write was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    OutsideRoots,
    Protected(PathBuf),
    LandlockTopLevel(PathBuf),
}

fn normalize_all(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        let n = normalize(p);
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// The canonical form of a path whose tail may not exist yet: the longest
/// existing ancestor is canonicalized and the rest appended lexically.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let lexical = lexical(path);
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return lexical,
        }
    }
}

/// `.` and `..` removed without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
