//! The request budget of one session, the same over stdio and HTTP: at
//! most [`MAX_IN_FLIGHT`] requests not answered yet, and [`MAX_HELD`] bytes
//! of them. Past either, a request is refused with [`OverBudget::error`],
//! so a client that sends calls faster than they run cannot make the
//! server hold more and more memory.

use std::collections::HashMap;

use rmcp::ErrorData;
use rmcp::model::RequestId;

/// Requests of one session in flight at most (calls running or waiting for
/// their turn, and their replies not yet written), over stdio and HTTP.
pub(crate) const MAX_IN_FLIGHT: usize = 32;

/// Bytes of one session's requests in flight at most; one request of any
/// size the transport reads is always taken.
pub(crate) const MAX_HELD: usize = 8 << 20;

/// The requests of a session in flight, each with how many hold it (the
/// reply being sent, the call it runs) and its size.
#[derive(Debug, Default)]
pub(crate) struct RequestBudget {
    in_flight: HashMap<RequestId, Held>,
    /// The bytes of the requests in flight.
    held: usize,
}

#[derive(Debug)]
struct Held {
    holders: usize,
    size: usize,
}

/// A request refused because its session holds as many requests, or bytes
/// of them, in flight as it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// The requests in flight.
    pub requests: usize,
    /// Their bytes.
    pub held: usize,
}

impl OverBudget {
    /// The answer to the refused request: a server error (`-32000`) saying
    /// what to do.
    pub(crate) fn error(self) -> ErrorData {
        ErrorData::new(
            rmcp::model::ErrorCode(-32000),
            format!(
                "too many requests in flight in this session: {} not answered yet, {} KiB of them \
                 (a session may have {MAX_IN_FLIGHT}, and {} MiB); wait for answers before sending more, then retry",
                self.requests,
                self.held.div_ceil(1024),
                MAX_HELD >> 20
            ),
            None,
        )
    }
}

impl RequestBudget {
    /// Whether request `id` is in flight.
    pub(crate) fn contains(&self, id: &RequestId) -> bool {
        self.in_flight.contains_key(id)
    }

    /// Take request `id` of `size` bytes, held once, unless the session is
    /// past its limits: [`MAX_IN_FLIGHT`] requests, or [`MAX_HELD`] bytes
    /// once one is held. A request taken again under the same id counts
    /// once, with its new size.
    pub(crate) fn take(&mut self, id: RequestId, size: usize) -> Result<(), OverBudget> {
        let requests = self.in_flight.len();
        if requests >= MAX_IN_FLIGHT || (requests > 0 && self.held + size > MAX_HELD) {
            return Err(OverBudget {
                requests,
                held: self.held,
            });
        }
        if let Some(old) = self.in_flight.insert(id, Held { holders: 1, size }) {
            self.held -= old.size;
        }
        self.held += size;
        Ok(())
    }

    /// Hold request `id` once more (as its running call does), whether or
    /// not it was taken.
    pub(crate) fn hold(&mut self, id: RequestId) {
        self.in_flight.entry(id).or_insert(Held { holders: 0, size: 0 }).holders += 1;
    }

    /// Let go of request `id` once; once nothing holds it, it no longer
    /// counts.
    pub(crate) fn release(&mut self, id: &RequestId) {
        if let Some(held) = self.in_flight.get_mut(id) {
            held.holders = held.holders.saturating_sub(1);
            if held.holders == 0 {
                self.held = self.held.saturating_sub(held.size);
                self.in_flight.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn id(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    #[test]
    fn requests_past_the_count_are_refused_until_one_is_released() {
        let mut budget = RequestBudget::default();
        for n in 0..MAX_IN_FLIGHT as i64 {
            budget.take(id(n), 10).unwrap();
        }
        let over = budget.take(id(99), 10).unwrap_err();
        assert_eq!(
            over,
            OverBudget {
                requests: MAX_IN_FLIGHT,
                held: MAX_IN_FLIGHT * 10
            }
        );
        assert_eq!(over.error().code.0, -32000);
        assert!(
            over.error().message.contains("32 not answered yet"),
            "{}",
            over.error().message
        );
        budget.release(&id(0));
        assert!(!budget.contains(&id(0)));
        budget.take(id(99), 10).unwrap();
    }

    #[test]
    fn bytes_past_the_limit_are_refused_but_one_request_of_any_size_is_taken() {
        let mut budget = RequestBudget::default();
        budget.take(id(1), MAX_HELD * 2).unwrap();
        assert!(budget.take(id(2), 1).is_err());
        budget.release(&id(1));
        budget.take(id(2), MAX_HELD - 1).unwrap();
        budget.take(id(3), 1).unwrap();
        assert!(budget.take(id(4), 1).is_err());
    }

    #[test]
    fn a_request_counts_until_every_holder_lets_go() {
        let mut budget = RequestBudget::default();
        budget.take(id(1), 100).unwrap();
        budget.hold(id(1));
        budget.release(&id(1));
        assert!(budget.contains(&id(1)));
        budget.release(&id(1));
        assert!(!budget.contains(&id(1)));
        // Taken again under the same id: counted once, with the new size.
        budget.take(id(2), 100).unwrap();
        budget.take(id(2), 50).unwrap();
        assert_eq!(budget.held, 50);
        assert_eq!(budget.in_flight.len(), 1);
    }
}
