//! Approval over MCP: a call that needs approval asks the client's user
//! through elicitation (a form with an optional "remember" switch and a
//! reason), when the client supports form elicitation; otherwise the call is
//! refused with the message that explains how to grant approval.
//!
//! - accept → approved once (or for the session, when the user ticks
//!   `remember`);
//! - decline → denied, with the user's reason when they gave one;
//! - cancel, the client failing to answer, or no answer within the
//!   server's approval time limit (the form is withdrawn) → denied.
//!
//! When the call is cancelled while the form is open, the executor stops
//! waiting and the client is told to close the form
//! (`notifications/cancelled` for the elicitation request).

use std::fmt::Write as _;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::ServiceError;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    RequestId, ServerRequest,
};
use rmcp::service::{ElicitationMode, Peer, PeerRequestOptions, RoleServer};
use serde_json::{Value, json};
use wield_core::approval::needs_approval_message;
use wield_core::ask::{Asker, Question};
use wield_core::{ApprovalAnswer, ApprovalRequest, Approver, Scope};

/// Longest diff or detail shown in the approval form.
const MAX_DETAIL: usize = 8000;

/// How long a user has to answer an approval form, unless the server says
/// otherwise: a client that never answers does not hold the call for ever.
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);

pub struct ClientApprover {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl ClientApprover {
    pub fn new(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        Self { peer, timeout }
    }
}

/// The reason a person wrote in the approval form, if any.
fn reason_of(content: Option<&Value>) -> Option<String> {
    content?
        .get("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// An approval form declined or dismissed sooner than this, with no reason
/// given, was not seen by a person.
const FASTER_THAN_A_PERSON: Duration = Duration::from_millis(300);

/// Refusal text for a client that cannot ask its user.
pub fn headless_message(request: &ApprovalRequest) -> String {
    format!(
        "{} (This MCP client cannot show approval prompts; starting `wield mcp serve --yes` \
         approves every such call.)",
        needs_approval_message(request)
    )
}

#[async_trait]
impl Approver for ClientApprover {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        if !self.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
            return ApprovalAnswer::Deny(Some(headless_message(request)));
        }
        let params = match form(request) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("cannot build the approval form: {e}");
                return ApprovalAnswer::Deny(Some(headless_message(request)));
            }
        };
        let tool = &request.tool;
        let asked = std::time::Instant::now();
        // Past the time limit the form is withdrawn.
        let Some(answered) = self.elicit(params).await else {
            return ApprovalAnswer::Deny(Some(format!(
                "denied: the user did not answer the approval request for `{tool}` within {}",
                wield_core::human_duration(self.timeout)
            )));
        };
        let took = asked.elapsed();
        match answered {
            // Turned down before a person could have read it: the client
            // claims forms it cannot show. The model hears how a person
            // could allow the call, as with a client without forms.
            // A reason given is someone's words, and is passed on below.
            Ok(answer)
                if answer.action != ElicitationAction::Accept
                    && took < FASTER_THAN_A_PERSON
                    && reason_of(answer.content.as_ref()).is_none() =>
            {
                let how = if answer.action == ElicitationAction::Decline {
                    "declined"
                } else {
                    "dismissed"
                };
                ApprovalAnswer::Deny(Some(format!(
                    "denied: the client {how} the approval form for `{tool}` {} ms after it was sent, faster \
                     than a person reads it, so it most likely cannot show forms to its user. {}",
                    took.as_millis(),
                    headless_message(request)
                )))
            }
            Ok(answer) => {
                let reason = reason_of(answer.content.as_ref());
                let content = answer.content.clone().unwrap_or(Value::Null);
                match answer.action {
                    ElicitationAction::Accept => {
                        if content.get("remember").and_then(Value::as_bool) == Some(true) {
                            ApprovalAnswer::Allow(Scope::Session)
                        } else {
                            ApprovalAnswer::Allow(Scope::Once)
                        }
                    }
                    ElicitationAction::Decline => ApprovalAnswer::Deny(Some(match reason {
                        Some(r) => format!("denied: the user declined the call to `{tool}`: {r}"),
                        None => format!("denied: the user declined the call to `{tool}`"),
                    })),
                    _ => ApprovalAnswer::Deny(Some(format!(
                        "denied: the user dismissed the approval request for `{tool}`"
                    ))),
                }
            }
            Err(e) => ApprovalAnswer::Deny(Some(format!(
                "denied: asking the user to approve the call to `{tool}` failed ({e}). {}",
                headless_message(request)
            ))),
        }
    }
}

