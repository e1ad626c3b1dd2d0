//! Newline-delimited JSON-RPC over a byte stream pair (stdio), with the
//! large strings of tool results written by a fast path.
//!
//! Lines are read and parsed by [`super::incoming`]. Each message sent is
//! encoded whole into one buffer sized up front and written under a lock,
//! so messages never interleave. In a `tools/call` result, text (and image or audio data)
//! of [`BIG`] bytes or more is swapped for a placeholder, the rest is
//! encoded by `serde_json`, and the strings are escaped into the
//! placeholders' places by [`super::escape`]. The output is byte for byte
//! what `serde_json` writes (tested); the placeholder carries a per-process
//! random nonce and must occur exactly once after the previous one's place,
//! or the message is encoded the plain way.

use std::collections::HashSet;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, PoisonError};

use rmcp::model::{ClientNotification, ContentBlock, JsonRpcMessage, RequestId, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::budget::RequestBudget;
use super::escape::{escaped_capacity, push_json_string};
use super::incoming::{Incoming, Lifecycle, lifecycle, opens_session, parse};
use crate::wire::{Lines, error_line, reply_id};

/// Strings at least this long take the fast path.
pub const BIG: usize = 1024;

/// How long the end of a session waits for a client that reads nothing.
const CLOSE_STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// The server side of a stdio-style connection.
pub struct Framed<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    lines: Lines<R>,
    out: Arc<Mutex<Out<W>>>,
    /// An `Invalid Request` reply still to be written (or finished), before
    /// the next line is read.
    reply: Option<Vec<u8>>,
    replying: bool,
    /// `initialize` has come: the session's requests may follow.
    initialized: bool,
    /// The ids of the client's requests not answered yet: a request that
    /// reuses one is refused (the SDK would answer only one of the two).
    in_flight: Arc<std::sync::Mutex<HashSet<RequestId>>>,
    /// The requests taken and not finished (their answers not written yet,
    /// nor cancelled), with their sizes: past the session's limits
    /// ([`RequestBudget`]) a request is refused, and the refusal is written before
    /// anything more is read, so a client that sends and never reads stops
    /// being read rather than making the server hold more and more.
    unfinished: Arc<std::sync::Mutex<RequestBudget>>,
    /// Cancelled when the client stopped reading (a write found the pipe
    /// broken, or nothing was written for [`CLOSE_STALL`] after the input
    /// ended): the session ends, though its input may stay open.
    gone: CancellationToken,
    /// How many writes have gone out (shared with [`Out`]).
    wrote: Arc<AtomicU64>,
    /// Cancelled when nothing more will be received.
    ended: CancellationToken,
}

impl<R, W> Framed<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        let wrote = Arc::new(AtomicU64::new(0));
        Self {
            lines: Lines::new(read),
            out: Arc::new(Mutex::new(Out {
                w: write,
                pending: Vec::new(),
                wrote: Arc::clone(&wrote),
            })),
            wrote,
            reply: None,
            replying: false,
            initialized: false,
            in_flight: Arc::default(),
            unfinished: Arc::default(),
            gone: CancellationToken::new(),
            ended: CancellationToken::new(),
        }
    }

    /// Cancel `ended` when the session's input ends (or the client stops
    /// reading).
    #[must_use]
    pub fn ending(mut self, ended: CancellationToken) -> Self {
        self.ended = ended;
        self
    }

    /// Whether `message` is a request whose id another request in flight
    /// has; a request is in flight from here until its answer is sent.
    /// A request the client cancels stays in flight until its (cancelled)
    /// answer goes out: the SDK would take that answer for a new request's.
    fn reuses_id(&self, message: &RxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
        let JsonRpcMessage::Request(request) = message else {
            return None;
        };
        let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        (!in_flight.insert(request.id.clone())).then(|| request.id.clone())
    }

    /// Whether the request `message` (of `size` bytes) is refused because
    /// the session has as many requests, or bytes of them, unfinished as it
    /// may; when not, it is counted until its answer is written. A
    /// cancellation ends the count of the request it names (which is never
    /// answered).
    fn over_budget(&self, message: &RxJsonRpcMessage<RoleServer>, size: usize) -> Option<(RequestId, ErrorData)> {
        let mut unfinished = self.unfinished.lock().unwrap_or_else(PoisonError::into_inner);
        match message {
            JsonRpcMessage::Request(request) => {
                if let Err(over) = unfinished.take(request.id.clone(), size) {
                    return Some((request.id.clone(), over.error()));
                }
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    unfinished.release(id);
                }
            }
            _ => {}
        }
        None
    }

    /// Write the error reply to an invalid request, if one is due. Cancel-safe: the
    /// reply moves into the writer's pending bytes as soon as the lock is
    /// held, and whatever is not written yet stays there.
    async fn write_reply(&mut self) -> io::Result<()> {
        let mut out = self.out.lock().await;
        if let Some(reply) = self.reply.take() {
            out.pending.extend_from_slice(&reply);
            self.replying = true;
        }
        out.drain().await?;
        out.w.flush().await?;
        self.replying = false;
        Ok(())
    }
}

