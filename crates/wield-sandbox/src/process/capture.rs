//! Bounded capture of one output stream.
//!
//! A stream is read as it arrives from a non-blocking pipe. The first
//! `head` bytes are kept, and optionally the last `tail` bytes in a ring;
//! everything between is counted and dropped. When nothing needs the bytes
//! past the head (no tail, no listener), they are spliced from the pipe to
//! `/dev/null` inside the kernel, so a command printing gigabytes costs
//! neither memory nor a copy through user space.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::pipe::SpliceFlags;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio_util::sync::CancellationToken;

/// Which stream a piece of output came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Called with each piece of output as it arrives, before any capping.
pub type OutputCallback = Arc<dyn Fn(OutputStream, &[u8]) + Send + Sync>;

/// How much of a stream to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CaptureLimit {
    /// Bytes kept from the start.
    pub head: usize,
    /// Bytes kept from the end (0: none).
    pub tail: usize,
}

impl CaptureLimit {
    /// Keep the first `bytes` only.
    pub const fn head(bytes: usize) -> Self {
        Self { head: bytes, tail: 0 }
    }

    /// Keep the first `head` and the last `tail` bytes.
    pub const fn head_and_tail(head: usize, tail: usize) -> Self {
        Self { head, tail }
    }
}

impl Default for CaptureLimit {
    /// 1 MiB from the start.
    fn default() -> Self {
        Self::head(1 << 20)
    }
}

/// What was kept of one stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes, up to the head limit.
    pub head: Vec<u8>,
    /// The last bytes, up to the tail limit, when more than the head arrived.
    pub tail: Vec<u8>,
    /// Every byte the stream carried.
    pub total: u64,
}

impl Captured {
    /// Bytes counted but not kept.
    pub fn omitted(&self) -> u64 {
        self.total
            .saturating_sub(self.head.len() as u64)
            .saturating_sub(self.tail.len() as u64)
    }

    /// Whether everything the stream carried was kept.
    pub fn is_complete(&self) -> bool {
        self.omitted() == 0
    }

    /// Head and tail as text (invalid UTF-8 replaced), with a marker where
    /// bytes were left out.
    pub fn to_text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let omitted = self.omitted();
        if omitted > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!(
                "[... {omitted} bytes omitted: the output exceeded the capture limit ...]\n"
            ));
        }
        text.push_str(&String::from_utf8_lossy(&self.tail));
        text
    }
}

struct Collector {
    limit: CaptureLimit,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Collector {
    fn new(limit: CaptureLimit) -> Self {
        Self {
            limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn head_full(&self) -> bool {
        self.head.len() >= self.limit.head
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if !self.head_full() {
            let take = (self.limit.head - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        let cap = self.limit.tail;
        if cap == 0 || bytes.is_empty() {
            return;
        }
        if bytes.len() >= cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    fn count(&mut self, n: usize) {
        self.total += n as u64;
    }

    fn finish(self) -> Captured {
        Captured {
            head: self.head,
            tail: self.tail.into(),
            total: self.total,
        }
    }
}

/// Read `fd` (the non-blocking read end of a pipe) to its end or until
/// `stop` is cancelled, keeping what `limit` allows.
pub(crate) async fn read_stream(
    fd: OwnedFd,
    stream: OutputStream,
    limit: CaptureLimit,
    on_output: Option<OutputCallback>,
    stop: CancellationToken,
) -> io::Result<Captured> {
    // SAFETY: an `OwnedFd` keeps its descriptor open and unchanged until it
    // is dropped, which happens only with the `AsyncFd` that owns it.
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
    let mut collector = Collector::new(limit);
    let mut buf = vec![0u8; 1 << 20];
    // Only opened when the first byte past the head arrives and nobody
    // needs it; a failed open or an unsupported splice falls back to reading.
    let mut sink: Option<OwnedFd> = None;
    let mut splice_ok = limit.tail == 0 && on_output.is_none();
    loop {
        let mut guard = tokio::select! {
            biased;
            g = fd.readable() => g?,
            () = stop.cancelled() => break,
        };
        let drain = splice_ok && collector.head_full();
        if drain && sink.is_none() {
            sink = open_null().ok();
            splice_ok = sink.is_some();
        }
        let res = guard.try_io(|inner| match (&sink, drain && splice_ok) {
            (Some(null), true) => rustix::pipe::splice(
                inner.get_ref(),
                None,
                null,
                None,
                1 << 20,
                SpliceFlags::NONBLOCK | SpliceFlags::MOVE,
            )
            .map(|n| (n, true))
            .map_err(io::Error::from),
            _ => rustix::io::read(inner.get_ref(), &mut buf)
                .map(|n| (n, false))
                .map_err(io::Error::from),
        });
        match res {
            Err(_would_block) => continue,
            Ok(Ok((0, _))) => break,
            Ok(Ok((n, true))) => collector.count(n),
            Ok(Ok((n, false))) => {
                let chunk = &buf[..n];
                if let Some(cb) = &on_output {
                    cb(stream, chunk);
                }
                collector.push(chunk);
            }
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) && drain => splice_ok = false,
            Ok(Err(e)) => return Err(e),
        }
    }
    Ok(collector.finish())
}

fn open_null() -> io::Result<OwnedFd> {
    let file = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
    Ok(OwnedFd::from(file))
}

/// A pipe for a child's output: the read end non-blocking and enlarged (a
/// larger pipe means fewer wake-ups for chatty commands), both ends
/// close-on-exec so concurrent spawns never leak them into other children.
pub(crate) fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    rustix::io::ioctl_fionbio(&read, true)?;
    // Best effort: the system may cap pipe sizes lower.
    let _ = rustix::pipe::fcntl_setpipe_size(read.as_fd(), 1 << 20);
    Ok((read, write))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_only_counts_the_rest() {
        let mut c = Collector::new(CaptureLimit::head(4));
        c.push(b"abcdef");
        c.push(b"gh");
        let cap = c.finish();
        assert_eq!(cap.head, b"abcd");
        assert!(cap.tail.is_empty());
        assert_eq!(cap.total, 8);
        assert_eq!(cap.omitted(), 4);
        assert!(cap.to_text().contains("4 bytes omitted"));
    }

    #[test]
    fn tail_ring_keeps_the_last_bytes() {
        let mut c = Collector::new(CaptureLimit::head_and_tail(2, 3));
        for chunk in [&b"ab"[..], b"cd", b"e", b"fghij", b"k"] {
            c.push(chunk);
        }
        let cap = c.finish();
        assert_eq!(cap.head, b"ab");
        assert_eq!(cap.tail, b"ijk");
        assert_eq!(cap.total, 11);
        assert_eq!(cap.omitted(), 6);
    }

    #[test]
    fn complete_output_has_no_marker() {
        let mut c = Collector::new(CaptureLimit::head_and_tail(10, 10));
        c.push(b"hello\n");
        let cap = c.finish();
        assert!(cap.is_complete());
        assert_eq!(cap.to_text(), "hello\n");
    }
}
