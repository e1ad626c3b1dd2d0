//! The three-phase cycle of a document, one press of the key:
//!
//! 1. **categorize** — every tool use without a result gets a placeholder
//!    whose status the approval chain decides (`approved`, `denied`,
//!    `pending`); a call that cannot run at all gets its error at once;
//! 2. **execute** — approved calls run and their output replaces the
//!    placeholder; denied, rejected and aborted ones get their error
//!    result; a pending one with the person's text in it has its answer;
//!    an empty pending one stops the cycle, and so does an approved one
//!    whose block the person edited;
//! 3. **send** — once every call has its final result, the conversation
//!    goes to the model and the reply streams into the document, then a
//!    fresh `@You:`.
//!
//! With autopilot the phases follow each other until a call waits for the
//! person, the steps run out, or the model answers without tools. Every
//! write re-reads the file and is atomic, so a person editing it at the
//! same time loses nothing.

mod file;
mod phases;
mod reply;
mod safe;
mod witness;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use wield_core::{Call, Executor, Precheck, Registered, Session, ToolResult};
use wield_llm::{Block, Provider, Request, StreamEvent, ToolChoice};

pub use file::{DocLock, LockError, cycle_files, lock_path, replace};
pub(crate) use phases::Outcome;
use phases::{Placement, Plan};
pub use reply::aside_path;
use witness::{Unconfirmed, Witness};

use crate::calls::ToolCall;
use crate::convert::ConvertOptions;
use crate::error::ChatError;
use crate::syntax::{Document, Segment, Speaker, Status};
use crate::write;

/// What the cycle runs with.
pub struct Cycle {
    /// The document.
    pub file: PathBuf,
    /// Runs the approved calls. Its approver approves: in a document the
    /// person approves by writing `(approved)`; rules that deny still deny.
    pub executor: Executor,
    pub session: Arc<Session>,
    pub provider: Provider,
    /// The tools offered to the model.
    pub tools: Vec<Arc<Registered>>,
    /// The model, for the thinking signatures it accepts back.
    pub model: String,
    pub tool_choice: ToolChoice,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub foreign_thinking: wield_llm::ForeignThinking,
    pub autopilot: bool,
    /// Replies with tool calls one run may get.
    pub max_steps: u32,
    /// One phase only.
    pub once: bool,
    /// The list of documents every runtime keeps out of its tools' reach
    /// between presses ([`wield_sandbox::fs::chat`]): the document is added
    /// as a run begins.
    pub ledger: Option<wield_sandbox::fs::chat::Ledger>,
    /// The document's lock, held for as long as the cycle lives.
    pub lock: Option<DocLock>,
}

