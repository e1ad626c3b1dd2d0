//! Who may use `mcp serve --http`: every request carries the server's
//! bearer token, always.
//!
//! A loopback port is open to every user of the machine, so there is no
//! "no token" mode: when none is configured the front-end makes one
//! ([`Token::generate`]) and hands it to its user through a file only they
//! can read ([`write_token_file`]). A token comes from the environment or a
//! file ([`Token::from_file`]); one given on a command line is readable by
//! every user in `/proc/PID/cmdline`, which the front-end warns about.
//!
//! Connections that have not yet sent a request with the token are
//! [`Unauthenticated`]: they are few (the oldest is closed when a new one
//! would pass [`MAX_UNAUTHENTICATED`]) and short-lived (closed after
//! [`UNAUTHENTICATED_DEADLINE`] unless a request of theirs authenticated),
//! so thousands of half-open connections from another user cannot take the
//! server's descriptors or keep real clients out.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use crate::McpError;

/// Connections at once that have not authenticated; past this the oldest
/// is closed.
pub const MAX_UNAUTHENTICATED: usize = 128;

/// How long a connection has to send a request carrying the token.
pub const UNAUTHENTICATED_DEADLINE: Duration = Duration::from_secs(5);

/// Bytes of randomness in a generated token.
const TOKEN_BYTES: usize = 32;

