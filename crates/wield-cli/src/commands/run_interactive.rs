//! `wield run` in a terminal: a line editor with history, the reply
//! streamed as it comes, thinking dimmed (and collapsed on request), each
//! tool call's preview, the terminal approver with its coloured diff, a
//! spinner with the latest output line while a tool runs, Ctrl-C to cancel
//! the current step (twice to quit), and slash commands.
//!
//! The session is saved after every exchange, so a crash or a closed
//! terminal loses at most the exchange under way; `--resume` goes on with it.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use wield_agent::session::Ended;

use async_trait::async_trait;
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;
use wield_agent::{AgentEvent, AgentSession, Outcome, StopReason};
use wield_core::{ApprovalAnswer, ApprovalRequest, Approver, approval};
use wield_llm::{Message, Usage};

use super::providers::providers;
use crate::app::Runtime;
use crate::terminal_approver::paint;

/// The commands, as `/help` lists them.
const HELP: &[(&str, &str)] = &[
    ("/help", "this list"),
    (
        "/tools",
        "the tools the model may call (/tools debug: why each is visible or not)",
    ),
    ("/approvals", "the remembered approvals"),
    (
        "/model [NAME]",
        "the provider and model; NAME switches to a provider or a model",
    ),
    ("/thinking", "show or collapse the model's thinking"),
    ("/compact", "summarise the conversation to free the context window"),
    ("/clear", "start a new conversation"),
    ("/usage", "tokens used, steps and the context window's use"),
    ("/exit", "save and quit (also Ctrl-D)"),
];

/// How the interactive loop ends.
enum Next {
    Continue,
    Quit,
}

/// Everything a turn and the slash commands work with.
pub struct Interactive {
    pub rt: Runtime,
    pub session: AgentSession,
    pub ephemeral: bool,
    pub spinner: Spinner,
    pub color: bool,
    pub show_thinking: bool,
    /// Totals over the session's exchanges.
    pub usage: Usage,
    pub steps: u32,
    pub calls: u32,
    /// How the last exchange ended (its stop, or why it failed), saved with
    /// the session; none before the first.
    pub ended: Option<Result<&'static str, String>>,
}

/// Runs the interactive agent until `/exit`, Ctrl-D or Ctrl-C twice.
pub async fn run(mut it: Interactive) -> anyhow::Result<ExitCode> {
    let history = it.rt.workspace().join(".wield").join("history");
    let mut editor = Editor::open(&history)?;
    let resumed = !it.session.agent().messages().is_empty();
    it.banner(resumed);

    // Ctrl-C while a step runs cancels it, and the conversation goes on
    // however long the person then waits; a second one quits. (While the
    // line editor or an approval dialog has the terminal, Ctrl-C is a key
    // they read themselves.) SIGINT is no stop signal for wield meanwhile.
    super::keep_sigint();
    let current: Arc<Mutex<Option<CancellationToken>>> = Arc::new(Mutex::new(None));
    let quit = Arc::new(AtomicBool::new(false));
    {
        let current = Arc::clone(&current);
        let quit = Arc::clone(&quit);
        let color = it.color;
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let token = current.lock().unwrap_or_else(PoisonError::into_inner).clone();
                match token {
                    // The step is winding down and the person wants out:
                    // quit now, as SIGTERM would (the history is saved).
                    Some(t) if t.is_cancelled() => {
                        quit.store(true, Ordering::SeqCst);
                        super::stop_now();
                    }
                    Some(t) => {
                        t.cancel();
                        eprintln!("\n{}", paint(color, "2", "(cancelling the step; Ctrl-C again quits)"));
                    }
                    // Between two lines (the editor reads Ctrl-C itself):
                    // nothing runs to cancel.
                    None => {}
                }
            }
        });
    }

    let mut interrupted = false;
    let mut code = ExitCode::SUCCESS;
    loop {
        let line = match editor.read(&paint(it.color, "1;36", "› ")).await {
            Ok(line) => line,
            // Two in a row at the prompt quit (as in Node's REPL: no timer).
            Err(ReadlineError::Interrupted) => {
                if interrupted {
                    code = ExitCode::from(130);
                    break;
                }
                interrupted = true;
                eprintln!("{}", paint(it.color, "2", "(Ctrl-C again, Ctrl-D or /exit quits)"));
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(anyhow::anyhow!("cannot read the terminal: {e}")),
        };
        interrupted = false;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        editor.remember(text);
        if text.starts_with('/') {
            match it.command(text).await {
                Ok(Next::Continue) => continue,
                Ok(Next::Quit) => break,
                Err(e) => {
                    eprintln!("{}", paint(it.color, "31", &format!("error: {e:#}")));
                    continue;
                }
            }
        }
        let cancel = CancellationToken::new();
        *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
        let outcome = it.turn(text, &cancel).await;
        *current.lock().unwrap_or_else(PoisonError::into_inner) = None;
        it.ended = Some(match &outcome {
            Ok(o) => Ok(o.stop.as_str()),
            Err(e) => Err(format!("{}: {e}", it.session.provider().name)),
        });
        it.save()?;
        if quit.load(Ordering::SeqCst) {
            code = ExitCode::from(130);
            break;
        }
    }
    it.save()?;
    editor.close();
    Ok(code)
}

