//! Remembered approvals on disk: `.wield/approvals.toml` (this project) and
//! `approvals.toml` in the global config directory (`$XDG_CONFIG_HOME/wield`
//! or `~/.config/wield`), each `auto = ["pattern", …]`, deduplicated and
//! sorted.
//!
//! Several wield processes may add rules at the same moment (parallel agents,
//! a person in another terminal), so every change is a read-modify-write
//! under an exclusive lock on the file, finished by an atomic replace
//! (write a temporary file, fsync, rename, fsync the directory). A reader
//! never sees a half-written file and no writer loses another's rule.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use wield_core::approval::ApprovalStore;
use wield_core::{Scope, StoreError};

pub const FILE_NAME: &str = "approvals.toml";

/// Why remembered approvals (or another file kept the same way) could not
/// be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalsError {
    #[error("no global config directory: set HOME or XDG_CONFIG_HOME")]
    NoGlobalDir,
    #[error("only project and global approvals are stored in files")]
    NotStored,
    /// A pattern that cannot be stored: empty, or more than one line.
    #[error("{0}")]
    BadPattern(String),
    /// The file exists but does not hold what it should.
    #[error("{0}")]
    BadFile(String),
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> ApprovalsError {
    let path = path.to_path_buf();
    move |source| ApprovalsError::Io { what, path, source }
}

const HEADER: &str = "# Remembered approvals: calls matching these patterns run without asking.\n\
# Managed by `wield approvals add|remove` and the approval prompt; hand edits are fine.\n";

/// The project and global approval files.
#[derive(Clone, Debug)]
pub struct FileApprovalStore {
    project: PathBuf,
    global: Option<PathBuf>,
    /// The patterns last read, and what the two files were then: the
    /// resolver asks at every call, and the files are read again only when
    /// one of them changed.
    read: Arc<Mutex<Option<LastRead>>>,
}

#[derive(Debug)]
struct LastRead {
    files: [Option<Stamp>; 2],
    patterns: Vec<String>,
}

/// What tells one version of a file from another: a replace (how wield
/// writes) gives a new inode, a write in place a new size or change time.
#[derive(Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    ctime: (i64, i64),
    mtime: (i64, i64),
}

fn stamp(path: Option<&Path>) -> Option<Stamp> {
    let m = fs::metadata(path?).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        ctime: (m.ctime(), m.ctime_nsec()),
        mtime: (m.mtime(), m.mtime_nsec()),
    })
}

impl FileApprovalStore {
    /// The store of `workspace`'s project file and of the one in wield's
    /// global configuration directory `global` (when there is one).
    pub fn new(workspace: &Path, global: Option<&Path>) -> Self {
        Self {
            project: workspace.join(".wield").join(FILE_NAME),
            global: global.map(|d| d.join(FILE_NAME)),
            read: Arc::default(),
        }
    }

    /// The file for a scope (`project` or `global`).
    pub fn path(&self, scope: Scope) -> Result<&Path, ApprovalsError> {
        match scope {
            Scope::Project => Ok(&self.project),
            Scope::Global => self.global.as_deref().ok_or(ApprovalsError::NoGlobalDir),
            Scope::Once | Scope::Session => Err(ApprovalsError::NotStored),
        }
    }

    /// The patterns of one file (none when it does not exist).
    pub fn load(&self, scope: Scope) -> Result<Vec<String>, ApprovalsError> {
        let path = self.path(scope)?;
        match fs::read_to_string(path) {
            Ok(text) => Ok(parse(&text, path)?.into_iter().collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io("reading", path)(e)),
        }
    }

    /// Add a pattern; `false` when it was already there.
    pub fn add(&self, scope: Scope, pattern: &str) -> Result<bool, ApprovalsError> {
        let pattern = check_pattern(pattern)?;
        update(self.path(scope)?, |set| set.insert(pattern.clone()))
    }

    /// Remove a pattern; `false` when it was not there.
    pub fn remove(&self, scope: Scope, pattern: &str) -> Result<bool, ApprovalsError> {
        let path = self.path(scope)?;
        if !path.exists() {
            return Ok(false);
        }
        update(path, |set| set.remove(pattern.trim()))
    }
}

