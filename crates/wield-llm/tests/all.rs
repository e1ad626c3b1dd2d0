//! wield-llm's integration tests, one test binary: each module under
//! `suite/` drives the library's public API (decoding recorded streams,
//! request bodies, providers against local servers and a real local model).
//! The recorded streams stay in `fixtures/`.

#[path = "suite/decode.rs"]
mod decode;
#[path = "suite/local_model.rs"]
mod local_model;
use wield_test_support::local_model as local_model_server;
#[path = "suite/provider.rs"]
mod provider;
#[path = "suite/request_bodies.rs"]
mod request_bodies;