impl Interactive {
    fn banner(&self, resumed: bool) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{} {}/{} in {}",
            paint(self.color, "1", "wield"),
            self.session.provider().name,
            self.session.provider().model,
            self.rt.workspace().display()
        );
        if resumed {
            let last = self
                .session
                .agent()
                .messages()
                .iter()
                .rev()
                .find(|m| m.role == wield_llm::Role::Assistant)
                .map(Message::joined_text)
                .unwrap_or_default();
            let recap: String = last.lines().take(6).collect::<Vec<_>>().join("\n");
            let _ = writeln!(
                err,
                "{}",
                paint(
                    self.color,
                    "2",
                    &format!(
                        "resumed session {} ({} messages); the model last said:",
                        self.session.id(),
                        self.session.agent().messages().len()
                    )
                )
            );
            let _ = writeln!(err, "{recap}");
        }
        let _ = writeln!(
            err,
            "{}",
            paint(self.color, "2", "/help lists the commands; Ctrl-D quits")
        );
    }

    /// One exchange: the person's text, then the agent until it answers.
    async fn turn(&mut self, text: &str, cancel: &CancellationToken) -> Result<Outcome, wield_llm::LlmError> {
        let mut view = View::new(self.color, self.show_thinking, self.spinner.clone());
        let outcome = self.session.run(text, cancel, |event| view.show(&event)).await;
        view.end();
        match &outcome {
            Ok(o) => {
                self.usage.add(o.usage);
                self.steps += o.steps;
                self.calls += o.tool_calls.values().sum::<u32>();
                let note = match o.stop {
                    StopReason::Done => String::new(),
                    StopReason::Cancelled => "cancelled; every call answered — go on or ask something else".into(),
                    other => format!("stopped: {}", other.as_str()),
                };
                let tokens = o.usage.total_input() + o.usage.output;
                let summary = format!(
                    "[{} step{} · {} tokens · {:.1} s{}{}]",
                    o.steps,
                    plural(o.steps),
                    tokens,
                    o.wall.as_secs_f64(),
                    if note.is_empty() { "" } else { " · " },
                    note
                );
                eprintln!("{}", paint(self.color, "2", &summary));
            }
            Err(e) => eprintln!(
                "{}",
                paint(
                    self.color,
                    "31",
                    &format!("error: {}: {e}", self.session.provider().name)
                )
            ),
        }
        outcome
    }

    /// A slash command.
    async fn command(&mut self, text: &str) -> anyhow::Result<Next> {
        let (name, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim();
        let mut out = std::io::stdout().lock();
        match name {
            "/help" => {
                for (c, what) in HELP {
                    writeln!(out, "  {c:16} {what}")?;
                }
            }
            "/tools" if rest == "debug" => super::tools_debug::print(&self.rt, false, &mut out)?,
            "/tools" => super::tools::list(&self.rt.visible(), &mut out)?,
            "/approvals" => {
                let store =
                    wield_runtime::FileApprovalStore::new(self.rt.workspace(), self.rt.config().global_dir.as_deref());
                super::approvals::list(&store, false, &mut out)?;
            }
            "/model" if rest.is_empty() => {
                writeln!(
                    out,
                    "{}/{}",
                    self.session.provider().name,
                    self.session.provider().model
                )?;
                let all = providers(&self.rt)?;
                let names: Vec<&str> = all.providers.keys().map(String::as_str).collect();
                writeln!(out, "providers: {}", names.join(", "))?;
            }
            "/model" => {
                drop(out);
                self.switch(rest).await?;
            }
            "/thinking" => {
                self.show_thinking = !self.show_thinking;
                let state = if self.show_thinking { "shown" } else { "collapsed" };
                writeln!(out, "thinking is {state}")?;
            }
            "/compact" => {
                drop(out);
                self.compact().await;
            }
            "/clear" => {
                self.session.clear(new_session_id());
                writeln!(out, "(a new conversation: session {})", self.session.id())?;
            }
            "/usage" => {
                let used = wield_agent::conversation_tokens(self.session.agent().messages());
                writeln!(
                    out,
                    "{} steps, {} tool calls, {} tokens in ({} from cache), {} out",
                    self.steps,
                    self.calls,
                    self.usage.total_input(),
                    self.usage.cache_read,
                    self.usage.output
                )?;
                match self.session.provider().context_window {
                    Some(window) if window > 0 => writeln!(
                        out,
                        "the conversation: about {used} tokens, {:.0} % of the context window ({window})",
                        used as f64 * 100.0 / window as f64
                    )?,
                    _ => writeln!(out, "the conversation: about {used} tokens")?,
                }
            }
            "/exit" | "/quit" => return Ok(Next::Quit),
            other => {
                let known = HELP.iter().map(|(c, _)| c.split(' ').next().unwrap_or(c));
                let hint = wield_core::names::closest(other, known)
                    .map(|c| format!(" Did you mean {c}?"))
                    .unwrap_or_default();
                writeln!(out, "unknown command {other}.{hint} /help lists them.")?;
            }
        }
        Ok(Next::Continue)
    }

    /// `/model NAME`: a configured provider, or another model of this one.
    async fn switch(&mut self, name: &str) -> anyhow::Result<()> {
        self.session.switch_checked(name).await.map_err(super::session_error)?;
        let now = self.session.provider();
        eprintln!("now {}/{}", now.name, now.model);
        Ok(())
    }

    /// `/compact`: the hand-off summary now, instead of at the threshold.
    async fn compact(&mut self) {
        let cancel = CancellationToken::new();
        let text = match self.session.agent_mut().compact(&cancel).await {
            Ok(Some(c)) => {
                self.usage.add(c.usage);
                format!(
                    "[the conversation was compacted: about {} → {} tokens]",
                    c.before_tokens, c.after_tokens
                )
            }
            Ok(None) => "[nothing to compact yet]".into(),
            Err(e) => format!("error: cannot compact: {}: {e}", self.session.provider().name),
        };
        eprintln!("{}", paint(self.color, "2", &text));
    }

    /// Saves the session (unless `--ephemeral`).
    fn save(&self) -> anyhow::Result<()> {
        let end = match &self.ended {
            _ if self.ephemeral || self.session.agent().messages().is_empty() => return Ok(()),
            None => return Ok(()),
            Some(Ok(stop)) => Ended::Stopped(stop),
            Some(Err(error)) => Ended::Failed(error),
        };
        self.session
            .save(end, self.steps, self.usage)
            .map_err(super::session_error)?;
        Ok(())
    }
}

