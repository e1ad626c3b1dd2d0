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
    /// The step the turn was; none for a compaction's summary request.
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<u32>,
    /// The turn wrote the hand-off summary of a compaction.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    compaction: bool,
    provider: &'a str,
    model: &'a str,
    usage: Usage,
    stop: &'a wield_llm::Stop,
    call_ids: Vec<&'a str>,
}

impl Agent {
    /// Writes the turn of `step` (none: a compaction's summary) to the
    /// audit log, when there is one.
    pub(crate) fn audit_turn(&self, step: Option<u32>, reply: &Response, calls: &[(String, String, Value)]) {
        let Some(log) = self.executor.audit() else {
            return;
        };
        log.append(&TurnRecord {
            event: "model_turn",
            session: self.session.id(),
            step,
            compaction: step.is_none(),
            provider: &self.names.0,
            model: &self.names.1,
            usage: reply.usage,
            stop: &reply.stop,
            call_ids: calls.iter().map(|(id, ..)| id.as_str()).collect(),
        });
    }
}
