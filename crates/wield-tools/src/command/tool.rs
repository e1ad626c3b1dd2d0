//! [`CommandTool`]: runs a definition's commands, in order, each argv
//! filled from the call's input and run the way `bash` runs its command
//! (sandbox, scrubbed environment, timeout, output limits, cancellation),
//! without a shell.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::Value;
use wield_core::{
    Context, HANDLES_TIMEOUT, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits, human_duration, one_line,
};

use super::definition::CommandDef;
use super::template::MissingField;
use crate::shell::git_watch::{report, snapshot};
use crate::shell::run::{Limit, Ran, run};
use crate::shell::settings::ShellService;
use crate::shell::settings::shell_quote;

/// The capability of a tool whose every call asks a person (see
/// [`AlwaysAskResolver`](super::AlwaysAskResolver)).
pub const ALWAYS_ASKS: &str = "always_asks";

/// A tool defined by a list of commands.
pub struct CommandTool {
    base: ToolBase,
    def: CommandDef,
}

impl CommandTool {
    pub fn new(def: CommandDef) -> Self {
        let mut capabilities = vec![HANDLES_TIMEOUT.to_owned()];
        if def.requires_approval {
            capabilities.push(ALWAYS_ASKS.to_owned());
        }
        let base = ToolBase::new(
            ToolSpec::new(def.name.clone(), def.description.clone(), def.input_schema.clone()),
            ToolTraits {
                parallel: def.parallel,
                sandboxable: true,
                // They run commands: in `group:runtime` (and so in the
                // `coding` profile) beside bash, and in `group:custom`.
                groups: vec!["runtime".into(), "custom".into()],
                capabilities,
                ..ToolTraits::default()
            },
        );
        Self { base, def }
    }

    /// Where the tool was defined.
    pub fn origin(&self) -> &str {
        &self.def.origin
    }

    /// Each command's argv for `input`, or the field a command needs and
    /// the call left out.
    fn argvs(&self, input: &Value) -> Result<Vec<Vec<String>>, (usize, MissingField)> {
        self.def
            .cmds
            .iter()
            .enumerate()
            .map(|(i, cmd)| {
                let mut argv = Vec::new();
                for t in cmd {
                    argv.extend(t.arguments(input).map_err(|m| (i, m))?);
                }
                Ok(argv)
            })
            .collect()
    }
}

/// An argv as a person reads it: words that need quoting are quoted.
fn shown(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b));
            if plain { a.clone() } else { shell_quote(a) }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[async_trait]
impl Tool for CommandTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let text = match (&self.def.preview, self.argvs(input)) {
            (Some(p), _) => p.render_text(input),
            (None, Ok(argvs)) => argvs.iter().map(|a| shown(a)).collect::<Vec<_>>().join(" && "),
            (None, Err(_)) => self
                .def
                .cmds_text
                .iter()
                .map(|a| a.join(" "))
                .collect::<Vec<_>>()
                .join(" && "),
        };
        one_line(&format!("{}: $ {text}", self.def.name), width)
    }

    fn default_timeout(&self) -> Option<Duration> {
        self.def.timeout
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let argvs = match self.argvs(&input) {
            Ok(a) => a,
            Err((i, MissingField(field))) => {
                return ToolResult::error(format!(
                    "command {} of `{}` needs `{field}` inside an argument ({}); give `{field}`",
                    i + 1,
                    self.def.name,
                    self.def.cmds_text[i].join(" ")
                ));
            }
        };
        if let Some(i) = argvs.iter().position(Vec::is_empty) {
            return ToolResult::error(format!(
                "command {} of `{}` ({}) has no program left once the absent fields are dropped; give its fields",
                i + 1,
                self.def.name,
                self.def.cmds_text[i].join(" ")
            ));
        }
        let svc = crate::shell::service(ctx);
        // What the commands set in the repositories under the workspace
        // that git runs later is reported, as for `bash` (see `git_watch`).
        let workspace = svc.workspace().to_path_buf();
        let git_before = snapshot(&svc).await;
        let result = self.run_all(&argvs, &svc, ctx).await;
        let git_after = snapshot(&svc).await;
        report(result, &git_before.changes(&git_after, &workspace), &git_after, ctx)
    }
}

