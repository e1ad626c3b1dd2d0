//! The connection to a local server: the SDK's own stdio transport
//! (`AsyncRwTransport`, JSON-RPC messages one a line) over the server's
//! stdout and stdin.
//!
//! Not the SDK's `TokioChildProcess`: it reads the child's stdout itself,
//! leaving no place to make replies readable or to see one too large to
//! read ([`crate::compat::client`]), and it owns and reaps the child,
//! stopping it alone and with seconds of grace, where wield watches the
//! process for its exit and stops its whole tree ([`super::process`]).
//!
//! Around the transport, what a server may make wield hold is bounded: the
//! messages waiting to be written to it, and its requests not answered yet.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::RoleClient;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;

use super::process::{ServerInput, WatchedOutput};
use crate::compat::client::{MAX_MESSAGE, ReadableReplies};

/// Messages to a server waiting to be written at most: past this the
/// server has stopped reading its input (a pipe holds 64 KiB), and a new
/// message fails at once instead of joining the queue, so a server that
/// sends requests without reading the answers cannot grow wield's memory.
pub const MAX_UNWRITTEN: usize = 256;

type Sdk = AsyncRwTransport<RoleClient, ReadableReplies<WatchedOutput>, ServerInput>;

/// A local server's stdout and stdin as an MCP transport.
pub struct StdioLink {
    inner: Sdk,
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
        let health = output.health();
        let output = ReadableReplies::new(output, move |long| health.note_long(long));
        Self {
            inner: AsyncRwTransport::new_client(output, input).with_max_line_length(MAX_MESSAGE),
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
        let waiting = self.unwritten.fetch_add(1, Ordering::Relaxed);
        let counted = Unwritten(Arc::clone(&self.unwritten));
        let send = (waiting < MAX_UNWRITTEN).then(|| self.inner.send(item));
        async move {
            let _counted = counted;
            match send {
                Some(send) => send.await,
                None => Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("the server is not reading its input: {waiting} messages to it are waiting to be written"),
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
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

    async fn close(&mut self) -> io::Result<()> {
        self.inner.close().await
    }
}