impl ClientApprover {
    /// `elicitation/create`, withdrawn (`notifications/cancelled`) if the
    /// call stops waiting for the answer (the `Withdraw` guard) or the time
    /// to answer runs out (then `None`).
    async fn elicit(&self, params: ElicitRequestParams) -> Option<Result<ElicitResult, ServiceError>> {
        let handle = match self
            .peer
            .send_cancellable_request(
                ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
        {
            Ok(h) => h,
            Err(e) => return Some(Err(e)),
        };
        let mut withdraw = Withdraw {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            reason: WITHDRAWN,
        };
        let answer = tokio::time::timeout(self.timeout, handle.await_response()).await;
        let id = withdraw.id.take();
        let Ok(answer) = answer else {
            // Withdrawn here, before the call's result goes out, not by a
            // task of its own that nothing may run until the client speaks.
            if let Some(id) = id {
                let _ = self
                    .peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(WITHDRAWN.to_owned())))
                    .await;
            }
            return None;
        };
        Some(match answer {
            Ok(ClientResult::ElicitResult(r)) => Ok(r),
            Ok(_) => Err(ServiceError::UnexpectedResponse),
            Err(e) => Err(e),
        })
    }
}

/// The model's questions (`ask`) put to the client's user as a form: a
/// choice among the options (or several), or a line of text.
pub struct ClientAsker(ClientApprover);

impl ClientAsker {
    pub fn new(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        Self(ClientApprover::new(peer, timeout))
    }
}

/// What `ask` answers when the client cannot show a form.
const CANNOT_ASK: &str = "This MCP client cannot ask its user. Do not ask again: go on with the task on reasonable \
                          assumptions, and state the assumptions you made in your answer.";

fn question_form(question: &Question) -> Result<ElicitRequestParams, serde_json::Error> {
    let labels: Vec<&str> = question.options.iter().map(|o| o.label.as_str()).collect();
    let mut message = wield_core::approval::printable(&question.question);
    for o in &question.options {
        if let Some(d) = &o.description {
            let _ = write!(message, "\n- {}: {}", o.label, d);
        }
    }
    let answer = if labels.is_empty() {
        json!({"type": "string", "title": "Answer"})
    } else if question.multi_select {
        json!({"type": "array", "title": "Answer", "items": {"type": "string", "enum": labels}})
    } else {
        json!({"type": "string", "title": "Answer", "enum": labels})
    };
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"answer": answer}, "required": ["answer"]}
    }))
}

#[async_trait]
impl Asker for ClientAsker {
    async fn ask(&self, question: &Question) -> Result<String, String> {
        let approver = &self.0;
        if !approver
            .peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Err(CANNOT_ASK.into());
        }
        let params = question_form(question).map_err(|e| format!("cannot build the question's form: {e}"))?;
        let Some(answered) = approver.elicit(params).await else {
            return Err(format!(
                "the user did not answer within {}; go on with the task on stated assumptions",
                wield_core::human_duration(approver.timeout)
            ));
        };
        let answer = answered.map_err(|e| format!("asking the user failed ({e}). {CANNOT_ASK}"))?;
        match answer.action {
            ElicitationAction::Accept => {
                let content = answer.content.unwrap_or(Value::Null);
                Ok(match content.get("answer") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
                    Some(other) => other.to_string(),
                    None => String::new(),
                })
            }
            ElicitationAction::Decline => Err("the user declined to answer; go on on stated assumptions".into()),
            _ => Err("the user dismissed the question; go on on stated assumptions".into()),
        }
    }
}

/// Why an approval form is withdrawn.
const WITHDRAWN: &str =
    "the tool call no longer waits for this approval (it was cancelled, or the time to answer ran out)";

/// Withdraws a request sent to the client (`notifications/cancelled`,
/// saying `reason`) when dropped before its answer came (`id` still set).
pub(super) struct Withdraw {
    pub(super) peer: Peer<RoleServer>,
    pub(super) id: Option<RequestId>,
    pub(super) reason: &'static str,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            let reason = self.reason.to_owned();
            tokio::spawn(async move {
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), Some(reason)))
                    .await;
            });
        }
    }
}

