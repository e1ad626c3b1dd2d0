//! Saved agent sessions: `.wield/sessions/ID.json`, each the conversation
//! (every call answered) and how the run ended, written atomically into a
//! directory only its owner can read (a conversation holds what the tools
//! read).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wield_llm::{Message, Usage};

use crate::app::usage;

/// One saved session.
#[derive(Serialize, Deserialize)]
pub struct Saved {
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

/// Where a workspace's sessions are.
pub fn dir(workspace: &Path) -> PathBuf {
    workspace.join(".wield").join("sessions")
}

/// Writes `saved` as `dir/ID.json`, atomically.
pub fn save(workspace: &Path, saved: &Saved) -> anyhow::Result<PathBuf> {
    let dir = dir(workspace);
    wield_core::private_dir::ensure_private_dir(&dir)?;
    let path = dir.join(format!("{}.json", saved.id));
    wield_runtime::write_atomic(&path, serde_json::to_string_pretty(saved)?.as_bytes())
        .map_err(|e| anyhow::anyhow!("cannot save the session: {e}"))?;
    Ok(path)
}

/// The session `name` names (a path, or an id in the sessions directory),
/// or the newest one when `name` is empty.
pub fn load(workspace: &Path, name: &str) -> anyhow::Result<Saved> {
    let dir = dir(workspace);
    let path = if name.is_empty() {
        newest(&dir)?
    } else if Path::new(name).is_file() {
        PathBuf::from(name)
    } else {
        dir.join(format!("{}.json", name.trim_end_matches(".json")))
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| usage(format!("cannot read the session {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{} is not a saved session ({e}); sessions are what `wield run` writes to {}",
            path.display(),
            dir.display()
        ))
    })
}

fn newest(dir: &Path) -> anyhow::Result<PathBuf> {
    let none = || usage(format!("no saved session to resume in {}", dir.display()));
    let entries = std::fs::read_dir(dir).map_err(|_| none())?;
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max_by_key(|(modified, path)| (*modified, path.clone()))
        .map(|(_, path)| path)
        .ok_or_else(none)
}
