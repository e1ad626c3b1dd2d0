//! Reading newline-delimited JSON-RPC messages from a client.
//!
//! Lines are read with a bound on their length and parsed into the SDK's
//! message type with the SDK's rules: an empty or unparsable line is
//! skipped, a non-standard notification is ignored, and a line that is JSON
//! but not a valid message asks for an `Invalid Request` reply.
//!
//! A plain `tools/call` — `jsonrpc`, `id`, `method` and `params` holding
//! only `name` and `arguments` — is parsed straight into its message. That
//! is the call an agent makes over and over, and the SDK's generic parse
//! (which buffers the whole message to find its shape, then the parameters
//! to find `_meta`) costs more than the rest of reading it. Anything else,
//! or anything the direct parse refuses, takes the SDK's parse, so the
//! result is the same message either way (tested).

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientRequest, JsonObject, JsonRpcError,
    JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId,
};
use rmcp::service::RxJsonRpcMessage;
use rmcp::{ErrorData, RoleServer};
use serde::Deserialize;

use super::strict::StrictObject;
use crate::wire::{ReplyId, repair_lone_surrogates, reply_id, strip_bom};

/// What one line of input holds.
#[derive(Debug)]
pub enum Incoming {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to act on: an empty, unparsable or ignored line.
    Skip,
    /// Answer with this error, to the request's id when it can be read:
    /// `Invalid Request` for JSON that is not a message, `Invalid params`
    /// for a standard method whose params do not fit it (which the SDK
    /// would take for an unknown method).
    Refuse(Option<ReplyId>, ErrorData),
}

/// One line of input, parsed.
pub fn parse(line: &[u8]) -> Incoming {
    parse_line(line).0
}

/// [`parse`], and the text the message was read from when it is not the
/// line's own (a string cut inside a surrogate pair, repaired).
pub fn parse_line(line: &[u8]) -> (Incoming, Option<Vec<u8>>) {
    let mut repaired = None;
    let incoming = parse_into(line, &mut repaired);
    (incoming, repaired)
}

fn parse_into(line: &[u8], repaired: &mut Option<Vec<u8>>) -> Incoming {
    let line = strip_bom(line);
    if line.trim_ascii().is_empty() {
        return Incoming::Skip;
    }
    if let Some(call) = plain_call(line) {
        return Incoming::Message(Box::new(call));
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CustomRequest(custom),
            ..
        })) if standard_method(&custom.method) => Incoming::Refuse(
            Some(reply_id(id)),
            invalid_params(&custom.method, line, custom.params.as_ref()),
        ),
        // The SDK would answer with the bare method name as the message
        // (pinned in `compat`'s tests).
        Ok(JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CustomRequest(custom),
            ..
        })) => Incoming::Refuse(Some(reply_id(id)), method_not_found(&custom.method)),
        // A message that gives a member twice anywhere (a call's
        // arguments, `_meta`), which the SDK reads keeping the last.
        Ok(message) if let Some(why) = super::strict::duplicate_member(line) => given_twice(message, &why),
        Ok(message) => Incoming::Message(Box::new(message)),
        // One that gives a member twice is refused below, whatever its
        // method (the last `method` given may name one outside the
        // protocol, the first a standard one).
        Err(e) if ignored_notification(line) && super::strict::duplicate_member(line).is_none() => {
            tracing::trace!("ignoring a notification outside the protocol: {e}");
            Incoming::Skip
        }
        Err(e) => match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                // A string cut inside a surrogate pair (`"\ud83d"`), which
                // JSON encoders write: the text with U+FFFD in its place.
                if let Some(text) = repair_lone_surrogates(line) {
                    let incoming = parse_into(&text, repaired);
                    *repaired = Some(text);
                    return incoming;
                }
                tracing::debug!("an unparsable message: {e}");
                Incoming::Refuse(
                    readable_id(line),
                    ErrorData::new(rmcp::model::ErrorCode::PARSE_ERROR, format!("Parse error: {e}"), None),
                )
            }
            serde_json::error::Category::Data | serde_json::error::Category::Io => {
                tracing::debug!("an invalid request: {e}");
                refusal(line)
            }
        },
    }
}

