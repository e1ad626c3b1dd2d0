//! The execution pipeline over a batch of calls from one model response.
//!
//! - **A, pre-flight** (sequential, in order): lookup, validation, pre hooks,
//!   `tool.pre()`, approval, path pre-filter. A refused call gets its error
//!   result here and goes no further.
//! - **B, execution**: parallel-safe calls concurrently (bounded), then the
//!   others one by one; each under a timeout, all cancellable together.
//! - **C, post-processing** (sequential, in call order): `tool.post()`, post
//!   hooks, the result-size guard, events and the audit log.
//!
//! Every call gets exactly one result, in the order of the calls; a tool that
//! panics becomes an error result.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::{
    ApprovalAnswer, ApprovalCall, ApprovalRequest, ApprovalStore, Approver, Decision, ResolverChain, Scope, Subject,
    derive_pattern,
};
use crate::config::{Config, parse_duration};
use crate::context::{Context, Services, Session};
use crate::events::{AuditLog, Event, EventSink};
use crate::hooks::{Hook, HookCall};
use crate::names::closest_n;
use crate::policy::Visibility;
use crate::refusal::{Refusal, error_chain};
use crate::registry::{Registered, Registry};
use crate::schema::{fill_nullable, validation_message};
use crate::tool::{Access, HANDLES_TIMEOUT, TIMEOUT_ARGUMENT, ToolRef, ToolResult};
use crate::truncate::{Limits, SavedOutputs, truncate_head};

mod builder;

pub use builder::ExecutorBuilder;

/// One call requested by a model (or a person).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub input: Value,
}

impl Call {
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// Checks a path a call declares against the roots, before it runs. What
/// it learns on the way (a resolved path) it may leave in the call's
/// [`Context::scratch`] for the tool.
pub trait PathGuard: Send + Sync {
    /// `Err` refuses the call: [`Refusal::ToModel`] for a path the call may
    /// not touch, [`Refusal::Failed`] when the check itself broke.
    fn check(&self, path: &str, access: Access, ctx: &Context) -> Result<(), Refusal>;
}

/// Margin given to tools that enforce their own timeout.
const SELF_TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Runs batches of calls through the pipeline.
pub struct Executor {
    registry: Arc<Registry>,
    config: Arc<Config>,
    workspace: PathBuf,
    chain: ResolverChain,
    approver: Arc<dyn Approver>,
    store: Option<Arc<dyn ApprovalStore>>,
    events: EventSink,
    services: Arc<Services>,
    visibility: Arc<dyn Visibility>,
    hooks: Vec<Arc<dyn Hook>>,
    path_guard: Option<Arc<dyn PathGuard>>,
    audit: Option<Arc<AuditLog>>,
    sandboxed: bool,
    tool_configs: HashMap<String, Arc<toml::Table>>,
    limits: Limits,
    max_parallel: usize,
    default_timeout: Duration,
}

/// The calls of a session running at once: at most `max_parallel`, across
/// every batch and every executor the session has had (an MCP session gets
/// a new executor when its roots or the tool set change), so what running
/// calls hold stays bounded. A call waiting for approval holds no place.
struct Running(Arc<tokio::sync::Semaphore>);

/// A call that passed pre-flight.
struct Ready {
    entry: Arc<Registered>,
    input: Value,
    ctx: Context,
    decision: &'static str,
    feedback: Vec<String>,
}

enum Slot {
    Ready(Box<Ready>),
    Refused { result: ToolResult, decision: &'static str },
}

/// What [`Executor::decide`] found for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Precheck {
    /// A rule approves it.
    Approve,
    /// A person must decide.
    Ask,
    /// A rule denies it (the message names the rule).
    Deny(String),
    /// It cannot run at all (unknown or hidden tool, invalid input): the
    /// message for the model.
    Refused(String),
}

impl Executor {
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn events(&self) -> &EventSink {
        &self.events
    }

    pub fn services(&self) -> &Arc<Services> {
        &self.services
    }

