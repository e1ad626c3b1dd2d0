//! Request bodies, one encoder per wire format.

mod chat;

pub use chat::chat_body;
