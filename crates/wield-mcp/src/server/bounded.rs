//! The stdio server transport: the SDK's own `AsyncRwTransport` (its line
//! framing and its encoder), bounded by wield.
//!
//! Beneath the SDK, [`Admitted`] reads the client's lines first and lets
//! through only those that hold a message the session takes
//! ([`super::admission`]: the strict parse, the session lifecycle, the
//! refusal of a reused id, the request budget). Every other line is answered
//! by wield itself, through [`SharedOut`], before anything more is read, so
//! a client that sends and never reads stops being read. Above the SDK,
//! [`Bounded`] ends a request's count once its answer is written and gives
//! up on a client that stops reading.
//!
//! [`SharedOut`] is the writer the SDK writes through: it takes whole
//! messages (the SDK's writer hands over its buffer whole) and wield's
//! refusals between them, so messages never interleave, and a message whose
//! writing is cut short (its future dropped) is finished before the next.

use std::future::{Future, poll_fn};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker, ready};

use rmcp::RoleServer;
use rmcp::model::JsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use super::admission::{Admission, Admit};
use crate::compat::stdio::{CLOSE_STALL, no_progress, stalled};
use crate::wire::{MAX_LINE, error_line};

/// Bytes asked of the input per read.
const READ_CHUNK: usize = 64 * 1024;

/// The server side of a stdio-style connection: the SDK's transport over
/// [`Admitted`] input and [`SharedOut`] output.
pub(crate) struct Bounded<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    inner: AsyncRwTransport<RoleServer, Admitted<R, W>, SharedOut<W>>,
    admission: Arc<Mutex<Admission>>,
    out: SharedOut<W>,
    /// Cancelled when the client stopped reading (a write found the pipe
    /// broken, or nothing was written for [`CLOSE_STALL`] after the input
    /// ended): the session ends, though its input may stay open.
    gone: CancellationToken,
    /// Cancelled when nothing more will be received.
    ended: CancellationToken,
}

impl<R, W> Bounded<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W) -> Self {
        let admission = Arc::new(Mutex::new(Admission::default()));
        let out = SharedOut::new(write);
        let input = Admitted {
            read,
            buf: vec![0; READ_CHUNK],
            start: 0,
            scanned: 0,
            end: 0,
            discarding: false,
            pass: Vec::new(),
            passed: 0,
            refusing: false,
            admission: Arc::clone(&admission),
            out: out.clone(),
        };
        // Lines reach the SDK already bounded (and possibly re-encoded a
        // little longer, an answer made an error), so its own bound must not
        // drop one wield took.
        let inner = AsyncRwTransport::new_server(input, out.clone()).with_max_line_length(2 * MAX_LINE);
        Self {
            inner,
            admission,
            out,
            gone: CancellationToken::new(),
            ended: CancellationToken::new(),
        }
    }

    /// Cancel `ended` when the session's input ends (or the client stops
    /// reading).
    #[must_use]
    pub(crate) fn ending(mut self, ended: CancellationToken) -> Self {
        self.ended = ended;
        self
    }
}