    pub fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The audit log the calls are written to, if any (a front-end writes
    /// its own records, a model turn, beside them).
    pub fn audit(&self) -> Option<&Arc<AuditLog>> {
        self.audit.as_ref()
    }

    /// Run one call.
    pub async fn run_one(&self, call: Call, session: &Arc<Session>, cancel: &CancellationToken) -> ToolResult {
        self.run_batch(vec![call], session, cancel)
            .await
            .pop()
            .unwrap_or_else(|| ToolResult::error("internal error: no result"))
    }

    /// Run a batch; one result per call, in call order.
    pub async fn run_batch(
        &self,
        calls: Vec<Call>,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        self.run_batch_timed(calls, session, cancel)
            .await
            .into_iter()
            .map(|(result, _)| result)
            .collect()
    }

    /// As [`Executor::run_batch`], with each call's own time: its checks
    /// and its run, not the time a person took to decide on it nor the
    /// time other calls of the batch took.
    pub async fn run_batch_timed(
        &self,
        calls: Vec<Call>,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> Vec<(ToolResult, Duration)> {
        // Each call's own time: its checks and its run, not the time a
        // person took to decide nor the other calls' runs.
        let mut own: Vec<Duration> = calls.iter().map(|_| Duration::ZERO).collect();
        let ids: Vec<(String, String, Value)> = if self.audit.is_some() {
            calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.input.clone()))
                .collect()
        } else {
            Vec::new()
        };

        // Phase A.
        let mut slots = Vec::with_capacity(calls.len());
        let mut batch_cancelled = false;
        for call in calls {
            if batch_cancelled {
                slots.push(Slot::Refused {
                    result: ToolResult::error("cancelled: the person approving cancelled this batch of calls"),
                    decision: "cancelled",
                });
                continue;
            }
            let checking = Instant::now();
            let mut waited = Duration::ZERO;
            let slot = self
                .preflight(call, session, cancel, &mut batch_cancelled, &mut waited)
                .await;
            if let Some(own) = own.get_mut(slots.len()) {
                *own = checking.elapsed().saturating_sub(waited);
            }
            slots.push(slot);
        }

        // Phase B: parallel-safe calls together, then the rest in order.
        let mut results: Vec<Option<(ToolResult, &'static str, Option<Ready>)>> = slots.iter().map(|_| None).collect();
        let mut parallel = Vec::new();
        let mut serial = Vec::new();
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Slot::Refused { result, decision } => results[i] = Some((result, decision, None)),
                Slot::Ready(r) if r.entry.tool.traits().parallel => parallel.push((i, *r)),
                Slot::Ready(r) => serial.push((i, *r)),
            }
        }
        let timed = |r: Ready| async move {
            let running = Instant::now();
            let res = self.execute(&r).await;
            (res, r, running.elapsed())
        };
        if parallel.len() == 1 {
            for (i, r) in parallel {
                let (res, r, took) = timed(r).await;
                own[i] += took;
                results[i] = Some((res, r.decision, Some(r)));
            }
        } else if !parallel.is_empty() {
            let done: Vec<(usize, (ToolResult, Ready, Duration))> = futures::stream::iter(parallel)
                .map(|(i, r)| async move { (i, timed(r).await) })
                .buffered(self.max_parallel)
                .collect()
                .await;
            for (i, (res, r, took)) in done {
                own[i] += took;
                results[i] = Some((res, r.decision, Some(r)));
            }
        }
        for (i, r) in serial {
            let (res, r, took) = timed(r).await;
            own[i] += took;
            results[i] = Some((res, r.decision, Some(r)));
        }

        // Phase C.
        let mut out = Vec::with_capacity(results.len());
        for (i, slot) in results.into_iter().enumerate() {
            let (mut result, decision, ready) = slot.unwrap_or_else(|| {
                (
                    ToolResult::error("internal error: call produced no result"),
                    "error",
                    None,
                )
            });
            let finishing = Instant::now();
            let tool_name = if let Some(r) = &ready {
                self.postprocess(r, &mut result).await;
                r.ctx.tool.clone()
            } else {
                String::new()
            };
            let duration = own.get(i).copied().unwrap_or_default() + finishing.elapsed();
            let truncated = result
                .metadata
                .get("truncated")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if self.events.has_listeners() {
                let call_id = ready.as_ref().map(|r| r.ctx.call_id.clone()).unwrap_or_default();
                self.events.emit(&Event::CallFinished {
                    call_id,
                    tool: tool_name,
                    success: result.success,
                    duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
                    truncated,
                });
            }
            if let (Some(audit), Some((id, name, input))) = (&self.audit, ids.get(i)) {
                audit.record(
                    id,
                    name,
                    input,
                    decision,
                    result.success,
                    duration,
                    truncated,
                    result.error.as_deref(),
                );
            }
            out.push((result, duration));
        }
        out
    }