pub use wield_agent::session::new_session_id;

/// The approver of the interactive agent: the terminal dialog, with the
/// spinner out of its way while it asks.
pub struct Asking {
    pub inner: Arc<dyn Approver>,
    pub spinner: Spinner,
}

#[async_trait]
impl Approver for Asking {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.spinner.pause();
        let answer = self.inner.ask(request).await;
        self.spinner.resume();
        answer
    }
}

/// The approver `wield run` uses in a terminal: `--yes`, else the dialog.
pub fn approver(yes: bool, spinner: &Spinner) -> Arc<dyn Approver> {
    let inner: Arc<dyn Approver> = if yes {
        Arc::new(approval::YesApprover)
    } else {
        Arc::new(crate::terminal_approver::TerminalApprover::new())
    };
    Arc::new(Asking {
        inner,
        spinner: spinner.clone(),
    })
}

/// `ask` at the terminal: a choice among the model's options (or several,
/// or an answer of one's own), or a line of text.
struct TerminalAsker {
    spinner: Spinner,
}

/// Who answers the model's `ask` in the terminal.
pub fn asker(spinner: &Spinner) -> Arc<dyn wield_agent::tools::Asker> {
    Arc::new(TerminalAsker {
        spinner: spinner.clone(),
    })
}

/// The choice that lets the person type an answer instead.
const OWN_ANSWER: &str = "(type an answer of my own)";

