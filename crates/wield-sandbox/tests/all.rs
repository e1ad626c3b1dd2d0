//! wield-sandbox's integration tests, one test binary: each module under
//! `suite/` checks path confinement against real files
//! and the command runner against real processes.

#[path = "suite/chat_ledger.rs"]
mod chat_ledger;
#[path = "suite/fs_confinement.rs"]
mod fs_confinement;
#[path = "suite/process.rs"]
mod process;
