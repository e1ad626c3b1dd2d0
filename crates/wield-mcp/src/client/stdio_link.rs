//! The connection to a local server: JSON-RPC messages, one a line, over
//! its stdin and stdout.
//!
//! It reads as the SDK's own stdio transport does (lines of at most 16 MiB,
//! a byte order mark and a carriage return passed over, blank lines and
//! messages that are not JSON-RPC skipped), with two differences for
//! replies: one whose text holds half a surrogate pair (`"\ud83d"`, which
//! JavaScript's `JSON.stringify` writes for a string cut in the middle of
//! an emoji) is read with U+FFFD in its place, as the TypeScript SDK reads
//! it; and one that still cannot be read (`NaN`, a member of the wrong
//! type) becomes an error reply to its id, saying why, so the call fails
//! at once instead of waiting for its timeout.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{ErrorCode, JsonRpcError, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleClient};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use super::process::{ServerInput, WatchedOutput};
use crate::wire::{Lines, repair_lone_surrogates, request_id_in, strip_bom};

/// Messages to a server waiting to be written at most: past this the
/// server has stopped reading its input (a pipe holds 64 KiB), and a new
/// message fails at once instead of joining the queue, so a server that
/// sends requests without reading the answers cannot grow wield's memory.
pub const MAX_UNWRITTEN: usize = 256;

/// A local server's stdout and stdin as an MCP transport.
pub struct StdioLink {
    lines: Lines<WatchedOutput>,
    input: Arc<Mutex<ServerInput>>,
    /// Messages being written or waiting to be.
    unwritten: Arc<AtomicUsize>,
    /// The server's requests passed on and not answered yet: past
    /// [`MAX_UNWRITTEN`] more are passed over unanswered, so a server that
    /// sends them faster than they are answered cannot make wield hold more
    /// and more of them.
    unanswered: usize,
}

impl StdioLink {
    pub fn new(output: WatchedOutput, input: ServerInput) -> Self {
        Self {
            lines: Lines::new(output),
            input: Arc::new(Mutex::new(input)),
            unwritten: Arc::default(),
            unanswered: 0,
        }
    }
}

/// One message counted as unwritten until this is dropped.
struct Unwritten(Arc<AtomicUsize>);

impl Drop for Unwritten {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Transport<RoleClient> for StdioLink {
    type Error = io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleClient>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        if matches!(item, JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) {
            // An answer to one of the server's requests.
            self.unanswered = self.unanswered.saturating_sub(1);
        }
        let input = Arc::clone(&self.input);
        let waiting = self.unwritten.fetch_add(1, Ordering::Relaxed);
        let counted = Unwritten(Arc::clone(&self.unwritten));
        async move {
            let _counted = counted;
            if waiting >= MAX_UNWRITTEN {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("the server is not reading its input: {waiting} messages to it are waiting to be written"),
                ));
            }
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            // Whole lines, one message at a time.
            let mut input = input.lock().await;
            input.write_all(&line).await?;
            input.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let line = match self.lines.next().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(e) => {
                    tracing::debug!("reading from an MCP server: {e}");
                    return None;
                }
            };
            if let Some(message) = read(line) {
                if matches!(message, JsonRpcMessage::Request(_)) {
                    if self.unanswered >= MAX_UNWRITTEN {
                        tracing::debug!(
                            "an MCP server has {} requests not answered yet; passing one over",
                            self.unanswered
                        );
                        continue;
                    }
                    self.unanswered += 1;
                }
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        self.input.lock().await.shutdown().await
    }
}

/// The message in `line`; `None` for a line to pass over.
fn read(line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
    let line = strip_bom(line);
    if line.trim_ascii().is_empty() {
        return None;
    }
    match serde_json::from_slice(line) {
        Ok(message) => Some(message),
        Err(error) => unreadable(line, &error),
    }
}

