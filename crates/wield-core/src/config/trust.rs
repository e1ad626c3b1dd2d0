//! Nested project configs a person has trusted.
//!
//! A workspace inside another wield project's workspace has a
//! `.wield/config.toml` that the outer project's sandboxed commands could
//! have written (they may write anywhere in their workspace but its own
//! `.wield/` and `.git/`). wield loads such a file only when a person has
//! trusted exactly its present content (`wield config trust`), as direnv
//! does with `direnv allow`: the file `trusted.toml` in wield's global config
//! directory lists each trusted file with the SHA-256 of its content. Every
//! sandbox keeps that directory read-only, so no command can trust a file,
//! and a file changed since it was trusted is refused again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{ConfigError, global_config_dir};

/// The list's file name in the global config directory.
pub const TRUSTED_FILE: &str = "trusted.toml";

#[derive(Debug, Default, Deserialize, Serialize)]
struct Trusted {
    #[serde(default)]
    trusted: Vec<Entry>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq, Eq)]
struct Entry {
    path: PathBuf,
    sha256: String,
}

/// The SHA-256 of `content`, in hex.
pub fn digest(content: &[u8]) -> String {
    Sha256::digest(content).iter().map(|b| format!("{b:02x}")).collect()
}

fn list_path() -> Option<PathBuf> {
    global_config_dir().map(|d| d.join(TRUSTED_FILE))
}

fn read_list(path: &Path) -> Result<Trusted, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => toml::from_str(&text).map_err(|e| ConfigError::Parse {
            origin: path.display().to_string(),
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Trusted::default()),
        Err(source) => Err(ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether a person trusted `file` with exactly this content. An unreadable
/// or malformed list trusts nothing.
pub fn is_trusted(file: &Path, content: &[u8]) -> bool {
    let Some(list) = list_path() else {
        return false;
    };
    let sha256 = digest(content);
    read_list(&list).is_ok_and(|t| t.trusted.iter().any(|e| e.path == file && e.sha256 == sha256))
}

/// Trust `file` with its present content (`Some`), or forget it (`None`):
/// the list is rewritten atomically. Returns the list's path.
pub fn set_trusted(file: &Path, content: Option<&[u8]>) -> Result<PathBuf, ConfigError> {
    let list = list_path().ok_or_else(|| ConfigError::Invalid {
        path: TRUSTED_FILE.into(),
        message: "no global config directory: set HOME or XDG_CONFIG_HOME".into(),
    })?;
    let io = |source: std::io::Error| ConfigError::Io {
        path: list.clone(),
        source,
    };
    let mut trusted = read_list(&list)?;
    trusted.trusted.retain(|e| e.path != file);
    if let Some(content) = content {
        trusted.trusted.push(Entry {
            path: file.to_path_buf(),
            sha256: digest(content),
        });
    }
    let text = toml::to_string(&trusted).map_err(|e| ConfigError::Invalid {
        path: TRUSTED_FILE.into(),
        message: e.to_string(),
    })?;
    let dir = list.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let tmp = dir.join(format!(".{TRUSTED_FILE}.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &list).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })?;
    Ok(list)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn digests_are_sha256() {
        assert_eq!(
            digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
