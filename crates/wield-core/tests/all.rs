//! wield-core's integration tests, one test binary: each module under
//! `suite/` drives the crate's public API (the executor's pipeline).

#[path = "suite/executor.rs"]
mod executor;
#[path = "suite/executor_checks.rs"]
mod executor_checks;
