//! The roots of a [`Confinement`] and how it is built.
//!
//! Each root is opened once, at construction, as an `O_PATH` directory
//! handle. From then on nothing is reached by a path string: every lookup
//! starts at one of these handles. A root's path is only used to decide which
//! handle an absolute path starts from (component-wise, never by string
//! prefix) and to compute the real path of what was reached.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use super::protect::{ProtectedGlobs, git_dir_within, is_glob, state_component};
use super::{Access, ConfineError};

/// The default protected names inside the workspace.
pub const DEFAULT_PROTECTED: &[&str] = &[".wield"];

/// A path protected for a reason of wield's own while it runs: the `.chat`
/// document a cycle is working on (and its lock, replies and results), a
/// policy file wield executes (a Lua approval function and the modules it
/// may `require`, a hook's script). Tools and sandboxed commands may not
/// change it, like `.wield/`; a refusal says `why`, so the model learns
/// which rule it met.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guarded {
    pub path: PathBuf,
    /// What the path is, as a refusal says it: "the .chat document wield
    /// chat is running".
    pub why: String,
}

impl Guarded {
    pub fn new(path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            why: why.into(),
        }
    }
}

/// What a root is for: shown in messages and used for write permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootKind {
    /// The workspace: read and write; relative paths resolve against it.
    Workspace,
    /// An extra read-only root.
    Read,
    /// An extra read-write root.
    Write,
    /// The temp dir: read and write.
    Temp,
}

impl RootKind {
    pub(crate) fn writable(self) -> bool {
        !matches!(self, Self::Read)
    }
}

pub(crate) struct Root {
    /// The canonical path.
    pub(crate) real: PathBuf,
    /// The path as configured, when it differs from the canonical one (a
    /// workspace reached through a symbolic link), so absolute paths written
    /// either way find the root.
    pub(crate) alias: Option<PathBuf>,
    pub(crate) dir: Arc<OwnedFd>,
    pub(crate) kind: RootKind,
}

impl Root {
    pub(crate) fn allows(&self, access: Access) -> bool {
        match access {
            Access::Read => true,
            Access::Write => self.kind.writable(),
        }
    }

    /// The rest of `abs` below this root, and the length of the matched
    /// prefix in components, when `abs` is inside it. `Path::strip_prefix`
    /// compares whole components, so `/srv/app-evil` is never inside
    /// `/srv/app`.
    pub(crate) fn strip<'p>(&self, abs: &'p Path) -> Option<(&'p Path, usize)> {
        let via = |base: &Path| {
            abs.strip_prefix(base)
                .ok()
                .map(|rest| (rest, base.components().count()))
        };
        via(&self.real).or_else(|| self.alias.as_deref().and_then(via))
    }
}

/// Builds a [`Confinement`]: the workspace plus extra read roots, extra
/// write roots, the temp dir and the protected names.
///
/// ```no_run
/// use wield_sandbox::fs::Confinement;
/// let conf = Confinement::builder("/srv/project")
///     .read_root("/usr/share/doc")
///     .write_root("/srv/cache")
///     .build()?;
/// # Ok::<(), wield_sandbox::fs::ConfineError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ConfinementBuilder {
    workspace: PathBuf,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    temp: Option<PathBuf>,
    protected: Vec<PathBuf>,
    guarded: Vec<Guarded>,
    skip_missing: bool,
}