/// What the cycle is doing, for the person watching.
#[derive(Debug)]
pub enum Progress<'a> {
    /// Phase 1 wrote placeholders: how many, and how many wait.
    Categorized {
        placed: usize,
        pending: usize,
    },
    /// A tool call starts.
    Running {
        id: &'a str,
        name: &'a str,
    },
    /// A tool call ended.
    Ran {
        id: &'a str,
        name: &'a str,
        success: bool,
    },
    /// Phase 2 wrote results.
    Resolved {
        results: usize,
    },
    /// The reply starts.
    Sending {
        step: u32,
    },
    Text(&'a str),
    Thinking(&'a str),
    /// A change the cycle did not make appeared in the document while it
    /// ran, and was not taken as the person's decision: why.
    NotTaken(&'a str),
}

/// Why the cycle stopped.
#[derive(Debug)]
pub enum Stop {
    /// The model answered without tools; a fresh `@You:` waits.
    Answered,
    /// Calls wait for the person: approve, reject or answer them.
    Waiting(Vec<ToolCall>),
    /// Approved calls whose blocks the person edited: not run.
    Edited(Vec<ToolCall>),
    /// Results were written; without autopilot the next press sends them.
    Resolved,
    /// The model asked for tools; without autopilot the next press
    /// categorizes them.
    Review,
    /// Nothing to send: the person's message is empty.
    NothingToSend,
    /// `max_steps` replies with tools in this run (their calls ran; the
    /// results were not sent).
    MaxSteps(u32),
    /// `--once`: one phase was done.
    Once(&'static str),
    /// The model called `done`.
    Done(String),
    /// The person changed the reply while it streamed: the rest is here.
    Diverted(PathBuf),
    /// Ctrl-C: every started call has its result, a reply its marker.
    Cancelled,
    /// The document changed while tools were running in ways the cycle
    /// does not take as the person's (an answer typed in a placeholder, a
    /// tool use's input, the person's messages): nothing more was run or
    /// sent; what to check, one line each.
    Unconfirmed(Vec<String>),
}

/// Why the cycle failed.
#[derive(Debug, thiserror::Error)]
pub enum CycleError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The document cannot be sent (diagnostics, a missing attachment).
    #[error(transparent)]
    Document(#[from] ChatError),
    /// The provider failed; the reply so far is in the document, marked.
    #[error("the provider failed: {0}")]
    Provider(String),
    /// A phase's writes did not read back as it meant (a tool-use id no
    /// result header can name): stopped instead of going round.
    #[error("{0}")]
    Stuck(String),
    /// The document kept changing while wield tried to write it.
    #[error("{0} kept changing while wield wrote it; nothing was lost: run the cycle again")]
    Busy(String),
}

/// How often a write is tried again when the file changed under it.
const RETRIES: usize = 20;

impl Cycle {
    /// Runs the cycle until it stops, then ends the session's background
    /// processes and looks at the document once more: until they are gone
    /// they could still write it (under bubblewrap, the cycle's own atomic
    /// write replaces the file their read-only mount was on), and what they
    /// wrote must not be taken as the person's at the next press.
    pub async fn run(
        &self,
        cancel: &CancellationToken,
        mut progress: impl FnMut(Progress<'_>),
    ) -> Result<Stop, CycleError> {
        if let Some(ledger) = &self.ledger {
            ledger.record(&self.file).map_err(|source| CycleError::Io {
                path: ledger.path().display().to_string(),
                source,
            })?;
        }
        let mut witness = None;
        let stop = self.steps(cancel, &mut progress, &mut witness).await;
        wield_core::end_session(self.executor.services(), &self.session).await;

        match (&stop, witness.as_mut()) {
            // The person's own change diverted the reply: it is theirs.
            (Ok(Stop::Diverted(_)) | Err(_), _) | (_, None) => stop,
            (Ok(_), Some(known)) => {
                let text = self.read()?;
                let found = known.check(&crate::parse(&text));
                if found.is_empty() {
                    return stop;
                }
                let stops = self.not_taken(known, &found, &mut progress)?;
                if stops.is_empty() {
                    stop
                } else {
                    Ok(Stop::Unconfirmed(stops))
                }
            }
        }
    }

    async fn steps(
        &self,
        cancel: &CancellationToken,
        mut progress: impl FnMut(Progress<'_>),
        witness: &mut Option<Witness>,
    ) -> Result<Stop, CycleError> {
        let mut steps = 0;
        // Replies with tool calls in this run.
        let mut with_calls = 0;
        // Times round the loop: bounded, whatever a document holds.
        let mut rounds = 0usize;
        // The calls phase 1 wrote blocks for last time round.
        let mut placed: Vec<String> = Vec::new();
        // What the person decided is in `witness`: the document as the run
        // began, and what the run wrote since.
        loop {
            if cancel.is_cancelled() {
                return Ok(Stop::Cancelled);
            }
            let text = self.read()?;
            let doc = crate::parse(&text);
            // A document whose calls cannot be paired with their results
            // (a duplicate id, an unclosed block, a result for no call) is
            // not acted on at all until the person fixes it.
            let blocking = doc.blocking();
            if !blocking.is_empty() {
                return Err(CycleError::Document(ChatError::Blocked {
                    diagnostics: blocking.into_iter().cloned().collect(),
                }));
            }
            rounds += 1;
            if rounds > 8 + 4 * self.max_steps as usize {
                return Err(CycleError::Stuck(
                    "the cycle went round without getting anywhere; look at the last tool blocks it wrote".into(),
                ));
            }
            let known = witness.get_or_insert_with(|| Witness::of(&doc));
            // One reading of the calls serves the check and the plan.
            let calls = doc.tool_calls();
            let unconfirmed = known.check_calls(&doc, &calls);
            if !unconfirmed.is_empty() {
                let stops = self.not_taken(known, &unconfirmed, &mut progress)?;
                if !stops.is_empty() {
                    return Ok(Stop::Unconfirmed(stops));
                }
                continue;
            }
            let (rewritten, legacy) = doc.rewrite_legacy();
            if legacy > 0 {
                file::replace(&self.file, &text, &rewritten, true).map_err(|e| self.io(e))?;
                continue;
            }
            // Phase 1.
            let plan = Plan::from_calls(calls);
            unplaced(&plan.missing, &placed)?;
            if !plan.missing.is_empty() {
                let (count, pending) = self.categorize(&text, &doc, &plan.missing, known)?;
                progress(Progress::Categorized { placed: count, pending });
                placed = plan.missing.iter().map(|c| c.id.clone()).collect();
                if self.once {
                    unplaced(&Plan::of(&crate::parse(&self.read()?)).missing, &placed)?;
                    return Ok(Stop::Once("categorize"));
                }
                continue;
            }
            placed.clear();
            // Phase 2.
            if plan.actionable() {
                let results = self.execute(&doc, &plan, cancel, &mut progress, known).await?;
                progress(Progress::Resolved { results });
                if cancel.is_cancelled() {
                    return Ok(Stop::Cancelled);
                }
                if let Some(done) = wield_agent::tools::AgentSignals::of(&self.session).take_done() {
                    return Ok(Stop::Done(done.summary));
                }
                if self.once {
                    return Ok(Stop::Once("execute"));
                }
                if !self.autopilot && plan.waiting.is_empty() && plan.edited.is_empty() {
                    return Ok(Stop::Resolved);
                }
                continue;
            }
            if !plan.edited.is_empty() {
                return Ok(Stop::Edited(plan.edited));
            }
            if !plan.waiting.is_empty() {
                return Ok(Stop::Waiting(plan.waiting));
            }
            // Phase 3: the calls of the last allowed reply ran; no more.
            if with_calls > 0 && with_calls >= self.max_steps {
                return Ok(Stop::MaxSteps(with_calls));
            }
            if !has_message(&doc) {
                self.end_with_prompt(&text)?;
                return Ok(Stop::NothingToSend);
            }
            let conversation = doc.conversation(&ConvertOptions {
                model: Some(self.model.clone()),
                base_dir: Some(self.base_dir()),
                workspace: Some(self.executor.workspace().to_path_buf()),
            })?;
            steps += 1;
            progress(Progress::Sending { step: steps });
            let taken = doc.tool_calls().into_iter().map(|c| c.id).collect();
            match self.send(conversation, taken, cancel, &mut progress, known).await? {
                Sent::Answer => return Ok(Stop::Answered),
                Sent::Cancelled => return Ok(Stop::Cancelled),
                Sent::Diverted(path) => return Ok(Stop::Diverted(path)),
                Sent::Calls => {
                    if self.once {
                        return Ok(Stop::Once("send"));
                    }
                    if !self.autopilot {
                        return Ok(Stop::Review);
                    }
                    with_calls += 1;
                }
            }
        }
    }

    fn read(&self) -> Result<String, CycleError> {
        file::read(&self.file).map_err(|e| self.io(e))
    }

    fn io(&self, source: std::io::Error) -> CycleError {
        CycleError::Io {
            path: self.file.display().to_string(),
            source,
        }
    }

    fn base_dir(&self) -> PathBuf {
        file::doc_dir(&self.file).to_path_buf()
    }

    /// Applies `edit` to the document as it is now, and writes the result
    /// if the file did not change meanwhile (else again, on the new text).
    /// `durable` syncs it to disk: for what cannot be made again (results),
    /// not for placeholders. Returns what was written, if anything.
    fn edit(
        &self,
        durable: bool,
        mut edit: impl FnMut(&str) -> Result<Option<String>, CycleError>,
    ) -> Result<Option<String>, CycleError> {
        for attempt in 0..RETRIES {
            let text = self.read()?;
            let Some(new) = edit(&text)? else {
                return Ok(None);
            };
            if file::replace(&self.file, &text, &new, durable).map_err(|e| self.io(e))? {
                return Ok(Some(new));
            }
            // Someone is saving it: give them a moment.
            std::thread::sleep(std::time::Duration::from_millis(10 * (attempt as u64 + 1)));
        }
        Err(CycleError::Busy(self.file.display().to_string()))
    }

    /// Phase 1: placeholders for `missing`. Returns how many were written
    /// and how many of them wait for the person.
    fn categorize(
        &self,
        text: &str,
        doc: &Document<'_>,
        missing: &[ToolCall],
        known: &mut Witness,
    ) -> Result<(usize, usize), CycleError> {
        let placements: Vec<(String, Placement)> = missing.iter().map(|c| (c.id.clone(), self.placement(c))).collect();
        for (id, p) in &placements {
            match p {
                Placement::Placeholder(status) => known.placed(id, crate::CallStatus::from(*status)),
                Placement::Refused(_) => known.resolved(id),
            }
        }
        let pending = placements
            .iter()
            .filter(|(_, p)| *p == Placement::Placeholder(Status::Pending))
            .count();
        let blocks: Vec<(String, String)> = placements
            .iter()
            .map(|(id, p)| (id.clone(), phases::placement_block(id, p)))
            .collect();
        let first = phases::insert_blocks(text, doc, &blocks);
        let mut first = Some(first);
        let wrote = self.edit(false, |now| {
            if let Some(new) = first.take().filter(|_| now == text) {
                return Ok(Some(new));
            }
            // The person changed the document: placed again, on its text.
            let doc = crate::parse(now);
            let still: Vec<(String, String)> = blocks
                .iter()
                .filter(|(id, _)| doc.status_of(id) == Some(crate::CallStatus::Missing))
                .cloned()
                .collect();
            Ok((!still.is_empty()).then(|| phases::insert_blocks(now, &doc, &still)))
        })?;
        if let Some(wrote) = wrote {
            known.wrote(&wrote);
        }
        Ok((placements.len(), pending))
    }

    /// Phase 1's decision for one call.
    fn placement(&self, call: &ToolCall) -> Placement {
        if call.aborted.is_some() {
            return Placement::Placeholder(Status::Aborted);
        }
        // The person answers the model's questions in the document.
        if call.name == "ask" {
            return Placement::Placeholder(Status::Pending);
        }
        let Some(verdict) = self.decide(call) else {
            return Placement::Refused(format!(
                "the input of `{}` is not a JSON object; call it again with a JSON object",
                call.name
            ));
        };
        match verdict {
            Precheck::Approve => Placement::Placeholder(Status::Approved),
            Precheck::Ask => Placement::Placeholder(Status::Pending),
            Precheck::Deny(_) => Placement::Placeholder(Status::Denied),
            Precheck::Refused(message) => Placement::Refused(message),
        }
    }

    /// Phase 2: every result that needs no person, written in. Returns how
    /// many.
    async fn execute(
        &self,
        doc: &Document<'_>,
        plan: &Plan,
        cancel: &CancellationToken,
        progress: &mut impl FnMut(Progress<'_>),
        known: &mut Witness,
    ) -> Result<usize, CycleError> {
        let mut outcomes = Vec::new();
        for c in &plan.user_provided {
            outcomes.push(Outcome {
                id: c.id.clone(),
                status: None,
                content: None,
            });
        }
        for c in &plan.denied {
            let why = match self.decide(c) {
                Some(Precheck::Deny(reason)) => format!("The tool was denied by a policy ({reason})."),
                _ => "The tool was denied by a policy.".to_string(),
            };
            outcomes.push(error_outcome(c, why));
        }
        for c in &plan.rejected {
            outcomes.push(error_outcome(c, phases::rejection(c)));
        }
        for c in &plan.aborted {
            outcomes.push(error_outcome(c, phases::abortion(c)));
        }
        if !plan.approved.is_empty() {
            let calls: Vec<Call> = plan
                .approved
                .iter()
                .map(|c| Call::new(&c.id, &c.name, c.input.clone().unwrap_or(Value::Null)))
                .collect();
            for c in &plan.approved {
                progress(Progress::Running {
                    id: &c.id,
                    name: &c.name,
                });
            }
            known.ran(doc);
            let results = self.executor.run_batch(calls, &self.session, cancel).await;
            for (c, r) in plan.approved.iter().zip(results) {
                progress(Progress::Ran {
                    id: &c.id,
                    name: &c.name,
                    success: r.success,
                });
                outcomes.push(Outcome {
                    id: c.id.clone(),
                    status: (!r.success).then_some(Status::Error),
                    content: Some(result_text(&r)),
                });
            }
        }
        for o in &outcomes {
            known.resolved(&o.id);
        }
        match self.edit(true, |now| Ok(Some(phases::apply(now, &outcomes)?))) {
            Err(CycleError::Busy(_)) => {
                // The calls ran: their results are kept beside the document.
                let aside = reply::aside_path(&self.file, "results");
                let text: String = outcomes
                    .iter()
                    .map(|o| {
                        let block = write::tool_result_block(&o.id, o.status, "", o.content.as_deref().unwrap_or(""));
                        format!("{block}\n")
                    })
                    .collect();
                file::write(&aside, &text, true).map_err(|e| self.io(e))?;
                return Err(CycleError::Busy(format!(
                    "{} (the results of the calls that ran are in {})",
                    self.file.display(),
                    aside.display()
                )));
            }
            r => {
                if let Some(wrote) = r? {
                    known.wrote(&wrote);
                }
            }
        }
        Ok(outcomes.len())
    }

    /// Puts back what changed under the run (see [`witness`]): statuses
    /// to `(pending)`, the frontmatter as it was (the changed one kept in
    /// `FILE.frontmatter`). Returns why the run stops for what cannot be
    /// put back (an answer, a tool use, the person's words), which stays
    /// as it is for the person to check.
    fn not_taken(
        &self,
        known: &mut Witness,
        unconfirmed: &[Unconfirmed],
        progress: &mut impl FnMut(Progress<'_>),
    ) -> Result<Vec<String>, CycleError> {
        let mut stops = Vec::new();
        let mut aside: Option<PathBuf> = None;
        self.edit(true, |now| {
            let doc = crate::parse(now);
            let mut out = now.to_string();
            let found = known.check(&doc);
            if found.contains(&Unconfirmed::Frontmatter) {
                let changed = witness::frontmatter_text(&doc);
                let path = aside.get_or_insert_with(|| reply::aside_path(&self.file, "frontmatter"));
                file::write(path, &changed, true).map_err(|e| self.io(e))?;
                out = format!("{}{}", known.frontmatter(), &now[changed.len()..]);
            }
            let reopen: Vec<&str> = found
                .iter()
                .filter_map(|u| match u {
                    Unconfirmed::Status { id, .. } => Some(id.as_str()),
                    _ => None,
                })
                .collect();
            for id in &reopen {
                out = crate::parse(&out).with_status(id, Some(Status::Pending))?;
            }
            Ok((out != now).then_some(out))
        })?;
        for u in unconfirmed {
            match u {
                Unconfirmed::Status { id, .. } => known.reopened(id),
                other if other.stops() => stops.push(other.message()),
                _ => {}
            }
            let mut message = u.message();
            if let (Unconfirmed::Frontmatter, Some(path)) = (u, &aside) {
                message = format!("{message}: {}", path.display());
            }
            progress(Progress::NotTaken(&message));
        }
        Ok(stops)
    }

    fn decide(&self, call: &ToolCall) -> Option<Precheck> {
        let input = call.input.clone()?;
        Some(
            self.executor
                .decide(&Call::new(&call.id, &call.name, input), &self.session),
        )
    }

    /// Ends the document with a fresh `@You:` when its last message is a
    /// reply.
    fn end_with_prompt(&self, text: &str) -> Result<(), CycleError> {
        let doc = crate::parse(text);
        if doc.messages.last().is_some_and(|m| m.speaker == Speaker::You) {
            return Ok(());
        }
        self.edit(false, |now| {
            let doc = crate::parse(now);
            if doc.messages.last().is_some_and(|m| m.speaker == Speaker::You) {
                return Ok(None);
            }
            Ok(Some(format!("{now}{}", phases::reply_end(now))))
        })
        .map(drop)
    }

    /// Phase 3: the request, and the reply streamed into the document.
    /// `taken` are the document's tool-use ids.
    async fn send(
        &self,
        conversation: crate::Conversation,
        mut taken: std::collections::HashSet<String>,
        cancel: &CancellationToken,
        progress: &mut impl FnMut(Progress<'_>),
        known: &mut Witness,
    ) -> Result<Sent, CycleError> {
        let request = Request {
            system: conversation.system,
            messages: conversation.messages,
            tools: wield_agent::tool_defs(&self.tools),
            tool_choice: if self.tools.is_empty() {
                ToolChoice::Auto
            } else {
                self.tool_choice.clone()
            },
            parallel_tool_calls: None,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            foreign_thinking: self.foreign_thinking,
        };
        // Written as it comes: a tick writes what arrived since the last
        // write, so a reply that pauses is still on screen.
        let writer = std::cell::RefCell::new(reply::ReplyWriter::new(&self.file));
        let failed: std::cell::RefCell<Option<std::io::Error>> = std::cell::RefCell::new(None);
        let reply = {
            let stream = self.provider.stream(&request, cancel, |event| match event {
                StreamEvent::TextDelta { text } => {
                    progress(Progress::Text(text));
                    writer.borrow_mut().text(text);
                }
                StreamEvent::ThinkingDelta { text } => progress(Progress::Thinking(text)),
                _ => {}
            });
            tokio::pin!(stream);
            let mut tick = tokio::time::interval(reply::TICK);
            loop {
                tokio::select! {
                    reply = &mut stream => break reply,
                    _ = tick.tick() => {
                        let mut failed = failed.borrow_mut();
                        if failed.is_none()
                            && let Err(e) = writer.borrow_mut().flush_if_due()
                        {
                            *failed = Some(e);
                        }
                    }
                }
            }
        };
        if let Some(e) = failed.into_inner() {
            return Err(self.io(e));
        }
        let mut writer = writer.into_inner();
        writer.end_text();
        let mut reply = match reply {
            Ok(r) => r,
            Err(e) => {
                let message = e.to_string();
                // Nothing was written when nothing came: the document is as
                // it was.
                if !writer.is_empty() {
                    writer.raw(&format!(
                        "\n{}",
                        write::abort_marker(&format!("the provider failed: {message}"))
                    ));
                    writer.raw(&phases::reply_end(&writer.whole()));
                    writer.flush(true).map_err(|e| self.io(e))?;
                }
                return Err(CycleError::Provider(message));
            }
        };
        wield_agent::registry_names(&mut reply, &self.tools);
        if reply.stop == wield_llm::Stop::Cancelled {
            writer.raw(&format!(
                "\n{}",
                write::abort_marker("Response interrupted by the user.")
            ));
            writer.raw(&phases::reply_end(&writer.whole()));
            writer.flush(true).map_err(|e| self.io(e))?;
            return Ok(Sent::Cancelled);
        }
        // The calls, with ids and names a document can hold.
        // Ids unique in the document: a call must never pair with another
        // call's result (an old one, or an approved one).
        let mut ids: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
        let mut calls = Vec::new();
        for (i, block) in reply.content.iter().enumerate() {
            if let Block::ToolUse { id: given, name, input } = block {
                let mut id = clean(given, &format!("call_{i}"));
                let mut n = 1;
                while taken.contains(&id) {
                    n += 1;
                    id = format!("{}_{n}", clean(given, &format!("call_{i}")));
                }
                taken.insert(id.clone());
                ids.insert(given.as_str(), id.clone());
                known.used(&id, &clean(name, "unknown"), input);
                let json = serde_json::to_string_pretty(input).unwrap_or_else(|_| "{}".into());
                let sep = if writer.is_empty() { "" } else { "\n" };
                writer.raw(&format!(
                    "{sep}{}",
                    write::tool_use_block(&clean(name, "unknown"), &id, &json)
                ));
                calls.push(id);
            }
        }
        for block in &reply.content {
            if let Block::Thinking(t) = block {
                let mut t = t.clone();
                t.text = safe::safe_thinking(&t.text).trim_end_matches('\n').to_string();
                if let Some(b) = write::thinking_block(&t) {
                    let sep = if writer.is_empty() { "" } else { "\n" };
                    writer.raw(&format!("{sep}{b}"));
                }
            }
        }
        if calls.is_empty() {
            writer.raw(&phases::reply_end(&writer.whole()));
        }
        writer.flush(true).map_err(|e| self.io(e))?;
        if let Some(aside) = writer.diverted() {
            return Ok(Sent::Diverted(aside.to_path_buf()));
        }
        // Calls whose arguments were not JSON get their error at once.
        if !reply.bad_calls.is_empty() {
            let bad: Vec<(String, String)> = reply
                .bad_calls
                .iter()
                .filter_map(|b| {
                    let id = ids.get(b.id.as_str())?.clone();
                    known.resolved(&id);
                    let block = phases::placement_block(&id, &Placement::Refused(b.message()));
                    Some((id, block))
                })
                .collect();
            let wrote = self.edit(true, |now| {
                Ok(Some(phases::insert_blocks(now, &crate::parse(now), &bad)))
            })?;
            if let Some(wrote) = wrote {
                known.wrote(&wrote);
            }
        }
        Ok(if calls.is_empty() { Sent::Answer } else { Sent::Calls })
    }
}

/// How a send ended.
enum Sent {
    Answer,
    Calls,
    Cancelled,
    Diverted(PathBuf),
}

/// A call phase 1 wrote a block for that still has none: the block does
/// not read back as its result, and writing it again would not help.
fn unplaced(missing: &[ToolCall], placed: &[String]) -> Result<(), CycleError> {
    match missing.iter().find(|c| placed.contains(&c.id)) {
        Some(c) => Err(CycleError::Stuck(format!(
            "line {}: the result block written for `{}` does not read back as its result (an id may not hold \
             backticks or parentheses); give the tool use another id",
            c.line, c.id
        ))),
        None => Ok(()),
    }
}

/// Whether the last message is the person's and says something.
fn has_message(doc: &Document<'_>) -> bool {
    doc.messages.last().is_some_and(|m| {
        m.speaker == Speaker::You
            && m.segments.iter().any(|s| match s {
                Segment::Text(t) => !t.text.trim().is_empty(),
                _ => true,
            })
    })
}

fn error_outcome(call: &ToolCall, message: String) -> Outcome {
    Outcome {
        id: call.id.clone(),
        status: Some(Status::Error),
        content: Some(message),
    }
}

/// A result as the document holds it: the output, then the error.
fn result_text(r: &ToolResult) -> String {
    match (&r.error, r.output.is_empty()) {
        (Some(e), true) => e.clone(),
        (Some(e), false) => format!("{}\n{e}", r.output),
        (None, _) => r.output.clone(),
    }
}

/// An id or name as a header can hold it: letters, digits and `_-.:`,
/// anything else as `_`.
fn clean(s: &str, fallback: &str) -> String {
    let c: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if c.is_empty() { fallback.to_string() } else { c }
}
