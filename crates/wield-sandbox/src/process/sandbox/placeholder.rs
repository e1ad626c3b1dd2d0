//! Stand-ins for missing protected paths under bubblewrap.
//!
//! Bubblewrap protects a path inside a writable root by mounting it
//! read-only over the writable bind, and only an existing path can be
//! mounted over. A workspace that is not a git repository has no `.git`:
//! without a stand-in, a command could create one (`git init`, then a hook
//! or `core.fsmonitor`) and have its code run, outside any sandbox, the next
//! time the user runs git there. So while a sandboxed run lives, a missing
//! protected directory is an empty directory mounted read-only; when the
//! last run of this process that needed it ends, it is removed again (only
//! while still empty: nothing anyone put there is lost). An empty `.git`
//! directory is inert meanwhile: git passes over it to the enclosing
//! repository, if any, and `git init` outside the sandbox fills it in.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, PoisonError};

/// The stand-ins this process made, with how many runs hold each.
static HELD: LazyLock<Mutex<HashMap<PathBuf, usize>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// What a sandboxed run holds while its processes live: the stand-ins made
/// for it. Dropping it releases them; the last release removes each one.
#[derive(Debug, Default)]
#[must_use = "the stand-ins go when the guard does: keep it while the sandboxed processes live"]
pub struct RunGuard {
    held: Vec<PathBuf>,
}

impl RunGuard {
    /// Holds a stand-in at `path`: the one this process made, or a new one
    /// when nothing is there. A path that exists otherwise is not a
    /// stand-in, and is left alone (it is mounted as it is).
    pub(crate) fn hold(&mut self, path: PathBuf) -> io::Result<()> {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&path) {
            if path.is_dir() {
                *count += 1;
                self.held.push(path);
                return Ok(());
            }
            // Removed behind our back: make it again.
            held.remove(&path);
        }
        if path.symlink_metadata().is_ok() {
            return Ok(());
        }
        match std::fs::create_dir(&path) {
            Ok(()) => {
                held.insert(path.clone(), 1);
                self.held.push(path);
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The stand-ins this guard holds.
    pub fn stand_ins(&self) -> &[PathBuf] {
        &self.held
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        for path in self.held.drain(..) {
            let Some(count) = held.get_mut(&path) else {
                continue;
            };
            *count -= 1;
            if *count == 0 {
                held.remove(&path);
                // Only an empty directory goes: whatever was put there stays.
                let _ = std::fs::remove_dir(&path);
            }
        }
    }
}