/// Ends the count of an answered request when dropped: once its answer is
/// written, or its writing given up.
struct Finished {
    unfinished: Arc<std::sync::Mutex<RequestBudget>>,
    id: Option<RequestId>,
}

impl Drop for Finished {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.unfinished
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .release(id);
        }
    }
}

/// The writer and the bytes of a message whose writing was cut short (its
/// future dropped): they go out first, so no message is ever cut or split.
struct Out<W> {
    w: W,
    pending: Vec<u8>,
    wrote: Arc<AtomicU64>,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Write the pending bytes; cancel-safe (only what was written leaves).
    async fn drain(&mut self) -> io::Result<()> {
        while !self.pending.is_empty() {
            let n = self.w.write(&self.pending).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.wrote.fetch_add(1, Ordering::Relaxed);
            self.pending.drain(..n);
        }
        Ok(())
    }
}

/// What is left of a message being written; kept as pending bytes if the
/// write stops before the end.
struct Rest<'a> {
    bytes: &'a [u8],
    keep: &'a mut Vec<u8>,
}

impl Drop for Rest<'_> {
    fn drop(&mut self) {
        self.keep.extend_from_slice(self.bytes);
    }
}

/// Resolves once the input has ended and then no write has gone out for
/// [`CLOSE_STALL`]: the client has stopped reading, and a write waiting on
/// it would keep the session (and the process) forever.
async fn stalled(ended: &CancellationToken, wrote: &AtomicU64) {
    ended.cancelled().await;
    no_progress(wrote).await;
}

/// Resolves once no write has gone out for [`CLOSE_STALL`].
async fn no_progress(wrote: &AtomicU64) {
    loop {
        let before = wrote.load(Ordering::Relaxed);
        tokio::time::sleep(CLOSE_STALL).await;
        if wrote.load(Ordering::Relaxed) == before {
            return;
        }
    }
}

/// Write one encoded message whole, under the writer's lock, after anything
/// an earlier write left pending.
async fn write_message<W: AsyncWrite + Unpin>(out: &Mutex<Out<W>>, bytes: &[u8]) -> io::Result<()> {
    let mut out = out.lock().await;
    out.drain().await?;
    let Out { w, pending, wrote } = &mut *out;
    let mut rest = Rest { bytes, keep: pending };
    while !rest.bytes.is_empty() {
        let n = w.write(rest.bytes).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        wrote.fetch_add(1, Ordering::Relaxed);
        rest.bytes = &rest.bytes[n..];
    }
    drop(rest);
    w.flush().await
}

