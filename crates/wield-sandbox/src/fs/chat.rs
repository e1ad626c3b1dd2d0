//! The `.chat` documents `wield chat` has run on, and the files a cycle of
//! one reads and writes.
//!
//! A document holds a person's decisions (its statuses, its frontmatter)
//! between two presses, in the workspace. While its own cycle runs, the
//! cycle guards it; between presses, every other runtime does: each keeps
//! the documents listed here that lie in its workspace, and the files
//! beside them, out of its tools' reach (file tools refuse them, sandboxed
//! commands get them read-only). So no session — `wield run`, another
//! document's cycle, an MCP client's call — can approve a call in one.
//!
//! File tools refuse every file named as a document or one of its files
//! are ([`chat_file`]), listed or not. For sandboxed commands, which are
//! handed paths, the list is a file in the global configuration directory
//! ([`Ledger::in_config_dir`]), beside the remembered approvals and out of
//! every tool's reach too: one real path per line; documents that no
//! longer exist are dropped as it is written.

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// The list's file name in the global configuration directory.
pub const LEDGER_FILE: &str = "chat-documents";

/// Why a document is guarded.
pub const DOCUMENT: &str = "a .chat document: its statuses and frontmatter are a person's decisions";
/// Why a document's lock is guarded.
pub const LOCK: &str = "the lock of a .chat document";
/// Why the files wield chat writes beside a document are guarded.
pub const BESIDE: &str = "a file wield chat writes beside a .chat document";