impl ConfinementBuilder {
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            read: Vec::new(),
            write: Vec::new(),
            temp: Some(std::env::temp_dir()),
            protected: DEFAULT_PROTECTED.iter().map(PathBuf::from).collect(),
            guarded: Vec::new(),
            skip_missing: false,
        }
    }

    /// An extra root that tools may read but not write.
    #[must_use]
    pub fn read_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// An extra root that tools may read and write.
    #[must_use]
    pub fn write_root(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push(path.into());
        self
    }

    /// The writable temp dir (default: the process temp dir); `None` for none.
    #[must_use]
    pub fn temp_dir(mut self, path: Option<PathBuf>) -> Self {
        self.temp = path;
        self
    }

    /// Replace the protected list. Relative entries are names inside the
    /// workspace (`.wield`); absolute entries are protected wherever a root
    /// would otherwise allow writing them (the global config directory).
    /// Entries with glob characters (`**/secrets/*`) are globs, relative ones
    /// anchored at the workspace; what they match and everything below it
    /// is protected.
    #[must_use]
    pub fn protected<I, P>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        self.protected = names.into_iter().map(Into::into).collect();
        self
    }

    /// Add one protected path to the list.
    #[must_use]
    pub fn protect(mut self, path: impl Into<PathBuf>) -> Self {
        self.protected.push(path.into());
        self
    }

    /// Protect `guarded.path` (absolute, or inside the workspace) with its
    /// reason: writes to it and beneath it are refused saying why.
    #[must_use]
    pub fn guard(mut self, guarded: Guarded) -> Self {
        self.guarded.push(guarded);
        self
    }

    /// Skip extra roots that do not exist (a global config naming a directory
    /// that only exists on some machines) instead of failing.
    #[must_use]
    pub fn skip_missing_roots(mut self, skip: bool) -> Self {
        self.skip_missing = skip;
        self
    }

    pub fn build(self) -> Result<Confinement, ConfineError> {
        let globs = ProtectedGlobs::new(self.protected.iter().filter_map(|p| p.to_str()).filter(|p| is_glob(p)))?;
        let workspace = absolute(&self.workspace)?;
        let mut roots = vec![open_root(&workspace, RootKind::Workspace)?];
        let extra = self
            .write
            .iter()
            .map(|p| (p, RootKind::Write))
            .chain(self.read.iter().map(|p| (p, RootKind::Read)))
            .chain(self.temp.iter().map(|p| (p, RootKind::Temp)));
        for (path, kind) in extra {
            let abs = if path.is_absolute() {
                path.clone()
            } else {
                workspace.join(path)
            };
            match open_root(&abs, kind) {
                Ok(root) => roots.push(root),
                Err(ConfineError::NotFound { path }) if self.skip_missing || kind == RootKind::Temp => {
                    tracing::warn!("sandbox root {path} does not exist; skipping it");
                }
                Err(e) => return Err(e),
            }
        }
        let ws_real = roots[0].real.clone();
        let mut protected = Vec::new();
        let mut reasons = Vec::new();
        let plain = self
            .protected
            .iter()
            .filter(|p| !p.to_str().is_some_and(is_glob))
            .map(|p| (p, None))
            .chain(self.guarded.iter().map(|g| (&g.path, Some(&g.why))));
        for (p, why) in plain {
            let lexical = lexical_normal(&if p.is_absolute() { p.clone() } else { ws_real.join(p) });
            let mut forms = vec![lexical.clone()];
            if let Ok(real) = std::fs::canonicalize(&lexical)
                && real != lexical
            {
                forms.insert(0, real);
            }
            for form in forms {
                if let Some(why) = why {
                    reasons.push((form.clone(), why.clone()));
                }
                protected.push(form);
            }
        }
        Ok(Confinement {
            roots,
            protected,
            reasons,
            globs,
        })
    }
}

fn absolute(path: &Path) -> Result<PathBuf, ConfineError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .map_err(|e| ConfineError::BadRoot {
            path: path.display().to_string(),
            reason: format!("cannot read the current directory: {e}"),
        })
}