impl<R, W> Transport<RoleServer> for Framed<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        if let Some(id) = &answered {
            self.in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
        }
        // The request counts until its answer is written (or given up on).
        let finished = Finished {
            unfinished: Arc::clone(&self.unfinished),
            id: answered,
        };
        let bytes = encode(item);
        let out = Arc::clone(&self.out);
        let gone = self.gone.clone();
        let (ended, wrote) = (self.ended.clone(), Arc::clone(&self.wrote));
        async move {
            let _finished = finished;
            let bytes = bytes.map_err(io::Error::other)?;
            let written = tokio::select! {
                written = write_message(&out, &bytes) => written,
                () = stalled(&ended, &wrote) => {
                    gone.cancel();
                    Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading its replies"))
                }
            };
            if let Err(e) = &written
                && e.kind() == io::ErrorKind::BrokenPipe
            {
                gone.cancel();
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let received = self.receive_one().await;
        if received.is_none() {
            self.ended.cancel();
        }
        received
    }

    /// Write what is left, unless the client has stopped reading: its
    /// input has ended, and a client that reads nothing more for
    /// [`CLOSE_STALL`] must not keep the process (a write under way holds
    /// the writer for as long as the pipe stays full).
    async fn close(&mut self) -> Result<(), io::Error> {
        if self.gone.is_cancelled() {
            return Ok(());
        }
        let stalled = || io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading its replies");
        // Writes queued before this one go first, as long as they go.
        let mut out = tokio::select! {
            out = self.out.lock() => out,
            () = no_progress(&self.wrote) => return Err(stalled()),
        };
        if let Some(reply) = self.reply.take() {
            out.pending.extend_from_slice(&reply);
        }
        self.replying = false;
        tokio::select! {
            drained = out.drain() => drained?,
            () = no_progress(&self.wrote) => return Err(stalled()),
        }
        tokio::time::timeout(CLOSE_STALL, out.w.shutdown())
            .await
            .map_err(|_| stalled())?
    }
}

impl<R, W> Framed<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    /// The next message; `None` when no more will come.
    async fn receive_one(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // As the SDK's transport does: a reply to an invalid request is
            // written before anything more is read.
            if (self.reply.is_some() || self.replying)
                && let Err(e) = self.write_reply().await
            {
                tracing::error!("writing to the client: {e}");
                return None;
            }
            let next = tokio::select! {
                next = self.lines.next() => next,
                () = self.gone.cancelled() => {
                    tracing::debug!("the client stopped reading: ending the session");
                    return None;
                }
            };
            let line = match next {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(e) => {
                    tracing::error!("reading from the client: {e}");
                    return None;
                }
            };
            let size = line.len();
            let refused = match parse(line) {
                Incoming::Message(message) => match lifecycle(&message, self.initialized) {
                    Lifecycle::Pass => match self.reuses_id(&message) {
                        None => {
                            if let Some((id, error)) = self.over_budget(&message, size) {
                                self.in_flight
                                    .lock()
                                    .unwrap_or_else(PoisonError::into_inner)
                                    .remove(&id);
                                Some((Some(reply_id(id)), error))
                            } else {
                                self.initialized |= opens_session(&message);
                                return Some(*message);
                            }
                        }
                        Some(id) => Some((
                            Some(reply_id(id.clone())),
                            ErrorData::invalid_request(
                                format!(
                                    "request id {id} is already in use by a request that has not been answered \
                                     yet; give each request in flight an id of its own"
                                ),
                                None,
                            ),
                        )),
                    },
                    Lifecycle::Drop => None,
                    Lifecycle::Refuse(id, error) => Some((Some(reply_id(id)), error)),
                },
                Incoming::Skip => None,
                Incoming::Refuse(id, error) => Some((id, error)),
            };
            if let Some((id, error)) = refused {
                self.reply = Some(error_line(id.as_ref(), &error));
            }
        }
    }
}

/// A nonce no peer can know, so no other string can look like a placeholder.
static NONCE: LazyLock<u64> = LazyLock::new(|| RandomState::new().hash_one(std::process::id()));

