//! `write`: create or replace a file atomically.

use std::io::Read;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Refusal, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::{Access, Confinement, Kind, WriteOutcome};

use super::{blocking, check_read_before_write, confinement, diff, fail, human_size, mark_seen, parse, path_use};

/// Files larger than this are not diffed for approval.
const MAX_DIFF_INPUT: u64 = 2 * 1024 * 1024;

pub struct WriteTool {
    base: ToolBase,
}

impl Default for WriteTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    path: String,
    content: String,
}

impl WriteTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "write",
                    "Write a file in the workspace: creates it (and its parent directories) or replaces it \
                     entirely. The write is atomic and keeps the file's permissions. An existing file must have \
                     been read in this session first. To change part of a file, prefer edit.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                            "content": {"type": "string", "description": "The complete new content of the file."}
                        },
                        "required": ["path", "content"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Write file"),
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
impl Tool for WriteTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        let len = input.get("content").and_then(Value::as_str).map_or(0, str::len);
        wield_core::one_line(&format!("write: {path} ({})", human_size(len as u64)), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", None, CoreAccess::Write)
    }

    async fn pre(&self, input: &Value, ctx: &Context) -> Result<(), Refusal> {
        match input.get("path").and_then(Value::as_str) {
            Some(path) => check_read_before_write(ctx, path),
            None => Ok(()),
        }
    }

    async fn approval_detail(&self, input: &Value, ctx: &Context) -> Option<String> {
        let path = input.get("path")?.as_str()?;
        let content = input.get("content")?.as_str()?;
        let conf = confinement(ctx).ok()?;
        let old = current_text(&conf, path).unwrap_or_default();
        Some(diff::unified(
            &conf.display_path(&conf.real_path(path, Access::Write).ok()?),
            &old,
            content,
            400,
        ))
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("write", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        if let Err(msg) = check_read_before_write(ctx, &input.path) {
            return ToolResult::error(msg.to_string());
        }
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let ctx = ctx.clone();
        blocking(move || {
            let outcome = match conf.write_atomic(&input.path, input.content.as_bytes()) {
                Ok(o) => o,
                Err(e) => return fail(&e),
            };
            let real = conf.real_path(&input.path, Access::Write).ok();
            let shown = real
                .as_deref()
                .map_or_else(|| input.path.clone(), |r| conf.display_path(r));
            if let Some(real) = &real {
                mark_seen(&ctx, &conf, real);
            }
            let bytes = input.content.len();
            let how = match outcome {
                WriteOutcome::Created => "created",
                WriteOutcome::Replaced => "replaced",
            };
            ToolResult::ok(format!("Wrote {bytes} bytes to {shown} ({how})"))
                .with_meta("path", shown)
                .with_meta("bytes", bytes)
                .with_meta("created", outcome == WriteOutcome::Created)
        })
        .await
    }
}

/// The current text of a file, for diffs; `None` when absent, binary, not
/// UTF-8 or too large.
pub(crate) fn current_text(conf: &Confinement, path: &str) -> Option<String> {
    let r = conf.resolve(path, Access::Read).ok()?;
    if r.kind() != Some(Kind::File) || r.size()? > MAX_DIFF_INPUT {
        return None;
    }
    let mut s = String::new();
    conf.open_resolved(&r).ok()?.read_to_string(&mut s).ok()?;
    Some(s)
}
