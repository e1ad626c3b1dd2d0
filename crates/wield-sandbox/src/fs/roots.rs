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
