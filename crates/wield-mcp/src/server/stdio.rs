//! The stdio transport: standard input and output as non-blocking pipes,
//! with a short poll of the input after each reply before going to sleep.
//!
//! An MCP client that talks to a server over stdio usually sends its next
//! request right after reading a reply (an agent running several tools, a
//! client listing then calling). Between the two, a server that sleeps in
//! `epoll_wait` has to be woken by the kernel, and on a virtual machine
//! waking an idle vCPU costs tens of microseconds: more than the rest of a
//! call. So after writing a reply the reader keeps reading the pipe directly
//! for a short window (the *poll window*, [`DEFAULT_POLL_US`] by default), staying runnable
//! so the runtime runs every other ready task in between; past the window,
//! or while a request is being handled, it waits on the runtime's reactor as
//! usual. A client that is idle costs the server at most one window of CPU
//! per reply.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// How long, in microseconds, the reader polls for the next request after a
/// reply unless told otherwise.
pub const DEFAULT_POLL_US: u64 = 200;

/// When the transport last wrote and last read, shared by its two halves.
#[derive(Debug)]
struct Activity {
    base: Instant,
    /// Nanoseconds since `base` of the last write; 0 = none yet.
    last_write: AtomicU64,
    /// Nanoseconds since `base` of the last read that returned data.
    last_read: AtomicU64,
}

impl Activity {
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// Whether the last event was a write less than `window` ago: the server
    /// has answered everything it read and the client may be about to send.
    fn polling(&self, window: Duration) -> bool {
        let write = self.last_write.load(Ordering::Relaxed);
        if write == 0 || write < self.last_read.load(Ordering::Relaxed) {
            return false;
        }
        let window = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        self.now().saturating_sub(write) < window
    }
}

/// The reading half: standard input as a non-blocking pipe.
#[derive(Debug)]
pub struct StdinPipe {
    pipe: pipe::Receiver,
    activity: Arc<Activity>,
    window: Duration,
}

/// The writing half: standard output as a non-blocking pipe.
#[derive(Debug)]
pub struct StdoutPipe {
    pipe: pipe::Sender,
    activity: Arc<Activity>,
}

/// Standard input and output as a polling pipe pair, when both are pipes
/// (what MCP clients give a server); `None` otherwise (a terminal, a file),
/// where the caller falls back to the SDK's blocking handles.
#[must_use]
pub fn stdio_pipes(window: Duration) -> Option<(StdinPipe, StdoutPipe)> {
    pipe_pair(&std::io::stdin(), &std::io::stdout(), window)
}

/// `read` and `write` as a polling pipe pair when both are pipes.
///
/// Both are reopened through `/proc/self/fd`, so `O_NONBLOCK` stays on the
/// transport's own open file descriptions and never leaks into the process's
/// standard streams or into the commands wield runs. Needs a runtime with
/// I/O enabled.
#[must_use]
pub(crate) fn pipe_pair(read: &impl AsFd, write: &impl AsFd, window: Duration) -> Option<(StdinPipe, StdoutPipe)> {
    let read = reopen(read, false)?;
    let write = reopen(write, true)?;
    let activity = Arc::new(Activity {
        base: Instant::now(),
        last_write: AtomicU64::new(0),
        last_read: AtomicU64::new(0),
    });
    Some((
        StdinPipe {
            pipe: pipe::Receiver::from_owned_fd(read).ok()?,
            activity: Arc::clone(&activity),
            window,
        },
        StdoutPipe {
            pipe: pipe::Sender::from_owned_fd(write).ok()?,
            activity,
        },
    ))
}

fn reopen(fd: &impl AsFd, write: bool) -> Option<OwnedFd> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

    let path = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(path)
        .ok()?;
    file.metadata()
        .ok()
        .filter(|m| m.file_type().is_fifo())
        .map(|_| file.into())
}

