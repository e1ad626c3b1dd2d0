//! wield-agent's integration tests, one test binary: the agent and its
//! sessions against small local servers standing in for a provider.

#[path = "suite/agents.rs"]
mod agents;
#[path = "suite/calls.rs"]
mod calls;
#[path = "suite/command_calls.rs"]
mod command_calls;
#[path = "suite/compact.rs"]
mod compact;
#[path = "suite/compaction.rs"]
mod compaction;
#[path = "suite/limits.rs"]
mod limits;
#[path = "suite/saved.rs"]
mod saved;
#[path = "suite/session.rs"]
mod session;
#[path = "suite/user_tools.rs"]
mod user_tools;
use wield_test_support::http_request;