impl ApprovalStore for FileApprovalStore {
    fn remember(&self, scope: Scope, pattern: &str) -> Result<(), StoreError> {
        self.add(scope, pattern).map(|_| ()).map_err(|e| StoreError::Failed {
            what: format!("could not remember `{pattern}`"),
            source: e.into(),
        })
    }

    fn patterns(&self) -> Vec<String> {
        // Taken before the files are read: a change while they are read
        // makes the next call read them again.
        let files = [stamp(Some(&self.project)), stamp(self.global.as_deref())];
        let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = read.as_ref()
            && r.files == files
        {
            return r.patterns.clone();
        }
        let mut all = Vec::new();
        for scope in [Scope::Project, Scope::Global] {
            match self.load(scope) {
                Ok(p) => all.extend(p),
                // An unreadable file must not stop the run; its rules just do not apply.
                Err(e) => tracing::warn!("ignoring remembered approvals: {e}"),
            }
        }
        *read = Some(LastRead {
            files,
            patterns: all.clone(),
        });
        all
    }
}

/// A pattern must be one non-empty line.
pub fn check_pattern(pattern: &str) -> Result<String, ApprovalsError> {
    let p = pattern.trim();
    if p.is_empty() {
        return Err(ApprovalsError::BadPattern(
            "an approval pattern must not be empty; e.g. `read`, `bash:git status*`, `write:src/*`".into(),
        ));
    }
    if p.chars().any(char::is_control) {
        return Err(ApprovalsError::BadPattern(format!(
            "an approval pattern must be a single line without control characters: {p:?}"
        )));
    }
    Ok(p.to_owned())
}

fn parse(text: &str, path: &Path) -> Result<BTreeSet<String>, ApprovalsError> {
    let bad = |msg: String| ApprovalsError::BadFile(msg);
    let table: toml::Table = toml::from_str(text)
        .map_err(|e| bad(format!("{} is not valid TOML; fix or delete it: {e}", path.display())))?;
    let mut set = BTreeSet::new();
    for (key, value) in &table {
        if key != "auto" {
            return Err(bad(format!(
                "unknown key `{key}` in {}: the file holds only `auto = [...]`",
                path.display()
            )));
        }
        let toml::Value::Array(items) = value else {
            return Err(bad(format!("`auto` in {} must be a list of strings", path.display())));
        };
        for item in items {
            let Some(s) = item.as_str() else {
                return Err(bad(format!(
                    "`auto` in {} must be a list of strings, found {}",
                    path.display(),
                    item.type_str()
                )));
            };
            set.insert(s.trim().to_owned());
        }
    }
    Ok(set)
}

fn render(set: &BTreeSet<String>) -> String {
    let mut out = String::from(HEADER);
    out.push_str("auto = [\n");
    for p in set {
        out.push_str("    ");
        out.push_str(&toml::Value::String(p.clone()).to_string());
        out.push_str(",\n");
    }
    out.push_str("]\n");
    out
}

/// Read-modify-write under an exclusive lock, with an atomic replace.
fn update(path: &Path, change: impl FnOnce(&mut BTreeSet<String>) -> bool) -> Result<bool, ApprovalsError> {
    update_file(path, |text| {
        let mut set = parse(text, path)?;
        Ok(change(&mut set).then(|| render(&set)))
    })
}