fn open_root(path: &Path, kind: RootKind) -> Result<Root, ConfineError> {
    let shown = path.display().to_string();
    if path.as_os_str().as_bytes().contains(&0) {
        return Err(ConfineError::Nul { path: shown });
    }
    let real = std::fs::canonicalize(path).map_err(|e| ConfineError::from_io(&shown, e))?;
    let fd = rustix::fs::open(&real, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(
        |e| match e {
            rustix::io::Errno::NOTDIR => ConfineError::BadRoot {
                path: shown.clone(),
                reason: "not a directory".into(),
            },
            other => ConfineError::from_errno(&shown, other),
        },
    )?;
    let lexical = lexical_normal(path);
    Ok(Root {
        alias: (lexical != real).then_some(lexical),
        real,
        dir: Arc::new(fd),
        kind,
    })
}

/// Remove `.` components and trailing slashes without touching `..` (which
/// only the file system can interpret).
pub(crate) fn lexical_normal(path: &Path) -> PathBuf {
    path.components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

/// Paths confined beneath a set of root directory handles. See the module
/// documentation for the resolution rules.
pub struct Confinement {
    /// `roots[0]` is the workspace.
    pub(crate) roots: Vec<Root>,
    /// Absolute paths (lexical and canonical) that are never writable.
    pub(crate) protected: Vec<PathBuf>,
    /// Why the guarded ones among `protected` are (see [`Guarded`]).
    pub(crate) reasons: Vec<(PathBuf, String)>,
    /// `sandbox.protected` globs.
    pub(crate) globs: ProtectedGlobs,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field(
                "roots",
                &self.roots.iter().map(|r| (&r.real, r.kind)).collect::<Vec<_>>(),
            )
            .field("protected", &self.protected)
            .field("globs", &self.globs)
            .finish()
    }
}

impl Confinement {
    pub fn builder(workspace: impl Into<PathBuf>) -> ConfinementBuilder {
        ConfinementBuilder::new(workspace)
    }

    /// The workspace's canonical path.
    pub fn workspace(&self) -> &Path {
        &self.roots[0].real
    }

    /// The canonical paths of the roots that allow `access`.
    pub fn roots(&self, access: Access) -> Vec<&Path> {
        self.roots
            .iter()
            .filter(|r| r.allows(access))
            .map(|r| r.real.as_path())
            .collect()
    }

    /// The roots with their kinds, for diagnostics (`wield sandbox check`).
    pub fn describe(&self) -> Vec<(PathBuf, RootKind)> {
        self.roots.iter().map(|r| (r.real.clone(), r.kind)).collect()
    }

    pub(crate) fn roots_text(&self, access: Access) -> String {
        let roots = self.roots(access);
        if roots.is_empty() {
            // Narrowed to nothing (an MCP client's roots outside them all).
            return format!("there are none: this session may not {} files", access.as_str());
        }
        roots
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The root allowing `access` that contains `abs` most specifically, and
    /// the rest of the path below it.
    pub(crate) fn root_for<'p>(&self, abs: &'p Path, access: Access) -> Option<(usize, &'p Path)> {
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| r.allows(access))
            .filter_map(|(i, r)| r.strip(abs).map(|(rest, depth)| (i, rest, depth)))
            .max_by_key(|(_, _, depth)| *depth)
            .map(|(i, rest, _)| (i, rest))
    }

    /// Why writing `path` (a real path, or one as given made absolute) is
    /// refused, if it is: a component naming project state below its root,
    /// or a protected path or glob it is or lies beneath.
    pub(crate) fn write_refusal(&self, shown: &str, path: &Path) -> Option<ConfineError> {
        let root = self.root_for(path, Access::Read);
        let below_root = root.map_or(path, |(_, rest)| rest);
        if let Some(name) = state_component(below_root) {
            return Some(ConfineError::ProjectState {
                path: shown.to_owned(),
                component: name.to_string_lossy().into_owned(),
            });
        }
        if let Some(why) = path.file_name().and_then(super::chat::chat_file) {
            return Some(ConfineError::Guarded {
                path: shown.to_owned(),
                guarded: self.display_path(path),
                why: why.to_owned(),
            });
        }
        if let Some((index, rest)) = root
            && let Some(dir) = git_dir_within(&self.roots[index].real, rest)
        {
            return Some(ConfineError::ProjectState {
                path: shown.to_owned(),
                component: format!("{} is or would become a git directory", self.display_path(&dir)),
            });
        }
        let protected = match self.protected.iter().find(|p| path.starts_with(p)) {
            Some(p) => return Some(self.protected_error(shown, p)),
            None => format!("the glob {}", self.globs.matching(path, self.workspace())?),
        };
        Some(ConfineError::Protected {
            path: shown.to_owned(),
            protected,
        })
    }

    /// The refusal of a write to `shown`, at or beneath (or holding) the
    /// protected path `p`: saying why when `p` is guarded.
    pub(crate) fn protected_error(&self, shown: &str, p: &Path) -> ConfineError {
        match self.reasons.iter().find(|(g, _)| g == p) {
            Some((_, why)) => ConfineError::Guarded {
                path: shown.to_owned(),
                guarded: self.display_path(p),
                why: why.clone(),
            },
            None => ConfineError::Protected {
                path: shown.to_owned(),
                protected: self.display_path(p),
            },
        }
    }

    /// The root allowing `access` whose path is the longest prefix of `abs`
    /// ending at a component boundary, and the rest of `abs` below it (no
    /// leading slash). Byte comparisons only: this runs once per file a
    /// walker yields. `/srv/app-evil` never matches `/srv/app` because the
    /// byte after the prefix must be a `/`.
    pub(crate) fn root_by_bytes<'p>(&self, abs: &'p Path, access: Access) -> Option<(usize, &'p [u8])> {
        let b = abs.as_os_str().as_bytes();
        let mut best: Option<(usize, usize)> = None;
        for (i, r) in self.roots.iter().enumerate().filter(|(_, r)| r.allows(access)) {
            for base in std::iter::once(&r.real).chain(r.alias.as_ref()) {
                let rb = base.as_os_str().as_bytes();
                let boundary = b.len() == rb.len() || rb.ends_with(b"/") || b.get(rb.len()) == Some(&b'/');
                if b.starts_with(rb) && boundary && best.is_none_or(|(_, len)| rb.len() > len) {
                    best = Some((i, rb.len()));
                }
            }
        }
        let (index, len) = best?;
        let mut rest = &b[len..];
        while let [b'/', tail @ ..] = rest {
            rest = tail;
        }
        Some((index, rest))
    }

    /// Whether a real path (as a directory walker yields it below a
    /// directory this confinement resolved) is inside a root allowing
    /// `access`, and not protected when writing. Paths with `..` are refused:
    /// walkers never produce them. This is a check on names only: open what
    /// a walker yields with [`Confinement::open_walked`], never by path.
    pub fn contains(&self, real: &Path, access: Access) -> bool {
        let b = real.as_os_str().as_bytes();
        if !real.is_absolute() || b.contains(&0) || b.split(|c| *c == b'/').any(|seg| seg == b"..") {
            return false;
        }
        if self.root_by_bytes(real, access).is_none() {
            return false;
        }
        access == Access::Read || self.write_refusal("", real).is_none()
    }

    /// A path for people and models: relative to the workspace when inside
    /// it (`src/main.rs`, `.` for the workspace itself), else absolute.
    pub fn display_path(&self, path: &Path) -> String {
        let ws = &self.roots[0];
        let b = path.as_os_str().as_bytes();
        for base in std::iter::once(&ws.real).chain(ws.alias.as_ref()) {
            let rb = base.as_os_str().as_bytes();
            if !b.starts_with(rb) {
                continue;
            }
            let rest = &b[rb.len()..];
            if rest.is_empty() {
                return ".".to_owned();
            }
            if rest[0] == b'/' || rb.ends_with(b"/") {
                let rest = rest.strip_prefix(b"/").unwrap_or(rest);
                return if rest.is_empty() {
                    ".".to_owned()
                } else {
                    String::from_utf8_lossy(rest).into_owned()
                };
            }
        }
        path.display().to_string()
    }
}

