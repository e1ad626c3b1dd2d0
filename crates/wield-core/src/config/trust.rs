//! Nested project configs a person has trusted.
//!
//! A workspace inside another wield project's workspace has a
//! `.wield/config.toml` that the outer project's sandboxed commands could
//! have written (they may write anywhere in their workspace but its own
//! `.wield/` and `.git/`). wield loads such a file only when a person has
//! trusted exactly its present content (`wield config trust`), as direnv
//! does with `direnv allow`: the file `trusted.toml` in wield's global config
//! directory lists each trusted file with the SHA-256 of its content (the
//! front-end writes it, under a lock with an atomic replace). Every
//! sandbox keeps that directory read-only, so no command can trust a file,
//! and a file changed since it was trusted is refused again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ConfigError;

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

/// Where the list is: `trusted.toml` in the global config directory.
pub fn list_in(global_dir: &Path) -> PathBuf {
    global_dir.join(TRUSTED_FILE)
}

fn parse(text: &str, origin: &Path) -> Result<Trusted, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        origin: origin.display().to_string(),
        message: e.to_string(),
    })
}

/// Whether a person trusted `file` with exactly this content, in the list
/// of the global config directory `global_dir`. No directory, an unreadable
/// or malformed list trusts nothing.
pub fn is_trusted(global_dir: Option<&Path>, file: &Path, content: &[u8]) -> bool {
    let Some(list) = global_dir.map(list_in) else {
        return false;
    };
    let Ok(text) = std::fs::read_to_string(&list) else {
        return false;
    };
    let sha256 = digest(content);
    parse(&text, &list).is_ok_and(|t| t.trusted.iter().any(|e| e.path == file && e.sha256 == sha256))
}

/// The list `text` (read from `origin`) with `file` trusted with `content`
/// (`Some`), or forgotten (`None`). The front-end writes it back.
pub fn with_trust(text: &str, origin: &Path, file: &Path, content: Option<&[u8]>) -> Result<String, ConfigError> {
    let mut trusted = parse(text, origin)?;
    trusted.trusted.retain(|e| e.path != file);
    if let Some(content) = content {
        trusted.trusted.push(Entry {
            path: file.to_path_buf(),
            sha256: digest(content),
        });
    }
    toml::to_string(&trusted).map_err(|e| ConfigError::Invalid {
        path: TRUSTED_FILE.into(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusting_replaces_and_forgetting_removes_the_entry() {
        let origin = Path::new("trusted.toml");
        let (a, b) = (
            Path::new("/p/a/.wield/config.toml"),
            Path::new("/p/b/.wield/config.toml"),
        );
        let text = with_trust("", origin, a, Some(b"one")).unwrap();
        let text = with_trust(&text, origin, b, Some(b"two")).unwrap();
        let text = with_trust(&text, origin, a, Some(b"three")).unwrap();
        let list = parse(&text, origin).unwrap();
        assert_eq!(list.trusted.len(), 2);
        assert!(list.trusted.contains(&Entry {
            path: a.into(),
            sha256: digest(b"three")
        }));
        let text = with_trust(&text, origin, a, None).unwrap();
        assert_eq!(parse(&text, origin).unwrap().trusted.len(), 1);
        assert!(with_trust("[[trusted]\n", origin, a, None).is_err());
    }

    #[test]
    fn digests_are_sha256() {
        assert_eq!(
            digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