/// A read-modify-write of the file `path` (created when missing, with its
/// directory) under an exclusive lock on it, finished by an atomic replace:
/// `change` gets its text and returns the new one, or `None` to leave it.
/// Whether it was replaced. Also keeps the trusted configs' list. An error
/// of `change` is returned as it is.
pub fn update_file<E: From<ApprovalsError>>(
    path: &Path,
    change: impl FnOnce(&str) -> Result<Option<String>, E>,
) -> Result<bool, E> {
    let Some(dir) = path.parent() else {
        return Err(ApprovalsError::BadFile(format!("{} has no parent directory", path.display())).into());
    };
    fs::create_dir_all(dir).map_err(io("creating", dir))?;
    let mut change = Some(change);
    loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io("opening", path))?;
        file.lock().map_err(io("locking", path))?;
        // The lock is on an inode. If another writer replaced the file while
        // we waited, we hold the lock of a file nobody reads any more: start
        // again with the current one.
        let held = file.metadata().map_err(io("checking", path))?;
        match fs::metadata(path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {}
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("checking", path)(e).into()),
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(io("reading", path))?;
        let Some(change) = change.take() else {
            return Err(ApprovalsError::BadFile(format!("{}: an update ran twice", path.display())).into());
        };
        let Some(new) = change(&text)? else {
            return Ok(false);
        };
        replace(path, dir, new.as_bytes())?;
        // Dropping `file` releases the lock, after the new file is in place.
        drop(file);
        return Ok(true);
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, synced,
/// renamed over it, the directory synced. A reader sees the old content or
/// the new, never part of either.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ApprovalsError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    replace(path, dir, bytes)
}

fn replace(path: &Path, dir: &Path, bytes: &[u8]) -> Result<(), ApprovalsError> {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let name = path
        .file_name()
        .map_or_else(|| FILE_NAME.into(), |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.{nanos}.tmp", std::process::id()));
    let result = (|| -> Result<(), ApprovalsError> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(io("creating", &tmp))?;
        f.write_all(bytes).map_err(io("writing", &tmp))?;
        f.sync_all().map_err(io("writing", &tmp))?;
        fs::rename(&tmp, path).map_err(io("replacing", path))?;
        // Make the rename itself durable.
        File::open(dir).and_then(|d| d.sync_all()).ok();
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_remove_dedup_sort() {
        let ws = tempfile::tempdir().unwrap();
        let store = FileApprovalStore::new(ws.path(), None);
        assert!(store.add(Scope::Project, "bash:ls*").unwrap());
        assert!(store.add(Scope::Project, " calculator ").unwrap());
        assert!(!store.add(Scope::Project, "bash:ls*").unwrap());
        assert_eq!(store.load(Scope::Project).unwrap(), vec!["bash:ls*", "calculator"]);
        let text = fs::read_to_string(ws.path().join(".wield/approvals.toml")).unwrap();
        assert!(
            text.contains("auto = [\n    \"bash:ls*\",\n    \"calculator\",\n]"),
            "{text}"
        );
        assert!(store.remove(Scope::Project, "calculator").unwrap());
        assert!(!store.remove(Scope::Project, "calculator").unwrap());
        assert!(store.add(Scope::Project, "").is_err());
        assert!(store.add(Scope::Project, "a\nb").is_err());
        fs::write(ws.path().join(".wield/approvals.toml"), "auto = 3").unwrap();
        assert!(store.add(Scope::Project, "x").is_err());
        assert_eq!(
            fs::read_to_string(ws.path().join(".wield/approvals.toml")).unwrap(),
            "auto = 3"
        );
    }

    /// Rules remembered while a store is in use (by `wield approvals add`
    /// in another process, or by a hand edit) are seen at its next read;
    /// unchanged files are not read again.
    #[test]
    fn patterns_follow_the_files() {
        let ws = tempfile::tempdir().unwrap();
        let store = FileApprovalStore::new(ws.path(), None);
        assert!(ApprovalStore::patterns(&store).iter().all(|p| p != "bash:ls*"));
        FileApprovalStore::new(ws.path(), None)
            .add(Scope::Project, "bash:ls*")
            .unwrap();
        assert!(ApprovalStore::patterns(&store).contains(&"bash:ls*".to_owned()));
        // A hand edit in place, same size: the change time tells (file
        // times move in clock ticks of a few milliseconds).
        std::thread::sleep(std::time::Duration::from_millis(50));
        let file = ws.path().join(".wield/approvals.toml");
        let text = fs::read_to_string(&file).unwrap().replace("bash:ls*", "bash:ps*");
        OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let now = ApprovalStore::patterns(&store);
        assert!(
            now.contains(&"bash:ps*".to_owned()) && !now.contains(&"bash:ls*".to_owned()),
            "{now:?}"
        );
        fs::remove_file(&file).unwrap();
        assert!(ApprovalStore::patterns(&store).iter().all(|p| p != "bash:ps*"));
    }
}