    fn refuse(&self, call_id: &str, tool: &str, message: String, decision: &'static str) -> Slot {
        if decision == "denied" && self.events.has_listeners() {
            self.events.emit(&Event::CallDenied {
                call_id: call_id.to_owned(),
                tool: tool.to_owned(),
                reason: message.clone(),
            });
        }
        Slot::Refused {
            // Marked, so that an agent can tell a call that never ran (and
            // prune it once the model has seen why) from one that failed.
            result: ToolResult::error(message).with_meta("refused", decision),
            decision,
        }
    }

    /// The error result of a call a pre-flight seam refused: the message for
    /// the model as it stands; a failed check is logged with its causes and
    /// the model told that the check, not the call, went wrong.
    fn refuse_for(&self, call_id: &str, tool: &str, refusal: Refusal, decision: &'static str) -> Slot {
        let message = match refusal {
            Refusal::ToModel(message) => message,
            failed @ Refusal::Failed { .. } => {
                let chain = error_chain(&failed);
                tracing::warn!("the pre-flight check of `{tool}` failed: {chain}");
                format!(
                    "the call to `{tool}` was not run because wield could not check it: {chain}. \
                     This is a fault in the setup, not in the call; retrying will not help until it is fixed."
                )
            }
        };
        self.refuse(call_id, tool, message, decision)
    }

    async fn preflight(
        &self,
        call: Call,
        session: &Arc<Session>,
        cancel: &CancellationToken,
        batch_cancelled: &mut bool,
        waited: &mut Duration,
    ) -> Slot {
        let (entry, mut input) = match self.admit(&call.name, call.input, session) {
            Ok(admitted) => admitted,
            Err((message, decision)) => return self.refuse(&call.id, &call.name, message, decision),
        };
        let tool = &entry.tool;
        let spec = tool.spec();
        let name = spec.name.as_str();

        let mut feedback = Vec::new();
        for hook in &self.hooks {
            let hc = HookCall {
                call_id: &call.id,
                tool: name,
                input: &input,
                cwd: &self.workspace,
                file_paths: tool.paths(&input).into_iter().map(|p| p.path).collect(),
            };
            let outcome = hook.pre(&hc).await;
            feedback.extend(outcome.feedback);
            if let Some(reason) = outcome.block {
                return self.refuse(
                    &call.id,
                    name,
                    format!("blocked by hook `{}`: {reason}", hook.name()),
                    "denied",
                );
            }
            if let Some(mut new_input) = outcome.input {
                if spec.strict {
                    fill_nullable(&spec.input_schema, &mut new_input);
                }
                if let Err(errors) = entry.validator.validate(&new_input) {
                    let msg = format!(
                        "hook `{}` rewrote the input into an invalid one:\n{}",
                        hook.name(),
                        validation_message(name, &errors, &spec.input_schema)
                    );
                    return self.refuse(&call.id, name, msg, "invalid");
                }
                input = new_input;
            }
        }

        let ctx = self.context(&call.id, tool, &input, session, cancel);
        if let Err(refusal) = tool.pre(&input, &ctx).await {
            return self.refuse_for(&call.id, name, refusal, "refused");
        }

        let (subject, verdict) = self.verdict(tool, &input, session);
        // A resolver above the remembered rules that asks (a `confirm`
        // rule) asks again whatever is remembered.
        let asked_by_rule = verdict.decision == Decision::RequireApproval
            && self
                .chain
                .get(&verdict.resolver)
                .is_some_and(|r| r.priority() > crate::approval::PRIORITY_RULES);
        let decision = match verdict.decision {
            Decision::Approve => {
                if self.events.has_listeners() {
                    self.events.emit(&Event::CallApproved {
                        call_id: call.id.clone(),
                        tool: name.to_owned(),
                        by: verdict.resolver.clone(),
                    });
                }
                "approved"
            }
            Decision::Deny(reason) => {
                return self.refuse(&call.id, name, format!("denied by policy: {reason}"), "denied");
            }
            Decision::RequireApproval | Decision::Pass => {
                let preview = tool.preview(&input, 100);
                if self.events.has_listeners() {
                    self.events.emit(&Event::CallPending {
                        call_id: call.id.clone(),
                        tool: name.to_owned(),
                        preview: preview.clone(),
                    });
                }
                let derived = derive_pattern(name, &subject, &self.workspace);
                let request = ApprovalRequest {
                    call_id: call.id.clone(),
                    tool: name.to_owned(),
                    detail: tool.approval_detail(&input, &ctx).await,
                    pattern: derived.pattern,
                    input: input.clone(),
                    preview,
                    always_asks: asked_by_rule || !derived.reusable,
                    reason: if asked_by_rule {
                        verdict.reason.clone().or_else(|| {
                            Some(format!(
                                "the approval resolver `{}` asks for it every time",
                                verdict.resolver
                            ))
                        })
                    } else if !derived.reusable {
                        Some(crate::approval::NOT_ONE_PLAIN_COMMAND.to_owned())
                    } else {
                        None
                    },
                };
                // A call cancelled while its approval is pending is not
                // run, whatever the answer would have been.
                let asking = Instant::now();
                let answer = tokio::select! {
                    biased;
                    () = cancel.cancelled() => {
                        return self.refuse(
                            &call.id,
                            name,
                            "cancelled while waiting for approval".into(),
                            "cancelled",
                        );
                    }
                    answer = self.approver.ask(&request) => answer,
                };
                // The time a person took to decide is not the tool's.
                *waited += asking.elapsed();
                match answer {
                    ApprovalAnswer::Allow(scope) => {
                        // An approver that offers to remember what cannot
                        // be remembered gets "once".
                        if !request.always_asks {
                            self.remember(scope, &request.pattern, session);
                        }
                        if self.events.has_listeners() {
                            self.events.emit(&Event::CallApproved {
                                call_id: call.id.clone(),
                                tool: name.to_owned(),
                                by: "approver".into(),
                            });
                        }
                        "approved_by_user"
                    }
                    ApprovalAnswer::Deny(message) => {
                        let msg = message.unwrap_or_else(|| format!("denied: the user refused the call to `{name}`"));
                        return self.refuse(&call.id, name, msg, "denied");
                    }
                    ApprovalAnswer::CancelBatch => {
                        *batch_cancelled = true;
                        return self.refuse(
                            &call.id,
                            name,
                            "cancelled: the person approving cancelled this batch of calls".into(),
                            "cancelled",
                        );
                    }
                }
            }
        };

        if let Some(guard) = &self.path_guard {
            for p in tool.paths(&input) {
                if let Err(refusal) = guard.check(&p.path, p.access, &ctx) {
                    return self.refuse_for(&call.id, name, refusal, "denied");
                }
            }
        }
        Slot::Ready(Box::new(Ready {
            entry,
            input,
            ctx,
            decision,
            feedback,
        }))
    }

