//! Component-by-component resolution beneath root directory handles.
//!
//! The kernel is only ever asked to look up one name in a directory we hold
//! open, with `O_NOFOLLOW`: it can neither climb (`..` never reaches it, we
//! pop our own stack of handles) nor follow a symbolic link on its own. When
//! a name turns out to be a symbolic link we read it and continue ourselves:
//! a relative target is spliced in front of the remaining components, an
//! absolute one restarts from the handle of the root that contains it, and a
//! `..` above a root restarts from the root that contains its parent. So a
//! link that stays inside the roots works, even an absolute one, and one that
//! leads outside is refused with the link named in the message.
//!
//! Swapping a directory for a symbolic link after we looked at it changes
//! nothing for us: we already hold the directory's handle, and the next name
//! is looked up in it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::roots::{has_nul, shown};
use super::{Access, ConfineError, Confinement};

/// How many symbolic links (and climbs above a root) one resolution may
/// follow, like the kernel's `MAXSYMLINKS`.
pub const MAX_SYMLINK_HOPS: usize = 40;

/// Whether the last component is followed when it is a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Final {
    Follow,
    NoFollow,
}

/// What to do when an intermediate directory is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    /// Fail with `NotFound`.
    Error,
    /// Create it (`mkdir -p`), refusing protected locations.
    Create,
    /// Continue by name only, to learn where the path would be.
    Virtual,
}

/// An existing object reached by resolution: its `O_PATH` handle and status.
pub(crate) struct Obj {
    pub(crate) fd: Arc<OwnedFd>,
    pub(crate) stat: Stat,
}

/// Where a path leads, as handles: the directory holding it and its name in
/// there, plus its own handle when it exists. Everything done with a
/// `Resolved` goes through these handles, never through a path string again.
pub struct Resolved {
    pub(crate) shown: String,
    /// The directory that holds the final name; `None` for a root itself or
    /// when a missing parent was only walked by name.
    pub(crate) parent: Option<Arc<OwnedFd>>,
    pub(crate) name: OsString,
    pub(crate) object: Option<Obj>,
    pub(crate) real: PathBuf,
}

/// The kind of file system object a path leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other(&'static str),
}

pub(crate) fn kind_of(stat: &Stat) -> Kind {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        FileType::Fifo => Kind::Other("named pipe"),
        FileType::Socket => Kind::Other("socket"),
        FileType::CharacterDevice => Kind::Other("character device"),
        FileType::BlockDevice => Kind::Other("block device"),
        FileType::Unknown => Kind::Other("special file"),
    }
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("shown", &self.shown)
            .field("real", &self.real)
            .field("kind", &self.kind())
            .finish()
    }
}

impl Resolved {
    /// The canonical path of what was reached (or of where it would be).
    pub fn real_path(&self) -> &Path {
        &self.real
    }

    /// The path as the caller gave it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    pub fn exists(&self) -> bool {
        self.object.is_some()
    }

    /// What it is, `None` when it does not exist.
    pub fn kind(&self) -> Option<Kind> {
        self.object.as_ref().map(|o| kind_of(&o.stat))
    }

    /// Size in bytes, when it exists.
    pub fn size(&self) -> Option<u64> {
        self.object.as_ref().map(|o| u64::try_from(o.stat.st_size).unwrap_or(0))
    }

    pub(crate) fn not_found(&self) -> ConfineError {
        ConfineError::NotFound {
            path: self.shown.clone(),
        }
    }
}

enum Step {
    Parent,
    Name(OsString),
}

fn steps(path: &Path) -> impl Iterator<Item = Step> + '_ {
    path.components().filter_map(|c| match c {
        Component::ParentDir => Some(Step::Parent),
        Component::Normal(n) => Some(Step::Name(n.to_os_string())),
        Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
    })
}

struct Walk<'c> {
    conf: &'c Confinement,
    access: Access,
    shown: String,
    /// Handles from the current root down to the current directory.
    stack: Vec<Arc<OwnedFd>>,
    /// The real path of the last handle on the stack, followed by the
    /// `virtual_depth` names walked below it without handles.
    real: PathBuf,
    virtual_depth: usize,
    pending: VecDeque<Step>,
    hops: usize,
    /// The last symbolic link followed, for messages.
    via: Option<String>,
}

