//! Saved agent sessions: `.wield/sessions/ID.json`, each the conversation
//! (every call answered), how the run ended and the session's state (its
//! todo list), written atomically into a directory only its owner can read
//! (a conversation holds what the tools read). `.wield/` is out of every
//! tool's reach, so no call can rewrite what a later run resumes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wield_core::Session;
use wield_llm::{Message, Usage};

use super::SessionError;

/// One saved session.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SavedSession {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub messages: Vec<Message>,
    /// How the run ended (`done`, `max_steps`, `cancelled`, …); none when
    /// it failed ([`SavedSession::error`] says why).
    #[serde(default)]
    pub stop: Option<String>,
    /// Why the run failed (a provider that could not be reached, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub steps: u32,
    #[serde(default)]
    pub usage: Usage,
    /// The session's todo list (none in files saved before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todo: Vec<wield_tools::todo::TodoItem>,
}

impl SavedSession {
    /// Whether `--resume` without an id may take this one: its run ended
    /// (finished, stopped by a limit or cancelled) rather than failed, so
    /// going on with it does not repeat the failure.
    pub fn resumable(&self) -> bool {
        self.stop.is_some()
    }

    /// How the run ended, in words: its stop, or `error: WHY`.
    pub fn outcome(&self) -> String {
        match (&self.stop, &self.error) {
            (Some(stop), _) => stop.clone(),
            (None, Some(error)) => format!("error: {error}"),
            (None, None) => "error".to_owned(),
        }
    }

    /// The first line of the first task, for a list.
    pub fn task(&self) -> String {
        self.messages
            .iter()
            .filter(|m| m.role == wield_llm::Role::User)
            .flat_map(|m| &m.content)
            .find_map(|b| match b {
                wield_llm::Block::Text { text } => Some(text.lines().next().unwrap_or_default().trim().to_owned()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Puts what the session kept besides its conversation back into
    /// `session`.
    pub fn restore_into(&self, session: &Session) {
        wield_tools::todo::restore(session, self.todo.clone());
    }
}

/// Where a workspace's sessions are.
pub fn sessions_dir(workspace: &Path) -> PathBuf {
    workspace.join(".wield").join("sessions")
}

/// Writes `saved` as `DIR/ID.json`, atomically, in a private directory.
pub fn save(workspace: &Path, saved: &SavedSession) -> Result<PathBuf, SessionError> {
    let dir = sessions_dir(workspace);
    let failed = |e: String| SessionError::Save(format!("cannot save the session in {}: {e}", dir.display()));
    wield_core::private_dir::ensure_state_dir(&dir).map_err(|e| failed(e.to_string()))?;
    let path = dir.join(format!("{}.json", saved.id));
    let text = serde_json::to_string_pretty(saved).map_err(|e| failed(e.to_string()))?;
    wield_runtime::write_atomic(&path, text.as_bytes()).map_err(|e| failed(e.to_string()))?;
    Ok(path)
}

/// The session `name` names (a path, or an id in the sessions directory),
/// or, when `name` is empty, the newest one that is
/// [resumable](SavedSession::resumable): a run that failed is taken only by
/// its id.
pub fn load(workspace: &Path, name: &str) -> Result<SavedSession, SessionError> {
    let dir = sessions_dir(workspace);
    if name.is_empty() {
        return newest_resumable(&dir);
    }
    let path = if Path::new(name).is_file() {
        PathBuf::from(name)
    } else {
        dir.join(format!("{}.json", name.trim_end_matches(".json")))
    };
    read(&path, &dir)
}

fn read(path: &Path, dir: &Path) -> Result<SavedSession, SessionError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SessionError::Invalid(format!("cannot read the session {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        SessionError::Invalid(format!(
            "{} is not a saved session ({e}); sessions are what `wield run` writes to {}",
            path.display(),
            dir.display()
        ))
    })
}

/// One saved session as a list shows it.
#[derive(Clone, Debug)]
pub struct Listed {
    pub path: PathBuf,
    pub modified: std::time::SystemTime,
    /// The file's size in bytes.
    pub bytes: u64,
    pub session: SavedSession,
}

/// The saved sessions of `workspace`, newest first; files that are not
/// sessions are left out.
pub fn list(workspace: &Path) -> Vec<Listed> {
    let dir = sessions_dir(workspace);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut listed: Vec<Listed> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let path = e.path();
            let session = read(&path, &dir).ok()?;
            Some(Listed {
                modified: meta.modified().ok()?,
                bytes: meta.len(),
                path,
                session,
            })
        })
        .collect();
    listed.sort_by(|a, b| (b.modified, &b.path).cmp(&(a.modified, &a.path)));
    listed
}