fn ask_blocking(question: &wield_agent::tools::Question) -> Result<String, String> {
    let refused = |e: inquire::InquireError| format!("the person did not answer ({e})");
    let labels: Vec<String> = question
        .options
        .iter()
        .map(|o| match &o.description {
            Some(d) => format!("{} — {d}", o.label),
            None => o.label.clone(),
        })
        .collect();
    let label_of = |shown: &str| {
        labels
            .iter()
            .position(|l| l == shown)
            .map_or_else(|| shown.to_owned(), |i| question.options[i].label.clone())
    };
    let title = format!(
        "The model asks: {}",
        wield_core::approval::printable(&question.question)
    );
    if labels.is_empty() {
        return inquire::Text::new(&title).prompt().map_err(refused);
    }
    if question.multi_select {
        let chosen = inquire::MultiSelect::new(&title, labels.clone())
            .prompt()
            .map_err(refused)?;
        return Ok(chosen.iter().map(|c| label_of(c)).collect::<Vec<_>>().join(", "));
    }
    let mut choices = labels.clone();
    choices.push(OWN_ANSWER.to_owned());
    let chosen = inquire::Select::new(&title, choices).prompt().map_err(refused)?;
    if chosen == OWN_ANSWER {
        return inquire::Text::new("Your answer:").prompt().map_err(refused);
    }
    Ok(label_of(&chosen))
}

#[async_trait]
impl wield_agent::tools::Asker for TerminalAsker {
    async fn ask(&self, question: &wield_agent::tools::Question) -> Result<String, String> {
        self.spinner.pause();
        let question = question.clone();
        let answer = tokio::task::spawn_blocking(move || ask_blocking(&question))
            .await
            .unwrap_or_else(|_| Err("the question could not be shown".into()));
        self.spinner.resume();
        answer
    }
}

/// The spinner shown while tools run, with the latest line of their output.
#[derive(Clone, Default)]
pub struct Spinner {
    state: Arc<Mutex<SpinnerState>>,
}

#[derive(Default)]
struct SpinnerState {
    bar: Option<indicatif::ProgressBar>,
    message: String,
    /// Running (shown unless paused).
    on: bool,
}

