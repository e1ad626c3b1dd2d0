//! Applying a parsed patch to the confined workspace, completely or not at
//! all.
//!
//! [`plan`] reads every file the patch touches and computes every new
//! content without writing anything: any failure there (a path outside the
//! roots, a missing file, a chunk that does not match, a move onto an
//! existing file that may not be replaced, a read-only file) leaves the
//! workspace untouched. [`commit`] then performs
//! the writes, each one atomic, keeping an undo log; if one fails, every
//! change already made is undone from the originals held in memory, in
//! reverse order, including parent directories the patch created.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use wield_patch::{Operation, Patch};
use wield_sandbox::fs::{Access, ConfineError, Confinement, Kind, Resolved};

/// What one operation will do, with everything needed to do it and undo it.
#[derive(Debug)]
pub(crate) enum Step {
    /// `*** Add File`: create `real`, or replace it when `original` is set.
    Add {
        real: PathBuf,
        shown: String,
        content: String,
        original: Option<String>,
        new_dirs: Vec<PathBuf>,
    },
    /// `*** Update File`, possibly with `*** Move to`.
    Update {
        real: PathBuf,
        shown: String,
        old: String,
        new: String,
        moved: Option<Destination>,
        /// Chunks that matched only at a fuzzy pass, said in the result.
        fuzzy: Vec<String>,
    },
    /// `*** Delete File`.
    Delete { real: PathBuf, shown: String, old: String },
}

/// Where an update moves its file.
#[derive(Debug)]
pub(crate) struct Destination {
    pub real: PathBuf,
    pub shown: String,
    pub new_dirs: Vec<PathBuf>,
    /// The content of the file the move replaces, if one exists.
    pub original: Option<String>,
}

/// Every step of a patch, computed and checked, nothing written yet.
#[derive(Debug)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
}

/// The file operations a commit needs. The confinement is the only real
/// implementation; tests wrap it to make a chosen write fail.
pub(crate) trait Files {
    fn write(&self, real: &Path, data: &[u8]) -> Result<(), ConfineError>;
    fn remove(&self, real: &Path) -> Result<(), ConfineError>;
    fn remove_empty_dir(&self, real: &Path) -> Result<(), ConfineError>;
}

impl Files for Confinement {
    fn write(&self, real: &Path, data: &[u8]) -> Result<(), ConfineError> {
        self.write_atomic(real, data).map(|_| ())
    }
    fn remove(&self, real: &Path) -> Result<(), ConfineError> {
        self.remove_file(real)
    }
    fn remove_empty_dir(&self, real: &Path) -> Result<(), ConfineError> {
        Confinement::remove_empty_dir(self, real)
    }
}