    /// The checks before a call's hooks: the tool exists and may be called
    /// in `session`, and `input` is valid for it (nullable fields filled
    /// in for a strict tool). `Err` carries the message for the model and
    /// the audit's decision.
    fn admit(
        &self,
        name: &str,
        mut input: Value,
        session: &Session,
    ) -> Result<(Arc<Registered>, Value), (String, &'static str)> {
        let Some(entry) = self.registry.lookup(name) else {
            return Err((self.unknown_tool(name, session), "unknown_tool"));
        };
        let entry = Arc::clone(entry);
        let spec = entry.tool.spec();
        let name = spec.name.as_str();
        if let Err(why) = self.visibility.check_callable(name, session) {
            return Err((format!("tool `{name}` is not available: {why}"), "hidden"));
        }
        if !input.is_object() {
            return Err((
                format!(
                    "Invalid arguments for tool `{name}`: the arguments must be a JSON object, got {}",
                    kind_of(&input)
                ),
                "invalid",
            ));
        }
        if spec.strict {
            fill_nullable(&spec.input_schema, &mut input);
        }
        if let Err(errors) = entry.validator.validate(&input) {
            return Err((validation_message(name, &errors, &spec.input_schema), "invalid"));
        }
        Ok((entry, input))
    }

    /// The call's approval subject (paths resolved against the workspace)
    /// and the chain's verdict on it.
    fn verdict(&self, tool: &ToolRef, input: &Value, session: &Session) -> (Subject, crate::approval::Verdict) {
        let mut subject = tool.approval_subject(input);
        if let Subject::Paths(paths) = &mut subject {
            for path in paths {
                path.resolve(&self.workspace);
            }
        }
        let verdict = self.chain.resolve(&ApprovalCall {
            tool: &tool.spec().name,
            input,
            subject: &subject,
            traits: tool.traits(),
            session,
            workspace: &self.workspace,
            sandboxed: self.sandboxed,
        });
        (subject, verdict)
    }

