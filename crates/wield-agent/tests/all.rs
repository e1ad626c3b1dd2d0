//! wield-agent's integration tests, one test binary: the agent and its
//! sessions against small local servers standing in for a provider.

#[path = "suite/compact.rs"]
mod compact;
#[path = "suite/session.rs"]
mod session;
#[path = "suite/user_tools.rs"]
mod user_tools;
use wield_test_support::http_request;
