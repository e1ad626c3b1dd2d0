//! The operations file tools need, each resolved beneath a root and carried
//! out on the handles that resolution produced.

use std::ffi::OsString;
use std::fs::{File, Metadata};
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

use super::resolve::{Final, Kind, Missing, Resolved, kind_of};
use super::{Access, ConfineError, Confinement};

/// Whether an atomic write created the file or replaced an existing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Created,
    Replaced,
}

/// One entry of a directory listing (not followed when it is a link).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    pub kind: Kind,
    pub len: u64,
    pub modified: Option<SystemTime>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn modified(stat: &Stat) -> Option<SystemTime> {
    let secs = u64::try_from(stat.st_mtime).ok()?;
    let nanos = u32::try_from(stat.st_mtime_nsec).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

impl Confinement {
    /// Where `path` leads for `access`, following symbolic links (inside the
    /// roots) and walking missing directories by name. Refused when it is
    /// outside the roots allowing `access`, or protected when writing.
    pub fn resolve(&self, path: impl AsRef<Path>, access: Access) -> Result<Resolved, ConfineError> {
        self.walk(path.as_ref(), access, Final::Follow, Missing::Virtual)
    }

    /// Like [`Confinement::resolve`], but a final symbolic link is not
    /// followed (to list or remove the link itself).
    pub fn resolve_link(&self, path: impl AsRef<Path>, access: Access) -> Result<Resolved, ConfineError> {
        self.walk(path.as_ref(), access, Final::NoFollow, Missing::Virtual)
    }

    /// The canonical path `path` leads to (or would lead to if created).
    pub fn real_path(&self, path: impl AsRef<Path>, access: Access) -> Result<PathBuf, ConfineError> {
        self.resolve(path, access).map(|r| r.real)
    }

    /// The canonical path of an existing directory, for walkers. What a
    /// walker yields below it is checked with [`Confinement::contains`] and
    /// opened with [`Confinement::open_walked`].
    pub fn real_dir(&self, path: impl AsRef<Path>, access: Access) -> Result<PathBuf, ConfineError> {
        let r = self.walk(path.as_ref(), access, Final::Follow, Missing::Error)?;
        match r.kind() {
            Some(Kind::Dir) => Ok(r.real),
            Some(_) => Err(ConfineError::NotADirectory { path: r.shown }),
            None => Err(r.not_found()),
        }
    }

    /// Open an existing regular file for reading.
    pub fn open_read(&self, path: impl AsRef<Path>) -> Result<File, ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::Follow, Missing::Error)?;
        self.open_resolved(&r)
    }

    /// Open the regular file a resolution reached, for reading. The file is
    /// opened by name in the directory handle the resolution holds, without
    /// following links, and must be the very object that was resolved.
    pub fn open_resolved(&self, r: &Resolved) -> Result<File, ConfineError> {
        self.open_resolved_with_metadata(r).map(|(file, _)| file)
    }

    /// [`Confinement::open_resolved`], with the opened file's status (taken
    /// once, for the identity check and for the caller).
    pub fn open_resolved_with_metadata(&self, r: &Resolved) -> Result<(File, Metadata), ConfineError> {
        let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
        match kind_of(&obj.stat) {
            Kind::File => {}
            Kind::Dir => return Err(ConfineError::IsADirectory { path: r.shown.clone() }),
            Kind::Symlink => return Err(ConfineError::Changed { path: r.shown.clone() }),
            Kind::Other(kind) => {
                return Err(ConfineError::NotRegular {
                    path: r.shown.clone(),
                    kind,
                });
            }
        }
        let parent = r.parent.as_ref().ok_or_else(|| r.not_found())?;
        // O_NONBLOCK: if a named pipe was swapped in, the open must not hang.
        let fd = rustix::fs::openat(
            &**parent,
            r.name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|e| ConfineError::from_errno(&r.shown, e))?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(|source| ConfineError::Io {
            path: r.shown.clone(),
            source,
        })?;
        if meta.dev() != obj.stat.st_dev || meta.ino() != obj.stat.st_ino {
            return Err(ConfineError::Changed { path: r.shown.clone() });
        }
        // The same regular file as resolved: O_NONBLOCK means nothing for
        // regular files, so it can stay (two system calls saved per read).
        if !meta.is_file() {
            clear_nonblock(&file, &r.shown)?;
        }
        Ok((file, meta))
    }

    /// Status of what `path` leads to (following links inside the roots).
    pub fn metadata(&self, path: impl AsRef<Path>) -> Result<Metadata, ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::Follow, Missing::Error)?;
        metadata_of(&r)
    }

    /// Status of `path` itself (a final link is not followed).
    pub fn symlink_metadata(&self, path: impl AsRef<Path>) -> Result<Metadata, ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::NoFollow, Missing::Error)?;
        metadata_of(&r)
    }

    /// The entries of a directory, sorted by name, links not followed.
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Result<Vec<DirEntry>, ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::Follow, Missing::Error)?;
        let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
        if kind_of(&obj.stat) != Kind::Dir {
            return Err(ConfineError::NotADirectory { path: r.shown });
        }
        let err = |e| ConfineError::from_errno(&r.shown, e);
        // Reopen the resolved directory itself ("." of its own handle) for reading.
        let dir_fd = rustix::fs::openat(
            &*obj.fd,
            c".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(err)?;
        let mut dir = rustix::fs::Dir::read_from(&dir_fd).map_err(err)?;
        let mut entries = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry.map_err(err)?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from(std::ffi::OsStr::from_bytes(name));
            // The entry may vanish between listing and stat: skip it then.
            let Ok(stat) = rustix::fs::statat(&dir_fd, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            entries.push(DirEntry {
                name,
                kind: kind_of(&stat),
                len: u64::try_from(stat.st_size).unwrap_or(0),
                modified: modified(&stat),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// The target of a symbolic link, as stored in it.
    pub fn read_link(&self, path: impl AsRef<Path>) -> Result<PathBuf, ConfineError> {
        let r = self.walk(path.as_ref(), Access::Read, Final::NoFollow, Missing::Error)?;
        let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
        if kind_of(&obj.stat) != Kind::Symlink {
            return Err(ConfineError::Io {
                path: r.shown.clone(),
                source: std::io::Error::other("not a symbolic link"),
            });
        }
        let target =
            rustix::fs::readlinkat(&*obj.fd, c"", Vec::new()).map_err(|e| ConfineError::from_errno(&r.shown, e))?;
        Ok(PathBuf::from(std::ffi::OsStr::from_bytes(target.as_bytes())))
    }

    /// `mkdir -p`: create the directory and its missing parents. `Ok(true)`
    /// when it was created, `Ok(false)` when it already existed; an existing
    /// file is an error.
    pub fn create_dir_all(&self, path: impl AsRef<Path>) -> Result<bool, ConfineError> {
        let r = self.walk_creating(path.as_ref(), Final::Follow)?;
        match r.kind() {
            Some(Kind::Dir) => return Ok(false),
            Some(_) => return Err(ConfineError::ExistsNotDirectory { path: r.shown }),
            None => {}
        }
        let parent = r.parent.as_ref().ok_or_else(|| r.not_found())?;
        match rustix::fs::mkdirat(&**parent, r.name.as_os_str(), Mode::from_raw_mode(0o777)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => {
                // Created concurrently: fine if it is a directory.
                let st = rustix::fs::statat(&**parent, r.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| ConfineError::from_errno(&r.shown, e))?;
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                    Ok(false)
                } else {
                    Err(ConfineError::ExistsNotDirectory { path: r.shown })
                }
            }
            Err(e) => Err(ConfineError::from_errno(&r.shown, e)),
        }
    }

    /// Write `data` atomically: a temp file in the same directory, fsync,
    /// rename over the target. Missing parent directories are created. An
    /// existing file keeps its permission mode; a link to a file inside the
    /// roots is followed and its target replaced.
    pub fn write_atomic(&self, path: impl AsRef<Path>, data: &[u8]) -> Result<WriteOutcome, ConfineError> {
        let r = self.walk_creating(path.as_ref(), Final::Follow)?;
        self.write_resolved(&r, data)
    }

    /// Refuses an existing regular file this process may not write (its
    /// mode, or a read-only file system): an atomic write replaces the file
    /// by a rename in its directory, which its own permissions would not
    /// stop. Deleting such a file stays allowed, as `rm` allows it.
    pub fn check_writable(&self, r: &Resolved) -> Result<(), ConfineError> {
        let (Some(obj), Some(parent)) = (&r.object, &r.parent) else {
            return Ok(());
        };
        if kind_of(&obj.stat) != Kind::File {
            return Ok(());
        }
        let reason = match rustix::fs::accessat(
            &**parent,
            r.name.as_os_str(),
            rustix::fs::Access::WRITE_OK,
            AtFlags::empty(),
        ) {
            Err(Errno::ACCESS | Errno::PERM) => format!(
                "mode {:04o}, owned by uid {}",
                obj.stat.st_mode & 0o7777,
                obj.stat.st_uid
            ),
            Err(Errno::ROFS) => "it is on a read-only file system".to_owned(),
            // Gone or changed since it was resolved: the write will say.
            _ => return Ok(()),
        };
        Err(ConfineError::ReadOnly {
            path: r.shown.clone(),
            reason,
        })
    }

    /// [`Confinement::write_atomic`] on an already resolved location (which
    /// must have been resolved for writing). An existing file must be
    /// writable ([`Confinement::check_writable`]).
    pub fn write_resolved(&self, r: &Resolved, data: &[u8]) -> Result<WriteOutcome, ConfineError> {
        self.check_protected(&r.shown, &r.real)?;
        self.check_writable(r)?;
        let (outcome, mode) = match &r.object {
            None => (WriteOutcome::Created, None),
            Some(obj) => match kind_of(&obj.stat) {
                Kind::File => (WriteOutcome::Replaced, Some(obj.stat.st_mode & 0o7777)),
                Kind::Dir => return Err(ConfineError::IsADirectory { path: r.shown.clone() }),
                Kind::Symlink => return Err(ConfineError::Changed { path: r.shown.clone() }),
                Kind::Other(kind) => {
                    return Err(ConfineError::NotRegular {
                        path: r.shown.clone(),
                        kind,
                    });
                }
            },
        };
        let parent = r.parent.as_ref().ok_or_else(|| r.not_found())?;
        let err = |e| ConfineError::from_errno(&r.shown, e);
        let temp_name = format!(
            ".wield-tmp-{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rustix::fs::openat(
            &**parent,
            temp_name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        )
        .map_err(err)?;
        let mut file = File::from(fd);
        let written = (|| -> Result<(), ConfineError> {
            file.write_all(data).map_err(|e| ConfineError::from_io(&r.shown, e))?;
            if let Some(mode) = mode {
                rustix::fs::fchmod(&file, Mode::from_raw_mode(mode)).map_err(err)?;
            }
            file.sync_all().map_err(|e| ConfineError::from_io(&r.shown, e))?;
            rustix::fs::renameat(&**parent, temp_name.as_str(), &**parent, r.name.as_os_str()).map_err(err)
        })();
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&**parent, temp_name.as_str(), AtFlags::empty());
            return Err(e);
        }
        // Make the rename itself durable; some file systems cannot sync a
        // directory, which does not make the write less atomic.
        if let Ok(dir) = rustix::fs::openat(
            &**parent,
            c".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            let _ = rustix::fs::fsync(&dir);
        }
        Ok(outcome)
    }

    /// Resolve for writing, creating missing parent directories, but only
    /// after a dry run by name has shown the whole path is allowed: a refused
    /// path (`new/../../outside/x`) must not leave `new/` behind.
    fn walk_creating(&self, path: &Path, last: Final) -> Result<Resolved, ConfineError> {
        self.walk(path, Access::Write, last, Missing::Virtual)?;
        self.walk(path, Access::Write, last, Missing::Create)
    }

    /// Remove a file or a symbolic link (the link itself, not its target).
    pub fn remove_file(&self, path: impl AsRef<Path>) -> Result<(), ConfineError> {
        let r = self.walk(path.as_ref(), Access::Write, Final::NoFollow, Missing::Error)?;
        let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
        if kind_of(&obj.stat) == Kind::Dir {
            return Err(ConfineError::IsADirectory { path: r.shown });
        }
        let parent = r.parent.as_ref().ok_or_else(|| r.not_found())?;
        rustix::fs::unlinkat(&**parent, r.name.as_os_str(), AtFlags::empty())
            .map_err(|e| ConfineError::from_errno(&r.shown, e))
    }

    /// Remove an empty directory (to undo a [`Confinement::create_dir_all`]
    /// or the parent directories a write created). A directory that is not
    /// empty is left alone and reported as an error.
    pub fn remove_empty_dir(&self, path: impl AsRef<Path>) -> Result<(), ConfineError> {
        let r = self.walk(path.as_ref(), Access::Write, Final::NoFollow, Missing::Error)?;
        let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
        if kind_of(&obj.stat) != Kind::Dir {
            return Err(ConfineError::NotADirectory { path: r.shown });
        }
        self.check_not_holding_protected(&r)?;
        let parent = r.parent.as_ref().ok_or_else(|| ConfineError::Io {
            path: r.shown.clone(),
            source: std::io::Error::other("a root directory cannot be removed"),
        })?;
        rustix::fs::unlinkat(&**parent, r.name.as_os_str(), AtFlags::REMOVEDIR)
            .map_err(|e| ConfineError::from_errno(&r.shown, e))
    }

    /// Move `from` to `to` (replacing a file there), creating `to`'s missing
    /// parent directories. A link is moved as a link.
    pub fn rename(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<(), ConfineError> {
        let src = self.walk(from.as_ref(), Access::Write, Final::NoFollow, Missing::Error)?;
        if src.object.is_none() {
            return Err(src.not_found());
        }
        self.check_not_holding_protected(&src)?;
        let dst = self.walk_creating(to.as_ref(), Final::NoFollow)?;
        let (Some(sp), Some(dp)) = (&src.parent, &dst.parent) else {
            return Err(ConfineError::Io {
                path: src.shown.clone(),
                source: std::io::Error::other("a root directory cannot be moved or replaced"),
            });
        };
        rustix::fs::renameat(&**sp, src.name.as_os_str(), &**dp, dst.name.as_os_str())
            .map_err(|e| ConfineError::from_errno(&dst.shown, e))
    }

    /// Moving or removing a directory that holds a protected path would
    /// change the protected path too.
    fn check_not_holding_protected(&self, r: &Resolved) -> Result<(), ConfineError> {
        match self.protected.iter().find(|p| p.starts_with(&r.real)) {
            Some(p) => Err(self.protected_error(&r.shown, p)),
            None => Ok(()),
        }
    }

    /// Open, for reading, a file a directory walker yielded below a
    /// directory returned by [`Confinement::real_dir`]. One `openat2` beneath
    /// the root's handle that refuses every symbolic link and `..`, so a
    /// directory swapped for a link since the walker listed it cannot lead
    /// outside. Falls back to the component-wise resolution on kernels
    /// without `openat2`.
    pub fn open_walked(&self, real: &Path) -> Result<File, ConfineError> {
        // Messages are built only on failure: this runs once per file searched.
        let shown = || self.display_path(real);
        let Some((index, rest)) = self.root_by_bytes(real, Access::Read) else {
            return Err(ConfineError::Outside {
                path: shown(),
                access: Access::Read,
                roots: self.roots_text(Access::Read),
                detail: String::new(),
            });
        };
        if rest.is_empty() || rest.contains(&0) {
            return Err(ConfineError::NotFound { path: shown() });
        }
        // RESOLVE_BENEATH makes the kernel refuse any `..` that would leave
        // the root, so the rest needs no checking of its own.
        let opened = rustix::fs::openat2(
            &*self.roots[index].dir,
            std::ffi::OsStr::from_bytes(rest),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
        );
        let fd = match opened {
            Ok(fd) => fd,
            Err(Errno::NOSYS) => return self.open_read(real),
            Err(Errno::LOOP | Errno::XDEV) => return Err(ConfineError::Changed { path: shown() }),
            Err(e) => return Err(ConfineError::from_errno(&shown(), e)),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| ConfineError::from_errno(&shown(), e))?;
        match kind_of(&stat) {
            Kind::File => {}
            Kind::Dir => return Err(ConfineError::IsADirectory { path: shown() }),
            Kind::Symlink => return Err(ConfineError::Changed { path: shown() }),
            Kind::Other(kind) => return Err(ConfineError::NotRegular { path: shown(), kind }),
        }
        // O_NONBLOCK stays set: it changes nothing for a regular file and
        // clearing it would cost two more syscalls per file.
        Ok(File::from(fd))
    }
}

fn clear_nonblock(fd: &impl AsFd, shown: &str) -> Result<(), ConfineError> {
    let flags = rustix::fs::fcntl_getfl(fd.as_fd()).map_err(|e| ConfineError::from_errno(shown, e))?;
    rustix::fs::fcntl_setfl(fd.as_fd(), flags - OFlags::NONBLOCK).map_err(|e| ConfineError::from_errno(shown, e))
}

fn metadata_of(r: &Resolved) -> Result<Metadata, ConfineError> {
    let obj = r.object.as_ref().ok_or_else(|| r.not_found())?;
    // An O_PATH handle supports fstat, which is all `File::metadata` does.
    let dup = obj.fd.try_clone().map_err(|e| ConfineError::from_io(&r.shown, e))?;
    File::from(dup)
        .metadata()
        .map_err(|e| ConfineError::from_io(&r.shown, e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read;
    use std::os::unix::fs::symlink;

    use super::*;

    /// base/ws (workspace, with sub/file.txt), base/outside, no temp dir.
    fn fixture() -> (tempfile::TempDir, PathBuf, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["ws/sub", "outside"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("ws/sub/file.txt"), "inside\n").unwrap();
        let conf = Confinement::builder(base.join("ws")).temp_dir(None).build().unwrap();
        (dir, base, conf)
    }

    fn close_on_exec(fd: &impl AsFd) -> bool {
        rustix::io::fcntl_getfd(fd)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC)
    }

    #[test]
    fn files_opened_for_tools_are_closed_on_exec() {
        let (_dir, base, conf) = fixture();
        assert!(close_on_exec(&conf.open_read("sub/file.txt").unwrap()));
        assert!(close_on_exec(&conf.open_walked(&base.join("ws/sub/file.txt")).unwrap()));
        assert!(close_on_exec(&conf.open_ordinary("sub/file.txt").unwrap().0));
        let (file, _) = super::super::open_ordinary_path(&base.join("ws/sub/file.txt")).unwrap();
        assert!(close_on_exec(&file));
    }

    #[test]
    fn a_file_replaced_after_resolution_is_not_opened() {
        let (_dir, base, conf) = fixture();
        let r = conf.resolve("sub/file.txt", Access::Read).unwrap();
        std::fs::write(base.join("ws/sub/other.txt"), "other\n").unwrap();
        std::fs::rename(base.join("ws/sub/other.txt"), base.join("ws/sub/file.txt")).unwrap();
        let err = conf.open_resolved(&r).unwrap_err();
        assert!(matches!(err, ConfineError::Changed { .. }), "{err}");
        // Resolved again, the new file opens.
        let r = conf.resolve("sub/file.txt", Access::Read).unwrap();
        let mut text = String::new();
        conf.open_resolved(&r).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "other\n");
    }

    #[test]
    fn opening_what_is_not_a_regular_file_says_what_it_is() {
        let (_dir, base, conf) = fixture();
        let err = conf.open_read("sub").unwrap_err();
        assert!(matches!(err, ConfineError::IsADirectory { .. }), "{err}");
        let err = conf
            .open_resolved(&conf.resolve("sub/none", Access::Read).unwrap())
            .unwrap_err();
        assert!(err.is_not_found(), "{err}");
        symlink("file.txt", base.join("ws/sub/link")).unwrap();
        let err = conf
            .open_resolved(&conf.resolve_link("sub/link", Access::Read).unwrap())
            .unwrap_err();
        assert!(matches!(err, ConfineError::Changed { .. }), "{err}");
        let err = conf.read_dir("sub/file.txt").unwrap_err();
        assert!(matches!(err, ConfineError::NotADirectory { .. }), "{err}");
        let err = conf.read_link("sub/file.txt").unwrap_err();
        assert!(err.to_string().contains("not a symbolic link"), "{err}");
        let err = conf.open_walked(&base.join("ws/sub")).unwrap_err();
        assert!(matches!(err, ConfineError::IsADirectory { .. }), "{err}");
        let err = conf.open_walked(&base.join("ws")).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = conf.open_walked(&base.join("ws/sub/a\0b")).unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = conf.open_walked(&base.join("ws/sub/none")).unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }

    #[test]
    fn listings_carry_each_entrys_modification_time() {
        let (_dir, base, conf) = fixture();
        let entries = conf.read_dir("sub").unwrap();
        let want = std::fs::metadata(base.join("ws/sub/file.txt"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].modified, Some(want));
        assert_eq!(entries[0].kind, Kind::File);
        assert_eq!(
            conf.read_dir("").unwrap_err().to_string(),
            ConfineError::Empty.to_string()
        );
    }

    #[test]
    fn empty_directories_are_removed_and_others_are_not() {
        let (_dir, base, conf) = fixture();
        std::fs::create_dir_all(base.join("ws/empty")).unwrap();
        conf.remove_empty_dir("empty").unwrap();
        assert!(!base.join("ws/empty").exists());
        assert!(conf.remove_empty_dir("sub").is_err());
        assert!(base.join("ws/sub/file.txt").exists());
        let err = conf.remove_empty_dir("sub/file.txt").unwrap_err();
        assert!(matches!(err, ConfineError::NotADirectory { .. }), "{err}");
        // The workspace holds `.wield`, protected: refused for that first.
        let err = conf.remove_empty_dir(".").unwrap_err();
        assert!(matches!(err, ConfineError::Protected { .. }), "{err}");
        let bare = Confinement::builder(base.join("ws"))
            .protected(Vec::<PathBuf>::new())
            .temp_dir(None)
            .build()
            .unwrap();
        let err = bare.remove_empty_dir(".").unwrap_err();
        assert!(err.to_string().contains("a root directory cannot be removed"), "{err}");
        let err = bare.rename(".", "elsewhere").unwrap_err();
        assert!(err.to_string().contains("cannot be moved"), "{err}");
        assert!(conf.rename("none", "x").unwrap_err().is_not_found());
    }

    #[test]
    fn a_directory_holding_a_protected_path_is_neither_moved_nor_removed() {
        let (_dir, base, _) = fixture();
        std::fs::create_dir_all(base.join("ws/keep")).unwrap();
        let conf = Confinement::builder(base.join("ws"))
            .protect("keep/locked")
            .temp_dir(None)
            .build()
            .unwrap();
        let err = conf.remove_empty_dir("keep").unwrap_err();
        assert!(matches!(err, ConfineError::Protected { .. }), "{err}");
        let err = conf.rename("keep", "moved").unwrap_err();
        assert!(matches!(err, ConfineError::Protected { .. }), "{err}");
        assert!(base.join("ws/keep").is_dir());
        conf.rename("sub", "moved").unwrap();
        assert!(base.join("ws/moved/file.txt").exists());
    }

    /// Clears the immutable flag it set, so the temp dir can go.
    struct Immutable(File);

    impl Drop for Immutable {
        fn drop(&mut self) {
            let _ = rustix::fs::ioctl_setflags(&self.0, rustix::fs::IFlags::empty());
        }
    }

    #[test]
    fn a_file_this_process_may_not_write_is_not_replaced() {
        let (_dir, base, conf) = fixture();
        let path = base.join("ws/sub/file.txt");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
        // Root may write any mode; an immutable file it may not.
        let _guard = File::open(&path).ok().and_then(|f| {
            rustix::fs::ioctl_setflags(&f, rustix::fs::IFlags::IMMUTABLE)
                .ok()
                .map(|()| Immutable(f))
        });
        if rustix::fs::access(&path, rustix::fs::Access::WRITE_OK).is_ok() {
            return; // Neither the mode nor the flag binds here.
        }
        let err = conf.write_atomic("sub/file.txt", b"x").unwrap_err();
        assert!(matches!(err, ConfineError::ReadOnly { .. }), "{err}");
        assert!(err.to_string().contains("mode 0444"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "inside\n");
        // A new file beside it and a directory are not its concern.
        conf.write_atomic("sub/new.txt", b"n").unwrap();
        assert!(
            conf.check_writable(&conf.resolve("sub", Access::Write).unwrap())
                .is_ok()
        );
    }

    /// A named pipe put in place of a resolved file must not block the open
    /// until someone writes to it.
    #[test]
    fn a_file_swapped_for_a_named_pipe_is_refused_without_waiting() {
        let (_dir, base, conf) = fixture();
        let conf = std::sync::Arc::new(conf);
        let r = conf.resolve("sub/file.txt", Access::Read).unwrap();
        let path = base.join("ws/sub/file.txt");
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mkfifoat(rustix::fs::CWD, &path, Mode::from_raw_mode(0o600)).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let opener = std::sync::Arc::clone(&conf);
        std::thread::spawn(move || {
            let _ = tx.send(opener.open_resolved(&r).map(|_| ()));
        });
        let outcome = rx.recv_timeout(std::time::Duration::from_secs(10));
        if outcome.is_err() {
            // Let the blocked open go before failing.
            let _ = std::fs::OpenOptions::new().write(true).open(&path);
            panic!("opening a named pipe put in place of a resolved file blocked");
        }
        let err = outcome.unwrap().unwrap_err();
        assert!(matches!(err, ConfineError::Changed { .. }), "{err}");
    }

    /// Runs `open` on another thread; `None` when it is still blocked after
    /// a while (then `unblock` lets it go).
    fn without_blocking<T: Send + 'static>(
        open: impl FnOnce() -> T + Send + 'static,
        unblock: impl FnOnce(),
    ) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open());
        });
        let outcome = rx.recv_timeout(std::time::Duration::from_secs(10)).ok();
        if outcome.is_none() {
            unblock();
        }
        outcome
    }

    #[test]
    fn a_walked_named_pipe_is_refused_without_waiting_for_a_writer() {
        let (_dir, base, conf) = fixture();
        let fifo = base.join("ws/sub/fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let conf = std::sync::Arc::new(conf);
        let walked = fifo.clone();
        let outcome = without_blocking(
            move || conf.open_walked(&walked).map(|_| ()),
            || drop(std::fs::OpenOptions::new().write(true).open(&fifo)),
        );
        let err = outcome.expect("open_walked blocked on a named pipe").unwrap_err();
        assert!(matches!(err, ConfineError::NotRegular { .. }), "{err}");
    }

    #[test]
    fn a_named_pipe_named_in_the_configuration_is_refused_without_waiting() {
        let (_dir, base, _) = fixture();
        let fifo = base.join("ws/hook");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let path = fifo.clone();
        let outcome = without_blocking(
            move || super::super::open_ordinary_path(&path).map(|_| ()),
            || drop(std::fs::OpenOptions::new().write(true).open(&fifo)),
        );
        let err = outcome
            .expect("open_ordinary_path blocked on a named pipe")
            .unwrap_err();
        assert!(matches!(err, ConfineError::NotRegular { .. }), "{err}");
    }

    /// The temp file of an atomic write is created, never opened: a link
    /// (or file) already holding its name is not written through.
    #[test]
    fn a_temp_name_already_taken_is_never_written_through() {
        let (_dir, base, conf) = fixture();
        let next = TEMP_COUNTER.load(Ordering::Relaxed);
        // Tests running beside this one take numbers too: cover plenty.
        for n in next..next + 256 {
            let name = format!(".wield-tmp-{}-{n}", std::process::id());
            symlink(base.join(format!("outside/{n}")), base.join("ws/sub").join(name)).unwrap();
        }
        let written = conf.write_atomic("sub/file.txt", b"pwned");
        assert!(written.is_err(), "{written:?}");
        assert_eq!(std::fs::read_dir(base.join("outside")).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(base.join("ws/sub/file.txt")).unwrap(),
            "inside\n"
        );
    }
}