    /// What the approval chain says of `call` in `session`, without running
    /// it or asking anyone (hooks and the tool's own checks run only when
    /// it runs): for a front-end that writes the decision down for a person
    /// to act on later, as a `.chat` document does.
    pub fn decide(&self, call: &Call, session: &Arc<Session>) -> Precheck {
        let (entry, input) = match self.admit(&call.name, call.input.clone(), session) {
            Ok(admitted) => admitted,
            Err((message, _)) => return Precheck::Refused(message),
        };
        let (_, verdict) = self.verdict(&entry.tool, &input, session);
        match verdict.decision {
            Decision::Approve => Precheck::Approve,
            Decision::Deny(reason) => Precheck::Deny(format!("denied by policy: {reason}")),
            Decision::RequireApproval | Decision::Pass => Precheck::Ask,
        }
    }

    fn remember(&self, scope: Scope, pattern: &str, session: &Session) {
        match scope {
            Scope::Once => {}
            Scope::Session => session.add_rule(pattern),
            Scope::Project | Scope::Global => {
                session.add_rule(pattern);
                if let Some(store) = &self.store
                    && let Err(e) = store.remember(scope, pattern)
                {
                    tracing::warn!("could not save approval rule `{pattern}`: {}", error_chain(&e));
                }
            }
        }
    }

    fn unknown_tool(&self, name: &str, session: &Session) -> String {
        let callable: Vec<&str> = self
            .registry
            .names()
            .filter(|n| self.visibility.check_callable(n, session).is_ok())
            .collect();
        let near = closest_n(name, callable.iter().copied(), 3);
        let mut msg = format!("unknown tool `{name}`.");
        if !near.is_empty() {
            let list: Vec<String> = near.iter().map(|n| format!("`{n}`")).collect();
            msg.push_str(&format!(" Did you mean {}?", list.join(" or ")));
        }
        let mut all = callable.clone();
        all.truncate(40);
        msg.push_str(&format!(" Available tools: {}.", all.join(", ")));
        // The tool may belong to a source that failed (an MCP server that
        // did not start) or is disabled: say so, or the model keeps
        // guessing names.
        let failed: Vec<String> = self
            .registry
            .warnings()
            .iter()
            .map(|w| format!("{}: {}", w.source, crate::tool::one_line(&w.message, 300)))
            .collect();
        if !failed.is_empty() {
            msg.push_str(&format!(
                " Tool sources whose tools are missing: {}.",
                failed.join("; ")
            ));
        }
        msg
    }

