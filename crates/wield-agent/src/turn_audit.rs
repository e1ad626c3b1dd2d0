//! Model turns in the audit log, beside the tool calls they caused, so a
//! run can be traced end to end: which request asked for which calls.

use serde::Serialize;
use serde_json::Value;
use wield_llm::{Response, Usage};

use crate::Agent;

/// One model turn, as the audit log holds it.
#[derive(Serialize)]
struct TurnRecord<'a> {
    event: &'static str,
    session: &'a str,
    step: u32,
    provider: &'a str,
    model: &'a str,
    usage: Usage,
    stop: &'a wield_llm::Stop,
    call_ids: Vec<&'a str>,
}

impl Agent {
    /// Writes the turn of `step` to the audit log, when there is one.
    pub(crate) fn audit_turn(&self, step: u32, reply: &Response, calls: &[(String, String, Value)]) {
        let Some(log) = self.executor.audit() else {
            return;
        };
        log.append(&TurnRecord {
            event: "model_turn",
            session: self.session.id(),
            step,
            provider: &self.names.0,
            model: &self.names.1,
            usage: reply.usage,
            stop: &reply.stop,
            call_ids: calls.iter().map(|(id, ..)| id.as_str()).collect(),
        });
    }
}
