//! One memory store: a directory of `KEY.md` files, reached only through a
//! [`Confinement`] rooted at it (no link leads out, writes are atomic).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use wield_sandbox::fs::{Confinement, Kind};

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 100;

/// The largest entry, in bytes.
pub const MAX_ENTRY_BYTES: usize = 256 * 1024;

/// Where an entry is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The workspace's `.wield/memory/`.
    Local,
    /// `memory/` in the user's wield config directory.
    Global,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Local => "local",
            Scope::Global => "global",
        }
    }
}

/// A key checked to be a plain file name: `None` with why otherwise. A
/// trailing `.md` is dropped.
pub fn check_key(key: &str) -> Result<&str, String> {
    let key = key.strip_suffix(".md").unwrap_or(key);
    let why = if key.is_empty() {
        Some("is empty")
    } else if key.len() > MAX_KEY_BYTES {
        Some("is longer than 100 bytes")
    } else if key.contains(['/', '\\']) {
        Some("contains a path separator")
    } else if key.contains("..") {
        Some("contains `..`")
    } else if key.contains('\0') {
        Some("contains a NUL character")
    } else if key.starts_with('.') {
        Some("starts with a dot")
    } else if key.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    };
    match why {
        Some(why) => Err(format!(
            "the key {key:?} {why}: a key is a plain file name such as `build-notes` (letters, digits, `-`, `_`, \
             spaces; no separators, no `..`, no leading dot)"
        )),
        None => Ok(key),
    }
}

/// An entry as listed: its key, size and modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub len: u64,
    pub modified: Option<SystemTime>,
}

/// A store's directory.
#[derive(Clone, Debug)]
pub struct Store {
    pub scope: Scope,
    pub dir: PathBuf,
    /// Where its search index lives.
    pub index: PathBuf,
}

impl Store {
    /// The confinement over the directory; `None` when it does not exist
    /// and `create` is false.
    fn confinement(&self, create: bool) -> Result<Option<Confinement>, String> {
        if !create && !self.dir.is_dir() {
            return Ok(None);
        }
        // What is remembered is private like sessions: the directory is
        // made (or, when an older wield made it open, closed) 0700 before
        // anything is written into it.
        if create {
            wield_core::private_dir::make_private_dir(&self.dir)
                .map_err(|e| format!("cannot prepare the memory directory {}: {e}", self.dir.display()))?;
        }
        Confinement::builder(&self.dir)
            .protected(Vec::<PathBuf>::new())
            .temp_dir(None)
            .build()
            .map(Some)
            .map_err(|e| format!("cannot open the memory directory {}: {e}", self.dir.display()))
    }

    /// Write `content` as `key`, atomically.
    pub fn write(&self, key: &str, content: &str) -> Result<PathBuf, String> {
        let conf = self.confinement(true)?.ok_or("the memory directory is missing")?;
        let name = format!("{key}.md");
        conf.write_atomic(&name, content.as_bytes())
            .map_err(|e| format!("cannot write the memory {key:?}: {e}"))?;
        // The atomic write keeps an existing file's mode and gives a new
        // one the umask's: the entry is made 0600 through the file it
        // opens beneath the store, never by following its name again.
        let (file, _) = conf
            .open_ordinary(&name)
            .map_err(|e| format!("cannot write the memory {key:?}: {e}"))?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot write the memory {key:?}: {e}"))?;
        Ok(self.dir.join(name))
    }

    /// The text of `key`, `None` when there is no such entry.
    pub fn read(&self, key: &str) -> Result<Option<String>, String> {
        let Some(conf) = self.confinement(false)? else {
            return Ok(None);
        };
        read_file(&conf, &format!("{key}.md"))
    }

    /// The entries, in key order.
    pub fn list(&self) -> Result<Vec<Listed>, String> {
        let Some(conf) = self.confinement(false)? else {
            return Ok(Vec::new());
        };
        let entries = conf
            .read_dir(".")
            .map_err(|e| format!("cannot list {}: {e}", self.dir.display()))?;
        let mut out: Vec<Listed> = entries
            .into_iter()
            .filter(|e| e.kind == Kind::File)
            .filter_map(|e| {
                let name = e.name.to_str()?;
                let key = name.strip_suffix(".md")?;
                check_key(key).ok()?;
                Some(Listed {
                    key: key.to_owned(),
                    len: e.len,
                    modified: e.modified,
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Every entry's text (those that vanish meanwhile are skipped).
    pub fn read_listed(&self, listed: &[Listed]) -> Result<Vec<(Listed, String)>, String> {
        let Some(conf) = self.confinement(false)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for l in listed {
            if let Some(text) = read_file(&conf, &format!("{}.md", l.key))? {
                out.push((l.clone(), text));
            }
        }
        Ok(out)
    }
}

fn read_file(conf: &Confinement, name: &str) -> Result<Option<String>, String> {
    // Opened once beneath the store and checked on the descriptor: an entry
    // swapped for a kernel file (`/proc/self/environ`) is refused.
    let file = match conf.open_ordinary(Path::new(name)) {
        Ok((f, _)) => f,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(format!("cannot read the memory {name}: {e}")),
    };
    let mut bytes = Vec::new();
    file.take(MAX_ENTRY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the memory {name}: {e}"))?;
    bytes.truncate(MAX_ENTRY_BYTES);
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_could_leave_the_directory_are_refused() {
        for bad in [
            "",
            "../x",
            "a/b",
            "a\\b",
            "..",
            "a..b",
            ".hidden",
            "nul\0",
            "tab\there",
            "/etc/passwd",
        ] {
            assert!(check_key(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(check_key(&"k".repeat(101)).is_err());
        assert_eq!(check_key("build notes"), Ok("build notes"));
        assert_eq!(check_key("style.md"), Ok("style"));
    }
}