    fn context(
        &self,
        call_id: &str,
        tool: &ToolRef,
        input: &Value,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> Context {
        let name = tool.spec().name.as_str();
        let config = self
            .tool_configs
            .get(name)
            .cloned()
            .unwrap_or_else(|| Arc::new(toml::Table::new()));
        let own = tool.traits().has_capability(TIMEOUT_ARGUMENT);
        let timeout = call_timeout(own.then_some(input), &config)
            .or_else(|| tool.default_timeout())
            .unwrap_or(self.default_timeout);
        Context {
            call_id: call_id.to_owned(),
            tool: name.to_owned(),
            cwd: self.workspace.clone(),
            timeout,
            cancel: cancel.child_token(),
            events: self.events.clone(),
            config,
            limits: self.limits,
            session: Arc::clone(session),
            services: Arc::clone(&self.services),
            scratch: crate::context::CallScratch::default(),
        }
    }

    async fn execute(&self, r: &Ready) -> ToolResult {
        let running = Arc::clone(
            &r.ctx
                .session
                .extension(|| Running(Arc::new(tokio::sync::Semaphore::new(self.max_parallel))))
                .0,
        );
        // Cancelled between approval and now (or while an earlier call of
        // the batch ran, or while waiting for a place): the tool must not
        // start, not even for one poll. Checked first, so a call already
        // cancelled never takes a place.
        let _place = tokio::select! {
            biased;
            () = r.ctx.cancel.cancelled() => return ToolResult::error("cancelled").with_meta("cancelled", true),
            place = running.acquire_owned() => place.ok(),
        };
        let tool = &r.entry.tool;
        if self.events.has_listeners() {
            self.events.emit(&Event::CallStarted {
                call_id: r.ctx.call_id.clone(),
                tool: r.ctx.tool.clone(),
            });
        }
        let limit = if tool.traits().has_capability(HANDLES_TIMEOUT) {
            r.ctx.timeout + SELF_TIMEOUT_MARGIN
        } else {
            r.ctx.timeout
        };
        let fut = AssertUnwindSafe(tool.execute(r.input.clone(), &r.ctx)).catch_unwind();
        let cancel = r.ctx.cancel.clone();
        tokio::select! {
            biased;
            outcome = tokio::time::timeout(limit, fut) => match outcome {
                Ok(Ok(result)) => result,
                Ok(Err(panic)) => {
                    let what = panic_message(panic.as_ref());
                    tracing::error!("tool `{}` panicked: {what}", r.ctx.tool);
                    ToolResult::error(format!("tool `{}` failed internally (panic: {what}); this is a bug in the tool, not in your call", r.ctx.tool))
                        .with_meta("panicked", true)
                }
                Err(_) => {
                    r.ctx.cancel.cancel();
                    ToolResult::error(format!("timed out after {}", human_duration(r.ctx.timeout)))
                        .with_meta("timed_out", true)
                }
            },
            () = cancel.cancelled() => ToolResult::error("cancelled").with_meta("cancelled", true),
        }
    }

    async fn postprocess(&self, r: &Ready, result: &mut ToolResult) {
        let tool = &r.entry.tool;
        tool.post(&r.input, result, &r.ctx).await;
        if !self.hooks.is_empty() {
            let hc = HookCall {
                call_id: &r.ctx.call_id,
                tool: &r.ctx.tool,
                input: &r.input,
                cwd: &self.workspace,
                file_paths: tool.paths(&r.input).into_iter().map(|p| p.path).collect(),
            };
            for hook in &self.hooks {
                hook.post(&hc, result).await;
            }
        }
        if !r.feedback.is_empty() {
            result
                .output
                .push_str(&format!("\n[hook feedback] {}", r.feedback.join("\n")));
        }
        // The result-size guard: tools that cut their own output say so in
        // `truncated`; anything else too large is cut here.
        if !result.metadata.contains_key("truncated")
            && (result.output.len() > self.limits.max_bytes
                || memchr_count(result.output.as_bytes()) > self.limits.max_lines)
        {
            // The full text goes where the runtime that built this
            // executor keeps its saved outputs, as the tools' own cuts do.
            let saved = self.services.get::<SavedOutputs>().unwrap_or_default();
            let t = truncate_head(&result.output, self.limits.max_lines, self.limits.max_bytes, &saved);
            result.output = t.text.clone();
            result.metadata.extend(t.metadata());
        }
    }
}

fn memchr_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| **b == b'\n').count()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The call's own `timeout` argument (seconds or a duration string) when
/// the tool takes one as its time limit, else the tool's configured
/// `timeout`.
fn call_timeout(input: Option<&Value>, config: &toml::Table) -> Option<Duration> {
    let from_input = match input.and_then(|i| i.get("timeout")) {
        Some(Value::Number(n)) => n.as_f64().and_then(crate::config::seconds),
        Some(Value::String(s)) => parse_duration(s),
        _ => None,
    };
    from_input.or_else(|| match config.get("timeout") {
        Some(toml::Value::Integer(n)) => u64::try_from(*n).ok().map(Duration::from_secs),
        Some(toml::Value::Float(f)) => crate::config::seconds(*f),
        Some(toml::Value::String(s)) => parse_duration(s),
        _ => None,
    })
}

/// A duration as a person reads it: `2s`, `1.5s`, `250ms`, or `300µs` below a
/// millisecond (never `0ms`, which would read as "no time at all").
pub fn human_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{}s", secs.round())
    } else if secs >= 1.0 {
        format!("{secs:.1}s")
    } else if d.as_millis() > 0 {
        format!("{}ms", d.as_millis())
    } else if d.as_micros() > 0 || d.is_zero() {
        format!("{}µs", d.as_micros())
    } else {
        format!("{}ns", d.as_nanos())
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_owned()
    }
}
