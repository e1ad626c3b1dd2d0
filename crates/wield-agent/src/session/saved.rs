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
    #[serde(default)]
    pub stop: Option<String>,
    #[serde(default)]
    pub steps: u32,
    #[serde(default)]
    pub usage: Usage,
    /// The session's todo list (none in files saved before it was kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todo: Vec<wield_tools::todo::TodoItem>,
}

impl SavedSession {
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
/// or the newest one when `name` is empty.
pub fn load(workspace: &Path, name: &str) -> Result<SavedSession, SessionError> {
    let dir = sessions_dir(workspace);
    let path = if name.is_empty() {
        newest(&dir)?
    } else if Path::new(name).is_file() {
        PathBuf::from(name)
    } else {
        dir.join(format!("{}.json", name.trim_end_matches(".json")))
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| SessionError::Invalid(format!("cannot read the session {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        SessionError::Invalid(format!(
            "{} is not a saved session ({e}); sessions are what `wield run` writes to {}",
            path.display(),
            dir.display()
        ))
    })
}

fn newest(dir: &Path) -> Result<PathBuf, SessionError> {
    let none = || SessionError::Invalid(format!("no saved session to resume in {}", dir.display()));
    let entries = std::fs::read_dir(dir).map_err(|_| none())?;
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max_by_key(|(modified, path)| (*modified, path.clone()))
        .map(|(_, path)| path)
        .ok_or_else(none)
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
}
