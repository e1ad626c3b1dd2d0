//! wield-agent's integration tests, one test binary: the agent against a
//! small local server standing in for a provider.

#[path = "suite/compact.rs"]
mod compact;
#[path = "../../wield-cli/tests/suite/support/http_request.rs"]
mod http_request;