fn form(request: &ApprovalRequest) -> Result<ElicitRequestParams, serde_json::Error> {
    let preview = request.shown_preview();
    let preview = preview.trim();
    let mut message = if preview.starts_with(&request.tool) {
        format!("Allow this tool call?\n\n{preview}")
    } else {
        format!("Allow this tool call?\n\n{}: {preview}", request.tool)
    };
    if let (true, Some(why)) = (request.always_asks, &request.reason) {
        let _ = write!(message, "\n\nThis is asked every time: {why}.");
    }
    if let Some(shown) = request.shown_detail() {
        let detail = shown.text();
        message.push_str("\n\n");
        if detail.len() > MAX_DETAIL {
            let mut end = MAX_DETAIL;
            while !detail.is_char_boundary(end) {
                end -= 1;
            }
            message.push_str(&detail[..end]);
            let _ = write!(
                message,
                "\n… ({} more bytes not shown: decline unless you know what they are)",
                detail.len() - end
            );
        } else {
            message.push_str(detail);
        }
    }
    let mut properties = serde_json::Map::new();
    // A call that a rule asks for every time gets no "remember": it would
    // not spare the next ask.
    if !request.always_asks {
        properties.insert(
            "remember".into(),
            json!({
                "type": "boolean",
                "title": "Remember for this session",
                "description": format!(
                    "Also allow calls matching `{}` until this MCP session ends",
                    wield_core::approval::printable(&request.pattern)
                ),
                "default": false
            }),
        );
    }
    properties.insert(
        "reason".into(),
        json!({
            "type": "string",
            "title": "Reason",
            "description": "If you decline: why, or what to do instead (told to the model)"
        }),
    );
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ApprovalRequest {
        ApprovalRequest {
            call_id: "1".into(),
            tool: "bash".into(),
            input: json!({"command": "rm -rf build"}),
            preview: "command=\"rm -rf build\"".into(),
            detail: Some("x".repeat(MAX_DETAIL + 10)),
            pattern: "bash:rm *".into(),
            always_asks: false,
            reason: None,
        }
    }

    #[test]
    fn the_form_names_the_call_and_is_bounded() {
        let v = serde_json::to_value(form(&request()).unwrap()).unwrap();
        assert_eq!(v["mode"], "form");
        let msg = v["message"].as_str().unwrap();
        assert!(msg.contains("bash: command=\"rm -rf build\""));
        assert!(msg.len() < MAX_DETAIL + 300);
        assert!(msg.contains("10 more bytes not shown"), "{msg}");
        assert_eq!(v["requestedSchema"]["properties"]["remember"]["type"], "boolean");
    }

    #[test]
    fn the_form_shows_what_the_preview_cuts() {
        let command = format!("echo hello{}; echo HIDDEN > x", " ".repeat(120));
        let mut r = request();
        r.detail = None;
        r.preview = "$ echo hello …".into();
        r.input = json!({ "command": command });
        let v = serde_json::to_value(form(&r).unwrap()).unwrap();
        let msg = v["message"].as_str().unwrap();
        assert!(msg.contains("; echo HIDDEN > x"), "{msg}");
        // The remembered pattern too is shown printable.
        r.pattern = "bash:ls\u{1b}[8m;curl evil*".into();
        let v = serde_json::to_value(form(&r).unwrap()).unwrap();
        let remember = v["requestedSchema"]["properties"]["remember"]["description"]
            .as_str()
            .unwrap();
        assert!(
            remember.contains("bash:ls\\u{1b}[8m;curl evil*") && !remember.contains('\u{1b}'),
            "{remember}"
        );
    }

    #[test]
    fn the_headless_message_says_how_to_approve() {
        let m = headless_message(&request());
        assert!(m.contains("wield approvals add 'bash:rm *'"), "{m}");
        assert!(m.contains("--yes"));
    }

    /// A call a `confirm` rule asks for every time: no "remember" in the
    /// form, and the refusal does not send the user to remembered approvals,
    /// which would not apply.
    #[test]
    fn a_call_asked_every_time_offers_no_remembering() {
        let mut r = request();
        r.always_asks = true;
        let v = serde_json::to_value(form(&r).unwrap()).unwrap();
        assert!(v["requestedSchema"]["properties"].get("remember").is_none(), "{v}");
        assert_eq!(v["requestedSchema"]["properties"]["reason"]["type"], "string");
        let m = headless_message(&r);
        assert!(!m.contains("wield approvals add"), "{m}");
        assert!(m.contains("--yes"), "{m}");
        // The one rule that asks is named, in the refusal and in the form.
        r.reason = Some("the rule `bash:rm *` in approval.confirm asks for it every time".into());
        assert!(
            headless_message(&r).contains("the rule `bash:rm *` in approval.confirm"),
            "{m}"
        );
        let v = serde_json::to_value(form(&r).unwrap()).unwrap();
        assert!(
            v["message"]
                .as_str()
                .unwrap()
                .contains("This is asked every time: the rule `bash:rm *`"),
            "{v}"
        );
    }
}
