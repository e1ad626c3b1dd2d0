//! One tool of an external MCP server as a wield [`Tool`].

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value};
use wield_core::approval::{PathSubject, Subject};
use wield_core::schema::InputValidator;
use wield_core::{Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

use super::ServerEntry;
use super::process::{EXIT_AFTER_CLOSE, MAX_MESSAGE};

/// How long a call still waits for its reply once the server's process has
/// exited: a reply written just before the exit is still in the pipe.
const AFTER_EXIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Longest tool name providers accept.
const MAX_NAME: usize = 64;

/// `mcp__SERVER__TOOL`, with every character providers refuse in a tool
/// name replaced by `_`, and cut (with a short hash of the original, to stay
/// unique) when longer than 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{server}__{}", clean(tool));
    if full.len() <= MAX_NAME {
        full
    } else {
        hashed(server, tool, 0)
    }
}

/// The names of all of one server's tools: [`tool_name`] each, except that a
/// tool whose name had to change and then meets another tool's name (`a.b`
/// and `a_b`, or two names in another script) gets a short hash of its
/// original name, so every tool stays reachable. A name that needed no
/// change keeps it. A tool named before (in `given`, server name → wield
/// name, from any earlier listing, whether or not it is still listed) keeps
/// its name, and no other tool ever gets it, so a name a client or an
/// approval already holds never comes to mean another tool. A generated
/// name never takes a name given to another tool (a server may well list
/// `a_b_1234abcd` too): when it would, another hash is tried.
///
/// Names are told apart ignoring case, as approval rules and tool filters
/// match them: of `echo` and `Echo`, the second gets a hash, so a rule for
/// `mcp__s__echo` cannot approve `Echo` too.
///
/// One server name in `tools` twice gets two names; callers keep the first.
pub fn tool_names<'a>(
    server: &str,
    tools: impl IntoIterator<Item = &'a str>,
    given: &std::collections::HashMap<String, String>,
) -> Vec<String> {
    use std::collections::{HashMap, HashSet};
    let key = |name: &str| name.to_lowercase();
    let tools: Vec<&str> = tools.into_iter().collect();
    let plain: Vec<String> = tools.iter().map(|t| tool_name(server, t)).collect();
    let mut uses: HashMap<String, usize> = HashMap::new();
    for n in &plain {
        *uses.entry(key(n)).or_default() += 1;
    }
    // Every name handed out before stays its tool's, listed or not.
    let owner: HashMap<String, &str> = given.iter().map(|(tool, name)| (key(name), tool.as_str())).collect();
    let free_for = |name: &str, tool: &str, taken: &HashSet<String>| {
        let k = key(name);
        !taken.contains(&k) && owner.get(&k).is_none_or(|o| *o == tool)
    };
    let mut names: Vec<Option<String>> = vec![None; tools.len()];
    let mut taken: HashSet<String> = HashSet::new();
    // First the names handed out before, then the names that need no
    // change; what is left is generated around both.
    for (i, tool) in tools.iter().enumerate() {
        if let Some(old) = given.get(*tool)
            && taken.insert(key(old))
        {
            names[i] = Some(old.clone());
        }
    }
    for (i, tool) in tools.iter().enumerate() {
        if names[i].is_none() && plain[i] == format!("mcp__{server}__{tool}") && free_for(&plain[i], tool, &taken) {
            taken.insert(key(&plain[i]));
            names[i] = Some(plain[i].clone());
        }
    }
    tools
        .iter()
        .zip(&plain)
        .zip(names)
        .map(|((tool, name), named)| {
            if let Some(n) = named {
                return n;
            }
            if uses.get(&key(name)).copied().unwrap_or(0) == 1 && free_for(name, tool, &taken) {
                taken.insert(key(name));
                return name.clone();
            }
            let mut salt = 0u32;
            loop {
                let candidate = hashed(server, tool, salt);
                if free_for(&candidate, tool, &taken) {
                    taken.insert(key(&candidate));
                    return candidate;
                }
                salt += 1;
            }
        })
        .collect()
}

/// Why a tool cannot be offered, if it cannot: MCP tools take an object
/// of arguments, and wield checks them against the tool's schema, so a
/// schema that admits no object would make every call fail validation, and
/// one wield cannot compile (an unknown type, a bad `pattern`, a `$ref` to
/// another document, which wield never fetches) would fail its tool at
/// registration.
pub(crate) fn unusable_schema(tool: &rmcp::model::Tool) -> Option<String> {
    let object = |t: &Value| t.as_str() == Some("object");
    match tool.input_schema.get("type") {
        None => {}
        Some(t) if object(t) => {}
        Some(Value::Array(ts)) if ts.iter().any(object) => {}
        Some(t) => {
            return Some(format!(
                "its input schema has `\"type\": {t}`, but MCP tools take an object of arguments, so no call could pass it"
            ));
        }
    }
    InputValidator::new(&offered_schema(tool))
        .err()
        .map(|e| format!("wield cannot use its input schema: {e}"))
}

