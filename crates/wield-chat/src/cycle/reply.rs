//! A reply streamed into the document as it arrives. Before each write the
//! file is read again: wield appends only after what it wrote itself, so
//! a person's edits elsewhere stay; if the person changed what wield
//! wrote, the reply stops going into the document and goes, whole, to a
//! file beside it.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::file;
use super::phases::reply_header;
use super::safe::SafeText;

pub(crate) struct ReplyWriter<'p> {
    path: &'p Path,
    /// The reply as the file holds it (from its header on).
    written: String,
    /// The reply not yet written.
    pending: String,
    /// Where the reply went instead, once the person changed it.
    diverted: Option<PathBuf>,
    safe: SafeText,
    last: Instant,
    interval: Duration,
}

/// Least time between two writes of a streaming reply.
const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// How often a streaming reply is looked at for what to write.
pub(crate) const TICK: Duration = Duration::from_millis(25);

impl<'p> ReplyWriter<'p> {
    pub(crate) fn new(path: &'p Path) -> Self {
        Self {
            path,
            written: String::new(),
            pending: String::new(),
            diverted: None,
            safe: SafeText::default(),
            last: Instant::now().checked_sub(MIN_INTERVAL).unwrap_or_else(Instant::now),
            interval: MIN_INTERVAL,
        }
    }

    /// A piece of the model's text.
    pub(crate) fn text(&mut self, delta: &str) {
        self.safe.push(delta, &mut self.pending);
    }

    /// Writes what is pending when the last write is long enough ago.
    pub(crate) fn flush_if_due(&mut self) -> io::Result<()> {
        if self.pending.is_empty() || self.last.elapsed() < self.interval {
            return Ok(());
        }
        self.flush(false)
    }

    /// The end of the model's text (a code block it left open closed).
    pub(crate) fn end_text(&mut self) {
        self.safe.finish(&mut self.pending);
    }

    /// wield's own text (tool uses, thinking, markers), as it is.
    pub(crate) fn raw(&mut self, text: &str) {
        self.pending.push_str(text);
    }

    /// The reply so far: what is written and what is not.
    pub(crate) fn whole(&self) -> String {
        format!("{}{}", self.written, self.pending)
    }

    /// Whether any of the model's text or wield's came yet.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.is_empty() && self.pending.is_empty()
    }

    pub(crate) fn diverted(&self) -> Option<&Path> {
        self.diverted.as_deref()
    }

    /// Writes what is pending into the document (or, once diverted, the
    /// whole reply beside it). `durable` syncs it to disk.
    pub(crate) fn flush(&mut self, durable: bool) -> io::Result<()> {
        self.last = Instant::now();
        if let Some(aside) = &self.diverted {
            if durable {
                file::write(aside, self.whole().trim_start_matches('\n'), true)?;
            }
            return Ok(());
        }
        if self.pending.is_empty() && !self.written.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        for _ in 0..10 {
            let current = file::read(self.path)?;
            let header = if self.written.is_empty() {
                reply_header(&current)
            } else if current.ends_with(&self.written) {
                String::new()
            } else {
                // The person changed the reply: the rest goes beside it.
                let aside = aside_path(self.path, "reply");
                self.diverted = Some(aside.clone());
                file::write(&aside, self.whole().trim_start_matches('\n'), true)?;
                return Ok(());
            };
            let mut new = String::with_capacity(current.len() + header.len() + self.pending.len());
            new.push_str(&current);
            new.push_str(&header);
            new.push_str(&self.pending);
            if file::replace(self.path, &current, &new, durable)? {
                self.written.push_str(&header);
                self.written.push_str(&self.pending);
                self.pending.clear();
                break;
            }
        }
        // A large document is written less often.
        self.interval = MIN_INTERVAL.max(started.elapsed() * 10);
        Ok(())
    }
}

/// `FILE.WHAT` beside the document (`FILE.reply`), or `FILE.WHAT.N` when
/// that exists already: an earlier one is never overwritten.
pub fn aside_path(path: &Path, what: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{what}"));
    let first = path.with_file_name(&name);
    let mut candidate = first.clone();
    let mut n = 1;
    while std::fs::symlink_metadata(&candidate).is_ok() {
        candidate = PathBuf::from(format!("{}.{n}", first.display()));
        n += 1;
    }
    candidate
}
