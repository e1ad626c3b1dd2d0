//! The Landlock helper: `wield __sandbox-exec [OPTIONS] -- CMD [ARGS...]`.
//!
//! It runs single-threaded in a fresh process (the wield binary re-executed
//! with this hidden subcommand before any runtime starts), builds the
//! Landlock ruleset and the seccomp filter, restricts itself, then replaces
//! itself with the command, which inherits the restrictions for good.
//! Any failure refuses to run the command: it never runs unconfined.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope,
};

use super::bwrap::SYSTEM_READ;

/// The hidden subcommand of the wield binary that runs the helper.
pub const SANDBOX_EXEC_SUBCOMMAND: &str = "__sandbox-exec";

/// The newest Landlock ABI whose rights this helper asks for. The crate
/// drops what an older kernel lacks (best effort); asking for rights of a
/// newer, untested ABI could refuse things nobody meant to refuse.
const TARGET_ABI: ABI = ABI::V6;

/// Device files commands write to as a matter of course.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The helper's arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SandboxExecArgs {
    /// Readable roots; `None`: the whole file system.
    pub read: Option<Vec<PathBuf>>,
    pub write: Vec<PathBuf>,
    pub protect: Vec<PathBuf>,
    /// Neither readable nor writable (see the module docs of `sandbox`).
    pub hide: Vec<PathBuf>,
    pub network: bool,
    /// With the network off: the Unix sockets commands may connect to
    /// (any named one lets `connect` through, see the `sockets` module).
    pub allow_unix: Vec<PathBuf>,
    /// Keep the command (see the `keeper` module) with this grace period
    /// for what it leaves running.
    pub keep: Option<Duration>,
    /// Only keep the command, confining nothing but its sockets (with the
    /// network off): bubblewrap confines it (the helper runs inside), or
    /// the sandbox is off (then with `network`, so nothing at all).
    pub keep_only: bool,
    pub argv: Vec<OsString>,
}

impl SandboxExecArgs {
    /// `--read P`, `--write P`, `--protect P` (repeatable), `--network`,
    /// then `--` and the command.
    pub fn parse<I: IntoIterator<Item = OsString>>(args: I) -> Result<Self, String> {
        let mut out = Self::default();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .map(PathBuf::from)
                    .ok_or_else(|| format!("{name} needs a path"))
            };
            match arg.to_str() {
                Some("--read") => out.read.get_or_insert_with(Vec::new).push(value("--read")?),
                Some("--write") => out.write.push(value("--write")?),
                Some("--protect") => out.protect.push(value("--protect")?),
                Some("--hide") => out.hide.push(value("--hide")?),
                Some("--allow-unix") => out.allow_unix.push(value("--allow-unix")?),
                Some("--network") => out.network = true,
                Some("--keep-only") => out.keep_only = true,
                Some("--keep") => {
                    let ms = it
                        .next()
                        .and_then(|v| v.to_str().and_then(|v| v.parse::<u64>().ok()))
                        .ok_or("--keep needs the grace period in milliseconds")?;
                    out.keep = Some(Duration::from_millis(ms));
                }
                Some("--") => {
                    out.argv = it.collect();
                    break;
                }
                _ => {
                    return Err(format!(
                        "unexpected argument {arg:?}; usage: {SANDBOX_EXEC_SUBCOMMAND} [--read P]... [--write P]... [--protect P]... [--hide P]... [--allow-unix P]... [--network] [--keep GRACE_MS] [--keep-only] -- CMD [ARGS...]"
                    ));
                }
            }
        }
        if out.argv.is_empty() {
            return Err("no command given after `--`".into());
        }
        Ok(out)
    }

    /// The inverse of [`parse`](Self::parse).
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        for (flag, paths) in [
            ("--read", self.read.as_deref().unwrap_or_default()),
            ("--write", &self.write[..]),
            ("--protect", &self.protect[..]),
            ("--hide", &self.hide[..]),
            ("--allow-unix", &self.allow_unix[..]),
        ] {
            for p in paths {
                out.push(flag.into());
                out.push(p.into());
            }
        }
        if self.network {
            out.push("--network".into());
        }
        if let Some(grace) = self.keep {
            out.push("--keep".into());
            out.push(grace.as_millis().to_string().into());
        }
        if self.keep_only {
            out.push("--keep-only".into());
        }
        out.push("--".into());
        out.extend(self.argv.iter().cloned());
        out
    }
}