/// What becomes of a message that gives a member twice (`why` says which):
/// a request is refused; an answer to wield's request (an approval form's)
/// becomes an error for that request, so nothing is taken from it; a
/// notification is refused as a message with no id to answer.
fn given_twice(message: RxJsonRpcMessage<RoleServer>, why: &str) -> Incoming {
    match message {
        JsonRpcMessage::Request(request) => Incoming::Refuse(
            Some(reply_id(request.id)),
            ErrorData::invalid_request(format!("Invalid request: {why}; give each member once"), None),
        ),
        JsonRpcMessage::Response(response) => Incoming::Message(Box::new(JsonRpcMessage::Error(JsonRpcError::new(
            Some(response.id),
            ErrorData::invalid_request(format!("the client's answer is not valid: {why}"), None),
        )))),
        JsonRpcMessage::Notification(_) => Incoming::Refuse(
            None,
            ErrorData::invalid_request(format!("Invalid notification: {why}; give each member once"), None),
        ),
        error @ JsonRpcMessage::Error(_) => Incoming::Message(Box::new(error)),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlainCall<'a> {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
    params: PlainParams,
}

/// `name` and `arguments`, from a JSON object only (a derived struct would
/// also take an array, which the SDK refuses); any other key, or a key
/// twice (also within the arguments), is refused.
struct PlainParams {
    name: String,
    arguments: Option<JsonObject>,
}

impl<'de> Deserialize<'de> for PlainParams {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = PlainParams;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object with name and arguments")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<PlainParams, A::Error> {
                let (mut name, mut arguments) = (None, None);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "name" if name.is_none() => name = Some(map.next_value::<String>()?),
                        "arguments" if arguments.is_none() => {
                            arguments = Some(map.next_value::<Option<StrictObject>>()?.map(|o| o.0));
                        }
                        other => return Err(serde::de::Error::custom(format_args!("unexpected key {other}"))),
                    }
                }
                Ok(PlainParams {
                    name: name.ok_or_else(|| serde::de::Error::missing_field("name"))?,
                    arguments: arguments.flatten(),
                })
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// A `tools/call` with nothing but a name and arguments, parsed directly.
/// The message must be a JSON object, as its parameters must.
fn plain_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    if !line.trim_ascii_start().starts_with(b"{") {
        return None;
    }
    let call: PlainCall<'_> = serde_json::from_slice(line).ok()?;
    if call.method != "tools/call" {
        return None;
    }
    let mut params = CallToolRequestParams::new(call.params.name);
    params.arguments = call.params.arguments;
    let request: CallToolRequest = rmcp::model::Request::<CallToolRequestMethod, _>::new(params);
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        call.id,
        ClientRequest::CallToolRequest(request),
    )))
}

/// What the 2025-11-25 lifecycle makes of a message: every request but
/// `ping` waits for `initialize`, which comes once; a method wield does not
/// serve is not found, saying which it serves; a request that carries
/// its own protocol version in `_meta` (the stateless lifecycle of later
/// revisions, which the SDK would serve without a handshake or a session)
/// is not served.
#[derive(Debug)]
pub enum Lifecycle {
    Pass,
    /// A notification before `initialize`: nothing to answer, nothing to do.
    Drop,
    Refuse(RequestId, ErrorData),
}

/// Whether `message` is the `initialize` request that opens a session.
pub fn opens_session(message: &RxJsonRpcMessage<RoleServer>) -> bool {
    matches!(
        message,
        JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::InitializeRequest(_),
            ..
        })
    )
}

/// Where `message` stands, the session being `initialized` or not.
pub fn lifecycle(message: &RxJsonRpcMessage<RoleServer>, initialized: bool) -> Lifecycle {
    use rmcp::model::GetMeta;
    let request = match message {
        JsonRpcMessage::Request(request) => request,
        JsonRpcMessage::Notification(_) if !initialized => return Lifecycle::Drop,
        _ => return Lifecycle::Pass,
    };
    let refuse = |why: &str| {
        Lifecycle::Refuse(
            request.id.clone(),
            ErrorData::invalid_request(
                format!(
                    "{why}; this server speaks MCP up to 2025-11-25: send `initialize` once, then the session's requests"
                ),
                None,
            ),
        )
    };
    match &request.request {
        ClientRequest::InitializeRequest(_) if initialized => refuse("the session is already initialized"),
        ClientRequest::InitializeRequest(_) | ClientRequest::PingRequest(_) => Lifecycle::Pass,
        ClientRequest::DiscoverRequest(_) => Lifecycle::Refuse(request.id.clone(), method_not_found("server/discover")),
        other if other.get_meta().protocol_version().is_some() => {
            refuse("a request that carries its own protocol version in `_meta` is not served")
        }
        _ if !initialized => refuse("the session is not initialized"),
        ClientRequest::ListToolsRequest(_) | ClientRequest::CallToolRequest(_) | ClientRequest::SetLevelRequest(_) => {
            Lifecycle::Pass
        }
        // Resources, prompts, completions, tasks…: the SDK would answer
        // with the bare method name.
        other => Lifecycle::Refuse(request.id.clone(), method_not_found(other.method())),
    }
}

/// The `id` of a message that does not parse as a whole (a number out of
/// range, nesting too deep) when its syntax still lets it be read.
fn readable_id(line: &[u8]) -> Option<ReplyId> {
    #[derive(Deserialize)]
    struct IdOnly {
        id: Option<RequestId>,
    }
    serde_json::from_slice::<IdOnly>(line)
        .ok()
        .and_then(|m| m.id)
        .map(reply_id)
}

