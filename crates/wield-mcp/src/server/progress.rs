//! `OutputDelta` and `Progress` events of a call as
//! `notifications/progress`, for calls whose request carried a progress
//! token.
//!
//! The executor emits events synchronously from wherever the tool runs; the
//! router hands each piece of output to a small bounded queue per call, and
//! one task per call sends the notifications in order. A client that reads
//! slowly loses progress messages (the queue drops when full), never memory:
//! a call holds at most [`QUEUE`] messages of at most [`MAX_MESSAGE`] bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use wield_core::{Event, EventListener};

/// Messages waiting to be sent for one call.
pub const QUEUE: usize = 64;
/// Longest progress message; longer output pieces are cut.
pub const MAX_MESSAGE: usize = 4096;
/// How long a finished call waits for its last notifications to go out.
const DRAIN: Duration = Duration::from_secs(2);

#[derive(Default)]
pub struct ProgressRouter {
    calls: Mutex<HashMap<String, mpsc::Sender<Note>>>,
}

/// What a call tells of itself: a piece of its output, or how far it has
/// got (a bridged server's progress, passed on as it is).
enum Note {
    Output(String),
    Progress {
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
}

impl EventListener for ProgressRouter {
    fn on_event(&self, event: &Event) {
        let (call_id, note) = match event {
            Event::OutputDelta { call_id, text, .. } => (call_id, Note::Output(cut(text))),
            // Something the person should know although it was allowed.
            Event::Notice {
                call_id, kind, message, ..
            } => (call_id, Note::Output(cut(&format!("[{kind}] {message}\n")))),
            Event::Progress {
                call_id,
                progress,
                total,
                message,
                ..
            } => (
                call_id,
                Note::Progress {
                    progress: *progress,
                    total: *total,
                    message: message.as_deref().map(cut),
                },
            ),
            _ => return,
        };
        let calls = self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(tx) = calls.get(call_id) {
            let _ = tx.try_send(note);
        }
    }
}

fn cut(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl ProgressRouter {
    /// Start forwarding the output of `call_id` to `peer` under `token`.
    pub fn start(self: &Arc<Self>, call_id: &str, token: ProgressToken, peer: Peer<RoleServer>) -> ProgressStream {
        let (tx, mut rx) = mpsc::channel::<Note>(QUEUE);
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(call_id.to_owned(), tx);
        let task = tokio::spawn(async move {
            // `progress` must grow with every notification: a piece of
            // output counts one (its total unknown); a bridged server's
            // progress goes as it is, unless it does not grow.
            let mut last: Option<f64> = None;
            while let Some(note) = rx.recv().await {
                let param = match note {
                    Note::Output(message) => {
                        let next = last.map_or(1.0, |l| l + 1.0);
                        last = Some(next);
                        ProgressNotificationParam::new(token.clone(), next).with_message(message)
                    }
                    Note::Progress {
                        progress,
                        total,
                        message,
                    } => {
                        if !progress.is_finite() || last.is_some_and(|l| progress <= l) {
                            continue;
                        }
                        last = Some(progress);
                        let mut param = ProgressNotificationParam::new(token.clone(), progress);
                        param.total = total.filter(|t| t.is_finite());
                        param.message = message;
                        param
                    }
                };
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressStream {
            router: Arc::clone(self),
            call_id: call_id.to_owned(),
            task: Some(task),
        }
    }
}

/// The forwarding of one call; [`ProgressStream::finish`] it before sending
/// the call's result so notifications never arrive after it. Dropped
/// unfinished (the request went away), it stops forwarding.
pub struct ProgressStream {
    router: Arc<ProgressRouter>,
    call_id: String,
    task: Option<JoinHandle<()>>,
}

impl ProgressStream {
    fn stop(&self) {
        self.router
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.call_id);
    }

    pub async fn finish(mut self) {
        // Removing the sender ends the task once it has sent what is queued.
        self.stop();
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(DRAIN, task).await.is_err() {
                abort.abort();
            }
        }
    }
}

impl Drop for ProgressStream {
    fn drop(&mut self) {
        self.stop();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let s = "é".repeat(MAX_MESSAGE);
        let c = cut(&s);
        assert!(c.len() <= MAX_MESSAGE + "…".len());
        assert!(c.ends_with('…'));
        assert_eq!(cut("short"), "short");
    }
}