impl CommandTool {
    /// Run the commands in order until one fails.
    async fn run_all(&self, argvs: &[Vec<String>], svc: &ShellService, ctx: &Context) -> ToolResult {
        // The tool's own timeout bounds all its commands together.
        let timeout = self.def.timeout.unwrap_or(svc.settings.timeout);
        let deadline = Instant::now() + timeout;
        let total = argvs.len();
        let mut text = String::new();
        let mut last: Option<Ran> = None;
        for (i, argv) in argvs.iter().enumerate() {
            let place = format!("command {} of {total}", i + 1);
            if ctx.cancel.is_cancelled() {
                return ToolResult::failed_with_output(text, format!("cancelled before {place}"))
                    .with_meta("cancelled", true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return ToolResult::failed_with_output(
                    text,
                    format!("timed out after {} before {place}", human_duration(timeout)),
                )
                .with_meta("timed_out", true);
            }
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str("$ ");
            text.push_str(&shown(argv));
            text.push('\n');
            let wrapped = svc.wrap(argv.iter().map(OsString::from).collect());
            // `_sandbox` lives until the command's processes are gone.
            let ran = match wrapped {
                Ok((wrapped, _sandbox)) => {
                    run(svc, wrapped, svc.workspace(), Limit { left, stated: timeout }, ctx).await
                }
                Err(e) => Err(e),
            };
            let ran = match ran {
                Ok(r) => r,
                Err(e) => {
                    return ToolResult::failed_with_output(
                        text,
                        format!("{place} ({}) could not run: {e}", shown(argv)),
                    )
                    .with_meta("failed_command", i + 1)
                    .with_meta("failed_argv", argv.clone());
                }
            };
            text.push_str(&ran.text);
            if !ran.ok {
                let result =
                    ToolResult::failed_with_output(text, format!("{place} failed ({}): $ {}", ran.status, shown(argv)))
                        .with_meta("failed_command", i + 1)
                        .with_meta("failed_argv", argv.clone())
                        .with_meta("commands_run", i + 1);
                return ran.truncation_facts(ran.describe(result));
            }
            last = Some(ran);
        }
        let result = ToolResult::ok(text).with_meta("commands_run", total);
        match last {
            Some(ran) => ran.describe(result),
            None => result,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn git_settings_the_commands_make_are_reported_as_bash_s_are() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        let table: toml::Table = toml::from_str(
            r#"
            name = "plant"
            description = "Set a git option in a nested repository"
            cmds = [["mkdir", "-p", "src/r/.git"], ["sh", "-c", "printf '[core]\n\tfsmonitor = x\n' > src/r/.git/config"]]
            "#,
        )
        .unwrap();
        let tool = CommandTool::new(CommandDef::from_table(&table, "test").unwrap());
        let ctx = Context::detached(dir.path());
        let r = tool.execute(json!({}), &ctx).await;
        assert!(r.success, "{r:?}");
        assert_eq!(
            r.metadata["git_changes"][0],
            "src/r/.git: core.fsmonitor = \"x\" (git runs this)"
        );
        assert!(r.output.contains("[git] src/r/.git"), "{}", r.output);
    }

    #[tokio::test]
    async fn a_cancelled_call_stops_its_commands() {
        let dir = tempfile::tempdir().unwrap();
        let table: toml::Table = toml::from_str(
            r#"
            name = "slow"
            description = "Sleep, then write"
            cmds = [["sleep", "20"], ["touch", "after"]]
            "#,
        )
        .unwrap();
        let tool = CommandTool::new(CommandDef::from_table(&table, "test").unwrap());
        let ctx = Context::detached(dir.path());
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let r = tool.execute(json!({}), &ctx).await;
        assert!(!r.success, "{r:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(r.metadata["cancelled"], true, "{r:?}");
        assert_eq!(r.metadata["failed_command"], 1, "{r:?}");
        assert!(!dir.path().join("after").exists());
    }

    #[test]
    fn argvs_are_shown_quoted_where_a_shell_would_split_them() {
        let argv = ["cargo", "test", "-p", "a b", "; rm -rf ~", ""].map(String::from);
        assert_eq!(shown(&argv), "cargo test -p 'a b' '; rm -rf ~' ''");
    }
}
