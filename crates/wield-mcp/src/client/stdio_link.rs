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

use rmcp::model::{ErrorCode, JsonRpcError, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleClient};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

use super::process::{ServerInput, WatchedOutput, request_id_in};
use crate::server::incoming::{Lines, repair_lone_surrogates};

/// A local server's stdout and stdin as an MCP transport.
pub struct StdioLink {
    lines: Lines<WatchedOutput>,
    input: Arc<Mutex<ServerInput>>,
}

impl StdioLink {
    pub fn new(output: WatchedOutput, input: ServerInput) -> Self {
        Self {
            lines: Lines::new(output),
            input: Arc::new(Mutex::new(input)),
        }
    }
}

impl Transport<RoleClient> for StdioLink {
    type Error = io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleClient>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let input = Arc::clone(&self.input);
        async move {
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
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.trim_ascii().is_empty() {
        return None;
    }
    let error = match serde_json::from_slice(line) {
        Ok(message) => return Some(message),
        Err(e) => e,
    };
    if let Some(repaired) = repair_lone_surrogates(line)
        && let Ok(message) = serde_json::from_slice(&repaired)
    {
        return Some(message);
    }
    // A request or a notification names its method before its parameters
    // (as every SDK writes it); a server's message wield cannot read is
    // passed over, as the SDK does.
    let head = &line[..line.len().min(HEAD)];
    if memchr::memmem::find(head, b"\"method\"").is_some() {
        tracing::debug!("an MCP server's message wield cannot read: {error}");
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

/// How much of a line's start is searched for its `method`.
const HEAD: usize = 256;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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
        // A notification that cannot be read, blank lines: passed over.
        assert!(read(br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"n":NaN}}"#).is_none());
        assert!(read(b"  ").is_none());
        assert!(read(b"not json at all").is_none());
    }
}
