//! `mkdir`: create a directory and its parents, like `mkdir -p`.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::Access;

use super::{blocking, confinement, fail, parse, path_use};

pub struct MkdirTool {
    base: ToolBase,
}

impl Default for MkdirTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    path: String,
}

impl MkdirTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "mkdir",
                    "Create a directory and any missing parents (like mkdir -p). An existing directory is fine; \
                     an existing file at the path is an error.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "Directory path, relative to the workspace or absolute."}
                        },
                        "required": ["path"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Make directory"),
                ToolTraits {
                    writes_files: true,
                    parallel: false,
                    groups: vec!["fs".into()],
                    // `mkdir -p`: creates what is missing, removes nothing.
                    capabilities: vec![wield_core::ADDITIVE.into(), wield_core::IDEMPOTENT.into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for MkdirTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        wield_core::one_line(&format!("mkdir: {path}"), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", None, CoreAccess::Write)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("mkdir", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        blocking(move || {
            let created = match conf.create_dir_all(&input.path) {
                Ok(c) => c,
                Err(e) => return fail(&e),
            };
            let shown = conf
                .real_path(&input.path, Access::Write)
                .map_or_else(|_| input.path.clone(), |p| conf.display_path(&p));
            let text = if created {
                format!("Created directory {shown}")
            } else {
                format!("Directory {shown} already exists")
            };
            ToolResult::ok(text)
                .with_meta("path", shown)
                .with_meta("created", created)
        })
        .await
    }
}
