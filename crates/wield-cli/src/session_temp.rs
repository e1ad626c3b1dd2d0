//! Each wield process (a `wield call`, an MCP server's sessions) gets a
//! private temp dir: `wield-session-<pid>-<n>` in the temp dir it was
//! started with, mode 0700, its own. It becomes `TMPDIR` for wield itself
//! and so for everything it runs, and the temp write root of commands and
//! file tools, in place of the shared temp dir; it is removed when the
//! process ends. Dirs left by a process that was killed are removed by the
//! next wield process of the same user that starts there.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

const PREFIX: &str = "wield-session-";

/// Removes the private temp dir when dropped.
#[derive(Debug)]
pub struct SessionTemp {
    dir: PathBuf,
}

impl SessionTemp {
    /// Create the private temp dir and make it this process's `TMPDIR`.
    /// Must run before any other thread starts (it sets an environment
    /// variable). `None`, with a warning, when it cannot be made: then the
    /// shared temp dir stays in use.
    pub fn enter() -> Option<Self> {
        let base = std::env::temp_dir();
        prune_stale(&base);
        let pid = std::process::id();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("{PREFIX}{pid}-{nanos:x}"));
        if let Err(e) = std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            eprintln!(
                "warning: cannot create a private temp dir in {} ({e}); commands and file tools share it",
                base.display()
            );
            return None;
        }
        // SAFETY: called first thing in `main`, before the async runtime or
        // any other thread exists, so nothing reads the environment
        // concurrently.
        unsafe { std::env::set_var("TMPDIR", &dir) };
        Some(Self { dir })
    }
}

impl Drop for SessionTemp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove this user's session dirs in `base` whose process is gone.
fn prune_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let me = rustix::process::getuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path();
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}
