//! The end of what a local server wrote to stderr, kept to explain why it
//! failed or exited.
//!
//! Read in fixed chunks, never a line at a time: a server that writes
//! hundreds of megabytes without a newline must not make wield hold them.
//! Whatever the input, what is kept is at most [`STDERR_LINES`] lines of
//! at most [`STDERR_LINE_BYTES`] bytes each.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncReadExt;

use super::process::Health;

/// How many of the last lines are kept.
const STDERR_LINES: usize = 20;
/// How much of each line is kept; the rest is cut and marked `…`.
const STDERR_LINE_BYTES: usize = 400;
/// How much is read at a time.
const CHUNK: usize = 8 * 1024;

/// The last lines a server wrote to stderr.
#[derive(Default)]
pub struct StderrTail {
    tail: Mutex<Tail>,
    /// Cancelled when the server's stderr has closed (read to its end).
    closed: tokio_util::sync::CancellationToken,
}

impl StderrTail {
    /// Read `stderr` into `health`'s tail until it closes.
    pub fn read(health: Arc<Health>, mut stderr: tokio::process::ChildStderr) {
        tokio::spawn(async move {
            let mut buf = vec![0u8; CHUNK];
            while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                health
                    .stderr
                    .tail
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(&buf[..n]);
            }
            health.stderr.closed.cancel();
        });
    }

    /// Resolves once the server's stderr has been read to its end.
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// `; its stderr ends with: …` with the kept lines, or nothing.
    pub fn suffix(&self) -> String {
        let text = self.tail.lock().unwrap_or_else(PoisonError::into_inner).lines();
        let text: Vec<&str> = text
            .iter()
            .map(String::as_str)
            .filter(|s| !s.trim().is_empty())
            .collect();
        if text.is_empty() {
            String::new()
        } else {
            // What a server writes is not wield's to paint the terminal
            // with: escape sequences and other controls are shown escaped.
            format!(
                "; its stderr ends with: {}",
                wield_core::approval::printable(&text.join(" | "))
            )
        }
    }
}

/// Complete lines, and the start of the one being written.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    partial: Vec<u8>,
    /// The partial line was longer than what is kept of it.
    cut: bool,
}

impl Tail {
    fn push(&mut self, mut bytes: &[u8]) {
        while let Some(i) = memchr::memchr(b'\n', bytes) {
            self.extend(&bytes[..i]);
            let line = self.take_partial();
            if self.lines.len() == STDERR_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(line);
            bytes = &bytes[i + 1..];
        }
        self.extend(bytes);
    }

    fn extend(&mut self, bytes: &[u8]) {
        let room = STDERR_LINE_BYTES - self.partial.len();
        if bytes.len() > room {
            self.cut = true;
        }
        self.partial.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    /// The partial line as text, cut at a character boundary and marked
    /// when it was longer.
    fn partial_text(&self) -> String {
        let mut bytes = self.partial.as_slice();
        if self.cut
            && let Err(e) = std::str::from_utf8(bytes)
            && e.error_len().is_none()
        {
            // Only the last character was cut in two.
            bytes = &bytes[..e.valid_up_to()];
        }
        let mut text = String::from_utf8_lossy(bytes).trim_end_matches('\r').to_owned();
        if self.cut {
            text.push('…');
        }
        text
    }

    fn take_partial(&mut self) -> String {
        let text = self.partial_text();
        self.partial.clear();
        self.cut = false;
        text
    }

    /// The kept lines, with the partial one (a server that dies mid-line
    /// often says why there).
    fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.lines.iter().cloned().collect();
        if !self.partial.is_empty() {
            lines.push(self.partial_text());
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: stderr was read a line at a time, so a server writing
    /// without newlines grew wield's memory by as much as it wrote.
    #[test]
    fn a_flood_without_newlines_keeps_a_bounded_tail() {
        let mut tail = Tail::default();
        let chunk = vec![b'y'; CHUNK];
        for _ in 0..(64 << 20) / CHUNK {
            tail.push(&chunk);
        }
        assert_eq!(tail.partial.len(), STDERR_LINE_BYTES);
        assert!(
            tail.partial.capacity() <= 2 * STDERR_LINE_BYTES,
            "{}",
            tail.partial.capacity()
        );
        let lines = tail.lines();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].ends_with('…') && lines[0].len() == STDERR_LINE_BYTES + '…'.len_utf8());

        tail.push(b"\nfatal: cannot open the database\r\n");
        for i in 0..100 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        assert_eq!(tail.lines.len(), STDERR_LINES);
        assert_eq!(tail.lines.back().unwrap(), "line 99");
    }

    #[test]
    fn lines_are_split_across_chunks_and_cut_on_a_character() {
        let mut tail = Tail::default();
        tail.push(b"cannot op");
        tail.push(b"en the database\nand then");
        assert_eq!(tail.lines(), ["cannot open the database", "and then"]);

        let mut tail = Tail::default();
        let mut long = "a".repeat(STDERR_LINE_BYTES - 1);
        long.push('é');
        long.push('\n');
        tail.push(long.as_bytes());
        let line = &tail.lines()[0];
        assert!(line.ends_with("a…"), "{line}");
        assert!(!line.contains('\u{FFFD}'), "{line}");
    }
}
