//! The document on disk: read, replaced atomically only while it still
//! holds what was read (a person may be editing it), and locked against a
//! second cycle on the same file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Reads the document.
pub(crate) fn read(path: &Path) -> io::Result<String> {
    fs::read_to_string(path)
}

/// Writes `text` over `path` atomically: a new file beside it with the
/// same permissions, renamed over it. `durable` also syncs it to disk (the
/// last write of a step; the pieces of a streaming reply are not).
pub(crate) fn write(path: &Path, text: &str, durable: bool) -> io::Result<()> {
    let tmp = prepare(path, text, durable)?;
    commit(&tmp, path)
}

/// Writes `new` over `path` if it still holds `old`; `Ok(false)` when it
/// changed since. `durable` as for [`write`]. The file is compared again
/// once the new text is ready, just before it replaces it, so a person's
/// save can only be lost in the moment between that reading and the
/// rename.
pub fn replace(path: &Path, old: &str, new: &str, durable: bool) -> io::Result<bool> {
    if read(path)? != old {
        return Ok(false);
    }
    let tmp = prepare(path, new, durable)?;
    if read(path)? != old {
        let _ = fs::remove_file(&tmp);
        return Ok(false);
    }
    commit(&tmp, path)?;
    Ok(true)
}

/// A new file beside `path` holding `text`, with `path`'s permissions.
fn prepare(path: &Path, text: &str, durable: bool) -> io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map_or_else(|| "chat".into(), |n| n.to_string_lossy());
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        if let Ok(meta) = fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.write_all(text.as_bytes())?;
        if durable {
            f.sync_all()?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// `tmp` renamed over `path`.
fn commit(tmp: &Path, path: &Path) -> io::Result<()> {
    fs::rename(tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(tmp);
    })
}

/// One cycle per document: a lock file beside it (`.NAME.lock`), held with
/// an OS lock for as long as the cycle runs and holding its process id.
#[derive(Debug)]
pub struct DocLock {
    file: File,
    path: PathBuf,
}

/// Why a document could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{doc} is being worked on by another `wield chat` (process {pid}); wait for it to finish, or stop it")]
    Held { doc: String, pid: String },
    #[error("cannot lock {doc} ({lock}): {source}")]
    Io {
        doc: String,
        lock: String,
        source: io::Error,
    },
}

pub use wield_sandbox::fs::chat::{cycle_files, doc_dir, lock_path};

impl DocLock {
    /// Takes the lock of `doc`, or says which process holds it.
    pub fn acquire(doc: &Path) -> Result<Self, LockError> {
        let path = lock_path(doc);
        let io_err = |source| LockError::Io {
            doc: doc.display().to_string(),
            lock: path.display().to_string(),
            source,
        };
        // The lock file may be removed by its holder as it finishes: a
        // lock taken on a removed file is taken again on the new one.
        for _ in 0..10 {
            let mut file = open_lock(&path).map_err(io_err)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = file.read_to_string(&mut pid);
                    let pid = pid.trim();
                    return Err(LockError::Held {
                        doc: doc.display().to_string(),
                        pid: if pid.is_empty() { "unknown".into() } else { pid.into() },
                    });
                }
                Err(fs::TryLockError::Error(e)) => return Err(io_err(e)),
            }
            if !same_file(&file, &path) {
                continue;
            }
            file.set_len(0).map_err(io_err)?;
            file.write_all(std::process::id().to_string().as_bytes())
                .map_err(io_err)?;
            return Ok(Self { file, path });
        }
        Err(io_err(io::Error::other("the lock file kept being replaced")))
    }
}

impl Drop for DocLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Opens the lock file, never through a symbolic link: another user who
/// planted `.NAME.lock` as a link in a shared directory cannot make wield
/// truncate the file it points to.
#[cfg(unix)]
fn open_lock(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(not(unix))]
fn open_lock(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_names_the_holder_and_the_lock_goes_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.chat");
        let held = DocLock::acquire(&doc).unwrap();
        let err = DocLock::acquire(&doc).unwrap_err().to_string();
        assert!(err.contains(&format!("process {}", std::process::id())), "{err}");
        drop(held);
        assert!(!dir.path().join(".a.chat.lock").exists());
        DocLock::acquire(&doc).unwrap();
    }

    #[test]
    fn a_lock_file_planted_as_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join(".a.chat.lock")).unwrap();
        let err = DocLock::acquire(&dir.path().join("a.chat")).unwrap_err().to_string();
        assert!(err.contains("cannot lock"), "{err}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn replace_writes_only_over_what_was_read_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let doc = dir.path().join("a.chat");
        fs::write(&doc, "one").unwrap();
        fs::set_permissions(&doc, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(!replace(&doc, "other", "two", true).unwrap());
        assert_eq!(read(&doc).unwrap(), "one");
        assert!(replace(&doc, "one", "two", false).unwrap());
        assert_eq!(read(&doc).unwrap(), "two");
        assert_eq!(fs::metadata(&doc).unwrap().permissions().mode() & 0o777, 0o600);
    }
}
