//! A stand-in for a missing `.git` under bubblewrap.
//!
//! Bubblewrap protects a path inside a writable root by mounting it
//! read-only over the writable bind, and only an existing path can be
//! mounted over. A workspace that is not a git repository has no `.git`:
//! without a stand-in, a command could create one (`git init`, then a hook
//! or `core.fsmonitor`) and have its code run, outside any sandbox, the next
//! time the user runs git there. So while a sandboxed run lives, a missing
//! `.git` is an empty directory (but for its lock file) mounted read-only;
//! when the last run that needs it ends, it is removed again, only while it
//! holds nothing else: what anyone put there meanwhile (a `git init` of the
//! user's) stays, without the lock file. Such a `.git` is inert: git passes over it to the
//! enclosing repository, if any, and `git init` fills it in.
//!
//! Runs of every wield process share one stand-in: each holds a shared
//! `flock` on its lock file for as long as its processes live, and a run
//! that ends removes the stand-in only when it can lock the file
//! exclusively, that is when no run anywhere holds it. Removing it while
//! another process's run has it mounted would detach that mount and let
//! its command create `.git` after all.

use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

/// The lock file in a stand-in `.git`: runs using it hold it shared.
const LOCK: &str = ".wield-stand-in";

/// How often a stand-in removed between being found and being locked is
/// looked for again before giving up.
const TRIES: usize = 8;

/// What a sandboxed run holds while its processes live: the stand-ins made
/// or found for it. Dropping it releases them; the last release anywhere
/// removes each one.
#[derive(Debug, Default)]
#[must_use = "the stand-ins go when the guard does: keep it while the sandboxed processes live"]
pub struct RunGuard {
    held: Vec<(PathBuf, File)>,
}

impl RunGuard {
    /// Holds the stand-in at `path`, making it when nothing is there. A
    /// path that is there and is not a stand-in is left alone (it is
    /// mounted as it is).
    pub(crate) fn hold(&mut self, path: &Path) -> io::Result<()> {
        for _ in 0..TRIES {
            match path.symlink_metadata() {
                Err(e) if e.kind() == io::ErrorKind::NotFound => make(path)?,
                Err(e) => return Err(e),
                // A `.git` file (a linked worktree, a submodule): not ours.
                Ok(meta) if !meta.is_dir() => return Ok(()),
                Ok(_) => {}
            }
            let lock = path.join(LOCK);
            let file = match File::options().read(true).open(&lock) {
                Ok(f) => f,
                // A `.git` of someone else's: not ours to hold.
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory)
                        && path.symlink_metadata().is_ok() =>
                {
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            rustix::fs::flock(&file, FlockOperation::LockShared)?;
            // Removed between opening and locking: look again.
            if still_linked(&file, &lock) {
                self.held.push((path.to_path_buf(), file));
                return Ok(());
            }
        }
        Err(io::Error::other(format!(
            "{} keeps disappearing while it is being set up",
            path.display()
        )))
    }

    /// Whether `path` is a stand-in (made by a run of any wield process).
    pub(crate) fn is_stand_in(path: &Path) -> bool {
        path.join(LOCK).symlink_metadata().is_ok_and(|m| m.is_file())
    }

    /// The stand-ins this guard holds.
    pub fn stand_ins(&self) -> Vec<&Path> {
        self.held.iter().map(|(p, _)| p.as_path()).collect()
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        for (path, file) in self.held.drain(..) {
            drop(file);
            let lock = path.join(LOCK);
            let Ok(file) = File::options().read(true).open(&lock) else {
                continue;
            };
            // Held anywhere else: the last of them removes it.
            if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_err()
                || !still_linked(&file, &lock)
            {
                continue;
            }
            remove(&path, &lock);
        }
    }
}

/// Removes the stand-in at `path` (its lock held exclusively), or, when
/// something was put in it meanwhile, only its lock file. It is first moved
/// out of the way in one step: a run starting meanwhile finds either the
/// stand-in with its lock (and waits for it) or nothing (and makes its
/// own), never a `.git` without a lock, which it would take for someone
/// else's and not hold while its own command runs.
fn remove(path: &Path, lock: &Path) {
    let only_lock =
        std::fs::read_dir(path).is_ok_and(|entries| entries.filter_map(Result::ok).all(|e| e.file_name() == LOCK));
    let Some(parent) = path.parent() else { return };
    if !only_lock {
        let _ = std::fs::remove_file(lock);
        return;
    }
    let gone = parent.join(format!(
        ".wield-stand-in-gone-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    if std::fs::rename(path, &gone).is_err() {
        return;
    }
    let _ = std::fs::remove_file(gone.join(LOCK));
    if std::fs::remove_dir(&gone).is_err() {
        // Something came in between the look and the move: put it back
        // where it was, unless a new stand-in took the place.
        let _ = rename_no_replace(&gone, path);
    }
}

/// Creates the stand-in whole, lock file included, under a temporary name
/// and renames it into place, so nobody finds it half made. Someone else
/// making it first is fine.
fn make(path: &Path) -> io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::other("a stand-in needs a parent directory"))?;
    let staging = tempfile::Builder::new().prefix(".wield-stand-in-").tempdir_in(parent)?;
    File::create(staging.path().join(LOCK))?;
    // Never over anything there, not even an empty directory.
    let moved = match rename_no_replace(staging.path(), path) {
        // A file system that cannot say "no replace": make the target
        // first, then fill it (what is already there stays untouched).
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            return match std::fs::create_dir(path) {
                Ok(()) => File::create(path.join(LOCK)).map(drop),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(e),
            };
        }
        other => other,
    };
    match moved {
        Ok(()) => {
            // Renamed away: nothing left for the temp dir to remove.
            let _ = staging.keep();
            Ok(())
        }
        Err(_) if path.symlink_metadata().is_ok() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `from` renamed `to`, unless something is at `to`, even an empty
/// directory (which a plain rename would replace).
fn rename_no_replace(from: &Path, to: &Path) -> rustix::io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        from,
        rustix::fs::CWD,
        to,
        rustix::fs::RenameFlags::NOREPLACE,
    )
}

/// Whether the open `file` is still the one at `path`.
fn still_linked(file: &File, path: &Path) -> bool {
    match (file.metadata(), path.symlink_metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