/// A bearer token: never empty, compared without surrounding white space.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// `text` as a token; `what` names where it came from, for the error.
    pub fn new(text: &str, what: &str) -> Result<Self, McpError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(McpError::Config(format!(
                "{what} is empty: an HTTP server always needs a token. Give a non-empty one, or none at all \
                 and wield makes one"
            )));
        }
        if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(McpError::Config(format!(
                "{what} contains white space or control characters, which a bearer token cannot carry"
            )));
        }
        Ok(Self(t.to_owned()))
    }

    /// 32 random bytes from the kernel, as 64 hex digits.
    pub fn generate() -> Result<Self, McpError> {
        let mut bytes = [0u8; TOKEN_BYTES];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| McpError::io("cannot read random bytes for a token", e))?;
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The first line of `path`. The file must be a regular file of this
    /// user that other users cannot read: a token anyone can read, or
    /// another user can change, protects nothing. (Opened without waiting,
    /// so a FIFO or a device is refused rather than hung on.)
    pub fn from_file(path: &Path) -> Result<Self, McpError> {
        let shown = path.display();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
            .map_err(|e| McpError::io(format!("cannot read the token file {shown}"), e))?;
        let meta = file
            .metadata()
            .map_err(|e| McpError::io(format!("cannot read the token file {shown}"), e))?;
        if !meta.is_file() {
            return Err(McpError::Config(format!(
                "the token file {shown} is not a regular file: give a file holding the token"
            )));
        }
        if meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(McpError::Config(format!(
                "the token file {shown} belongs to another user (uid {}), who could change it: use a file of your own",
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(McpError::Config(format!(
                "the token file {shown} can be read or written by other users (mode {:o}): run `chmod 600 {shown}`",
                meta.mode() & 0o777
            )));
        }
        let mut text = String::new();
        file.take(64 * 1024)
            .read_to_string(&mut text)
            .map_err(|e| McpError::io(format!("cannot read the token file {shown}"), e))?;
        Self::new(
            text.lines().next().unwrap_or_default(),
            &format!("the token in {shown}"),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Writes `token` to `dir/name`, readable and writable by its owner only,
/// creating `dir` (0700) when missing. `dir` must belong to this user and
/// be closed to others, so no other user can read the file or swap it.
pub fn write_token_file(dir: &Path, name: &str, token: &Token) -> Result<PathBuf, McpError> {
    let fail = |e: std::io::Error| McpError::io(format!("cannot write the token file in {}", dir.display()), e);
    wield_core::private_dir::ensure_private_dir(dir).map_err(fail)?;
    let path = dir.join(name);
    // A new file each time: an old one (or anything put there) is removed,
    // and `create_new` refuses a link planted in between.
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(&path)
        .map_err(fail)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(fail)?;
    writeln!(file, "{}", token.as_str()).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    Ok(path)
}

/// The connections that have not authenticated yet, oldest first.
#[derive(Default)]
pub(crate) struct Unauthenticated {
    inner: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    next: u64,
    open: BTreeMap<u64, CancellationToken>,
}

impl Unauthenticated {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection, counted as unauthenticated until a request of it
    /// is. When that makes too many, the oldest one's ticket is closed.
    pub(crate) fn admit(self: &Arc<Self>) -> Ticket {
        let close = CancellationToken::new();
        let mut pending = self.lock();
        let id = pending.next;
        pending.next += 1;
        pending.open.insert(id, close.clone());
        while pending.open.len() > MAX_UNAUTHENTICATED {
            if let Some((_, oldest)) = pending.open.pop_first() {
                oldest.cancel();
            }
        }
        Ticket {
            id,
            close,
            list: Arc::clone(self),
        }
    }

    fn leave(&self, id: u64) -> bool {
        self.lock().open.remove(&id).is_some()
    }
}

/// One connection's place among the unauthenticated ones.
#[derive(Clone)]
pub(crate) struct Ticket {
    id: u64,
    close: CancellationToken,
    list: Arc<Unauthenticated>,
}

impl Ticket {
    /// Cancelled when the connection must be closed: crowded out by newer
    /// unauthenticated ones.
    pub(crate) fn closed(&self) -> &CancellationToken {
        &self.close
    }

    /// A request of this connection carried the token: it is no longer
    /// counted, nor closed for being slow.
    pub(crate) fn authenticated(&self) {
        self.list.leave(self.id);
    }

    /// The connection has ended.
    pub(crate) fn release(&self) {
        self.list.leave(self.id);
    }

    /// Whether the connection is still unauthenticated (and open).
    pub(crate) fn is_pending(&self) -> bool {
        self.list.lock().open.contains_key(&self.id)
    }
}

/// Every request must carry `Authorization: Bearer TOKEN`, once.
pub(crate) async fn require_token(State(token): State<Arc<Token>>, request: Request, next: Next) -> Response {
    let mut given = request.headers().get_all(header::AUTHORIZATION).iter();
    let (first, second) = (given.next(), given.next());
    if second.is_some() {
        return (
            StatusCode::BAD_REQUEST,
            "Bad Request: send one Authorization header, not several\n",
        )
            .into_response();
    }
    let given = first
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), token.as_str().as_bytes()) => {
            if let Some(ticket) = request.extensions().get::<Ticket>() {
                ticket.authenticated();
            }
            next.run(request).await
        }
        _ => {
            let mut response = (
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send the server's token as `Authorization: Bearer TOKEN` (the path of the file \
                 holding it was printed when the server started)\n",
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response
        }
    }
}

/// Compares without stopping at the first difference, so response timing
/// does not reveal how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn empty_and_blank_tokens_are_errors() {
        for t in ["", "   ", "\n"] {
            assert!(Token::new(t, "--token").is_err(), "{t:?} accepted");
        }
        assert!(Token::new("a b", "--token").is_err());
        assert_eq!(Token::new(" ok \n", "--token").unwrap().as_str(), "ok");
    }

    #[test]
    fn generated_tokens_differ() {
        let (a, b) = (Token::generate().unwrap(), Token::generate().unwrap());
        assert_eq!(a.as_str().len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, "secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Token::from_file(&path).unwrap_err().to_string();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Token::from_file(&path).unwrap().as_str(), "secret");
    }

    #[test]
    fn written_token_files_are_private_and_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("wield");
        let t = Token::generate().unwrap();
        let path = write_token_file(&private, "mcp.token", &t).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&private).unwrap().mode() & 0o777, 0o700);
        assert_eq!(Token::from_file(&path).unwrap(), t);
        // A link planted where the file goes is replaced, never followed.
        std::fs::remove_file(&path).unwrap();
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        write_token_file(&private, "mcp.token", &t).unwrap();
        assert!(!target.exists());
        // A directory open to others is refused.
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(write_token_file(&private, "mcp.token", &t).is_err());
    }

    #[test]
    fn the_oldest_unauthenticated_connection_makes_room() {
        let list = Unauthenticated::new();
        let tickets: Vec<Ticket> = (0..MAX_UNAUTHENTICATED).map(|_| list.admit()).collect();
        assert!(tickets.iter().all(|t| !t.closed().is_cancelled()));
        tickets[1].authenticated();
        let newer = list.admit();
        assert!(
            !tickets[0].closed().is_cancelled(),
            "room was made by the authenticated one"
        );
        let newest = list.admit();
        assert!(tickets[0].closed().is_cancelled(), "the oldest is closed");
        assert!(
            !tickets[1].closed().is_cancelled(),
            "an authenticated connection is never closed"
        );
        assert!(!newer.closed().is_cancelled() && !newest.closed().is_cancelled());
        assert!(!tickets[1].is_pending() && newest.is_pending());
    }
}