/// The helper's `main`: parse, restrict, exec. Returns only on failure, with
/// the exit status to use (126, or 127 when the command was not found),
/// after printing why on stderr.
pub fn sandbox_exec_main<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let args = match SandboxExecArgs::parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("wield sandbox: {e}");
            return 126;
        }
    };
    if args.keep_only && args.keep.is_none() {
        eprintln!("wield sandbox: --keep-only without --keep does nothing; refusing");
        return 126;
    }
    match args.keep {
        Some(grace) => super::keeper::keep(grace, || confine_and_exec(&args)),
        None => confine_and_exec(&args),
    }
}

/// Confine this process (unless bubblewrap does, or the sandbox is off),
/// then exec the command; returns only on failure, with the exit status.
fn confine_and_exec(args: &SandboxExecArgs) -> i32 {
    // Inside bubblewrap only the socket filter is added: bubblewrap does
    // the rest.
    let confined = if args.keep_only {
        deny_sockets(args)
    } else {
        restrict(args)
    };
    if let Err(e) = confined {
        eprintln!("wield sandbox: refusing to run the command unconfined: {e}");
        return 126;
    }
    let (program, rest) = match args.argv.split_first() {
        Some(split) => split,
        None => return 126,
    };
    let err = std::process::Command::new(program).args(rest).exec();
    eprintln!("wield sandbox: cannot run {}: {err}", program.to_string_lossy());
    if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    }
}

fn restrict(args: &SandboxExecArgs) -> Result<(), String> {
    let abi = TARGET_ABI;
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| e.to_string())?;
    if !args.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .and_then(|r| r.scope(Scope::AbstractUnixSocket))
            .map_err(|e| e.to_string())?;
    }
    // Sandboxed processes may not signal processes outside the sandbox
    // (wield itself, the user's other programs).
    ruleset = ruleset.scope(Scope::Signal).map_err(|e| e.to_string())?;
    let mut created = ruleset.create().map_err(|e| e.to_string())?;

    let read_access = AccessFs::from_read(abi);
    let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
    // Rights on a directory hold for all beneath it, so a root holding a
    // hidden path gets them on its entries instead (see `grant`), down to
    // the hidden path, which gets none.
    let hidden = super::existing_hidden(&args.hide);
    let read_roots: Vec<PathBuf> = match &args.read {
        None => vec!["/".into()],
        Some(roots) => {
            let extra = SYSTEM_READ
                .iter()
                .map(PathBuf::from)
                .chain(["/dev".into(), "/proc".into()]);
            roots
                .iter()
                .cloned()
                .chain(extra)
                .chain(args.write.iter().cloned())
                .collect()
        }
    };
    for path in write_grants(&read_roots, &hidden) {
        rules.push((path, read_access));
    }
    for dev in DEVICES {
        rules.push((dev.into(), AccessFs::from_file(abi)));
    }
    let closed: Vec<PathBuf> = args.protect.iter().chain(&hidden).cloned().collect();
    for path in write_grants(&args.write, &closed) {
        rules.push((path, AccessFs::from_all(abi)));
    }
    for (path, access) in rules {
        // Missing paths are skipped: there is nothing there to grant.
        let Ok(fd) = PathFd::new(&path) else { continue };
        // Rights that only make sense on directories are refused by the
        // kernel on a file: narrow them for files.
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let status = created.restrict_self().map_err(|e| e.to_string())?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel does not enforce Landlock".into());
    }
    deny_sockets(args)?;
    // Last: a command run as root keeps no capability (it could otherwise
    // read the memory of wield, or of any process of the machine).
    super::privileges::drop_all()
}

/// The paths that get write rights for the write roots, leaving out the
/// protected paths (see the module docs of `sandbox` for why a directory
/// holding a protected path only gets rights on its entries).
pub(crate) fn write_grants(write: &[PathBuf], protect: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in write {
        grant(root, protect, &mut out);
    }
    out
}

fn grant(dir: &Path, protect: &[PathBuf], out: &mut Vec<PathBuf>) {
    if protect.iter().any(|p| dir.starts_with(p)) {
        return;
    }
    if !protect.iter().any(|p| p.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        // A symbolic link is never followed: writing through it goes to its
        // target, which the target's own rules decide.
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        if kind.is_dir() {
            grant(&path, protect, out);
        } else if !protect.contains(&path) {
            out.push(path);
        }
    }
}

/// With the network off, the seccomp filter of the `sockets` module.
fn deny_sockets(args: &SandboxExecArgs) -> Result<(), String> {
    if args.network {
        return Ok(());
    }
    super::sockets::apply_filter(args.allow_unix.is_empty())
}