/// Files larger than this are refused: the patch tool edits source text, and
/// every original is held in memory until the patch is committed.
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// Compute every operation of `patch` against the files as they are now.
/// `may_replace` says whether an Add or a Move may replace an existing file
/// (the read-before-write rule). Errors are messages for the model; nothing
/// has been written when one is returned.
pub(crate) fn plan(conf: &Confinement, patch: &Patch, may_replace: &dyn Fn(&Path) -> bool) -> Result<Plan, String> {
    let mut steps = Vec::with_capacity(patch.ops.len());
    let mut claims = Claims::default();
    for op in &patch.ops {
        let step = match op {
            Operation::Add { path, contents, .. } => {
                let r = conf.resolve(path, Access::Write).map_err(|e| refused(&e))?;
                let real = r.real_path().to_path_buf();
                let shown = conf.display_path(&real);
                let recreated = claims.claim(&real, &shown, Claim::Create)?;
                let original = match r.kind() {
                    // Deleted earlier in this patch: created anew.
                    _ if recreated => None,
                    None => None,
                    Some(Kind::File) => Some(replaced_text(conf, &r, &shown, path, may_replace, "add")?),
                    Some(Kind::Dir) => {
                        return Err(format!(
                            "cannot add {shown}: it is a directory. No files were modified."
                        ));
                    }
                    Some(other) => {
                        return Err(format!(
                            "cannot add {shown}: it exists and is not a regular file ({other:?}). \
                             No files were modified."
                        ));
                    }
                };
                Step::Add {
                    new_dirs: missing_dirs(conf, &real),
                    real,
                    shown,
                    content: contents.clone(),
                    original,
                }
            }
            Operation::Delete { path, .. } => {
                let r = conf.resolve_link(path, Access::Write).map_err(|e| refused(&e))?;
                let real = r.real_path().to_path_buf();
                let shown = conf.display_path(&real);
                match r.kind() {
                    Some(Kind::File) => {}
                    None => {
                        return Err(format!(
                            "cannot delete {shown}: no such file. Check the path (ls or glob). \
                             No files were modified."
                        ));
                    }
                    Some(Kind::Dir) => {
                        return Err(format!(
                            "cannot delete {shown}: it is a directory; the patch tool deletes files only. \
                             No files were modified."
                        ));
                    }
                    Some(Kind::Symlink) => {
                        return Err(format!(
                            "cannot delete {shown}: it is a symbolic link; the patch tool deletes regular files \
                             only. No files were modified."
                        ));
                    }
                    Some(Kind::Other(kind)) => {
                        return Err(format!(
                            "cannot delete {shown}: it is a {kind}, not a regular file. No files were modified."
                        ));
                    }
                }
                claims.claim(&real, &shown, Claim::Delete)?;
                let old = read_text(conf, &r, &shown)?;
                Step::Delete { real, shown, old }
            }
            Operation::Update {
                path, move_to, chunks, ..
            } => {
                let r = conf.resolve(path, Access::Write).map_err(|e| refused(&e))?;
                let real = r.real_path().to_path_buf();
                let shown = conf.display_path(&real);
                match r.kind() {
                    Some(Kind::File) => {}
                    None => {
                        return Err(format!(
                            "cannot update {shown}: no such file. To create it, use `*** Add File: {path}`. \
                             No files were modified."
                        ));
                    }
                    Some(Kind::Dir) => {
                        return Err(format!(
                            "cannot update {shown}: it is a directory. No files were modified."
                        ));
                    }
                    Some(other) => {
                        return Err(format!(
                            "cannot update {shown}: it is not a regular file ({other:?}). No files were modified."
                        ));
                    }
                }
                claims.claim(&real, &shown, Claim::Change)?;
                conf.check_writable(&r).map_err(|e| refused(&e))?;
                let old = read_text(conf, &r, &shown)?;
                let applied = wield_patch::apply_chunks(&old, chunks)
                    .map_err(|e| format!("{shown}: {e}\nNo files were modified."))?;
                let moved = match move_to {
                    None => None,
                    Some(dest) => destination(conf, &mut claims, &real, &shown, dest, may_replace)?,
                };
                Step::Update {
                    fuzzy: applied.fuzzy.iter().map(|f| format!("{shown}: {f}")).collect(),
                    real,
                    shown,
                    old,
                    new: applied.text,
                    moved,
                }
            }
        };
        steps.push(step);
    }
    Ok(Plan { steps })
}

/// Where `*** Move to` takes an updated file: `None` when it names the file
/// itself. An existing destination is replaced under the same rule as an Add
/// over it, or freely when the patch deleted it first.
fn destination(
    conf: &Confinement,
    claims: &mut Claims,
    real: &Path,
    shown: &str,
    dest: &str,
    may_replace: &dyn Fn(&Path) -> bool,
) -> Result<Option<Destination>, String> {
    let d = conf.resolve_link(dest, Access::Write).map_err(|e| refused(&e))?;
    let dreal = d.real_path().to_path_buf();
    if dreal == real {
        return Ok(None);
    }
    let dshown = conf.display_path(&dreal);
    let recreated = claims.claim(&dreal, &dshown, Claim::Create)?;
    let original = match d.kind() {
        _ if recreated => None,
        None => None,
        Some(Kind::File) => Some(replaced_text(conf, &d, &dshown, dest, may_replace, "move onto")?),
        Some(Kind::Dir) => {
            return Err(format!(
                "cannot move {shown} to {dshown}: {dshown} is a directory; name the file itself \
                 (`*** Move to: {dest}/NAME`). No files were modified."
            ));
        }
        Some(Kind::Symlink) => {
            return Err(format!(
                "cannot move {shown} to {dshown}: {dshown} is a symbolic link, which the patch tool does not \
                 replace. Choose another destination. No files were modified."
            ));
        }
        Some(Kind::Other(kind)) => {
            return Err(format!(
                "cannot move {shown} to {dshown}: {dshown} is a {kind}, not a regular file. No files were modified."
            ));
        }
    };
    Ok(Some(Destination {
        new_dirs: missing_dirs(conf, &dreal),
        real: dreal,
        shown: dshown,
        original,
    }))
}

