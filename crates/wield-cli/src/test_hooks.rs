//! Hooks the test suite drives the real binary with. They exist only in a
//! build with the `test-hooks` feature (the test script enables it): a
//! release build ignores `WIELD_TEST_APPROVER` and `WIELD_DEBUG_TOOLS`, and
//! says so on stderr when one is set, so nobody relies on them by mistake.

use std::sync::Arc;

use wield_core::{Approver, ToolRef};

/// The debug tools when `WIELD_DEBUG_TOOLS=1` (tools that panic, sleep or
/// echo, to drive failure paths through the binary).
pub fn debug_tools() -> Vec<ToolRef> {
    if !set("WIELD_DEBUG_TOOLS") {
        return Vec::new();
    }
    #[cfg(feature = "test-hooks")]
    {
        if std::env::var_os("WIELD_DEBUG_TOOLS").is_some_and(|v| v == "1") {
            return wield_tools::debug::tools();
        }
    }
    Vec::new()
}

/// The scripted approver `WIELD_TEST_APPROVER` describes, if set.
pub fn scripted_approver() -> anyhow::Result<Option<Arc<dyn Approver>>> {
    if !set("WIELD_TEST_APPROVER") {
        return Ok(None);
    }
    #[cfg(feature = "test-hooks")]
    {
        if let Some(script) = std::env::var_os("WIELD_TEST_APPROVER") {
            let script = script.to_string_lossy();
            let approver = scripted::ScriptedApprover::parse(&script).map_err(crate::app::usage)?;
            return Ok(Some(Arc::new(approver)));
        }
    }
    Ok(None)
}

/// Whether `var` is set; in a build without test hooks, a warning that it
/// is ignored.
fn set(var: &str) -> bool {
    let present = std::env::var_os(var).is_some();
    if present && !cfg!(feature = "test-hooks") {
        eprintln!("wield: warning: {var} is ignored: this build has no test hooks (the `test-hooks` feature)");
    }
    present
}

#[cfg(feature = "test-hooks")]
mod scripted {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use wield_core::{ApprovalAnswer, ApprovalRequest, Approver, Scope};

    use crate::terminal_approver::{Choice, answer_for, shown};

    /// Answers from a script instead of a person, for tests of everything
    /// around the prompt: `WIELD_TEST_APPROVER="once,deny:not now,cancel"`. Each
    /// request takes the next answer (the last one repeats) and is described on
    /// stderr (`approver asked: TOOL | PREVIEW | PATTERN`, then the detail).
    pub struct ScriptedApprover {
        answers: Mutex<Vec<ApprovalAnswer>>,
    }

    impl ScriptedApprover {
        /// Parse `once|session|project|global|deny|deny:MESSAGE|cancel`, comma-separated.
        pub fn parse(script: &str) -> Result<Self, String> {
            let mut answers = Vec::new();
            for item in script.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (word, message) = match item.split_once(':') {
                    Some((w, m)) => (w, Some(m.to_owned())),
                    None => (item, None),
                };
                let choice = match word {
                    "once" => Choice::Once,
                    "session" => Choice::Session,
                    "project" => Choice::Project,
                    "global" => Choice::Global,
                    "deny" if message.is_some() => Choice::DenyWithMessage,
                    "deny" => Choice::Deny,
                    "cancel" => Choice::Cancel,
                    other => {
                        return Err(format!(
                            "WIELD_TEST_APPROVER: unknown answer `{other}`; use once, session, project, global, \
                             deny, deny:MESSAGE or cancel"
                        ));
                    }
                };
                answers.push(answer_for(choice, message));
            }
            answers.reverse();
            Ok(Self {
                answers: Mutex::new(answers),
            })
        }
    }

    #[async_trait]
    impl Approver for ScriptedApprover {
        async fn ask(&self, request: &ApprovalRequest) -> ApprovalAnswer {
            eprintln!(
                "approver asked: {} | {} | {}{}",
                request.tool,
                request.shown_preview(),
                wield_core::approval::printable(&request.pattern),
                match (request.always_asks, &request.reason) {
                    (true, Some(why)) => format!(" | asks every time: {why}"),
                    (true, None) => " | asks every time".to_owned(),
                    (false, _) => String::new(),
                }
            );
            eprint!("{}", shown(request, false));
            let mut answers = self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let answer = match answers.len() {
                0 => ApprovalAnswer::Deny(Some("denied: the test approver has no answers".into())),
                1 => answers[0].clone(),
                _ => answers.pop().unwrap_or(ApprovalAnswer::Deny(None)),
            };
            // As at the terminal, where only "allow once" is offered.
            match answer {
                ApprovalAnswer::Allow(_) if request.always_asks => ApprovalAnswer::Allow(Scope::Once),
                other => other,
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn scripts_parse() {
            assert!(ScriptedApprover::parse("once, deny:no thanks,cancel").is_ok());
            assert!(ScriptedApprover::parse("maybe").is_err());
        }
    }
}