/// The input schema wield offers and checks for `tool`: the server's, with
/// `"type": ["object", "null"]` made `"object"`: wield always sends an
/// object, and says so, so the schema it offers and the one it checks agree.
fn offered_schema(tool: &rmcp::model::Tool) -> Value {
    let mut schema = (*tool.input_schema).clone();
    if schema.get("type").is_some_and(Value::is_array) {
        schema.insert("type".into(), Value::String("object".into()));
    }
    Value::Object(schema)
}

fn clean(tool: &str) -> String {
    tool.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `mcp__SERVER__TOOL` cut to leave room for `_` and eight hex digits of an
/// FNV-1a hash of the original name (stable, dependency-free; it only has
/// to tell one server's tools apart). A nonzero `salt` is hashed after the
/// name, for another name when the first is taken.
fn hashed(server: &str, tool: &str, salt: u32) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let salt = salt.to_le_bytes();
    let extra: &[u8] = if salt == [0; 4] { &[] } else { &salt };
    for &b in tool.as_bytes().iter().chain(extra) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    let suffix = format!("_{h:08x}");
    let mut name = format!("mcp__{server}__{}", clean(tool));
    name.truncate(MAX_NAME - suffix.len());
    name + &suffix
}

pub struct McpTool {
    server: Arc<ServerEntry>,
    /// The name the server knows the tool by.
    remote: String,
    base: ToolBase,
    retry_safe: bool,
    /// The check of the output schema the tool declares, when it declares
    /// one wield can use.
    output: Option<InputValidator>,
}

impl McpTool {
    /// `tool` of `server`, named `name` (from [`tool_names`]).
    pub(crate) fn new(server: Arc<ServerEntry>, tool: rmcp::model::Tool, name: String) -> Self {
        let mut spec = ToolSpec::new(
            name,
            tool.description.as_deref().unwrap_or_default(),
            offered_schema(&tool),
        );
        let title = tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()));
        if let Some(t) = title {
            spec = spec.title(t);
        }
        // Offered only when wield can check results against it: a client
        // that reads it checks them too, and rejects a result that breaks it.
        let mut output = None;
        if let Some(schema) = &tool.output_schema {
            let schema = Value::Object((**schema).clone());
            match InputValidator::new(&schema) {
                Ok(validator) => {
                    spec = spec.output_schema(schema);
                    output = Some(validator);
                }
                Err(e) => tracing::debug!("MCP tool `{}`: its output schema is not offered: {e}", tool.name),
            }
        }
        let hints = tool.annotations.as_ref();
        let traits = ToolTraits {
            // A server's hints are its own claims: trusting `readOnlyHint`
            // would let any server put its tools in `$readonly` and so past
            // approval. Bridged tools are approved by name (`mcp__NAME__*`).
            read_only: false,
            // MCP's default for openWorldHint is true.
            open_world: hints.and_then(|a| a.open_world_hint).unwrap_or(true),
            groups: vec!["mcp".into()],
            // It stops the call itself (and tells the server) when the
            // limit is reached.
            capabilities: vec![wield_core::HANDLES_TIMEOUT.into()],
            ..ToolTraits::default()
        };
        // Only decides whether a call that may have reached a server that
        // then died is sent again; a server that lies here harms itself.
        let retry_safe = hints.is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true));
        Self {
            server,
            remote: tool.name.into_owned(),
            base: ToolBase::new(spec, traits),
            retry_safe,
            output,
        }
    }

    /// `result`, unless it succeeded without the structured content its
    /// output schema promises: then a failure that says what is wrong, with
    /// the text the server sent, since a client that has the schema would
    /// reject the result whole.
    fn checked(&self, result: ToolResult) -> ToolResult {
        let Some(validator) = self.output.as_ref().filter(|_| result.success) else {
            return result;
        };
        let why = match result.metadata.get("structured_content") {
            None => "it has no structured content".to_owned(),
            Some(structured) => match validator.validate(structured) {
                Ok(()) => return result,
                Err(errors) => format!("its structured content does not match: {}", errors.join("; ")),
            },
        };
        let mut failed = ToolResult::error(format!(
            "{}\n\nMCP server `{}` declares an output schema for `{}`, but this result breaks it ({why})",
            result.output, self.server.config.name, self.remote
        ));
        failed.metadata = result.metadata;
        failed.metadata.remove("structured_content");
        failed
    }
}