impl<R, W> Transport<RoleServer> for Bounded<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(&mut self, item: TxJsonRpcMessage<RoleServer>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        // The id is free again once its answer goes out; the request counts
        // until its answer is written (or given up on).
        let finished = answered.map(|id| {
            lock(&self.admission).answering(&id);
            Finished {
                admission: Arc::clone(&self.admission),
                id,
            }
        });
        let sent = self.inner.send(item);
        let (gone, ended, wrote) = (self.gone.clone(), self.ended.clone(), self.out.wrote());
        async move {
            let _finished = finished;
            let written = tokio::select! {
                written = sent => written,
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
        let received = tokio::select! {
            received = self.inner.receive() => received,
            () = self.gone.cancelled() => {
                tracing::debug!("the client stopped reading: ending the session");
                None
            }
        };
        if received.is_none() {
            self.ended.cancel();
        }
        received
    }

    /// Write what is left, unless the client has stopped reading: its
    /// input has ended, and a client that reads nothing more for
    /// [`CLOSE_STALL`] must not keep the process. The SDK's own `close`,
    /// which waits for a write under way however long it takes, is not
    /// called (see [`crate::compat::stdio`]): dropping the transport closes
    /// the output.
    async fn close(&mut self) -> io::Result<()> {
        if self.gone.is_cancelled() {
            return Ok(());
        }
        let given_up = || io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading its replies");
        let wrote = self.out.wrote();
        tokio::select! {
            flushed = poll_fn(|cx| self.out.poll_drain(cx)) => flushed?,
            () = no_progress(&wrote) => return Err(given_up()),
        }
        tokio::time::timeout(CLOSE_STALL, poll_fn(|cx| self.out.poll_shutdown_inner(cx)))
            .await
            .map_err(|_| given_up())?
    }
}

fn lock(admission: &Mutex<Admission>) -> std::sync::MutexGuard<'_, Admission> {
    admission.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends the count of an answered request when dropped: once its answer is
/// written, or its writing given up.
struct Finished {
    admission: Arc<Mutex<Admission>>,
    id: rmcp::model::RequestId,
}

impl Drop for Finished {
    fn drop(&mut self) {
        lock(&self.admission).answered(&self.id);
    }
}

/// The client's input as the SDK reads it: only the lines the session
/// takes, each whole; the others are answered (or passed over) here.
pub(crate) struct Admitted<R, W> {
    read: R,
    /// Input read and not yet taken, `buf[start..end]`, with no newline in
    /// `buf[start..scanned]`. The buffer is only ever grown (to hold a
    /// long line), never shrunk or zeroed again.
    buf: Vec<u8>,
    start: usize,
    scanned: usize,
    end: usize,
    /// Dropping the rest of a line longer than [`MAX_LINE`].
    discarding: bool,
    /// An admitted line (with its newline) for the SDK, `pass[passed..]` not
    /// handed over yet.
    pass: Vec<u8>,
    passed: usize,
    /// A refusal is being written; nothing more is read until it is.
    refusing: bool,
    admission: Arc<Mutex<Admission>>,
    out: SharedOut<W>,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Admitted<R, W> {
    /// Act on the line `buf[start..end]` (without its newline).
    fn take_line(&mut self, end: usize) {
        let line = &self.buf[self.start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match lock(&self.admission).admit(line) {
            Admit::Pass(None) => {
                self.pass.clear();
                self.pass.extend_from_slice(line);
                self.pass.push(b'\n');
                self.passed = 0;
            }
            Admit::Pass(Some(text)) => {
                self.pass = text;
                self.pass.push(b'\n');
                self.passed = 0;
            }
            Admit::Skip => {}
            Admit::Refuse(id, error) => {
                self.out.queue(&error_line(id.as_ref(), &error));
                self.refusing = true;
            }
        }
        self.start = end + 1;
        self.scanned = self.start;
    }

    /// Read more input into `buf`; `Ok(false)` at its end.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < READ_CHUNK {
            self.buf.resize(self.end + READ_CHUNK, 0);
        }
        let mut read = ReadBuf::new(&mut self.buf[self.end..]);
        ready!(Pin::new(&mut self.read).poll_read(cx, &mut read))?;
        let n = read.filled().len();
        self.end += n;
        Poll::Ready(Ok(n > 0))
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> AsyncRead for Admitted<R, W> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, to: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            // A refusal goes out before anything more is read.
            if this.refusing {
                ready!(this.out.poll_drain(cx))?;
                this.refusing = false;
            }
            if this.passed < this.pass.len() {
                let n = to.remaining().min(this.pass.len() - this.passed);
                to.put_slice(&this.pass[this.passed..this.passed + n]);
                this.passed += n;
                return Poll::Ready(Ok(()));
            }
            if let Some(at) = memchr::memchr(b'\n', &this.buf[this.scanned..this.end]) {
                let end = this.scanned + at;
                // With its newline, a line may be MAX_LINE bytes long.
                let discarding = std::mem::take(&mut this.discarding);
                if discarding || end - this.start >= MAX_LINE {
                    if !discarding {
                        too_long();
                    }
                    this.start = end + 1;
                    this.scanned = this.start;
                } else {
                    this.take_line(end);
                }
                continue;
            }
            // No whole line yet: one longer than allowed is dropped, without
            // being kept, and reading goes on after it.
            this.scanned = this.end;
            if this.end - this.start >= MAX_LINE {
                if !this.discarding {
                    too_long();
                }
                this.discarding = true;
                this.start = this.end;
                this.scanned = this.end;
            }
            // The end of input: a last line without a newline is not a
            // message.
            if !ready!(this.poll_fill(cx))? {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

fn too_long() {
    tracing::error!(max = MAX_LINE, "an incoming message is longer than allowed; dropped");
}

/// The output, shared by the SDK's writer and wield's refusals. What is
/// written is queued whole and written out by whoever flushes; every
/// flusher waiting on the client is woken once the queue is empty.
pub(crate) struct SharedOut<W>(Arc<SharedState<W>>);

struct SharedState<W> {
    out: Mutex<Out<W>>,
    /// How many writes have gone out (progress, for [`CLOSE_STALL`]).
    wrote: Arc<AtomicU64>,
}

struct Out<W> {
    w: W,
    /// Bytes taken and not written yet: the ends of whole messages.
    queue: Vec<u8>,
    /// The tasks waiting for `queue` to be written.
    waiting: Vec<Waker>,
}

impl<W> Clone for SharedOut<W> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<W: AsyncWrite + Unpin> SharedOut<W> {
    fn new(w: W) -> Self {
        Self(Arc::new(SharedState {
            out: Mutex::new(Out {
                w,
                queue: Vec::new(),
                waiting: Vec::new(),
            }),
            wrote: Arc::default(),
        }))
    }

    fn out(&self) -> std::sync::MutexGuard<'_, Out<W>> {
        self.0.out.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wrote(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.0.wrote)
    }

    /// Queue a whole message.
    fn queue(&self, message: &[u8]) {
        self.out().queue.extend_from_slice(message);
    }

    /// Write the queue out; cancel-safe (what is not written stays queued).
    fn poll_drain(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut out = self.out();
        let Out { w, queue, waiting } = &mut *out;
        while !queue.is_empty() {
            match Pin::new(&mut *w).poll_write(cx, queue) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.0.wrote.fetch_add(1, Ordering::Relaxed);
                    queue.drain(..n);
                }
                Poll::Ready(Err(e)) => {
                    waiting.drain(..).for_each(Waker::wake);
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => {
                    // The writer wakes only the last task that polled it.
                    if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                        waiting.push(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        }
        waiting.drain(..).for_each(Waker::wake);
        Pin::new(w).poll_flush(cx)
    }

    fn poll_shutdown_inner(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.out().w).poll_shutdown(cx)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SharedOut<W> {
    /// Takes all of `buf`: the SDK's writer hands over whole messages, and
    /// they go out by [`SharedOut::poll_drain`], written straight away when
    /// nothing is queued before them.
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let mut out = self.out();
        let Out { w, queue, .. } = &mut *out;
        let mut taken = 0;
        if queue.is_empty()
            && let Poll::Ready(written) = Pin::new(&mut *w).poll_write(cx, buf)
        {
            taken = written?;
            self.0.wrote.fetch_add(1, Ordering::Relaxed);
        }
        queue.extend_from_slice(&buf[taken..]);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_drain(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        self.poll_shutdown_inner(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::budget::MAX_IN_FLIGHT;
    use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, NumberOrString, ServerResult};
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    /// A pipe that takes four bytes, then makes the writer wait, and so on.
    struct Trickle {
        got: Vec<u8>,
        wait: bool,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.wait = !self.wait;
            if !self.wait {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(4);
            self.got.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// A message whose writing stops midway (its future dropped) is
    /// finished before the next, and a refusal queued meanwhile goes after
    /// it, whole.
    #[tokio::test]
    async fn messages_are_never_cut_or_interleaved() {
        let out = SharedOut::new(Trickle {
            got: Vec::new(),
            wait: true,
        });
        let mut sdk = out.clone();
        {
            let mut first = std::pin::pin!(async {
                sdk.write_all(b"hello world\n").await?;
                sdk.flush().await
            });
            let mut cx = Context::from_waker(Waker::noop());
            assert!(first.as_mut().poll(&mut cx).is_pending());
            assert!(first.as_mut().poll(&mut cx).is_pending());
        }
        out.queue(b"refused\n");
        sdk.write_all(b"next\n").await.unwrap();
        sdk.flush().await.unwrap();
        assert_eq!(out.out().w.got, b"hello world\nrefused\nnext\n");
    }

    /// A `ping` line of exactly `len` bytes (without its newline).
    fn ping(id: i64, len: usize) -> String {
        let head = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"_meta":{{"pad":""#);
        let tail = r#""}}}"#;
        format!("{head}{}{tail}\n", "x".repeat(len - head.len() - tail.len()))
    }

    /// A line may be MAX_LINE bytes with its newline; a longer one is
    /// dropped whole, and reading goes on after it.
    #[tokio::test]
    async fn lines_past_the_limit_are_dropped() {
        let (mut client, server_in) = tokio::io::duplex(1 << 16);
        let mut bounded = Bounded::new(server_in, tokio::io::sink());
        let writer = tokio::spawn(async move {
            for line in [
                ping(1, MAX_LINE - 1),
                ping(2, MAX_LINE),
                ping(3, 3 * MAX_LINE),
                ping(4, 80),
            ] {
                client.write_all(line.as_bytes()).await.unwrap();
            }
        });
        let mut ids = Vec::new();
        while let Some(message) = bounded.receive().await {
            if let JsonRpcMessage::Request(r) = message {
                ids.push(r.id.to_string());
                // Answered, so the next request fits the budget.
                let NumberOrString::Number(id) = r.id else {
                    unreachable!()
                };
                bounded.send(reply(id)).await.unwrap();
            }
        }
        writer.await.unwrap();
        assert_eq!(ids, ["1", "4"]);
    }

    fn reply(id: i64) -> TxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: NumberOrString::Number(id),
            result: ServerResult::empty(()),
        })
    }

    /// A client that sends requests faster than their answers are written
    /// (one that never reads, at worst) is refused past the limit, and the
    /// refusal is written before more is read; an answer written, or a
    /// cancellation, makes room again.
    #[tokio::test]
    async fn unfinished_requests_are_bounded() {
        use tokio::io::AsyncBufReadExt;
        let (mut client, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, replies) = tokio::io::duplex(1 << 20);
        let mut replies = tokio::io::BufReader::new(replies).lines();
        let mut bounded = Bounded::new(server_in, server_out);
        let call = |id: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"calculator","arguments":{{"expression":"1+1"}}}}}}"#
            ) + "\n"
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        client.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        assert!(bounded.receive().await.is_some());
        bounded.send(reply(0)).await.unwrap();
        assert!(replies.next_line().await.unwrap().unwrap().contains(r#""id":0"#));
        for id in 1..=MAX_IN_FLIGHT + 1 {
            client.write_all(call(id).as_bytes()).await.unwrap();
        }
        for _ in 1..=MAX_IN_FLIGHT {
            assert!(bounded.receive().await.is_some());
        }
        // The next is refused: nothing more comes until another line does.
        let waited = tokio::time::timeout(Duration::from_millis(200), bounded.receive()).await;
        assert!(waited.is_err(), "{waited:?}");
        let refused = replies.next_line().await.unwrap().unwrap();
        assert!(
            refused.contains(&format!(r#""id":{}"#, MAX_IN_FLIGHT + 1))
                && refused.contains("too many requests in flight"),
            "{refused}"
        );
        // An answer written makes room for one.
        bounded.send(reply(1)).await.unwrap();
        let next = MAX_IN_FLIGHT + 2;
        client.write_all(call(next).as_bytes()).await.unwrap();
        assert!(bounded.receive().await.is_some(), "a request after an answer");
        client.write_all(call(next + 1).as_bytes()).await.unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(200), bounded.receive()).await;
        assert!(waited.is_err(), "{waited:?}");
        // So does a cancellation (a cancelled request is never answered).
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":2}}\n")
            .await
            .unwrap();
        client.write_all(call(next + 2).as_bytes()).await.unwrap();
        assert!(bounded.receive().await.is_some(), "the cancellation");
        assert!(bounded.receive().await.is_some(), "a request after a cancellation");
    }
}
