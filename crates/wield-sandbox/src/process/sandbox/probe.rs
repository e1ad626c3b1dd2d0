//! What this machine supports, probed once per process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::Backend;

/// The state of bubblewrap here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BwrapStatus {
    /// No `bwrap` on `PATH`.
    Missing,
    /// Installed, but a trial run failed (no user namespaces, say).
    Broken {
        path: PathBuf,
        error: String,
    },
    Works {
        path: PathBuf,
    },
}

impl BwrapStatus {
    pub fn works(&self) -> bool {
        matches!(self, Self::Works { .. })
    }

    pub(crate) fn reason(&self) -> String {
        match self {
            Self::Missing => "`bwrap` is not installed (Debian/Ubuntu: apt-get install bubblewrap)".into(),
            Self::Broken { path, error } => format!("{} does not work here: {error}", path.display()),
            Self::Works { path } => format!("{} works", path.display()),
        }
    }
}

/// Everything `wield sandbox check` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    /// The kernel's Landlock ABI version, `None` without Landlock.
    pub landlock_abi: Option<i32>,
    pub seccomp: bool,
    pub bwrap: BwrapStatus,
    /// wield can adopt orphaned descendants (PR_SET_CHILD_SUBREAPER).
    pub subreaper: bool,
    /// `/proc/PID/task/TID/children` exists, so process trees can be walked.
    pub proc_children: bool,
}

impl Probe {
    /// What `backend = "auto"` (with the network off) picks here.
    pub fn auto_backend(&self) -> Option<Backend> {
        let bwrap = self.bwrap.clone();
        super::SandboxSettings {
            enabled: super::Enabled::Auto,
            ..super::SandboxSettings::for_workspace(std::path::Path::new("/"))
        }
        .resolve_with(self.landlock_abi, self.seccomp, &move || match &bwrap {
            BwrapStatus::Works { path } => Ok(path.clone()),
            other => Err(other.reason()),
        })
        .ok()
        .flatten()
        .map(|p| p.backend())
    }
}

/// Probe everything, including a trial bubblewrap run.
pub fn probe() -> Probe {
    Probe {
        landlock_abi: landlock_abi(),
        seccomp: seccomp_available(),
        bwrap: bwrap_status_fresh(),
        subreaper: crate::process::tree::ensure_subreaper(),
        proc_children: crate::process::tree::proc_children_available(),
    }
}

/// The kernel's Landlock ABI version, or `None`.
pub fn landlock_abi() -> Option<i32> {
    static ABI: OnceLock<Option<i32>> = OnceLock::new();
    *ABI.get_or_init(|| {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute pointer, zero size and the VERSION
        // flag, landlock_create_ruleset only returns the ABI version (or an
        // error); it reads no memory and creates no file descriptor.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        (v > 0).then(|| i32::try_from(v).unwrap_or(i32::MAX))
    })
}

/// Whether seccomp filters can be installed.
pub fn seccomp_available() -> bool {
    static SECCOMP: OnceLock<bool> = OnceLock::new();
    *SECCOMP.get_or_init(|| {
        // PR_GET_SECCOMP fails with EINVAL on kernels built without seccomp.
        // SAFETY: PR_GET_SECCOMP takes no pointer arguments.
        let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
        mode >= 0
    })
}

/// Whether bubblewrap is installed and actually works here, tried with the
/// options a sandboxed run uses. The trial's outcome is cached on disk
/// (see [`cached_trial`]), so most processes do not pay for it.
pub fn bwrap_status() -> &'static BwrapStatus {
    static STATUS: OnceLock<BwrapStatus> = OnceLock::new();
    STATUS.get_or_init(|| bwrap_probe(false))
}

/// Like [`bwrap_status`], but always runs the trial (and refreshes the
/// cache): what `wield sandbox check` reports.
pub fn bwrap_status_fresh() -> BwrapStatus {
    bwrap_probe(true)
}

fn bwrap_probe(fresh: bool) -> BwrapStatus {
    let Ok(path) = which::which("bwrap") else {
        return BwrapStatus::Missing;
    };
    match cached_trial(&path, fresh) {
        Ok(()) => BwrapStatus::Works { path },
        Err(error) => BwrapStatus::Broken { path, error },
    }
}

/// A trial run costs about as much as the sandboxed command itself (a few
/// milliseconds), on every start of the binary. Its outcome depends only on
/// the bwrap binary, the kernel, the user and the user-namespace settings,
/// so it is remembered in `$XDG_CACHE_HOME/wield/bwrap-probe` (default
/// `~/.cache`) under a key made of exactly those; any change runs the trial
/// again. Failing to read or write the cache only costs the trial.
fn cached_trial(path: &Path, fresh: bool) -> Result<(), String> {
    let key = probe_key(path);
    let file = cache_file();
    if !fresh
        && let (Some(key), Some(file)) = (&key, &file)
        && let Ok(text) = std::fs::read_to_string(file)
        && let Some((stored, outcome)) = text.split_once('\n')
        && stored == key
    {
        return match outcome.strip_prefix("err: ") {
            None if outcome == "ok" => Ok(()),
            Some(e) => Err(e.to_owned()),
            None => trial_run(path),
        };
    }
    let result = trial_run(path);
    if let (Some(key), Some(file)) = (key, file) {
        let outcome = match &result {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("err: {}", e.replace('\n', " ")),
        };
        let _ = write_atomically(&file, &format!("{key}\n{outcome}"));
    }
    result
}

fn probe_key(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let sysctls: Vec<String> = [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(f).unwrap_or_default().trim().to_owned())
    .collect();
    Some(format!(
        "v2|{}|{}|{mtime}|{}|{}|{}",
        path.display(),
        meta.len(),
        release.trim(),
        rustix::process::getuid().as_raw(),
        sysctls.join(",")
    ))
}

fn cache_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("wield").join("bwrap-probe"))
}

fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    let dir = file.parent().ok_or_else(|| std::io::Error::other("no parent"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".bwrap-probe.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file)
}

fn trial_run(path: &Path) -> Result<(), String> {
    let mut child = Command::new(path)
        .args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--proc",
            "/proc",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
                }
                let err = err.trim();
                return Err(if err.is_empty() {
                    format!("trial run failed ({status})")
                } else {
                    err.to_owned()
                });
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("trial run did not finish within 10 s".into());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}