impl AsyncRead for StdinPipe {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        if let Poll::Ready(r) = Pin::new(&mut this.pipe).poll_read(cx, buf) {
            if buf.filled().len() > before {
                this.activity.last_read.store(this.activity.now(), Ordering::Relaxed);
            }
            return Poll::Ready(r);
        }
        // The reactor has no readiness for the pipe yet (and now holds our
        // waker). Within the poll window, read the pipe directly instead of
        // waiting for the reactor to notice, and stay runnable.
        if !this.activity.polling(this.window) {
            return Poll::Pending;
        }
        match rustix::io::read(this.pipe.as_fd(), buf.initialize_unfilled()) {
            Ok(n) => {
                buf.advance(n);
                if n > 0 {
                    this.activity.last_read.store(this.activity.now(), Ordering::Relaxed);
                }
                Poll::Ready(Ok(()))
            }
            Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }
}

impl AsyncWrite for StdoutPipe {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.pipe).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.activity.last_write.store(this.activity.now(), Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().pipe).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().pipe).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Wake, Waker};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn flags(fd: &impl AsFd) -> rustix::fs::OFlags {
        rustix::fs::fcntl_getfl(fd).unwrap()
    }

    /// Polls `reader` once with a counting waker: (ready, woken right away).
    fn poll_once(reader: &mut StdinPipe) -> (bool, bool) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        let mut bytes = [0u8; 64];
        let mut buf = ReadBuf::new(&mut bytes);
        let ready = Pin::new(reader).poll_read(&mut cx, &mut buf).is_ready();
        (ready, count.0.load(Ordering::SeqCst) > 0)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_reader_stays_runnable_for_the_window_after_a_reply_only() {
        let (in_rx, mut in_tx) = rustix::pipe::pipe().map(|(r, w)| (r, std::fs::File::from(w))).unwrap();
        let (out_rx, out_tx) = rustix::pipe::pipe().unwrap();
        let (mut reader, mut writer) = pipe_pair(&in_rx, &out_tx, Duration::from_secs(30)).unwrap();

        // Nothing written yet: an ordinary wait on the reactor.
        assert_eq!(poll_once(&mut reader), (false, false));

        // A request arrives and is read: still no polling (the reply is due).
        std::io::Write::write_all(&mut in_tx, b"{}\n").unwrap();
        let mut got = [0u8; 8];
        let n = reader.read(&mut got).await.unwrap();
        assert_eq!(&got[..n], b"{}\n");
        assert_eq!(poll_once(&mut reader), (false, false));

        // After the reply, the reader polls the pipe itself and stays runnable...
        writer.write_all(b"{\"ok\":1}\n").await.unwrap();
        assert_eq!(poll_once(&mut reader), (false, true));
        // ...and picks up the next request straight from the pipe.
        std::io::Write::write_all(&mut in_tx, b"[]\n").unwrap();
        assert_eq!(poll_once(&mut reader), (true, false));
        let mut reply = [0u8; 16];
        let n = rustix::io::read(&out_rx, &mut reply).unwrap();
        assert_eq!(&reply[..n], b"{\"ok\":1}\n");

        // O_NONBLOCK is the transport's own: the original descriptors keep blocking.
        assert!(!flags(&in_rx).contains(rustix::fs::OFlags::NONBLOCK));
        assert!(!flags(&out_tx).contains(rustix::fs::OFlags::NONBLOCK));
        assert!(flags(&reader.pipe).contains(rustix::fs::OFlags::NONBLOCK));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn no_window_means_no_polling() {
        let (in_rx, _in_tx) = rustix::pipe::pipe().unwrap();
        let (_out_rx, out_tx) = rustix::pipe::pipe().unwrap();
        let (mut reader, mut writer) = pipe_pair(&in_rx, &out_tx, Duration::ZERO).unwrap();
        writer.write_all(b"{}\n").await.unwrap();
        assert_eq!(poll_once(&mut reader), (false, false));

        // A window that has passed: back to the reactor.
        let (mut reader, mut writer) = pipe_pair(&in_rx, &out_tx, Duration::from_millis(1)).unwrap();
        writer.write_all(b"{}\n").await.unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(poll_once(&mut reader), (false, false));
    }

    #[test]
    fn files_and_terminals_are_not_pipes() {
        let file = tempfile::tempfile().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = rt.enter();
        assert!(pipe_pair(&file, &file, Duration::from_micros(DEFAULT_POLL_US)).is_none());
    }
}
