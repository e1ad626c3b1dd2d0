//! The limits of a run, shared with the subagents it starts: the steps with
//! tools, the token budget and the deadline are one pool that the run and
//! every subagent draw from, so `task` cannot buy more of any of them. A
//! subagent finds its parent's pool in the parent's session, where the
//! parent's run put it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use wield_core::Session;
use wield_llm::Usage;

use crate::Limits;

/// One run's shared limits. Cheap to clone; clones share the pool.
#[derive(Clone, Debug)]
pub(crate) struct Budget(Arc<Pool>);

#[derive(Debug)]
struct Pool {
    /// Steps with tools left to the run and its subagents together.
    steps: AtomicU32,
    token_budget: Option<u64>,
    /// The input and output tokens every request of the run has used.
    tokens: AtomicU64,
    deadline: Option<Instant>,
}

impl Budget {
    /// The pool of a run started at `started` under `limits`.
    pub(crate) fn new(limits: &Limits, started: Instant) -> Self {
        Self(Arc::new(Pool {
            steps: AtomicU32::new(limits.max_steps),
            token_budget: limits.token_budget,
            tokens: AtomicU64::new(0),
            deadline: limits.timeout.and_then(|t| started.checked_add(t)),
        }))
    }

    /// Takes one step with tools; `false` when none is left.
    pub(crate) fn take_step(&self) -> bool {
        self.0
            .steps
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Counts a request's tokens against the budget.
    pub(crate) fn spend(&self, usage: Usage) {
        self.0
            .tokens
            .fetch_add(usage.total_input().saturating_add(usage.output), Ordering::AcqRel);
    }

    /// Whether the run's requests have used the whole token budget.
    pub(crate) fn tokens_spent(&self) -> bool {
        self.0
            .token_budget
            .is_some_and(|b| self.0.tokens.load(Ordering::Acquire) >= b)
    }

    /// The earlier of the run's deadline and one `timeout` after `started`.
    pub(crate) fn deadline(&self, timeout: Option<Duration>, started: Instant) -> Option<Instant> {
        let own = timeout.and_then(|t| started.checked_add(t));
        match (self.0.deadline, own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// The budget of the run now going on in a session, for the `task` calls
/// it makes.
#[derive(Default)]
struct Current(Mutex<Option<Budget>>);

/// Makes `budget` the one `task` calls in `session` share.
pub(crate) fn publish(session: &Session, budget: &Budget) {
    let current = session.extension(Current::default);
    *current.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(budget.clone());
}

/// The budget of the run going on in `session`, if one was published.
pub(crate) fn of(session: &Session) -> Option<Budget> {
    session
        .get_extension::<Current>()
        .and_then(|c| c.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_draw_from_one_pool_of_steps_and_tokens() {
        let limits = Limits {
            max_steps: 2,
            token_budget: Some(100),
            ..Limits::default()
        };
        let parent = Budget::new(&limits, Instant::now());
        let child = parent.clone();
        assert!(parent.take_step() && child.take_step());
        assert!(!parent.take_step() && !child.take_step());
        child.spend(Usage {
            input: 60,
            ..Usage::default()
        });
        assert!(!parent.tokens_spent());
        parent.spend(Usage {
            output: 40,
            ..Usage::default()
        });
        assert!(child.tokens_spent());
    }

    #[test]
    fn the_earlier_deadline_wins() {
        let now = Instant::now();
        let limits = Limits {
            timeout: Some(Duration::from_secs(10)),
            ..Limits::default()
        };
        let budget = Budget::new(&limits, now);
        let secs = |d: Option<Instant>| d.map(|d| d.duration_since(now).as_secs());
        assert_eq!(secs(budget.deadline(Some(Duration::from_secs(3)), now)), Some(3));
        assert_eq!(secs(budget.deadline(Some(Duration::from_secs(30)), now)), Some(10));
        assert_eq!(secs(budget.deadline(None, now)), Some(10));
    }
}