impl Spinner {
    fn lock(&self) -> std::sync::MutexGuard<'_, SpinnerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn start(&self, message: String) {
        let mut s = self.lock();
        s.on = true;
        s.message = message;
        draw(&mut s);
    }

    pub(super) fn message(&self, message: String) {
        let mut s = self.lock();
        s.message = message;
        if let Some(bar) = &s.bar {
            bar.set_message(s.message.clone());
        }
    }

    pub(super) fn stop(&self) {
        let mut s = self.lock();
        s.on = false;
        if let Some(bar) = s.bar.take() {
            bar.finish_and_clear();
        }
    }

    /// Out of the way of a dialog.
    pub(super) fn pause(&self) {
        if let Some(bar) = self.lock().bar.take() {
            bar.finish_and_clear();
        }
    }

    pub(super) fn resume(&self) {
        let mut s = self.lock();
        if s.on {
            draw(&mut s);
        }
    }
}

fn draw(s: &mut SpinnerState) {
    if s.bar.is_none() {
        let bar = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        s.bar = Some(bar);
    }
    if let Some(bar) = &s.bar {
        bar.set_message(s.message.clone());
    }
}

/// How one exchange is shown as it happens.
struct View {
    color: bool,
    show_thinking: bool,
    spinner: Spinner,
    /// The cursor is at the start of a line.
    line_start: bool,
    /// Thinking is being streamed (or counted, when collapsed).
    thinking: Option<usize>,
}

impl View {
    fn new(color: bool, show_thinking: bool, spinner: Spinner) -> Self {
        Self {
            color,
            show_thinking,
            spinner,
            line_start: true,
            thinking: None,
        }
    }

    fn out(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        if !text.is_empty() {
            self.line_start = text.ends_with('\n');
        }
    }

    fn new_line(&mut self) {
        if !self.line_start {
            self.out("\n");
        }
    }

    fn end_thinking(&mut self) {
        if let Some(chars) = self.thinking.take() {
            self.new_line();
            if !self.show_thinking {
                let note = format!("(thought for {chars} characters; /thinking shows it)\n");
                self.out(&paint(self.color, "2", &note));
            }
        }
    }

    fn show(&mut self, event: &AgentEvent<'_>) {
        use wield_llm::StreamEvent;
        match event {
            // From the request until its first token: a sign of life, and
            // what a retry waits for.
            AgentEvent::StepStarted { .. } => self.spinner.start("waiting for the model…".into()),
            AgentEvent::Stream(StreamEvent::Retrying {
                attempt,
                of,
                delay_ms,
                reason,
            }) => self.spinner.message(super::run_agent::retry_note(
                *attempt,
                *of,
                *delay_ms,
                &one_line(reason, 100),
            )),
            AgentEvent::Stream(StreamEvent::TextDelta { text }) => {
                self.spinner.stop();
                self.end_thinking();
                self.out(text);
            }
            AgentEvent::Stream(StreamEvent::ThinkingDelta { text }) => {
                self.spinner.stop();
                if self.thinking.is_none() {
                    self.new_line();
                    self.thinking = Some(0);
                    if !self.show_thinking {
                        self.out(&paint(self.color, "2", "thinking…"));
                    }
                }
                if let Some(n) = &mut self.thinking {
                    *n += text.chars().count();
                }
                if self.show_thinking {
                    self.out(&paint(self.color, "2", text));
                }
            }
            AgentEvent::Stream(StreamEvent::ToolCallStarted { .. }) => self.spinner.stop(),
            AgentEvent::Stream(_) | AgentEvent::StepFinished { .. } => {}
            AgentEvent::ToolStarted { name, preview, .. } => {
                self.end_thinking();
                self.new_line();
                let line = format!("{} {}\n", paint(self.color, "36", "●"), one_line(preview, 160));
                self.out(&line);
                self.spinner.start(format!("{name} running…"));
            }
            AgentEvent::ToolOutput { delta, .. } => {
                if let Some(line) = delta.lines().rev().find(|l| !l.trim().is_empty()) {
                    self.spinner.message(one_line(line, 120));
                }
            }
            AgentEvent::Compacted {
                before_tokens,
                after_tokens,
            } => {
                self.new_line();
                let note = format!("[the conversation was compacted: about {before_tokens} → {after_tokens} tokens]\n");
                self.out(&paint(self.color, "2", &note));
            }
            AgentEvent::ToolFinished {
                name, result, duration, ..
            } => {
                self.spinner.stop();
                let line = if result.success {
                    paint(
                        self.color,
                        "2",
                        &format!("  ✓ {name} ({:.1} s)\n", duration.as_secs_f64()),
                    )
                } else {
                    let why = result.error.as_deref().unwrap_or("failed");
                    paint(self.color, "31", &format!("  ✗ {}\n", one_line(why, 200)))
                };
                self.out(&line);
            }
        }
    }