/// The path as text for messages, with invalid UTF-8 shown lossily.
pub(crate) fn shown(path: &Path) -> String {
    let s = path.to_string_lossy();
    if s.is_empty() { ".".to_owned() } else { s.into_owned() }
}

pub(crate) fn has_nul(path: &OsStr) -> bool {
    path.as_bytes().contains(&0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    /// base/ws (workspace, with sub/), base/ro (read root), base/rw (write
    /// root), no temp dir.
    fn fixture() -> (tempfile::TempDir, PathBuf, Confinement) {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        for d in ["ws/sub", "ro", "rw"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let conf = Confinement::builder(base.join("ws"))
            .read_root(base.join("ro"))
            .write_root(base.join("rw"))
            .temp_dir(None)
            .build()
            .unwrap();
        (dir, base, conf)
    }

    #[test]
    fn only_read_roots_refuse_writing() {
        assert!(!RootKind::Read.writable());
        for kind in [RootKind::Workspace, RootKind::Write, RootKind::Temp] {
            assert!(kind.writable(), "{kind:?}");
        }
    }

    #[test]
    fn roots_are_listed_by_access_and_described_with_their_kinds() {
        let (_dir, base, conf) = fixture();
        assert_eq!(
            conf.roots(Access::Read),
            vec![base.join("ws"), base.join("rw"), base.join("ro")]
        );
        assert_eq!(conf.roots(Access::Write), vec![base.join("ws"), base.join("rw")]);
        assert_eq!(
            conf.describe(),
            vec![
                (base.join("ws"), RootKind::Workspace),
                (base.join("rw"), RootKind::Write),
                (base.join("ro"), RootKind::Read),
            ]
        );
        assert_eq!(
            conf.roots_text(Access::Write),
            format!("{}, {}", base.join("ws").display(), base.join("rw").display())
        );
    }

    #[test]
    fn roots_text_says_when_no_root_allows_the_access() {
        let (_dir, base, conf) = fixture();
        let narrowed = conf.narrow_writes(&[base.join("elsewhere")]);
        assert_eq!(
            narrowed.roots_text(Access::Write),
            "there are none: this session may not write files"
        );
    }

    #[test]
    fn a_root_prefix_counts_only_at_a_component_boundary() {
        let (_dir, base, conf) = fixture();
        for (path, want) in [
            (base.join("ws"), Some((0, "".as_bytes()))),
            (base.join("ws/sub/f"), Some((0, "sub/f".as_bytes()))),
            (base.join("rw/x"), Some((1, "x".as_bytes()))),
            (base.join("ws-evil/x"), None),
            (base.join("wsx"), None),
            // As long as a root, and a slash where the root's name would end.
            (base.join("xy/z"), None),
            (base.join("xy"), None),
        ] {
            assert_eq!(conf.root_by_bytes(&path, Access::Read), want, "{}", path.display());
        }
        assert_eq!(conf.root_by_bytes(&base.join("ro/x"), Access::Write), None);
        assert!(conf.contains(&base.join("ws"), Access::Read));
        assert!(!conf.contains(&base.join("ws-evil/x"), Access::Read));
        assert!(!conf.contains(&base.join("xy/z"), Access::Read));
        assert!(!conf.contains(&base.join("xy"), Access::Read));
        // `strip` (the resolution's check) agrees.
        assert!(conf.root_for(&base.join("ws-evil/x"), Access::Read).is_none());
        assert_eq!(
            conf.root_for(&base.join("ws/sub/f"), Access::Read),
            Some((0, Path::new("sub/f")))
        );
        assert_eq!(
            conf.root_for(&base.join("rw/x"), Access::Write),
            Some((1, Path::new("x")))
        );
    }

    #[test]
    fn the_file_system_root_as_a_root_contains_every_absolute_path() {
        let (_dir, base, _) = fixture();
        let conf = Confinement::builder(base.join("ws"))
            .read_root("/")
            .temp_dir(None)
            .build()
            .unwrap();
        let (index, rest) = conf.root_by_bytes(Path::new("/etc/passwd"), Access::Read).unwrap();
        assert_eq!((index, rest), (1, "etc/passwd".as_bytes()));
        assert!(conf.contains(Path::new("/etc/passwd"), Access::Read));
        assert!(!conf.contains(Path::new("/etc/passwd"), Access::Write));
        // The workspace, more specific, still wins inside it.
        assert_eq!(conf.root_by_bytes(&base.join("ws/a"), Access::Read).unwrap().0, 0);
        // `..` at the top of `/` stays at `/`.
        assert!(conf.open_read("/../etc/passwd").is_ok());
    }

    /// A directory walker's file is opened from the handle of the most
    /// specific root containing it, so what changed above that root since
    /// it was opened does not matter.
    #[test]
    fn the_most_specific_root_serves_a_walked_file() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("ws/docs/inner")).unwrap();
        std::fs::write(base.join("ws/docs/inner/f.txt"), "inner").unwrap();
        let conf = Confinement::builder(base.join("ws"))
            .read_root(base.join("ws/docs/inner"))
            .temp_dir(None)
            .build()
            .unwrap();
        // docs becomes a link to where it went: a walk from the workspace
        // would now cross a link.
        std::fs::rename(base.join("ws/docs"), base.join("ws/moved")).unwrap();
        symlink("moved", base.join("ws/docs")).unwrap();
        let walked = base.join("ws/docs/inner/f.txt");
        let (index, rest) = conf.root_by_bytes(&walked, Access::Read).unwrap();
        assert_eq!((index, rest), (1, "f.txt".as_bytes()));
        let mut text = String::new();
        std::io::Read::read_to_string(&mut conf.open_walked(&walked).unwrap(), &mut text).unwrap();
        assert_eq!(text, "inner");
    }

    #[test]
    fn display_paths_are_relative_only_inside_the_workspace() {
        let (_dir, base, conf) = fixture();
        assert_eq!(conf.display_path(&base.join("ws/sub/f")), "sub/f");
        assert_eq!(conf.display_path(&base.join("ws")), ".");
        assert_eq!(
            conf.display_path(&base.join("ws-evil/f")),
            base.join("ws-evil/f").display().to_string()
        );
        assert_eq!(
            conf.display_path(&base.join("rw/f")),
            base.join("rw/f").display().to_string()
        );
    }

    #[test]
    fn a_relative_workspace_is_taken_from_the_current_directory() {
        let conf = Confinement::builder(".").temp_dir(None).build().unwrap();
        assert_eq!(
            conf.workspace(),
            std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap()
        );
        assert_eq!(absolute(Path::new("/a/b")).unwrap(), PathBuf::from("/a/b"));
        assert_eq!(
            absolute(Path::new("x")).unwrap(),
            std::env::current_dir().unwrap().join("x")
        );
    }

    #[test]
    fn a_root_that_is_a_file_or_missing_is_refused() {
        let (_dir, base, _) = fixture();
        std::fs::write(base.join("file"), "").unwrap();
        let err = Confinement::builder(base.join("file"))
            .temp_dir(None)
            .build()
            .unwrap_err();
        assert!(
            matches!(&err, ConfineError::BadRoot { reason, .. } if reason == "not a directory"),
            "{err}"
        );
        let err = Confinement::builder(base.join("ws"))
            .read_root(base.join("file"))
            .temp_dir(None)
            .build()
            .unwrap_err();
        assert!(matches!(err, ConfineError::BadRoot { .. }), "{err}");
        let err = Confinement::builder(base.join("ws"))
            .read_root(base.join("missing"))
            .temp_dir(None)
            .build()
            .unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = Confinement::builder(base.join("ws"))
            .write_root(base.join("missing"))
            .temp_dir(None)
            .build()
            .unwrap_err();
        assert!(err.is_not_found(), "{err}");
        let err = Confinement::builder(base.join("ws\0x")).build().unwrap_err();
        assert!(matches!(err, ConfineError::Nul { .. }), "{err}");
    }

    #[test]
    fn missing_roots_are_skipped_when_asked_and_a_missing_temp_dir_always() {
        let (_dir, base, _) = fixture();
        let conf = Confinement::builder(base.join("ws"))
            .read_root(base.join("missing"))
            .write_root(base.join("rw"))
            .skip_missing_roots(true)
            .temp_dir(Some(base.join("no-tmp")))
            .build()
            .unwrap();
        assert_eq!(conf.describe().len(), 2);
        let conf = Confinement::builder(base.join("ws"))
            .temp_dir(Some(base.join("no-tmp")))
            .build()
            .unwrap();
        assert_eq!(conf.describe(), vec![(base.join("ws"), RootKind::Workspace)]);
        // Relative extra roots start at the workspace; the temp dir is one.
        let conf = Confinement::builder(base.join("ws"))
            .read_root("sub")
            .temp_dir(Some(base.join("rw")))
            .build()
            .unwrap();
        assert_eq!(
            conf.describe(),
            vec![
                (base.join("ws"), RootKind::Workspace),
                (base.join("ws/sub"), RootKind::Read),
                (base.join("rw"), RootKind::Temp),
            ]
        );
    }

    #[test]
    fn a_protected_link_protects_where_it_leads() {
        let (_dir, base, _) = fixture();
        std::fs::create_dir_all(base.join("ws/real-secrets")).unwrap();
        symlink("real-secrets", base.join("ws/secrets")).unwrap();
        let conf = Confinement::builder(base.join("ws"))
            .protected(["secrets"])
            .protect(base.join("rw/locked"))
            .write_root(base.join("rw"))
            .temp_dir(None)
            .build()
            .unwrap();
        for p in [
            base.join("ws/real-secrets/k"),
            base.join("ws/secrets/k"),
            base.join("rw/locked/x"),
        ] {
            let err = conf.write_refusal("p", &p).unwrap();
            assert!(matches!(err, ConfineError::Protected { .. }), "{}: {err}", p.display());
        }
        assert!(conf.write_refusal("p", &base.join("rw/free")).is_none());
        assert!(conf.write_refusal("p", &base.join("ws/sub/free")).is_none());
        // A relative protected entry is a name inside the workspace, and
        // `./` in it changes nothing.
        let conf = Confinement::builder(base.join("ws"))
            .protected(["./sub/./locked"])
            .temp_dir(None)
            .build()
            .unwrap();
        assert!(conf.write_refusal("p", &base.join("ws/sub/locked/x")).is_some());
    }

    #[test]
    fn guarded_paths_say_why_and_plain_protected_ones_do_not() {
        let (_dir, base, _) = fixture();
        let conf = Confinement::builder(base.join("ws"))
            .guard(Guarded::new("notes.md", "the note wield is keeping"))
            .protect("plain")
            .temp_dir(None)
            .build()
            .unwrap();
        let err = conf.write_refusal("notes.md", &base.join("ws/notes.md")).unwrap();
        match err {
            ConfineError::Guarded { path, guarded, why } => {
                assert_eq!((path.as_str(), guarded.as_str()), ("notes.md", "notes.md"));
                assert_eq!(why, "the note wield is keeping");
            }
            other => panic!("{other}"),
        }
        let err = conf.write_refusal("plain/x", &base.join("ws/plain/x")).unwrap();
        match err {
            ConfineError::Protected { path, protected } => {
                assert_eq!((path.as_str(), protected.as_str()), ("plain/x", "plain"));
            }
            other => panic!("{other}"),
        }
        // The default `.wield` stays on the list beside them.
        assert!(matches!(
            conf.write_refusal("x", &base.join("ws/.wield")),
            Some(ConfineError::ProjectState { .. })
        ));
    }

    #[test]
    fn a_directory_that_is_or_would_be_a_git_directory_is_refused_by_its_contents() {
        let (_dir, base, conf) = fixture();
        std::fs::create_dir_all(base.join("ws/store/objects")).unwrap();
        let err = conf.write_refusal("store/refs", &base.join("ws/store/refs")).unwrap();
        match err {
            ConfineError::ProjectState { component, .. } => {
                assert_eq!(component, "store is or would become a git directory");
            }
            other => panic!("{other}"),
        }
        assert!(conf.write_refusal("store/x", &base.join("ws/store/x")).is_none());
        // Outside every root nothing is looked at on disk.
        assert!(conf.write_refusal("x", &base.join("elsewhere/refs")).is_none());
    }

    #[test]
    fn glob_refusals_name_the_glob() {
        let (_dir, base, _) = fixture();
        let conf = Confinement::builder(base.join("ws"))
            .protected(["**/*.pem"])
            .temp_dir(None)
            .build()
            .unwrap();
        let err = conf.write_refusal("a/k.pem", &base.join("ws/a/k.pem")).unwrap();
        match err {
            ConfineError::Protected { protected, .. } => assert_eq!(protected, "the glob **/*.pem"),
            other => panic!("{other}"),
        }
        // Globs replace the default list, which is plain paths only.
        assert!(conf.write_refusal("x", &base.join("ws/x.txt")).is_none());
    }

    #[test]
    fn paths_are_shown_as_given_and_the_empty_one_as_a_dot() {
        assert_eq!(shown(Path::new("a/b")), "a/b");
        assert_eq!(shown(Path::new("")), ".");
        assert!(has_nul(OsStr::new("a\0b")));
        assert!(!has_nul(OsStr::new("ab")));
        assert_eq!(lexical_normal(Path::new("/a/./b/../c/")), PathBuf::from("/a/b/../c"));
        assert_eq!(lexical_normal(Path::new("./a/b")), PathBuf::from("a/b"));
    }

    #[test]
    fn a_workspace_given_through_a_link_keeps_its_spelling_as_an_alias() {
        let (_dir, base, _) = fixture();
        symlink(base.join("ws"), base.join("alias")).unwrap();
        let root = open_root(&base.join("alias"), RootKind::Workspace).unwrap();
        assert_eq!(root.real, base.join("ws"));
        assert_eq!(root.alias, Some(base.join("alias")));
        let root = open_root(&base.join("ws"), RootKind::Workspace).unwrap();
        assert_eq!(root.alias, None);
        assert_eq!(
            root.strip(&base.join("ws/a/b")),
            Some((Path::new("a/b"), base.components().count() + 1))
        );
    }
}
