//! The `bash` tool.

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{
    AUTO_APPROVE_IF_SANDBOXED, ConfigKey, Context, HANDLES_TIMEOUT, TIMEOUT_ARGUMENT, Tool, ToolBase, ToolResult,
    ToolSpec, ToolTraits, one_line,
};

use super::git_watch::{report, snapshot};
use super::run::{Limit, run};
use super::{Prepared, command_preview, prepare};

pub struct BashTool {
    base: ToolBase,
}

impl Default for BashTool {
    fn default() -> Self {
        Self::new()
    }
}

impl BashTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "bash",
                    "Run a shell command (bash -c) in the workspace and return its output: stdout, then stderr \
                     under [stderr], then `exit code: N` (or `timed out after 30s`). A non-zero exit is a failure \
                     with the output kept. Output longer than 200 lines is cut in the middle; the full output is \
                     saved to a file named in the result. Commands get no stdin, a scrubbed environment and, when \
                     the sandbox is on, may write only inside the workspace and $TMPDIR (private to the session) and cannot reach the \
                     network. Use process_start for servers and other long-running commands.",
                    json!({
                        "type": "object",
                        "properties": {
                            "command": {"type": "string", "description": "The command line, run with bash -c."},
                            "workdir": {"type": ["string", "null"], "description": "Directory to run in, relative to the workspace (default: the workspace)."},
                            "timeout": {"type": ["number", "null"], "description": "Seconds before the command and everything it started are killed (default 30)."},
                            "label": {"type": ["string", "null"], "description": "A few words saying what the command is for, shown to the person approving it."}
                        },
                        "required": ["command", "workdir", "timeout", "label"],
                        "additionalProperties": false
                    }),
                )
                .title("Run a shell command")
                .strict(true),
                ToolTraits {
                    // Commands can change the workspace: run them one at a time.
                    parallel: false,
                    sandboxable: true,
                    groups: vec!["runtime".into()],
                    capabilities: vec![
                        AUTO_APPROVE_IF_SANDBOXED.into(),
                        HANDLES_TIMEOUT.into(),
                        TIMEOUT_ARGUMENT.into(),
                    ],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for BashTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        one_line(&command_preview("bash", input), width)
    }

    fn approval_subject(&self, input: &Value) -> wield_core::approval::Subject {
        super::approval_subject(input)
    }

    fn config_keys(&self) -> Vec<ConfigKey> {
        super::settings::config_keys()
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        // `_sandbox` lives until the command's processes are gone.
        let Prepared {
            input,
            svc,
            workdir,
            argv,
            sandbox: _sandbox,
        } = match prepare("bash", input, ctx) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let settings = &svc.settings;
        if let Some(t) = input.timeout.filter(|t| t.is_nan() || *t <= 0.0) {
            return ToolResult::error(format!(
                "`timeout` must be a positive number of seconds, got {t}; leave it out for the default ({})",
                wield_core::human_duration(settings.timeout)
            ));
        }
        let timeout = settings.timeout_for(input.timeout);
        // Nested repositories the command may create or change: what git
        // would run from them later is reported (see `git_watch`).
        let workspace = svc.workspace().to_path_buf();
        let git_before = snapshot(&svc).await;
        let result = run(&svc, argv, &workdir, Limit::whole(timeout), ctx).await;
        let git_after = snapshot(&svc).await;
        let git_changes = git_before.changes(&git_after, &workspace);
        let ran = match result {
            Ok(r) => r,
            Err(e) => return report(ToolResult::error(e), &git_changes, &git_after, ctx),
        };
        let result = if ran.ok {
            ToolResult::ok(ran.text.clone())
        } else {
            ToolResult::failed_with_output(ran.text.clone(), ran.status.clone())
        };
        let result = report(ran.describe(result), &git_changes, &git_after, ctx);
        ran.truncation_facts(result)
    }
}
