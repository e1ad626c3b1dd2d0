//! wield-mcp's integration tests, one test binary: each module under
//! `suite/` drives the library: against real peers (the scripts in `peers/`)
//! or its own server and client in process.

#[path = "suite/bridged.rs"]
mod bridged;
#[path = "suite/front_end.rs"]
mod front_end;
#[path = "suite/in_process.rs"]
mod in_process;
#[path = "suite/workspace.rs"]
mod workspace;
