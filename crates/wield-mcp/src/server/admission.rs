//! Which of a stdio client's lines the session takes: the strict parse
//! ([`super::incoming`]), the 2025-11-25 lifecycle, the refusal of an id
//! still in use, and the request budget ([`RequestBudget`], the same type
//! the HTTP sessions count with).

use std::collections::HashSet;

use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::RxJsonRpcMessage;
use rmcp::{ErrorData, RoleServer};

use super::budget::RequestBudget;
use super::incoming::{Incoming, Lifecycle, lifecycle, opens_session, parse_line};
use crate::wire::{ReplyId, reply_id};

/// What becomes of one line.
#[derive(Debug)]
pub(crate) enum Admit {
    /// The SDK reads it: the line itself, or this text in its place (a
    /// string cut inside a surrogate pair repaired, an answer that gives a
    /// member twice made an error).
    Pass(Option<Vec<u8>>),
    /// Nothing to act on.
    Skip,
    /// Answer with this error.
    Refuse(Option<ReplyId>, ErrorData),
}

/// The state of one session's input.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    /// `initialize` has come: the session's requests may follow.
    initialized: bool,
    /// The ids of the client's requests not answered yet: a request that
    /// reuses one is refused (the SDK would answer only one of the two). A
    /// request the client cancels stays here until its (cancelled) answer
    /// goes out: the SDK would take that answer for a new request's.
    in_flight: HashSet<RequestId>,
    /// The requests taken and not finished (their answers not written yet,
    /// nor cancelled), with their sizes: past the session's limits a
    /// request is refused.
    unfinished: RequestBudget,
}

impl Admission {
    /// Take `line` (without its newline), or say why not.
    pub(crate) fn admit(&mut self, line: &[u8]) -> Admit {
        let (incoming, text) = parse_line(line);
        let message = match incoming {
            Incoming::Message(message) => message,
            Incoming::Skip => return Admit::Skip,
            Incoming::Refuse(id, error) => return Admit::Refuse(id, error),
        };
        match lifecycle(&message, self.initialized) {
            Lifecycle::Pass => {}
            Lifecycle::Drop => return Admit::Skip,
            Lifecycle::Refuse(id, error) => return Admit::Refuse(Some(reply_id(id)), error),
        }
        if let Some(id) = self.reuses_id(&message) {
            return Admit::Refuse(
                Some(reply_id(id.clone())),
                ErrorData::invalid_request(
                    format!(
                        "request id {id} is already in use by a request that has not been answered yet; give each \
                         request in flight an id of its own"
                    ),
                    None,
                ),
            );
        }
        if let Some((id, error)) = self.over_budget(&message, line.len()) {
            self.in_flight.remove(&id);
            return Admit::Refuse(Some(reply_id(id)), error);
        }
        self.initialized |= opens_session(&message);
        // An error the parse made of an answer is what the SDK must read.
        let text = match &*message {
            JsonRpcMessage::Error(_) if text.is_none() => serde_json::to_vec(&*message).ok(),
            _ => text,
        };
        Admit::Pass(text)
    }

    /// Whether `message` is a request whose id another request in flight
    /// has; a request is in flight from here until its answer is sent.
    fn reuses_id(&mut self, message: &RxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
        let JsonRpcMessage::Request(request) = message else {
            return None;
        };
        (!self.in_flight.insert(request.id.clone())).then(|| request.id.clone())
    }

    /// Whether the request `message` (of `size` bytes) is refused because
    /// the session has as many requests, or bytes of them, unfinished as it
    /// may; when not, it is counted until its answer is written. A
    /// cancellation ends the count of the request it names (which is never
    /// answered).
    fn over_budget(&mut self, message: &RxJsonRpcMessage<RoleServer>, size: usize) -> Option<(RequestId, ErrorData)> {
        match message {
            JsonRpcMessage::Request(request) => {
                if let Err(over) = self.unfinished.take(request.id.clone(), size) {
                    return Some((request.id.clone(), over.error()));
                }
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.unfinished.release(id);
                }
            }
            _ => {}
        }
        None
    }

    /// The answer to request `id` is going out: its id is free again.
    pub(crate) fn answering(&mut self, id: &RequestId) {
        self.in_flight.remove(id);
    }

    /// The answer to request `id` is written (or given up on): it no longer
    /// counts.
    pub(crate) fn answered(&mut self, id: &RequestId) {
        self.unfinished.release(id);
    }
}