fn newest_resumable(dir: &Path) -> Result<SavedSession, SessionError> {
    let workspace = dir.parent().and_then(Path::parent).unwrap_or(dir);
    let all = list(workspace);
    if let Some(found) = all.iter().find(|l| l.session.resumable()) {
        return Ok(found.session.clone());
    }
    Err(SessionError::Invalid(match all.first() {
        None => format!("no saved session to resume in {}", dir.display()),
        Some(newest) => format!(
            "no session in {} ended well enough to resume: the newest, {}, ended with {}; \
             resume it by its id (`--resume {}`) once that is fixed, or start afresh without --resume",
            dir.display(),
            newest.session.id,
            newest.session.outcome(),
            newest.session.id
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(id: &str) -> SavedSession {
        SavedSession {
            id: id.into(),
            provider: "p".into(),
            model: "m".into(),
            messages: vec![Message::text(wield_llm::Role::User, "hi")],
            stop: Some("done".into()),
            error: None,
            steps: 2,
            usage: Usage::default(),
            todo: Vec::new(),
        }
    }

    #[test]
    fn a_saved_session_loads_by_id_by_path_and_as_the_newest() {
        use std::os::unix::fs::PermissionsExt as _;
        let ws = tempfile::tempdir().unwrap();
        let first = save(ws.path(), &saved("run-1")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        save(ws.path(), &saved("run-2")).unwrap();
        assert_eq!(load(ws.path(), "run-1").unwrap().id, "run-1");
        assert_eq!(load(ws.path(), &first.display().to_string()).unwrap().id, "run-1");
        assert_eq!(load(ws.path(), "").unwrap().id, "run-2");
        let mode = std::fs::metadata(sessions_dir(ws.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the sessions directory is private");
        std::fs::write(sessions_dir(ws.path()).join("bad.json"), "{").unwrap();
        let err = load(ws.path(), "bad").unwrap_err().to_string();
        assert!(err.contains("is not a saved session"), "{err}");
        let none = load(tempfile::tempdir().unwrap().path(), "").unwrap_err().to_string();
        assert!(none.contains("no saved session"), "{none}");
    }

    #[test]
    fn resuming_the_newest_passes_over_failed_runs_and_a_failed_one_is_taken_by_id() {
        let ws = tempfile::tempdir().unwrap();
        save(ws.path(), &saved("run-ok")).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut failed = saved("run-failed");
        failed.stop = None;
        failed.error = Some("cannot reach the provider".into());
        save(ws.path(), &failed).unwrap();
        assert_eq!(load(ws.path(), "").unwrap().id, "run-ok");
        assert_eq!(load(ws.path(), "run-failed").unwrap().id, "run-failed");
        let listed: Vec<String> = list(ws.path()).into_iter().map(|l| l.session.outcome()).collect();
        assert_eq!(listed, ["error: cannot reach the provider", "done"], "newest first");

        // Only failed runs: the error names the newest and how to take it.
        let ws = tempfile::tempdir().unwrap();
        save(ws.path(), &failed).unwrap();
        let err = load(ws.path(), "").unwrap_err().to_string();
        assert!(
            err.contains("run-failed") && err.contains("--resume run-failed"),
            "{err}"
        );
        assert!(err.contains("cannot reach the provider"), "{err}");
    }
}
