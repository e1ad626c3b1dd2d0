//! Client roots: the directories an MCP client says the server should work
//! in. They may narrow where tools write, never widen it: the session's file
//! confinement keeps only the parts of the configured write roots that lie
//! inside the client's roots (see `Confinement::narrow_writes`). The
//! reference filesystem server lets client roots *replace* its allowed
//! directories; wield does not.

// Roots are deprecated by the protocol revision after 2025-11-25 (SEP-2577);
// this server speaks revisions up to 2025-11-25, where they are current.
#![allow(deprecated)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::time::Duration;

use rmcp::service::{Peer, RoleServer};

/// How long the client gets to answer `roots/list`.
pub const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// What asking the client for its roots gave.
pub enum RootsAnswer {
    /// The client does not offer roots, or listed none: the configured
    /// roots apply.
    None,
    /// The client's roots as local paths. A root that is not a local file
    /// URI names nothing wield could write, so it narrows to nothing rather
    /// than being ignored.
    Paths(Vec<PathBuf>),
    /// The client offers roots but did not answer; the configured roots
    /// apply, and the reason is worth a warning.
    Failed(String),
}

pub async fn client_roots(peer: &Peer<RoleServer>) -> RootsAnswer {
    let offers = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
    if !offers {
        return RootsAnswer::None;
    }
    let listed = match tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return RootsAnswer::Failed(format!("the client did not answer roots/list ({e})")),
        Err(_) => return RootsAnswer::Failed("the client did not answer roots/list in time".into()),
    };
    if listed.roots.is_empty() {
        return RootsAnswer::None;
    }
    RootsAnswer::Paths(listed.roots.iter().filter_map(|r| file_uri_path(&r.uri)).collect())
}

/// `file:///a/b%20c` → `/a/b c`. Only local file URIs (empty host or
/// `localhost`) with absolute paths are accepted.
pub fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = if rest.starts_with('/') {
        rest
    } else {
        let rest = rest.strip_prefix("localhost")?;
        if !rest.starts_with('/') {
            return None;
        }
        rest
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes = percent_decode(path.as_bytes())?;
    if bytes.contains(&0) {
        return None;
    }
    Some(PathBuf::from(OsString::from_vec(bytes)))
}

fn percent_decode(input: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len());
    let mut i = 0;
    while i < input.len() {
        if input[i] == b'%' {
            let hex = input.get(i + 1..i + 3)?;
            let s = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(s, 16).ok()?);
            i += 3;
        } else {
            out.push(input[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        assert_eq!(file_uri_path("file:///srv/app"), Some(PathBuf::from("/srv/app")));
        assert_eq!(file_uri_path("file://localhost/a%20b"), Some(PathBuf::from("/a b")));
        assert_eq!(file_uri_path("file://server/share"), None);
        assert_eq!(file_uri_path("https://x/y"), None);
        assert_eq!(file_uri_path("file:///a%00b"), None);
        assert_eq!(file_uri_path("file:///a%zz"), None);
    }
}
