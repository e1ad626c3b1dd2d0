//! `ls`: a directory listing with kinds and sizes, to a given depth.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

use super::walk::{Filters, builder, start};
use super::{ListingCut, blocking, confinement, human_size, listed, listing, parse, path_use};

const DEFAULT_DEPTH: usize = 1;
const MAX_DEPTH: usize = 10;
const DEFAULT_LIMIT: usize = 500;

pub struct LsTool {
    base: ToolBase,
}

impl Default for LsTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    path: Option<String>,
    depth: Option<usize>,
    limit: Option<usize>,
    all: Option<bool>,
}

impl LsTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "ls",
                    "List a directory (default: the workspace): one entry per line marked [dir], [file] (with \
                     its size) or [link] (with its target), paths relative to the listed directory. depth \
                     (default 1, at most 10) descends into subdirectories. Entries ignored by .gitignore and \
                     the .git directory are left out unless all is true.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": ["string", "null"], "description": "Directory to list (default: the workspace)."},
                            "depth": {"type": ["integer", "null"], "minimum": 1, "maximum": MAX_DEPTH, "description": "How many levels to descend (default 1)."},
                            "limit": {"type": ["integer", "null"], "minimum": 1, "description": "Maximum entries shown (default 500)."},
                            "all": {"type": ["boolean", "null"], "description": "Also show ignored entries and .git (default false)."}
                        },
                        "required": ["path", "depth", "limit", "all"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("List directory"),
                ToolTraits {
                read_only: true,
                    groups: vec!["fs".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for LsTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let path = input.get("path").and_then(Value::as_str).unwrap_or(".");
        let depth = match input.get("depth").and_then(Value::as_u64) {
            Some(d) if d > 1 => format!(" (depth {d})"),
            _ => String::new(),
        };
        wield_core::one_line(&format!("ls: {path}{depth}"), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", Some("."), CoreAccess::Read)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("ls", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let cut = ListingCut::of(ctx);
        let cancel = ctx.cancel.clone();
        blocking(move || {
            let (root, is_file) = match start(&conf, input.path.as_deref()) {
                Ok(s) => s,
                Err(r) => return r,
            };
            if is_file {
                let size = conf.metadata(&root).map(|m| m.len()).unwrap_or(0);
                return ToolResult::ok(format!("[file] {} ({})\n", conf.display_path(&root), human_size(size)))
                    .with_meta("entries", 1)
                    .with_meta("truncated", false);
            }
            let depth = input.depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            let all = input.all.unwrap_or(false);
            let mut walk = builder(
                &root,
                Filters {
                    hidden: true,
                    ignore: !all,
                },
            );
            walk.max_depth(Some(depth)).sort_by_file_name(|a, b| a.cmp(b));
            if !all {
                walk.filter_entry(|e| e.file_name() != ".git");
            }
            let mut out = String::new();
            let mut count = 0usize;
            for entry in walk.build() {
                if cancel.is_cancelled() {
                    return ToolResult::error("cancelled");
                }
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 {
                    continue;
                }
                count += 1;
                if count > limit {
                    continue;
                }
                let rel = entry
                    .path()
                    .strip_prefix(&root)
                    .unwrap_or(entry.path())
                    .to_string_lossy()
                    .into_owned();
                let rel = listed(&rel);
                let kind = entry.file_type();
                let line = if kind.is_some_and(|t| t.is_symlink()) {
                    match conf.read_link(entry.path()) {
                        Ok(target) => format!("[link] {rel} -> {}", listed(&target.to_string_lossy())),
                        Err(_) => format!("[link] {rel}"),
                    }
                } else if kind.is_some_and(|t| t.is_dir()) {
                    format!("[dir]  {rel}/")
                } else if kind.is_some_and(|t| t.is_file()) {
                    let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
                    format!("[file] {rel} ({})", human_size(size))
                } else {
                    format!("[other] {rel}")
                };
                out.push_str(&line);
                out.push('\n');
            }
            if count == 0 {
                out.push_str(&format!("[{} is empty]\n", conf.display_path(&root)));
            }
            if count > limit {
                out.push_str(&format!(
                    "[{} more entries not shown ({count} in all); list a subdirectory, lower depth or raise limit]\n",
                    count - limit
                ));
            }
            listing(&cut, out, count > limit).with_meta("entries", count)
        })
        .await
    }
}
