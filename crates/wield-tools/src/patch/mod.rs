//! `patch`: multi-file patches in the `*** Begin Patch` format, applied
//! completely or not at all.
//!
//! The format and the matching live in the pure `wield-patch` crate; this
//! module resolves every path through the workspace [`Confinement`],
//! computes every file's new content first ([`engine::plan`]) and only then
//! writes ([`engine::commit`]), restoring every file already written if a
//! later write fails.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};
use wield_patch::Operation;
use wield_sandbox::fs::Confinement;

use crate::fs::{blocking, confinement, diff, mark_seen, parse, settings};

mod engine;

#[cfg(test)]
mod tests;

/// The patch tool.
pub fn tools() -> Vec<ToolRef> {
    vec![Arc::new(PatchTool::new())]
}

/// Most diff lines shown for approval, over all files.
const MAX_PREVIEW_DIFF_LINES: usize = 600;

pub struct PatchTool {
    base: ToolBase,
}

impl Default for PatchTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    patch: String,
}

const DESCRIPTION: &str = "Apply a patch that adds, updates, moves or deletes files in the workspace. \
The patch applies completely or not at all: if any part fails, no file is changed.\n\
Format:\n\
*** Begin Patch\n\
*** Add File: path/new.rs\n\
+first line of the new file\n\
*** Update File: path/old.rs\n\
*** Move to: path/renamed.rs   (optional)\n\
@@ fn context_line            (optional: a line just above the change, to locate it)\n\
 unchanged line (leading space)\n\
-removed line\n\
+added line\n\
*** End of File               (optional: the chunk ends at the end of the file)\n\
*** Delete File: path/gone.rs\n\
*** End Patch\n\
Give about 3 unchanged lines before and after each change; several `@@` chunks may follow one \
Update, in file order. Paths are relative to the workspace.";

impl PatchTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "patch",
                    DESCRIPTION,
                    json!({
                        "type": "object",
                        "properties": {
                            "patch": {
                                "type": "string",
                                "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                            }
                        },
                        "required": ["patch"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Apply patch"),
                ToolTraits {
                    writes_files: true,
                    parallel: false,
                    groups: vec!["fs".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for PatchTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let text = input.get("patch").and_then(Value::as_str).unwrap_or("");
        let summary = match wield_patch::parse(text) {
            Ok(p) => {
                let ops: Vec<String> = p.ops.iter().map(op_label).collect();
                let n = ops.len();
                format!("patch: {n} file{} ({})", if n == 1 { "" } else { "s" }, ops.join(", "))
            }
            Err(_) => "patch: (invalid patch)".to_owned(),
        };
        wield_core::one_line(&summary, width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        let Some(Ok(patch)) = input.get("patch").and_then(Value::as_str).map(wield_patch::parse) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for op in &patch.ops {
            out.push(PathUse {
                path: op.path().to_owned(),
                access: CoreAccess::Write,
            });
            if let Operation::Update {
                move_to: Some(dest), ..
            } = op
            {
                out.push(PathUse {
                    path: dest.clone(),
                    access: CoreAccess::Write,
                });
            }
        }
        out
    }

    async fn approval_detail(&self, input: &Value, ctx: &Context) -> Option<String> {
        let text = input.get("patch")?.as_str()?.to_owned();
        let conf = confinement(ctx).ok()?;
        let may_replace = replace_rule(ctx);
        tokio::task::spawn_blocking(move || {
            let patch = wield_patch::parse(&text).ok()?;
            let plan = engine::plan(&conf, &patch, &may_replace).ok()?;
            Some(plan_diff(&plan))
        })
        .await
        .ok()
        .flatten()
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("patch", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let may_replace = replace_rule(ctx);
        let ctx = ctx.clone();
        blocking(move || apply(&conf, &ctx, &input.patch, &may_replace)).await
    }
}

/// Parse, plan and commit one patch text: the whole tool, synchronously.
fn apply(conf: &Confinement, ctx: &Context, text: &str, may_replace: &dyn Fn(&Path) -> bool) -> ToolResult {
    let patch = match wield_patch::parse(text) {
        Ok(p) => p,
        Err(e) => return ToolResult::error(format!("{e} No files were modified.")),
    };
    let plan = match engine::plan(conf, &patch, may_replace) {
        Ok(p) => p,
        Err(msg) => return ToolResult::error(msg),
    };
    match engine::commit(conf, &plan) {
        Ok(done) => {
            for real in &done.written {
                mark_seen(ctx, conf, real);
            }
            let mut out = String::from("Success. Updated the following files:\n");
            for line in &done.lines {
                out.push_str(line);
                out.push('\n');
            }
            if !done.fuzzy.is_empty() {
                out.push_str("Some chunks did not match the file exactly; check these places:\n");
                for note in &done.fuzzy {
                    out.push_str(note);
                    out.push('\n');
                }
            }
            let mut result = ToolResult::ok(out).with_meta("files", done.lines);
            if !done.fuzzy.is_empty() {
                result = result.with_meta("fuzzy", done.fuzzy);
            }
            result
        }
        Err(msg) => ToolResult::error(msg),
    }
}

/// Whether an Add or a Move may replace an existing file: when the session read it,
/// or when read-before-write does not apply (a person drives the session, or
/// `read_before.write = false`).
fn replace_rule(ctx: &Context) -> impl Fn(&Path) -> bool + Send + Sync + 'static {
    let unchecked = !ctx.session.model_driven() || !settings(ctx).read_before_write;
    let session = Arc::clone(&ctx.session);
    move |real: &Path| unchecked || crate::fs::was_read(&session, real)
}

fn op_label(op: &Operation) -> String {
    match op {
        Operation::Add { path, .. } => format!("A {path}"),
        Operation::Delete { path, .. } => format!("D {path}"),
        Operation::Update {
            path,
            move_to: Some(to),
            ..
        } => format!("M {path} -> {to}"),
        Operation::Update { path, .. } => format!("M {path}"),
    }
}

/// A unified diff of every file of a plan, for approval prompts.
fn plan_diff(plan: &engine::Plan) -> String {
    let mut out = String::new();
    for step in &plan.steps {
        let part = match step {
            engine::Step::Add {
                shown,
                content,
                original,
                ..
            } => diff::unified(
                shown,
                original.as_deref().unwrap_or(""),
                content,
                MAX_PREVIEW_DIFF_LINES,
            ),
            engine::Step::Update {
                shown, old, new, moved, ..
            } => {
                let mut d = String::new();
                match moved {
                    Some(dest) if dest.original.is_some() => {
                        d.push_str(&format!("rename {shown} -> {} (replacing {0})\n", dest.shown));
                    }
                    Some(dest) => d.push_str(&format!("rename {shown} -> {}\n", dest.shown)),
                    None => {}
                }
                d.push_str(&diff::unified(shown, old, new, MAX_PREVIEW_DIFF_LINES));
                d
            }
            engine::Step::Delete { shown, old, .. } => {
                format!(
                    "deleted file {shown}\n{}",
                    diff::unified(shown, old, "", MAX_PREVIEW_DIFF_LINES)
                )
            }
        };
        out.push_str(&part);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    diff::cap_lines(out, MAX_PREVIEW_DIFF_LINES)
}