fn placeholder(nonce: u64, i: usize) -> String {
    format!("\0wield-splice-{nonce:016x}-{i}\0")
}

/// One message as a JSON line.
pub fn encode(item: TxJsonRpcMessage<RoleServer>) -> serde_json::Result<Vec<u8>> {
    encode_with(item, *NONCE)
}

fn encode_with(mut item: TxJsonRpcMessage<RoleServer>, nonce: u64) -> serde_json::Result<Vec<u8>> {
    // Each big string, and its placeholder as serde_json will write it.
    let mut big: Vec<(String, Vec<u8>)> = Vec::new();
    for slot in big_strings(&mut item) {
        let mark = placeholder(nonce, big.len());
        let encoded = serde_json::to_vec(&mark)?;
        big.push((std::mem::replace(slot, mark), encoded));
    }
    let strings: usize = big.iter().map(|(s, _)| escaped_capacity(s.len())).sum();
    let mut head = Vec::with_capacity(512);
    serde_json::to_writer(&mut head, &item)?;
    if big.is_empty() {
        head.push(b'\n');
        return Ok(head);
    }
    let mut out = Vec::with_capacity(head.len() + strings + 1);
    let mut rest = &head[..];
    let mut spliced = true;
    for (text, mark) in &big {
        let mut found = memchr::memmem::find_iter(rest, mark);
        let (Some(at), None) = (found.next(), found.next()) else {
            spliced = false;
            break;
        };
        out.extend_from_slice(&rest[..at]);
        push_json_string(&mut out, text);
        rest = &rest[at + mark.len()..];
    }
    if !spliced {
        // Never expected: put the strings back and encode the plain way.
        for (slot, (text, _)) in big_strings(&mut item).zip(big) {
            *slot = text;
        }
        let mut plain = serde_json::to_vec(&item)?;
        plain.push(b'\n');
        return Ok(plain);
    }
    out.extend_from_slice(rest);
    out.push(b'\n');
    Ok(out)
}