impl Confinement {
    /// Resolve `path` for `access`. Relative paths start at the workspace;
    /// absolute ones at the root that contains them.
    pub(crate) fn walk(
        &self,
        path: &Path,
        access: Access,
        last: Final,
        missing: Missing,
    ) -> Result<Resolved, ConfineError> {
        let shown = shown(path);
        if has_nul(path.as_os_str()) {
            return Err(ConfineError::Nul { path: shown });
        }
        if path.as_os_str().is_empty() {
            return Err(ConfineError::Empty);
        }
        let abs = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.workspace().join(path)
        };
        // The path as given counts too: a link named `.git` leading to an
        // ordinary directory is still where git looks.
        if access == Access::Write
            && let Some(e) = self.write_refusal(&shown, &super::roots::lexical_normal(&abs))
            && matches!(e, ConfineError::ProjectState { .. })
        {
            return Err(e);
        }
        let mut walk = Walk {
            conf: self,
            access,
            shown,
            stack: Vec::new(),
            real: PathBuf::new(),
            virtual_depth: 0,
            pending: VecDeque::new(),
            hops: 0,
            via: None,
        };
        walk.dispatch(&abs)?;
        let resolved = match walk.run(last, missing) {
            // A missing directory stopped the walk: finish it by name, so a
            // path that would lead outside is reported as such.
            Err(ConfineError::NotFound { path: missing_path }) if missing == Missing::Error => {
                return match self.walk(path, access, last, Missing::Virtual) {
                    Err(e) if e.is_refusal() => Err(e),
                    _ => Err(ConfineError::NotFound { path: missing_path }),
                };
            }
            other => other?,
        };
        if access == Access::Write {
            self.check_protected(&resolved.shown, &resolved.real)?;
        }
        Ok(resolved)
    }

    pub(crate) fn check_protected(&self, shown: &str, real: &Path) -> Result<(), ConfineError> {
        match self.write_refusal(shown, real) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Walk<'_> {
    fn outside(&self) -> ConfineError {
        ConfineError::Outside {
            path: self.shown.clone(),
            access: self.access,
            roots: self.conf.roots_text(self.access),
            detail: self.via.clone().unwrap_or_default(),
        }
    }

    fn hop(&mut self) -> Result<(), ConfineError> {
        self.hops += 1;
        if self.hops > MAX_SYMLINK_HOPS {
            return Err(ConfineError::SymlinkLoop {
                path: self.shown.clone(),
                limit: MAX_SYMLINK_HOPS,
            });
        }
        Ok(())
    }

    /// Continue at the root containing `abs` (an absolute path that may still
    /// hold `..`, which the walk interprets), with the remaining steps
    /// replaced by what follows that root in `abs`.
    fn dispatch(&mut self, abs: &Path) -> Result<(), ConfineError> {
        let Some((index, rest)) = self.conf.root_for(abs, self.access) else {
            return Err(self.outside());
        };
        let root = &self.conf.roots[index];
        self.stack = vec![Arc::clone(&root.dir)];
        self.real = root.real.clone();
        self.virtual_depth = 0;
        self.pending = steps(rest).collect();
        Ok(())
    }

    /// The remaining steps appended to `base`, as a lexical path.
    fn with_pending(&self, base: &Path) -> PathBuf {
        let mut abs = base.to_path_buf();
        for step in &self.pending {
            match step {
                Step::Parent => abs.push(".."),
                Step::Name(n) => abs.push(n),
            }
        }
        abs
    }

    fn errno(&self, e: Errno) -> ConfineError {
        ConfineError::from_errno(&self.shown, e)
    }

    fn run(mut self, last: Final, missing: Missing) -> Result<Resolved, ConfineError> {
        loop {
            let Some(step) = self.pending.pop_front() else {
                return self.at_top();
            };
            let name = match step {
                Step::Parent => {
                    self.climb()?;
                    continue;
                }
                Step::Name(name) => name,
            };
            let is_last = self.pending.is_empty();
            if self.virtual_depth > 0 {
                self.real.push(&name);
                self.virtual_depth += 1;
                if is_last {
                    return Ok(self.missing_final(None, name));
                }
                continue;
            }
            let top = self.top();
            let fd = match rustix::fs::openat(
                &*top,
                name.as_os_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) if is_last => return Ok(self.missing_final(Some(top), name)),
                Err(Errno::NOENT) => match missing {
                    Missing::Error => return Err(ConfineError::NotFound { path: self.shown }),
                    Missing::Virtual => {
                        self.real.push(&name);
                        self.virtual_depth = 1;
                        continue;
                    }
                    Missing::Create => {
                        self.create_dir(&top, &name)?;
                        self.pending.push_front(Step::Name(name));
                        continue;
                    }
                },
                Err(e) => return Err(self.errno(e)),
            };
            let stat = rustix::fs::fstat(&fd).map_err(|e| self.errno(e))?;
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Symlink if !(is_last && last == Final::NoFollow) => self.follow(&fd, &name)?,
                FileType::Directory if !is_last => {
                    self.stack.push(Arc::new(fd));
                    self.real.push(&name);
                }
                FileType::Directory | FileType::Symlink => return Ok(self.found(top, name, fd, stat)),
                _ if is_last => return Ok(self.found(top, name, fd, stat)),
                _ => return Err(ConfineError::NotADirectory { path: self.shown }),
            }
        }
    }

    fn top(&self) -> Arc<OwnedFd> {
        // The stack always holds at least the root's handle.
        Arc::clone(&self.stack[self.stack.len() - 1])
    }

    /// `..`: pop a name walked virtually, else a handle, else restart from
    /// the root containing the root's parent.
    fn climb(&mut self) -> Result<(), ConfineError> {
        if self.virtual_depth > 0 {
            self.virtual_depth -= 1;
            self.real.pop();
        } else if self.stack.len() > 1 {
            self.stack.pop();
            self.real.pop();
        } else if let Some(parent) = self.real.parent().map(Path::to_path_buf) {
            self.hop()?;
            let abs = self.with_pending(&parent);
            self.dispatch(&abs)?;
        }
        // `..` of `/` is `/`: nothing to do.
        Ok(())
    }

    fn follow(&mut self, fd: &OwnedFd, name: &OsString) -> Result<(), ConfineError> {
        self.hop()?;
        let target = rustix::fs::readlinkat(fd, c"", Vec::new()).map_err(|e| self.errno(e))?;
        let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
        if target.as_os_str().is_empty() {
            return Err(ConfineError::NotFound {
                path: self.shown.clone(),
            });
        }
        self.via = Some(format!(
            " (the symbolic link {} leads to {})",
            self.conf.display_path(&self.real.join(name)),
            target.display()
        ));
        if target.is_absolute() {
            let abs = self.with_pending(&target);
            self.dispatch(&abs)
        } else {
            let mut spliced: VecDeque<Step> = steps(&target).collect();
            spliced.append(&mut self.pending);
            self.pending = spliced;
            Ok(())
        }
    }

    fn create_dir(&self, top: &OwnedFd, name: &OsString) -> Result<(), ConfineError> {
        self.conf.check_protected(&self.shown, &self.real.join(name))?;
        match rustix::fs::mkdirat(top, name.as_os_str(), Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => Ok(()),
            Err(e) => Err(self.errno(e)),
        }
    }

    fn found(mut self, top: Arc<OwnedFd>, name: OsString, fd: OwnedFd, stat: Stat) -> Resolved {
        self.real.push(&name);
        Resolved {
            shown: self.shown,
            parent: Some(top),
            name,
            object: Some(Obj { fd: Arc::new(fd), stat }),
            real: self.real,
        }
    }

    fn missing_final(mut self, parent: Option<Arc<OwnedFd>>, name: OsString) -> Resolved {
        if parent.is_some() {
            self.real.push(&name);
        }
        Resolved {
            shown: self.shown,
            parent,
            name,
            object: None,
            real: self.real,
        }
    }

    /// The path ended on a directory already on the stack (a root, or after
    /// `..` / `.`).
    fn at_top(mut self) -> Result<Resolved, ConfineError> {
        if self.virtual_depth > 0 {
            let name = self.real.file_name().map(|n| n.to_os_string()).unwrap_or_default();
            return Ok(Resolved {
                shown: self.shown,
                parent: None,
                name,
                object: None,
                real: self.real,
            });
        }
        let top = self.top();
        let stat = rustix::fs::fstat(&*top).map_err(|e| self.errno(e))?;
        let parent = if self.stack.len() >= 2 {
            Some(Arc::clone(&self.stack[self.stack.len() - 2]))
        } else {
            None
        };
        let name = match &parent {
            Some(_) => self.real.file_name().map(|n| n.to_os_string()).unwrap_or_default(),
            None => OsString::new(),
        };
        self.stack.clear();
        Ok(Resolved {
            shown: self.shown,
            parent,
            name,
            object: Some(Obj { fd: top, stat }),
            real: self.real,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    /// base/ws (workspace, with sub/file.txt), base/ro (read root, doc.txt),
    /// base/outside (no root), no temp dir.
    fn fixture() -> (tempfile::TempDir, PathBuf, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["ws/sub", "ro", "outside"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(base.join("ws/sub/file.txt"), "inside\n").unwrap();
        std::fs::write(base.join("ro/doc.txt"), "doc\n").unwrap();
        let conf = Confinement::builder(base.join("ws"))
            .read_root(base.join("ro"))
            .temp_dir(None)
            .build()
            .unwrap();
        (dir, base, conf)
    }

    /// A chain of `n` links in the workspace, link0 -> link1 -> ... -> the
    /// file.
    fn chain(base: &Path, n: usize) {
        for i in 0..n {
            let target = if i + 1 == n {
                "sub/file.txt".to_owned()
            } else {
                format!("link{}", i + 1)
            };
            symlink(target, base.join(format!("ws/link{i}"))).unwrap();
        }
    }

    #[test]
    fn exactly_the_kernels_number_of_links_is_followed() {
        let (_dir, base, conf) = fixture();
        chain(&base, MAX_SYMLINK_HOPS);
        let r = conf.resolve("link0", Access::Read).unwrap();
        assert_eq!(r.real_path(), base.join("ws/sub/file.txt"));
        let (_dir, base, conf) = fixture();
        chain(&base, MAX_SYMLINK_HOPS + 1);
        let err = conf.resolve("link0", Access::Read).unwrap_err();
        assert!(
            matches!(err, ConfineError::SymlinkLoop { limit, .. } if limit == MAX_SYMLINK_HOPS),
            "{err}"
        );
    }

    #[test]
    fn climbing_inside_a_root_costs_no_link_hops() {
        let (_dir, _, conf) = fixture();
        let mut path = PathBuf::new();
        for _ in 0..=MAX_SYMLINK_HOPS {
            path.push("sub/..");
        }
        path.push("sub/file.txt");
        assert!(conf.resolve(&path, Access::Read).unwrap().exists());
    }

    #[test]
    fn climbing_above_a_root_counts_as_a_hop() {
        let (_dir, _, conf) = fixture();
        // `..` at the top of the workspace reaches the read root beside it.
        let climbs = |n: usize| {
            let mut path = PathBuf::new();
            for _ in 0..n {
                path.push("../ws");
            }
            path.join("sub/file.txt")
        };
        assert!(conf.resolve(climbs(MAX_SYMLINK_HOPS), Access::Read).unwrap().exists());
        assert!(matches!(
            conf.resolve(climbs(MAX_SYMLINK_HOPS + 1), Access::Read).unwrap_err(),
            ConfineError::SymlinkLoop { .. }
        ));
    }

    #[test]
    fn climbing_above_the_top_of_a_root_leaves_it() {
        let (_dir, base, conf) = fixture();
        let r = conf.resolve("../ro/doc.txt", Access::Read).unwrap();
        assert_eq!(r.real_path(), base.join("ro/doc.txt"));
        assert!(r.exists());
        let err = conf.resolve("../outside/x", Access::Read).unwrap_err();
        assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
        let err = conf.resolve(base.join("ro/../outside"), Access::Read).unwrap_err();
        assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
        // Climbing out of the read root into the workspace, for writing.
        let r = conf.resolve(base.join("ro/../ws/new.txt"), Access::Read).unwrap();
        assert_eq!(r.real_path(), base.join("ws/new.txt"));
    }

    #[test]
    fn names_walked_by_name_are_climbed_by_name() {
        let (_dir, base, conf) = fixture();
        let r = conf.resolve("new/../sub/file.txt", Access::Read).unwrap();
        assert!(r.exists());
        assert_eq!(r.real_path(), base.join("ws/sub/file.txt"));
        let r = conf.resolve("new/deeper/../x", Access::Read).unwrap();
        assert!(!r.exists());
        assert_eq!(r.real_path(), base.join("ws/new/x"));
        // Ending on a directory walked by name.
        let r = conf.resolve("new/x/..", Access::Read).unwrap();
        assert!(!r.exists());
        assert_eq!(r.real_path(), base.join("ws/new"));
        assert_eq!(r.name, "new");
        assert!(r.parent.is_none());
    }

    #[test]
    fn a_missing_name_is_where_it_would_be() {
        let (_dir, base, conf) = fixture();
        let r = conf.resolve("sub/new.txt", Access::Write).unwrap();
        assert!(!r.exists() && r.kind().is_none() && r.size().is_none());
        assert_eq!(r.real_path(), base.join("ws/sub/new.txt"));
        assert!(r.parent.is_some());
        assert_eq!(r.name, "new.txt");
        let r = conf.resolve("nodir/deeper/new.txt", Access::Write).unwrap();
        assert_eq!(r.real_path(), base.join("ws/nodir/deeper/new.txt"));
        assert!(r.parent.is_none());
        assert_eq!(r.name, "new.txt");
    }

    #[test]
    fn what_was_reached_is_described() {
        let (_dir, base, conf) = fixture();
        let r = conf.resolve("./sub/file.txt", Access::Read).unwrap();
        assert_eq!(r.shown(), "./sub/file.txt");
        assert_eq!(r.kind(), Some(Kind::File));
        assert_eq!(r.size(), Some(7));
        assert!(r.exists());
        assert_eq!(r.name, "file.txt");
        symlink("sub", base.join("ws/dirlink")).unwrap();
        let r = conf.resolve_link("dirlink", Access::Read).unwrap();
        assert_eq!(r.kind(), Some(Kind::Symlink));
        assert_eq!(conf.resolve("dirlink", Access::Read).unwrap().kind(), Some(Kind::Dir));
        rustix::fs::mkfifoat(rustix::fs::CWD, base.join("ws/fifo"), Mode::from_raw_mode(0o600)).unwrap();
        assert_eq!(
            conf.resolve("fifo", Access::Read).unwrap().kind(),
            Some(Kind::Other("named pipe"))
        );
        assert_eq!(r.not_found().to_string(), "dirlink: no such file or directory");
    }

    #[test]
    fn ending_on_a_directory_after_climbing_keeps_its_parent() {
        let (_dir, base, conf) = fixture();
        std::fs::create_dir_all(base.join("ws/sub/deep")).unwrap();
        let r = conf.resolve("sub/deep/..", Access::Read).unwrap();
        assert_eq!(r.real_path(), base.join("ws/sub"));
        assert_eq!(r.name, "sub");
        assert!(r.parent.is_some());
        assert_eq!(r.kind(), Some(Kind::Dir));
        // The workspace itself has no parent here.
        let r = conf.resolve("sub/..", Access::Read).unwrap();
        assert_eq!(r.real_path(), base.join("ws"));
        assert!(r.parent.is_none() && r.name.is_empty());
        // A move by the name reached moves that directory.
        conf.rename("sub/deep/..", "moved").unwrap();
        assert!(base.join("ws/moved/deep").is_dir());
    }

    #[test]
    fn a_missing_directory_is_not_found_unless_the_rest_leads_outside() {
        let (_dir, _, conf) = fixture();
        let err = conf.open_read("missing/../sub/file.txt/x").unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = conf.open_read("missing/x").unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = conf.open_read("missing/../../outside/x").unwrap_err();
        assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
    }

    #[test]
    fn a_link_named_like_project_state_is_project_state_for_writing_only() {
        let (_dir, base, conf) = fixture();
        std::fs::create_dir_all(base.join("ws/plain")).unwrap();
        std::fs::write(base.join("ws/plain/HEAD"), "x").unwrap();
        symlink("plain", base.join("ws/.git")).unwrap();
        let err = conf.write_atomic(".git/config", b"x").unwrap_err();
        assert!(matches!(err, ConfineError::ProjectState { .. }), "{err}");
        assert!(!base.join("ws/plain/config").exists());
        let err = conf.resolve(".GIT/config", Access::Write).unwrap_err();
        assert!(matches!(err, ConfineError::ProjectState { .. }), "{err}");
        // Reading it is fine.
        assert!(conf.resolve(".git/HEAD", Access::Read).unwrap().exists());
        assert!(conf.open_read(".git/HEAD").is_ok());
    }

    #[test]
    fn a_protected_path_is_refused_for_writing_after_resolution() {
        let (_dir, base, _) = fixture();
        let conf = Confinement::builder(base.join("ws"))
            .protect("sub/locked.txt")
            .temp_dir(None)
            .build()
            .unwrap();
        symlink("sub/locked.txt", base.join("ws/innocent")).unwrap();
        let err = conf.resolve("innocent", Access::Write).unwrap_err();
        assert!(matches!(err, ConfineError::Protected { .. }), "{err}");
        assert!(conf.resolve("innocent", Access::Read).is_ok());
        assert!(conf.check_protected("x", &base.join("ws/sub/locked.txt")).is_err());
        assert!(conf.check_protected("x", &base.join("ws/sub/free.txt")).is_ok());
    }

    #[test]
    fn an_outside_refusal_names_the_link_that_led_there() {
        let (_dir, base, conf) = fixture();
        symlink(base.join("outside"), base.join("ws/sub/out")).unwrap();
        let err = conf.resolve("sub/out/x", Access::Read).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "path sub/out/x is outside the read roots ({}, {}) (the symbolic link sub/out leads to {}): use a \
                 path inside them",
                base.join("ws").display(),
                base.join("ro").display(),
                base.join("outside").display()
            )
        );
        let err = conf.resolve("../outside", Access::Write).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "path ../outside is outside the write roots ({}): use a path inside them",
                base.join("ws").display()
            )
        );
    }

    #[test]
    fn relative_links_splice_before_the_rest_of_the_path() {
        let (_dir, base, conf) = fixture();
        std::fs::create_dir_all(base.join("ws/a/b")).unwrap();
        std::fs::write(base.join("ws/a/b/f"), "f").unwrap();
        symlink("a/b", base.join("ws/ab")).unwrap();
        symlink(base.join("ws/a"), base.join("ws/abs-a")).unwrap();
        assert_eq!(
            conf.resolve("ab/f", Access::Read).unwrap().real_path(),
            base.join("ws/a/b/f")
        );
        assert_eq!(
            conf.resolve("abs-a/b/../b/f", Access::Read).unwrap().real_path(),
            base.join("ws/a/b/f")
        );
    }

    #[test]
    fn the_empty_path_is_refused() {
        let (_dir, _, conf) = fixture();
        assert!(matches!(
            conf.resolve("", Access::Read).unwrap_err(),
            ConfineError::Empty
        ));
    }

    /// `f`'s result, or `None` when it has not returned after a while (a
    /// walk that never ends; its thread is left behind).
    fn finishes<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).ok()
    }

    #[test]
    fn a_link_loop_ends_promptly_with_an_error() {
        let (_dir, base, conf) = fixture();
        symlink("b", base.join("ws/a")).unwrap();
        symlink("a", base.join("ws/b")).unwrap();
        let outcome = finishes(move || conf.resolve("a/x", Access::Read).map(|r| r.real));
        let err = outcome.expect("resolving a link loop never ended").unwrap_err();
        assert!(matches!(err, ConfineError::SymlinkLoop { .. }), "{err}");
    }

    #[test]
    fn missing_directories_are_created_once_each() {
        let (_dir, base, conf) = fixture();
        let outcome = finishes(move || conf.create_dir_all("a/b/c"));
        assert!(outcome.expect("mkdir -p never ended").unwrap());
        assert!(base.join("ws/a/b/c").is_dir());
    }
}