/// The content of an existing file an Add or a Move is about to replace,
/// once the replacement is allowed: the session read it (or a person drives
/// it), and the file is writable.
fn replaced_text(
    conf: &Confinement,
    r: &Resolved,
    shown: &str,
    path: &str,
    may_replace: &dyn Fn(&Path) -> bool,
    verb: &str,
) -> Result<String, String> {
    if !may_replace(r.real_path()) {
        return Err(format!(
            "cannot {verb} {shown}: the file already exists and has not been read in this session. Read it \
             first, change it with `*** Update File: {path}`, or delete it earlier in the same patch with \
             `*** Delete File: {path}`. No files were modified."
        ));
    }
    conf.check_writable(r).map_err(|e| refused(&e))?;
    read_text(conf, r, shown)
}

/// How an operation uses a path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Deleted: may be created again later in the patch.
    Delete,
    /// Created by an Add or as a Move's destination.
    Create,
    /// Updated in place.
    Change,
}

/// The files the patch has used so far. Two spellings of one file (`a.txt`,
/// `./a.txt`, a link) would make the second operation work on stale
/// content, so each file is used once — except that a file deleted by the
/// patch may be created again by a later Add or Move.
#[derive(Default)]
struct Claims {
    by_real: HashMap<PathBuf, (String, Claim)>,
}

impl Claims {
    /// Records the use; `Ok(true)` when it re-creates a file the patch
    /// deleted.
    fn claim(&mut self, real: &Path, shown: &str, how: Claim) -> Result<bool, String> {
        match self.by_real.get_mut(real) {
            None => {
                self.by_real.insert(real.to_path_buf(), (shown.to_owned(), how));
                Ok(false)
            }
            Some(entry) if entry.1 == Claim::Delete && how == Claim::Create => {
                entry.1 = Claim::Create;
                Ok(true)
            }
            Some((first, _)) => Err(format!(
                "{shown} and {first} are the same file; put all changes to one file in one operation (a file \
                 the patch deletes may be created again after the delete). No files were modified."
            )),
        }
    }
}

fn refused(e: &ConfineError) -> String {
    format!("{e}. No files were modified.")
}

