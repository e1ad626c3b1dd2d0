//! Asking a person in the terminal whether a call may run, and a scripted
//! stand-in for tests.
//!
//! The terminal approver shows the tool, its one-line preview and, when the
//! tool supplies one (write, edit, patch), a coloured unified diff, then
//! offers: allow once, for this session, for this project, everywhere; deny;
//! deny with a message for the model; cancel the whole batch. It is used
//! when stdin and stderr are terminals and `--yes` is not given.

use std::io::Write;

use async_trait::async_trait;
use wield_core::approval::Shown;
use wield_core::{ApprovalAnswer, ApprovalRequest, Approver, Scope};

/// The choices, in the order they are offered.
const CHOICES: [Choice; 7] = [
    Choice::Once,
    Choice::Session,
    Choice::Project,
    Choice::Global,
    Choice::Deny,
    Choice::DenyWithMessage,
    Choice::Cancel,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    Once,
    Session,
    Project,
    Global,
    Deny,
    DenyWithMessage,
    Cancel,
}

impl Choice {
    fn label(self, pattern: &str) -> String {
        match self {
            Self::Once => "Allow once".into(),
            Self::Session => format!("Allow for this session  ({pattern})"),
            Self::Project => format!("Allow for this project  (remember {pattern} in .wield/approvals.toml)"),
            Self::Global => format!("Allow everywhere  (remember {pattern} globally)"),
            Self::Deny => "Deny".into(),
            Self::DenyWithMessage => "Deny with a message to the model".into(),
            Self::Cancel => "Cancel the whole batch".into(),
        }
    }
}

struct Labelled(Choice, String);

impl std::fmt::Display for Labelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.1)
    }
}

/// The interactive approver.
pub struct TerminalApprover {
    color: bool,
    /// A model asked for the calls, in batches: "deny with a message to the
    /// model" and "cancel the whole batch" are offered.
    model: bool,
    /// One prompt at a time, even if calls were ever asked about concurrently.
    lock: tokio::sync::Mutex<()>,
}

impl TerminalApprover {
    /// For the calls a model asks for.
    pub fn new() -> Self {
        Self {
            color: color(),
            model: true,
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// For one call a person typed (`wield call`): no model to message, no
    /// batch to cancel.
    pub fn for_a_person() -> Self {
        Self {
            model: false,
            ..Self::new()
        }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        let _one_at_a_time = self.lock.lock().await;
        let request = request.clone();
        let (color, model) = (self.color, self.model);
        // inquire blocks on the terminal; keep it off the async workers.
        tokio::task::spawn_blocking(move || prompt(&request, color, model))
            .await
            .unwrap_or_else(|_| ApprovalAnswer::Deny(Some("denied: the approval prompt failed".into())))
    }
}

/// Whether the terminal gets colours (`NO_COLOR` unset or empty).
pub(crate) fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// `text` in the SGR colour `code`, when `color`.
pub(crate) fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_owned()
    }
}

/// A unified diff with added lines green, removed red, hunk headers cyan.
pub fn colour_diff(diff: &str, color: bool) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        let painted = if line.starts_with("+++") || line.starts_with("---") {
            paint(color, "1", line)
        } else if line.starts_with('+') {
            paint(color, "32", line)
        } else if line.starts_with('-') {
            paint(color, "31", line)
        } else if line.starts_with("@@") {
            paint(color, "36", line)
        } else {
            line.to_owned()
        };
        out.push_str(&painted);
        out.push('\n');
    }
    out
}

/// The preview, then the diff or, when the preview leaves something out,
/// every argument in full.
pub(crate) fn shown(request: &ApprovalRequest, color: bool) -> String {
    let mut out = format!("  {}\n", request.shown_preview());
    match request.shown_detail() {
        Some(Shown::Detail(diff)) => out.push_str(&colour_diff(&diff, color)),
        Some(Shown::Arguments(arguments)) => {
            out.push_str(&arguments);
            out.push('\n');
        }
        None => {}
    }
    out
}

fn prompt(request: &ApprovalRequest, color: bool, model: bool) -> ApprovalAnswer {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "\n{} {}",
        paint(color, "1;33", "approval needed:"),
        paint(color, "1", &format!("`{}`", request.tool))
    );
    let _ = write!(err, "{}", shown(request, color));
    let _ = err.flush();
    drop(err);

    if request.always_asks {
        let why = request.reason.as_deref().unwrap_or("a rule asks for it every time");
        let _ = writeln!(std::io::stderr(), "  (it can be allowed once only: {why})");
    }
    let options: Vec<Labelled> = offered(request, model)
        .map(|c| Labelled(c, c.label(&wield_core::approval::printable(&request.pattern))))
        .collect();
    let help = if model {
        "↑↓ to move, enter to choose, esc to deny, ctrl-c to cancel the batch"
    } else {
        "↑↓ to move, enter to choose, esc or ctrl-c to deny"
    };
    let answer = inquire::Select::new("Allow this call?", options)
        .with_page_size(CHOICES.len())
        .without_filtering()
        .with_help_message(help)
        .prompt();
    match answer {
        Ok(Labelled(choice, _)) => match choice {
            Choice::DenyWithMessage => match inquire::Text::new("Message for the model:").prompt() {
                Ok(m) if !m.trim().is_empty() => ApprovalAnswer::Deny(Some(m.trim().to_owned())),
                Ok(_) | Err(inquire::InquireError::OperationCanceled) => ApprovalAnswer::Deny(None),
                Err(_) => ApprovalAnswer::CancelBatch,
            },
            other => answer_for(other, None),
        },
        Err(inquire::InquireError::OperationCanceled) => ApprovalAnswer::Deny(None),
        Err(inquire::InquireError::OperationInterrupted) if model => ApprovalAnswer::CancelBatch,
        Err(inquire::InquireError::OperationInterrupted) => ApprovalAnswer::Deny(None),
        Err(e) => {
            tracing::warn!("approval prompt failed: {e}");
            ApprovalAnswer::Deny(Some(format!("denied: the approval prompt failed ({e})")))
        }
    }
}

/// The choices offered for `request`: remembering its pattern is left out
/// when a rule asks for it every time or no pattern can approve it, since
/// that would not spare the next ask; a message to the model and
/// cancelling the batch only when a `model` asked for the call.
fn offered(request: &ApprovalRequest, model: bool) -> impl Iterator<Item = Choice> + '_ {
    CHOICES.into_iter().filter(move |c| {
        let remembers = matches!(c, Choice::Session | Choice::Project | Choice::Global);
        let for_model = matches!(c, Choice::DenyWithMessage | Choice::Cancel);
        !(request.always_asks && remembers) && (model || !for_model)
    })
}

pub(crate) fn answer_for(choice: Choice, message: Option<String>) -> ApprovalAnswer {
    match choice {
        Choice::Once => ApprovalAnswer::Allow(Scope::Once),
        Choice::Session => ApprovalAnswer::Allow(Scope::Session),
        Choice::Project => ApprovalAnswer::Allow(Scope::Project),
        Choice::Global => ApprovalAnswer::Allow(Scope::Global),
        Choice::Deny | Choice::DenyWithMessage => ApprovalAnswer::Deny(message),
        Choice::Cancel => ApprovalAnswer::CancelBatch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_colours() {
        let d = colour_diff("--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n ctx", true);
        assert!(d.contains("\x1b[31m-old\x1b[0m"));
        assert!(d.contains("\x1b[32m+new\x1b[0m"));
        assert!(d.contains("\x1b[36m@@ -1 +1 @@\x1b[0m"));
        assert_eq!(colour_diff("+x", false), "+x\n");
    }
}