/// The answer to JSON that is not a valid message: to its `id` when it has
/// one of the right kind (a number or a string), so the client can match
/// the error to its request: for a JSON-RPC 2.0 request, `Invalid params`
/// when its method is a standard one (`"params": [...]`) and `Method not
/// found` otherwise; else `Invalid Request`.
fn refusal(line: &[u8]) -> Incoming {
    let value = serde_json::from_slice::<serde_json::Value>(line).ok();
    let field = |k: &str| value.as_ref().and_then(|v| v.get(k));
    let id = field("id").and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let request = id.is_some() && field("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0");
    let id = id.map(reply_id);
    // A number the SDK cannot hold as an id: answered to it, saying which
    // ids are served.
    if let Some(number @ serde_json::Value::Number(n)) = field("id")
        && n.as_i64().is_none()
        && field("jsonrpc").and_then(serde_json::Value::as_str) == Some("2.0")
        && field("method").is_some_and(serde_json::Value::is_string)
    {
        return Incoming::Refuse(
            Some(number.clone()),
            ErrorData::invalid_request(
                format!(
                    "Invalid request: request id {n} is out of range; use an integer from {} to {} or a string",
                    i64::MIN,
                    i64::MAX
                ),
                None,
            ),
        );
    }
    let mut twice = None;
    if let Err(e) = serde::de::DeserializeSeed::deserialize(
        Members { twice: &mut twice },
        &mut serde_json::Deserializer::from_slice(line),
    ) && let Some(member) = twice
    {
        // To the id, unless the id is what was given twice.
        let id = if member == "id" { None } else { id };
        return Incoming::Refuse(id, ErrorData::invalid_request(format!("Invalid request: {e}"), None));
    }
    let error = match field("method").and_then(serde_json::Value::as_str) {
        Some(method) if request && standard_method(method) => invalid_params(method, line, field("params")),
        Some(method) if request => method_not_found(method),
        _ => ErrorData::invalid_request("Invalid request", None),
    };
    Incoming::Refuse(id, error)
}

/// The members of a message, read to find one given twice (which a JSON
/// value would keep only once): the first such member goes into `twice`,
/// and the error is serde's for a field given twice.
struct Members<'a> {
    twice: &'a mut Option<&'static str>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Members<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Members<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        const NAMES: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];
        let mut seen = [false; NAMES.len()];
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if let Some(i) = NAMES.iter().position(|name| *name == key)
                && std::mem::replace(&mut seen[i], true)
            {
                *self.twice = Some(NAMES[i]);
                return Err(serde::de::Error::duplicate_field(NAMES[i]));
            }
            map.next_value::<serde::de::IgnoredAny>()?;
        }
        Ok(())
    }
}

fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!(
            "method not found: `{method}`; this server offers initialize, ping, tools/list, tools/call and logging/setLevel"
        ),
        None,
    )
}

/// Why the params of a standard method do not fit it (or, for a
/// notification sent with an `id`, that it is no request). For `tools/call`,
/// the params are read from the line itself first: what the line says
/// twice (`"name"` given two times) is lost once it is a JSON value.
fn invalid_params(method: &str, line: &[u8], params: Option<&serde_json::Value>) -> ErrorData {
    if method.starts_with("notifications/") {
        return ErrorData::invalid_request(
            format!("`{method}` is a notification, not a request: send it without an `id`"),
            None,
        );
    }
    #[derive(Deserialize)]
    struct Params {
        #[allow(dead_code)]
        params: CallToolRequestParams,
    }
    let (why, hint) = if method == "tools/call" {
        let params = params.cloned().unwrap_or(serde_json::Value::Null);
        let why = serde_json::from_slice::<Params>(line)
            .err()
            .or_else(|| serde_json::from_value::<CallToolRequestParams>(params).err())
            .map_or_else(String::new, |e| format!(": {e}"));
        (
            why,
            " (send {\"name\": TOOL, \"arguments\": {...}}: the arguments a JSON object)",
        )
    } else {
        (String::new(), "")
    };
    ErrorData::invalid_params(format!("invalid params for `{method}`{why}{hint}"), None)
}

/// The SDK's compatibility rule: a notification (no `id`) with a method
/// outside the protocol, or an unknown `notifications/…` method, is ignored
/// rather than answered.
fn ignored_notification(line: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    let Some(method) = value.get("method").and_then(serde_json::Value::as_str) else {
        return false;
    };
    let notification = value.get("id").is_none();
    (notification && !standard_method(method))
        || (method.starts_with("notifications/") && !standard_notification(method))
}

fn standard_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
            | "completion/complete"
            | "elicitation/create"
            | "logging/setLevel"
            | "roots/list"
            | "sampling/createMessage"
    ) || standard_notification(method)
}

fn standard_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}

#[cfg(test)]
mod tests;