#[async_trait]
impl Tool for McpTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    /// A bridged tool declares no paths, so its approval subject is read
    /// from its arguments: a `command` as plain text (matched as a whole,
    /// never parsed as wield's own shell tools parse theirs), else a `path`.
    fn approval_subject(&self, input: &Value) -> Subject {
        argument_subject(input)
    }

    /// The server's `timeout`, unless the tool's own config sets one.
    fn default_timeout(&self) -> Option<std::time::Duration> {
        Some(self.server.config.timeout)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let server = &self.server.config.name;
        let arguments = match input {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return ToolResult::error(format!("the arguments must be a JSON object, got {other}"));
            }
        };
        let limit = ctx.timeout;
        // Under a front-end of many sessions, what the server asks while
        // this call runs goes to this call's session.
        let front = self.server.front.as_ref().and_then(|f| f.routes());
        let session = ctx.session.get_extension::<super::SessionFrontEnd>();
        let _routed = front
            .zip(session)
            .map(|(routes, own)| routes.begin(server, Arc::clone(&own.0)));
        // A call that could not be sent (the server died since its last
        // use and the connection has not noticed yet; over HTTP, no
        // connection could be made) is retried once on a restarted server;
        // one that may have reached the server is retried only when the
        // tool says it is read-only or idempotent.
        let http = matches!(self.server.config.transport, super::config::Transport::Http { .. });
        for attempt in 0..2 {
            let link = match self.server.link().await {
                Ok(l) => l,
                Err(e) => return ToolResult::error(e),
            };
            let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments.clone());
            // Another call's reply too large to read leaves this one be.
            let sent = super::progress::Sent::default();
            let oversized = link.health.oversized_reply(&sent.id, link.health.oversized_count());
            tokio::pin!(oversized);
            // Dropping the request (cancellation, timeout) sends
            // `notifications/cancelled` to the server; its progress
            // notifications become this call's output.
            let mut call = Box::pin(tokio::time::timeout(
                limit,
                super::progress::call_tool(&link.peer, &link.progress, params, ctx, &sent),
            ));
            let outcome = tokio::select! {
                biased;
                r = &mut call => Ok(r.map(|r| r.map_err(Failure::Service))),
                () = ctx.cancel.cancelled() => Err(Cut::Cancelled),
                () = &mut oversized => Err(Cut::Oversized),
                // The process exited while something it started may still
                // hold its output open: the connection would not notice.
                () = link.health.exited() => {
                    // A reply written just before the exit is still read.
                    Ok(match tokio::time::timeout(AFTER_EXIT, &mut call).await {
                        Ok(r) => r.map(|r| r.map_err(Failure::Service)),
                        Err(_) => Ok(Err(Failure::Exited)),
                    })
                }
            };
            // A call cut short has the server told so before wield goes
            // on (and maybe exits).
            drop(call);
            sent.told(NOTICE).await;
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(Cut::Cancelled) => return ToolResult::error("cancelled").with_meta("cancelled", true),
                Err(Cut::Oversized) => {
                    return ToolResult::error(format!(
                        "MCP server `{server}` sent a reply of more than {} MiB to the call to `{}`, more than wield \
                         reads in one message, so it was dropped; ask the tool for less at a time",
                        MAX_MESSAGE >> 20,
                        self.remote
                    ));
                }
            };
            let failure = match outcome {
                Ok(Ok(result)) => {
                    return self
                        .checked(super::result::map_result(result))
                        .with_meta("mcp_server", server.as_str());
                }
                Ok(Err(Failure::Service(ServiceError::TransportClosed))) if !http => {
                    // The pipe closing usually comes with the exit: say how
                    // it ended when that is known.
                    let _ = tokio::time::timeout(EXIT_AFTER_CLOSE, link.health.exited()).await;
                    if link.health.has_exited() {
                        Failure::Exited
                    } else {
                        Failure::Service(ServiceError::TransportClosed)
                    }
                }
                Ok(Err(f)) => f,
                Err(_) => {
                    return ToolResult::error(format!(
                        "MCP server `{server}` did not answer within {}",
                        wield_core::human_duration(limit)
                    ))
                    .with_meta("timed_out", true);
                }
            };
            if matches!(failure, Failure::Exited) {
                link.health.settled().await;
            }
            let (retry, broken, why) = match &failure {
                Failure::Exited => (
                    self.retry_safe,
                    true,
                    format!(
                        "MCP server `{server}` exited ({}) during the call to `{}`{}",
                        link.health.status().unwrap_or("status unknown"),
                        self.remote,
                        link.health.stderr.suffix()
                    ),
                ),
                Failure::Service(error) => (
                    match error {
                        // Over HTTP the POST is the send: it fails too when
                        // the server took the call but its answer did not
                        // come back (a 504 from a proxy), so only a request
                        // that never left is sent again.
                        ServiceError::TransportSend(e) if http => self.retry_safe || never_left(e.error.as_ref()),
                        ServiceError::TransportSend(_) => true,
                        ServiceError::TransportClosed => self.retry_safe,
                        _ => false,
                    },
                    // Over HTTP one request's stream can end while the
                    // session goes on: other calls in flight keep it.
                    if http {
                        link.peer.is_transport_closed()
                    } else {
                        matches!(error, ServiceError::TransportSend(_) | ServiceError::TransportClosed)
                    },
                    if http && matches!(error, ServiceError::TransportClosed) && !link.peer.is_transport_closed() {
                        format!(
                            "MCP server `{server}` ended its HTTP response to the call to `{}` without the result",
                            self.remote
                        )
                    } else {
                        format!(
                            "MCP server `{server}` failed the call to `{}`: {}",
                            self.remote,
                            wield_core::approval::printable(&super::connect::with_causes(error))
                        )
                    },
                ),
            };
            if broken {
                self.server.forget(&why).await;
            }
            if retry && attempt == 0 {
                tracing::warn!("{why}; restarting it and trying again");
                continue;
            }
            let hint = match failure {
                Failure::Exited => " (it is started again on the next call)",
                Failure::Service(_) if broken => " (its connection broke; it is restarted on the next call)",
                Failure::Service(_) => "",
            };
            return ToolResult::error(format!("{why}{hint}"));
        }
        ToolResult::error(format!("MCP server `{server}` could not be reached"))
    }
}

