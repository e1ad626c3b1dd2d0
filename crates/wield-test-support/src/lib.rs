//! What wield's tests share, for every crate's tests (a dev-dependency
//! only): the scripted model provider ([`scripted`]), the one way tests
//! start `wield` and its peers with a cleared environment ([`command`]),
//! where the installed peers are ([`command::peer`]), the file layout the
//! confinement tests attack ([`layout`]), the command tools of the command
//! tools' tests ([`command_tools`]), the attacks on a `.chat` document
//! its library's and its binary's tests make ([`chat_attacks`]), the local model
//! server ([`local_model`]), a local server standing in for the web
//! ([`pages`]), (with the `pipeline` or `runtime` feature) a runtime
//! loaded in the test's process with calls through its pipeline
//! ([`pipeline`]), with wield-tools' debug tools at hand, and (with
//! `runtime`) the test binary as the sandbox's helper
//! ([`sandbox_helper`]), and (with the
//! `agent` feature) an agent session on such a runtime, built and run as
//! `wield run` does ([`agent`]).
//!
//! These are test helpers: one that cannot do its job panics, which fails
//! the test that called it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(feature = "agent")]
pub mod agent;
pub mod chat_attacks;
pub mod command;
pub mod command_tools;
pub mod http_request;
pub mod layout;
pub mod local_model;
pub mod pages;
#[cfg(feature = "pipeline")]
pub mod pipeline;
#[cfg(feature = "runtime")]
pub mod sandbox_helper;
pub mod scripted;
