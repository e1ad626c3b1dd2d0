//! Corrections of how the SDK's stdio transport (`AsyncRwTransport`) ends.
//!
//! Its `close` takes its writer's lock, which a write under way holds for
//! as long as the client reads nothing (a full pipe), so a session whose
//! client stopped reading would never end and would keep the process. The
//! server's transport ([`crate::server`]'s bounded adapter) gives up on such
//! a client after [`CLOSE_STALL`] without progress instead. The test here
//! fails when the SDK's `close` stops waiting on a stuck write.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

/// How long the end of a session waits for a client that reads nothing.
pub(crate) const CLOSE_STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// Resolves once the input has ended and then no write has gone out for
/// [`CLOSE_STALL`] (`wrote` counts the writes): the client has stopped
/// reading, and a write waiting on it would keep the session (and the
/// process) forever.
pub(crate) async fn stalled(ended: &CancellationToken, wrote: &AtomicU64) {
    ended.cancelled().await;
    no_progress(wrote).await;
}

/// Resolves once no write has gone out for [`CLOSE_STALL`].
pub(crate) async fn no_progress(wrote: &AtomicU64) {
    loop {
        let before = wrote.load(Ordering::Relaxed);
        tokio::time::sleep(CLOSE_STALL).await;
        if wrote.load(Ordering::Relaxed) == before {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use rmcp::RoleServer;
    use rmcp::model::{JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0, NumberOrString, ServerResult};
    use rmcp::transport::Transport;
    use rmcp::transport::async_rw::AsyncRwTransport;
    use tokio::io::AsyncWrite;

    /// A client that never reads: every write waits.
    struct Full;

    impl AsyncWrite for Full {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, _: &[u8]) -> Poll<std::io::Result<usize>> {
            Poll::Pending
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Pending
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Pending
        }
    }

    #[tokio::test]
    async fn the_sdk_transport_closes_only_after_a_stuck_write() {
        let mut transport = AsyncRwTransport::<RoleServer, _, _>::new_server(tokio::io::empty(), Full);
        let reply = JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(1),
            result: ServerResult::empty(()),
        });
        let mut stuck = Box::pin(transport.send(reply));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(stuck.as_mut().poll(&mut cx).is_pending());
        let closed = tokio::time::timeout(Duration::from_millis(200), transport.close()).await;
        assert!(
            closed.is_err(),
            "the SDK's close no longer waits for a stuck write: {closed:?}"
        );
        drop(stuck);
    }
}