/// The list of documents, at one path.
#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The user's list, in their global configuration directory (none
    /// without one).
    pub fn in_config_dir(dir: Option<PathBuf>) -> Option<Self> {
        dir.map(|d| Self::at(d.join(LEDGER_FILE)))
    }

    /// The list kept in `path`.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the list is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The documents listed, as written.
    fn read(&self) -> io::Result<Vec<PathBuf>> {
        match fs::read_to_string(&self.path) {
            Ok(text) => Ok(text.lines().filter(|l| !l.is_empty()).map(PathBuf::from).collect()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// Adds `doc` (a real path) to the list, dropping documents that are
    /// gone. Two cycles recording at once take turns on a lock.
    pub fn record(&self, doc: &Path) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        if !dir.is_dir() {
            use std::os::unix::fs::DirBuilderExt as _;
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.with_extension("lock"))?;
        lock.lock()?;
        let mut docs = self.read()?;
        if docs.iter().any(|d| d == doc) {
            return Ok(());
        }
        docs.retain(|d| d.is_file());
        docs.push(doc.to_path_buf());
        let mut text = String::new();
        for d in &docs {
            // A path with a line break in it cannot be listed; such a
            // document is still guarded while its own cycle runs.
            if let Some(s) = d.to_str().filter(|s| !s.contains('\n')) {
                text.push_str(s);
                text.push('\n');
            }
        }
        let tmp = self.path.with_extension(format!("{}.tmp", std::process::id()));
        let written = (|| {
            let mut f = File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// What to guard for the listed documents that lie under one of
    /// `roots`: each one, its lock and the files wield chat wrote beside it
    /// (those that exist), with why each is guarded. Each directory is
    /// listed once, however many documents it holds. A list that cannot be
    /// read is an error: guarding nothing would fail open.
    pub fn guarded_under(&self, roots: &[&Path]) -> io::Result<Vec<(PathBuf, &'static str)>> {
        let mut dirs: std::collections::BTreeMap<PathBuf, std::collections::BTreeSet<String>> = Default::default();
        for doc in self.read()? {
            if roots.iter().any(|r| doc.starts_with(r))
                && doc.is_file()
                && let Some(name) = doc.file_name().and_then(OsStr::to_str)
            {
                dirs.entry(doc_dir(&doc).to_path_buf())
                    .or_default()
                    .insert(name.to_ascii_lowercase());
            }
        }
        let mut out = Vec::new();
        for (dir, docs) in dirs {
            let Ok(entries) = fs::read_dir(&dir) else { continue };
            for entry in entries.filter_map(Result::ok) {
                let name = entry.file_name();
                if let Some(why) = chat_file(&name)
                    && name.to_str().is_some_and(|n| docs.contains(&owner(n)))
                {
                    out.push((entry.path(), why));
                }
            }
        }
        Ok(out)
    }
}

/// Why a file of this name is refused to file tools, if it is one of a
/// `.chat` document's: the document (`NAME.chat`), its lock
/// (`.NAME.chat.lock`) or a file wield chat writes beside it
/// (`NAME.chat.reply`, `.results`, `.frontmatter`, numbered too).
pub fn chat_file(name: &OsStr) -> Option<&'static str> {
    let name = name.to_str()?;
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".chat") && lower.len() > ".chat".len() {
        return Some(DOCUMENT);
    }
    if lower.starts_with('.') && lower.ends_with(".chat.lock") {
        return Some(LOCK);
    }
    // The new text of a document, before it is renamed over it.
    if lower.starts_with('.') && lower.ends_with(".tmp") && lower.contains(".chat.") {
        return Some(BESIDE);
    }
    let (stem, rest) = lower.split_once(".chat.")?;
    let what = rest.split_once('.').map_or(rest, |(w, n)| {
        if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() {
            w
        } else {
            ""
        }
    });
    (!stem.is_empty() && ["reply", "results", "frontmatter"].contains(&what)).then_some(BESIDE)
}

/// The document a file named by [`chat_file`] belongs to, lowercased:
/// its name up to the first `.chat` (a leading `.` dropped).
fn owner(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let bare = lower.strip_prefix('.').unwrap_or(&lower);
    match bare.find(".chat") {
        Some(at) => bare[..at + ".chat".len()].to_owned(),
        None => bare.to_owned(),
    }
}

/// The directory holding `doc` (`.` for a bare file name).
pub fn doc_dir(doc: &Path) -> &Path {
    match doc.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The lock file of `doc`: `.NAME.lock` beside it.
pub fn lock_path(doc: &Path) -> PathBuf {
    let name = doc.file_name().map_or_else(|| "chat".into(), |n| n.to_string_lossy());
    doc_dir(doc).join(format!(".{name}.lock"))
}

/// The files a cycle of `doc` reads or writes, each with why it is kept
/// out of every tool's reach: the document (its statuses are the person's
/// decisions), its lock, and the `FILE.reply`, `FILE.results` and
/// `FILE.frontmatter` files wield writes beside it (those that exist,
/// numbered too, and the first of each).
pub fn cycle_files(doc: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut out = vec![(doc.to_path_buf(), DOCUMENT), (lock_path(doc), LOCK)];
    let name = doc
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let firsts: Vec<String> = ["reply", "results", "frontmatter"]
        .iter()
        .map(|what| format!("{name}.{what}"))
        .collect();
    for first in &firsts {
        out.push((doc.with_file_name(first), BESIDE));
    }
    // The numbered ones, in one listing of the directory.
    let Ok(entries) = fs::read_dir(doc_dir(doc)) else {
        return out;
    };
    for entry in entries.filter_map(Result::ok) {
        let file = entry.file_name();
        let Some(file) = file.to_str() else { continue };
        let numbered = firsts.iter().any(|first| {
            file.strip_prefix(first.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
        if numbered {
            out.push((entry.path(), BESIDE));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_documents_under_a_root_are_guarded_with_their_files() {
        let home = tempfile::tempdir().unwrap();
        let ledger = Ledger::at(home.path().join("cfg/chat-documents"));
        let ws = tempfile::tempdir().unwrap();
        let doc = ws.path().join("a.chat");
        fs::write(&doc, "@You:\nhi\n").unwrap();
        fs::write(ws.path().join("a.chat.reply.2"), "").unwrap();
        fs::write(ws.path().join(".a.chat.lock"), "").unwrap();
        fs::write(ws.path().join("notes.txt"), "").unwrap();
        fs::write(ws.path().join("other.chat"), "").unwrap();
        let elsewhere = home.path().join("b.chat");
        fs::write(&elsewhere, "").unwrap();
        assert!(ledger.guarded_under(&[ws.path()]).unwrap().is_empty());
        ledger.record(&doc).unwrap();
        ledger.record(&elsewhere).unwrap();
        ledger.record(&doc).unwrap();
        let guarded: Vec<PathBuf> = ledger
            .guarded_under(&[ws.path()])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert!(guarded.contains(&doc), "{guarded:?}");
        assert!(guarded.contains(&ws.path().join(".a.chat.lock")));
        assert!(guarded.contains(&ws.path().join("a.chat.reply.2")));
        assert!(!guarded.contains(&elsewhere));
        assert!(!guarded.contains(&ws.path().join("notes.txt")));
        // A document never listed is not the list's (file tools refuse it
        // by its name all the same).
        assert!(!guarded.contains(&ws.path().join("other.chat")));
        // Private, and a document that went is dropped at the next record.
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs::metadata(home.path().join("cfg")).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0);
        fs::remove_file(&elsewhere).unwrap();
        let third = ws.path().join("c.chat");
        fs::write(&third, "").unwrap();
        ledger.record(&third).unwrap();
        let text = fs::read_to_string(ledger.path()).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
    }

    #[test]
    fn a_documents_files_are_known_by_name() {
        for (name, why) in [
            ("a.chat", Some(DOCUMENT)),
            ("Notes.CHAT", Some(DOCUMENT)),
            (".a.chat.lock", Some(LOCK)),
            ("a.chat.reply", Some(BESIDE)),
            ("a.chat.results.3", Some(BESIDE)),
            ("a.chat.frontmatter", Some(BESIDE)),
            (".a.chat.41.1700000000.tmp", Some(BESIDE)),
            (".chat", None),
            ("a.chatter", None),
            ("a.chat.md", None),
            ("a.chat.reply.x", None),
            ("chat.rs", None),
            (".gitignore", None),
            ("a.chat.lock", None),
            (".x.tmp", None),
            (".chat.reply", None),
        ] {
            assert_eq!(chat_file(OsStr::new(name)), why, "{name}");
        }
    }

    #[test]
    fn a_list_that_cannot_be_read_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        fs::create_dir(home.path().join("chat-documents")).unwrap();
        assert!(
            Ledger::at(home.path().join("chat-documents"))
                .guarded_under(&[home.path()])
                .is_err()
        );
    }

    #[test]
    fn the_users_list_lives_in_their_config_directory() {
        assert!(Ledger::in_config_dir(None).is_none());
        let ledger = Ledger::in_config_dir(Some(PathBuf::from("/cfg"))).unwrap();
        assert_eq!(ledger.path(), Path::new("/cfg/chat-documents"));
    }

    #[test]
    fn a_bare_document_name_lives_in_the_current_directory() {
        assert_eq!(doc_dir(Path::new("a.chat")), Path::new("."));
        assert_eq!(doc_dir(Path::new("/w/a.chat")), Path::new("/w"));
        assert_eq!(lock_path(Path::new("a.chat")), PathBuf::from("./.a.chat.lock"));
        assert_eq!(lock_path(Path::new("/w/a.chat")), PathBuf::from("/w/.a.chat.lock"));
    }

    #[test]
    fn only_numbered_files_beside_a_document_are_its_own() {
        let ws = tempfile::tempdir().unwrap();
        let doc = ws.path().join("a.chat");
        for name in [
            "a.chat",
            "a.chat.reply.3",
            "a.chat.reply.x",
            "a.chat.results.",
            "b.chat.reply.1",
        ] {
            fs::write(ws.path().join(name), "").unwrap();
        }
        let files: Vec<PathBuf> = cycle_files(&doc).into_iter().map(|(p, _)| p).collect();
        assert!(files.contains(&ws.path().join("a.chat.reply.3")), "{files:?}");
        for name in ["a.chat.reply.x", "a.chat.results.", "b.chat.reply.1"] {
            assert!(!files.contains(&ws.path().join(name)), "{name}: {files:?}");
        }
        // The document, its lock and the first of each kind, listed or not.
        assert_eq!(files.len(), 6, "{files:?}");
    }
}