/// What wield makes of `line`, a message of the server's that does not
/// parse as one (`error`, why not): the message once half a surrogate pair
/// is replaced; for a reply to wield's request, an error to its id that says
/// why wield cannot read it; otherwise `None`, to pass it over.
pub(super) fn unreadable(line: &[u8], error: &serde_json::Error) -> Option<RxJsonRpcMessage<RoleClient>> {
    if let Some(repaired) = repair_lone_surrogates(line)
        && let Ok(message) = serde_json::from_slice(&repaired)
    {
        return Some(message);
    }
    // Only a reply to wield's own request becomes an error; anything else
    // wield cannot read (a request, a notification, a line of JSON logging
    // that is no JSON-RPC at all) is passed over, as the SDK does.
    if !is_reply(line) {
        tracing::debug!("an MCP server's line wield cannot read: {error}");
        return None;
    }
    let Some(id) = request_id_in(line) else {
        tracing::debug!("an MCP server's reply wield cannot read, to no id it can tell: {error}");
        return None;
    };
    Some(JsonRpcMessage::Error(JsonRpcError::new(
        Some(id),
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("wield cannot read the server's reply, which is not valid JSON-RPC: {error}"),
            None,
        ),
    )))
}

/// Whether `line`, which does not parse as a message, is a JSON-RPC reply:
/// an object with `jsonrpc`, `id`, and `result` or `error`, and no `method`
/// or `params`. Read as JSON when it is JSON (a member of the wrong type);
/// otherwise (`NaN`) from the members named in its first [`HEAD`] bytes,
/// where every SDK writes `jsonrpc`, `id` and `method`.
fn is_reply(line: &[u8]) -> bool {
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(line) {
        return m.contains_key("jsonrpc")
            && m.contains_key("id")
            && (m.contains_key("result") || m.contains_key("error"))
            && !m.contains_key("method")
            && !m.contains_key("params");
    }
    let head = &line[..line.len().min(HEAD)];
    let has = |member: &[u8]| memchr::memmem::find(head, member).is_some();
    has(b"\"jsonrpc\"") && (has(b"\"result\"") || has(b"\"error\"")) && !has(b"\"method\"") && !has(b"\"params\"")
}

/// How much of a line's start is searched for its members.
const HEAD: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{NumberOrString, ServerResult};

    #[test]
    fn replies_are_read_or_answered_with_why() {
        // Half a surrogate pair: read, with U+FFFD.
        let line = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#;
        let Some(JsonRpcMessage::Response(reply)) = read(line) else {
            panic!("not read");
        };
        let ServerResult::CallToolResult(result) = reply.result else {
            panic!("{:?}", reply.result);
        };
        assert_eq!(result.content[0].as_text().unwrap().text, "cut \u{fffd}");
        // Not JSON (`NaN`): an error to its id, number or string.
        for (line, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":4,"result":{"n":NaN}}"#[..],
                NumberOrString::Number(4),
            ),
            (
                br#"{"id":"x-1","jsonrpc":"2.0","result":{"n":NaN}}"#,
                NumberOrString::String("x-1".into()),
            ),
        ] {
            let Some(JsonRpcMessage::Error(error)) = read(line) else {
                panic!("no error for {}", String::from_utf8_lossy(line));
            };
            assert_eq!(error.id, Some(id));
            assert!(
                error.error.message.contains("cannot read the server's reply"),
                "{error:?}"
            );
        }
        // JSON logging that is no JSON-RPC, a request with `params` before
        // its `method`: passed over.
        assert!(read(br#"{"level":"info","id":2,"msg":"ready","n":NaN}"#).is_none());
        assert!(read(br#"{"level":"info","id":2,"msg":"ready"}"#).is_none());
        assert!(read(br#"{"jsonrpc":"2.0","id":2,"params":{"n":NaN},"method":"sampling/createMessage"}"#).is_none());
        // A notification that cannot be read, blank lines: passed over.
        assert!(read(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"n":NaN}}"#).is_none());
        assert!(read(b"  ").is_none());
        assert!(read(b"not json at all").is_none());
    }
}