/// The text of the file a resolution reached, opened through that
/// resolution's handles (not resolved again); non-UTF-8 and oversized files
/// are refused.
fn read_text(conf: &Confinement, r: &Resolved, shown: &str) -> Result<String, String> {
    let mut file = conf.open_resolved(r).map_err(|e| refused(&e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "{shown} is {size} bytes, more than the patch tool's limit of {MAX_FILE_BYTES}. No files were modified."
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {shown}: {e}. No files were modified."))?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{shown} is not UTF-8 text (invalid byte at offset {}); the patch tool edits text files only. \
             No files were modified.",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The ancestors of `real` that do not exist yet, outermost first: the
/// directories a write will create, to remove again on rollback.
fn missing_dirs(conf: &Confinement, real: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut cur = real.parent();
    while let Some(dir) = cur {
        match conf.resolve(dir, Access::Write) {
            Ok(r) if !r.exists() => dirs.push(dir.to_path_buf()),
            _ => break,
        }
        cur = dir.parent();
    }
    dirs.reverse();
    dirs
}

/// One change already made, and how to take it back.
enum Undo<'p> {
    /// Put the original content back.
    Restore(&'p Path, &'p str),
    /// Remove a file the patch created, then the directories it created.
    Remove(&'p Path, &'p [PathBuf]),
}

/// What a commit did: the summary lines and the files that now exist.
pub(crate) struct Committed {
    /// `A path`, `M path`, `D path`, `M old -> new`.
    pub lines: Vec<String>,
    /// The files written (not the deleted ones), to count as read.
    pub written: Vec<PathBuf>,
    /// Chunks that matched only at a fuzzy pass, one line each.
    pub fuzzy: Vec<String>,
}

/// Perform every step. On the first failure, undo what was done and return
/// a message saying what failed, that every file was restored, or which
/// could not be.
pub(crate) fn commit(files: &dyn Files, plan: &Plan) -> Result<Committed, String> {
    let mut undo: Vec<Undo<'_>> = Vec::new();
    let mut lines = Vec::with_capacity(plan.steps.len());
    let mut written = Vec::new();
    let mut fuzzy = Vec::new();
    for step in &plan.steps {
        let done = match step {
            Step::Add {
                real,
                shown,
                content,
                original,
                new_dirs,
            } => files.write(real, content.as_bytes()).map(|()| {
                undo.push(match original {
                    Some(old) => Undo::Restore(real, old),
                    None => Undo::Remove(real, new_dirs),
                });
                lines.push(format!("A {shown}"));
                written.push(real.clone());
            }),
            Step::Update {
                real,
                shown,
                old,
                new,
                moved: None,
                fuzzy: notes,
            } => files.write(real, new.as_bytes()).map(|()| {
                undo.push(Undo::Restore(real, old));
                lines.push(format!("M {shown}"));
                written.push(real.clone());
                fuzzy.extend(notes.iter().cloned());
            }),
            Step::Update {
                real,
                shown,
                old,
                new,
                moved: Some(dest),
                fuzzy: notes,
            } => files
                .write(&dest.real, new.as_bytes())
                .and_then(|()| {
                    undo.push(match &dest.original {
                        Some(original) => Undo::Restore(&dest.real, original),
                        None => Undo::Remove(&dest.real, &dest.new_dirs),
                    });
                    files.remove(real)
                })
                .map(|()| {
                    undo.push(Undo::Restore(real, old));
                    lines.push(format!("M {shown} -> {}", dest.shown));
                    written.push(dest.real.clone());
                    fuzzy.extend(notes.iter().cloned());
                }),
            Step::Delete { real, shown, old } => files.remove(real).map(|()| {
                undo.push(Undo::Restore(real, old));
                lines.push(format!("D {shown}"));
            }),
        };
        if let Err(e) = done {
            return Err(rollback(files, undo, &e));
        }
    }
    Ok(Committed { lines, written, fuzzy })
}

fn rollback(files: &dyn Files, undo: Vec<Undo<'_>>, cause: &ConfineError) -> String {
    let mut unrestored = Vec::new();
    for step in undo.into_iter().rev() {
        match step {
            Undo::Restore(real, old) => {
                if let Err(e) = files.write(real, old.as_bytes()) {
                    unrestored.push(format!("{}: {e}", real.display()));
                }
            }
            Undo::Remove(real, dirs) => {
                if let Err(e) = files.remove(real) {
                    unrestored.push(format!("{}: {e}", real.display()));
                    continue;
                }
                for dir in dirs.iter().rev() {
                    // Best effort: a directory something else filled since is kept.
                    let _ = files.remove_empty_dir(dir);
                }
            }
        }
    }
    if unrestored.is_empty() {
        format!("the patch could not be applied: {cause}. Every file was restored: no files were modified.")
    } else {
        format!(
            "the patch could not be applied: {cause}. Restoring the files changed before the failure also failed \
             for: {}. Check these files.",
            unrestored.join("; ")
        )
    }
}
