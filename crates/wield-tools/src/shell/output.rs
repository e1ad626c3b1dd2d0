//! Shaping a command's output for the model, and streaming it while the
//! command runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use wield_core::{Context, Stream, human_duration};
use wield_sandbox::process::{Exit, OutputCallback, OutputStream, RunOutput};

/// How often output deltas are sent while a command runs.
pub(crate) const STREAM_INTERVAL: Duration = Duration::from_millis(200);

/// Most bytes per stream held between two deltas; more is dropped from the
/// stream (never from the result) with a note.
const MAX_PENDING: usize = 64 * 1024;

/// stdout, then stderr under a label.
pub(crate) fn body(out: &RunOutput) -> String {
    let mut text = out.stdout.to_text();
    let err = out.stderr.to_text();
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&err);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// `exit code: N`, `timed out after 30s`, `cancelled after 2.5s`,
/// `killed by signal 9 (SIGKILL)`.
pub(crate) fn status_line(out: &RunOutput, timeout: Duration) -> String {
    if out.timed_out {
        return format!("timed out after {}", human_duration(timeout));
    }
    if out.cancelled {
        return format!("cancelled after {}", human_duration(out.duration));
    }
    match out.exit {
        Exit::Code(c) => format!("exit code: {c}"),
        signal @ Exit::Signal(_) => signal.to_string(),
    }
}

#[derive(Default)]
struct Pending {
    bytes: [Vec<u8>; 2],
    dropped: [u64; 2],
    /// Bytes without a newline left over from the previous tick: sent at
    /// the next one even without a newline (a progress line).
    stale: [bool; 2],
}

/// The task of [`Streamer::start`]; stops it when dropped. A detached
/// ticker would live forever, and with it the call's context and the
/// session that context holds (and that session's background processes).
pub(crate) struct Ticker(tokio::task::JoinHandle<()>);

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Collects output as it arrives and sends it as `OutputDelta` events,
/// whole lines at a time, every [`STREAM_INTERVAL`].
pub(crate) struct Streamer {
    pending: Arc<Mutex<Pending>>,
    ctx: Context,
}

fn lock(m: &Mutex<Pending>) -> std::sync::MutexGuard<'_, Pending> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Streamer {
    pub(crate) fn new(ctx: &Context) -> Self {
        Self {
            pending: Arc::default(),
            ctx: ctx.clone(),
        }
    }

    /// The runner's output listener.
    pub(crate) fn callback(&self) -> OutputCallback {
        let pending = Arc::clone(&self.pending);
        Arc::new(move |stream: OutputStream, chunk: &[u8]| {
            let i = index(stream);
            let mut p = lock(&pending);
            let room = MAX_PENDING.saturating_sub(p.bytes[i].len());
            let take = room.min(chunk.len());
            p.bytes[i].extend_from_slice(&chunk[..take]);
            p.dropped[i] += (chunk.len() - take) as u64;
        })
    }

    /// Send what is ready every interval until the returned guard is
    /// dropped (when the command ends, or when the call is abandoned:
    /// cancelled or timed out with its future dropped mid-run).
    pub(crate) fn start(self: &Arc<Self>) -> Ticker {
        let me = Arc::clone(self);
        Ticker(tokio::spawn(async move {
            let mut tick = tokio::time::interval(STREAM_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                me.flush(false);
            }
        }))
    }

    /// Send pending output: complete lines (or everything when `last`, or a
    /// line that has waited a whole tick).
    pub(crate) fn flush(&self, last: bool) {
        for (i, stream) in [(0, Stream::Stdout), (1, Stream::Stderr)] {
            let (text, dropped) = {
                let mut guard = lock(&self.pending);
                let Pending { bytes, dropped, stale } = &mut *guard;
                let bytes = &mut bytes[i];
                let cut = if last || stale[i] {
                    bytes.len()
                } else {
                    bytes.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1)
                };
                let ready: Vec<u8> = bytes.drain(..cut).collect();
                let (text, rest) = decode(&ready, last);
                // An incomplete UTF-8 sequence waits for its other bytes.
                let mut keep = rest.to_vec();
                keep.extend_from_slice(bytes);
                *bytes = keep;
                stale[i] = !bytes.is_empty();
                (text, std::mem::take(&mut dropped[i]))
            };
            if !text.is_empty() {
                self.ctx.emit_output(stream, &text);
            }
            if dropped > 0 {
                self.ctx
                    .emit_output(stream, &format!("[... {dropped} bytes not streamed ...]\n"));
            }
        }
    }
}

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

/// Text from bytes, invalid sequences replaced; an incomplete sequence at
/// the end is returned separately unless `last`.
fn decode(bytes: &[u8], last: bool) -> (String, &[u8]) {
    let mut text = String::new();
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                text.push_str(s);
                return (text, &[]);
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    None if !last => return (text, after),
                    None => {
                        text.push('\u{FFFD}');
                        return (text, &[]);
                    }
                    Some(n) => {
                        text.push('\u{FFFD}');
                        rest = &after[n..];
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_keeps_incomplete_sequences_for_later() {
        let e = "é".as_bytes();
        let bytes = [b'a', e[0]];
        let (text, rest) = decode(&bytes, false);
        assert_eq!((text.as_str(), rest), ("a", &e[..1]));
        let (text, rest) = decode(&[b'a', 0xff, b'b'], false);
        assert_eq!((text.as_str(), rest.len()), ("a\u{FFFD}b", 0));
        let (text, _) = decode(&[e[0]], true);
        assert_eq!(text, "\u{FFFD}");
    }
}