/// The strings of a `tools/call` result worth the fast path, in the order
/// they are encoded.
fn big_strings(item: &mut TxJsonRpcMessage<RoleServer>) -> impl Iterator<Item = &mut String> {
    let content = match item {
        JsonRpcMessage::Response(r) => match &mut r.result {
            ServerResult::CallToolResult(result) => Some(&mut result.content),
            _ => None,
        },
        _ => None,
    };
    content.into_iter().flatten().filter_map(|block| {
        let s = match block {
            ContentBlock::Text(t) => &mut t.text,
            ContentBlock::Image(i) => &mut i.data,
            ContentBlock::Audio(a) => &mut a.data,
            _ => return None,
        };
        (s.len() >= BIG).then_some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::budget::MAX_IN_FLIGHT;
    use rmcp::model::{CallToolResult, JsonRpcResponse, JsonRpcVersion2_0, NumberOrString};
    use std::time::Duration;

    fn tool_reply(texts: &[String]) -> TxJsonRpcMessage<RoleServer> {
        let content = texts.iter().map(|t| ContentBlock::text(t.clone())).collect();
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(serde_json::json!({"note": "after the content"}));
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(7),
            result: ServerResult::CallToolResult(result),
        })
    }

    fn plain(item: &TxJsonRpcMessage<RoleServer>) -> Vec<u8> {
        let mut v = serde_json::to_vec(item).unwrap();
        v.push(b'\n');
        v
    }

    #[test]
    fn encoded_results_are_what_serde_json_writes() {
        let numbered: String = (1..=400)
            .map(|i| format!("{i:>6}\tline {i} \"quoted\" \\ tab\t\n"))
            .collect();
        let texts = vec![numbered.clone(), "small".to_owned(), "x".repeat(BIG), numbered];
        let item = tool_reply(&texts);
        let want = plain(&item);
        assert_eq!(encode(item).unwrap(), want);

        // Other messages take the plain way.
        let item: TxJsonRpcMessage<RoleServer> = JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(1),
            result: ServerResult::empty(()),
        });
        assert_eq!(encode(item.clone()).unwrap(), plain(&item));
    }

    /// A pipe that takes four bytes, then makes the writer wait, and so on.
    struct Trickle {
        got: Vec<u8>,
        wait: bool,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            self.wait = !self.wait;
            if !self.wait {
                cx.waker().wake_by_ref();
                return std::task::Poll::Pending;
            }
            let n = buf.len().min(4);
            self.got.extend_from_slice(&buf[..n]);
            std::task::Poll::Ready(Ok(n))
        }

        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_message_whose_write_is_dropped_midway_is_finished_before_the_next() {
        let out = Mutex::new(Out {
            w: Trickle {
                got: Vec::new(),
                wait: false,
            },
            pending: Vec::new(),
            wrote: Arc::default(),
        });
        {
            let mut first = std::pin::pin!(write_message(&out, b"hello world\n"));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(first.as_mut().poll(&mut cx).is_pending());
            assert!(first.as_mut().poll(&mut cx).is_pending());
        }
        write_message(&out, b"next\n").await.unwrap();
        assert_eq!(out.lock().await.w.got, b"hello world\nnext\n");
    }

    #[test]
    fn a_text_that_holds_a_placeholder_falls_back_to_the_plain_way() {
        let nonce = 42;
        let sneaky = format!("small {}", placeholder(nonce, 0));
        let texts = vec![sneaky, "y".repeat(2 * BIG)];
        let item = tool_reply(&texts);
        let want = plain(&item);
        assert_eq!(encode_with(item, nonce).unwrap(), want);
    }

    /// A client that sends requests faster than their answers are written
    /// (one that never reads, at worst) is refused past the limit, and the
    /// refusal is written before more is read; an answer written, or a
    /// cancellation, makes room again.
    #[tokio::test]
    async fn unfinished_requests_are_bounded() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let (mut client, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, replies) = tokio::io::duplex(1 << 20);
        let mut replies = tokio::io::BufReader::new(replies).lines();
        let mut framed = Framed::new(server_in, server_out);
        let call = |id: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"calculator","arguments":{{"expression":"1+1"}}}}}}"#
            ) + "\n"
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        client.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        assert!(framed.receive().await.is_some());
        framed.send(reply(0)).await.unwrap();
        assert!(replies.next_line().await.unwrap().unwrap().contains(r#""id":0"#));
        for id in 1..=MAX_IN_FLIGHT + 1 {
            client.write_all(call(id).as_bytes()).await.unwrap();
        }
        for _ in 1..=MAX_IN_FLIGHT {
            assert!(framed.receive().await.is_some());
        }
        // The next is refused: nothing more comes until another line does.
        let waited = tokio::time::timeout(Duration::from_millis(200), framed.receive()).await;
        assert!(waited.is_err(), "{waited:?}");
        let refused = replies.next_line().await.unwrap().unwrap();
        assert!(
            refused.contains(&format!(r#""id":{}"#, MAX_IN_FLIGHT + 1))
                && refused.contains("too many requests in flight"),
            "{refused}"
        );
        // An answer written makes room for one.
        framed.send(reply(1)).await.unwrap();
        let next = MAX_IN_FLIGHT + 2;
        client.write_all(call(next).as_bytes()).await.unwrap();
        assert!(framed.receive().await.is_some(), "a request after an answer");
        client.write_all(call(next + 1).as_bytes()).await.unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(200), framed.receive()).await;
        assert!(waited.is_err(), "{waited:?}");
        // So does a cancellation (a cancelled request is never answered).
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n")
            .await
            .unwrap();
        client.write_all(call(next + 2).as_bytes()).await.unwrap();
        assert!(framed.receive().await.is_some(), "the cancellation");
        assert!(framed.receive().await.is_some(), "a request after a cancellation");
    }

    fn reply(id: i64) -> TxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(id),
            result: ServerResult::empty(()),
        })
    }
}