/// Whether an HTTP request failed before any of it reached the server (no
/// connection could be made).
fn never_left(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_connect)
        {
            return true;
        }
        cause = crate::compat::client::cause_of(e);
    }
    false
}

/// How long a call cut short waits for the server to be told so.
const NOTICE: std::time::Duration = std::time::Duration::from_millis(250);

/// Why a call was cut short.
enum Cut {
    Cancelled,
    Oversized,
}

/// How a call failed, short of an answer.
enum Failure {
    /// The SDK's error: a protocol error, or the connection broke.
    Service(ServiceError),
    /// The server's process exited before answering.
    Exited,
}

/// A bridged call's approval subject: its `command` as text, else its `path`.
fn argument_subject(input: &Value) -> Subject {
    if let Some(command) = input.get("command").and_then(Value::as_str) {
        return Subject::Text(command.trim().to_owned());
    }
    match input.get("path").and_then(Value::as_str) {
        Some(path) => Subject::Paths(vec![PathSubject::new(path)]),
        None => Subject::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_bridged_call_is_approved_by_its_command_else_its_path() {
        let command = argument_subject(&json!({"command": " git status ", "path": "x"}));
        assert_eq!(command, Subject::Text("git status".into()));
        let path = argument_subject(&json!({"path": "src/a.rs"}));
        assert_eq!(path, Subject::Paths(vec![PathSubject::new("src/a.rs")]));
        assert_eq!(argument_subject(&json!({"message": "hi"})), Subject::None);
    }

    #[test]
    fn names_are_api_safe_and_bounded() {
        assert_eq!(tool_name("everything", "get-sum"), "mcp__everything__get-sum");
        assert_eq!(tool_name("fs", "read.file:v2"), "mcp__fs__read_file_v2");
        let long = tool_name("srv", &"x".repeat(100));
        assert_eq!(long.len(), MAX_NAME);
        assert_ne!(long, tool_name("srv", &format!("{}y", "x".repeat(99))));
    }

    #[test]
    fn names_that_meet_after_cleaning_stay_apart() {
        let none = std::collections::HashMap::new();
        let names = tool_names("s", ["read.file", "read_file", "日本", "中文", "ok"], &none);
        assert_eq!(names[1], "mcp__s__read_file", "an unchanged name keeps it");
        assert!(names[0].starts_with("mcp__s__read_file_") && names[0].len() == "mcp__s__read_file".len() + 9);
        assert_eq!(names[4], "mcp__s__ok");
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 5, "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        );
        // Without a collision a cleaned name stays short.
        assert_eq!(tool_names("s", ["read.file"], &none), ["mcp__s__read_file"]);

        // A tool named before keeps its name when a newcomer would take it.
        let given: std::collections::HashMap<String, String> =
            [("read.file".to_owned(), "mcp__s__read_file".to_owned())].into();
        let names = tool_names("s", ["read.file", "read_file"], &given);
        assert_eq!(names[0], "mcp__s__read_file");
        assert!(
            names[1].starts_with("mcp__s__read_file_") && names[1].len() == names[0].len() + 9,
            "{names:?}"
        );
    }

    /// Regression: `read.file` was given `…_2d6f0437`, the hash of its
    /// name, though the server also lists a tool of that very name, which
    /// was then dropped as "listed twice".
    #[test]
    fn generated_names_avoid_every_name_taken() {
        let none = std::collections::HashMap::new();
        let taken = hashed("odd", "read.file", 0);
        assert_eq!(taken, "mcp__odd__read_file_2d6f0437");
        let listed = ["read.file", "read_file", "read_file_2d6f0437"];
        let names = tool_names("odd", listed, &none);
        assert_eq!(names[1], "mcp__odd__read_file");
        assert_eq!(
            names[2], "mcp__odd__read_file_2d6f0437",
            "a name that needs no change keeps it"
        );
        assert!(names[0].starts_with("mcp__odd__read_file_") && names[0].len() == taken.len());
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 3, "{names:?}");
        // The same in any order.
        let names2 = tool_names("odd", ["read_file_2d6f0437", "read.file", "read_file"], &none);
        assert_eq!(names2, [names[2].clone(), names[0].clone(), names[1].clone()]);

        // A long name's generated name meets a listed one too.
        let long = "x".repeat(80);
        let generated = tool_name("s", &long);
        let suffix = generated.trim_start_matches("mcp__s__").to_owned();
        let names = tool_names("s", [long.as_str(), suffix.as_str()], &none);
        assert_eq!(names[1], generated);
        assert_ne!(names[0], generated, "{names:?}");
        assert_eq!(names[0].len(), MAX_NAME);

        // Names given before keep their tools even when a newcomer's
        // unchanged name is one of them.
        let given: std::collections::HashMap<String, String> =
            [("read.file".to_owned(), "mcp__odd__read_file_2d6f0437".to_owned())].into();
        let names = tool_names("odd", listed, &given);
        assert_eq!(names[0], "mcp__odd__read_file_2d6f0437");
        assert_eq!(names[1], "mcp__odd__read_file");
        let unique: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), 3, "{names:?}");
    }

    /// Regression: `a.b`, named `mcp__s__a_b`, left the list and `a_b`
    /// came in; `a_b` took the name, and what was approved as `a.b` ran
    /// `a_b`.
    #[test]
    fn a_name_given_once_stays_its_tools_after_it_leaves_the_list() {
        let given: std::collections::HashMap<String, String> = [("a.b".to_owned(), "mcp__s__a_b".to_owned())].into();
        let names = tool_names("s", ["a_b"], &given);
        assert_ne!(names[0], "mcp__s__a_b", "{names:?}");
        assert!(names[0].starts_with("mcp__s__a_b_"), "{names:?}");
        // It comes back: it has its name again.
        assert_eq!(tool_names("s", ["a_b", "a.b"], &given)[1], "mcp__s__a_b");
        // Ignoring case too.
        let names = tool_names("s", ["A_B"], &given);
        assert!(names[0].starts_with("mcp__s__A_B_"), "{names:?}");
    }

    /// Regression: `echo` and `Echo` got names that differ only in case,
    /// and approval rules match ignoring case: a rule for one approved both.
    #[test]
    fn names_that_differ_only_in_case_are_told_apart() {
        let none = std::collections::HashMap::new();
        let names = tool_names("s", ["echo", "Echo", "ECHO"], &none);
        assert_eq!(names[0], "mcp__s__echo");
        let lower: std::collections::HashSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
        assert_eq!(lower.len(), 3, "{names:?}");
        assert!(names[1].starts_with("mcp__s__Echo_"), "{names:?}");
    }

    fn tool(schema: Value) -> rmcp::model::Tool {
        serde_json::from_value(json!({"name": "t", "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_schema_that_admits_no_object_is_unusable() {
        for ok in [
            json!({}),
            json!({"type": "object"}),
            json!({"properties": {"a": {}}}),
            json!({"type": ["object", "null"]}),
        ] {
            assert_eq!(unusable_schema(&tool(ok.clone())), None, "{ok}");
        }
        for bad in [json!({"type": "string"}), json!({"type": ["array", "null"]})] {
            let why = unusable_schema(&tool(bad.clone())).unwrap();
            assert!(why.contains("object of arguments"), "{bad}: {why}");
        }
    }
}