    fn end(&mut self) {
        self.spinner.stop();
        self.end_thinking();
        self.new_line();
    }
}

/// The first line of `text`, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut s: String = line.chars().take(max).collect();
    if line.chars().count() > max || text.lines().nth(1).is_some() {
        s.push('…');
    }
    s
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The line editor, with the project's history in `.wield/history`.
///
/// A fresh rustyline editor reads each line and is dropped at once: while
/// one exists, rustyline (17) keeps its own SIGINT handler in place of
/// tokio's, so Ctrl-C during a step would be lost. (Its `signal-hook`
/// feature avoids that but then waits on the terminal while typed keys sit
/// in its buffer, so keys typed quickly are not seen until the next one.)
/// The history lives here between lines.
struct Editor {
    entries: Vec<String>,
    history: std::path::PathBuf,
}

impl Editor {
    fn open(history: &std::path::Path) -> anyhow::Result<Self> {
        let mut entries = Vec::new();
        let mut editor = Self::editor()?;
        // A missing history is a first run; an unreadable one is not worth stopping for.
        if editor.load_history(history).is_ok() {
            entries = editor.history().iter().cloned().collect();
        }
        Ok(Self {
            entries,
            history: history.to_owned(),
        })
    }

    fn editor() -> anyhow::Result<rustyline::DefaultEditor> {
        rustyline::DefaultEditor::new().map_err(|e| anyhow::anyhow!("cannot open the line editor: {e}"))
    }

    fn with_entries(&self) -> anyhow::Result<rustyline::DefaultEditor> {
        let mut editor = Self::editor()?;
        for entry in &self.entries {
            let _ = editor.add_history_entry(entry.as_str());
        }
        Ok(editor)
    }

    /// One line; the editor blocks on the terminal, so off the async workers.
    async fn read(&mut self, prompt: &str) -> Result<String, ReadlineError> {
        let mut editor = self
            .with_entries()
            .map_err(|e| ReadlineError::Io(std::io::Error::other(e.to_string())))?;
        let prompt = prompt.to_owned();
        tokio::task::spawn_blocking(move || editor.readline(&prompt))
            .await
            .map_err(|e| ReadlineError::Io(std::io::Error::other(e)))?
    }

    /// Add `line` to the history, saved at once: whatever way wield then
    /// ends (a signal, a second Ctrl-C during a step), it is not lost.
    fn remember(&mut self, line: &str) {
        if self.entries.last().map(String::as_str) != Some(line) {
            self.entries.push(line.to_owned());
            self.save();
        }
    }

    fn close(&mut self) {
        self.save();
    }

    fn save(&self) {
        let Ok(mut editor) = self.with_entries() else { return };
        if let Some(dir) = self.history.parent() {
            let _ = wield_core::private_dir::ensure_private_dir(dir);
            if let Some(name) = self.history.file_name() {
                wield_core::private_dir::ignore_state_file(dir, &name.to_string_lossy());
            }
        }
        let _ = editor.save_history(&self.history);
    }
}
