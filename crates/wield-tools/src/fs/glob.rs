//! `glob`: files matching a `**` pattern, newest first.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use globset::{GlobBuilder, GlobSetBuilder};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::Access;

use super::walk::{Filters, builder, start};
use super::{ListingCut, blocking, confinement, listed, listing, parse, path_use};

const DEFAULT_LIMIT: usize = 500;

pub struct GlobTool {
    base: ToolBase,
}

impl Default for GlobTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
    limit: Option<usize>,
}

impl GlobTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "glob",
                    "Find files by name pattern, newest first. Patterns are matched against paths relative to \
                     `path` (default the workspace): `*` stays within one directory, `**` crosses directories \
                     (`**/*.rs`, `src/**/mod.rs`), `{a,b}` alternates, `[ab]` is a class. Hidden directories \
                     and paths ignored by .gitignore are skipped, but a file the pattern names is listed even \
                     if hidden or ignored (as with `rg --files -g`).",
                    json!({
                        "type": "object",
                        "properties": {
                            "pattern": {"type": "string", "description": "Glob pattern, e.g. \"**/*.toml\"."},
                            "path": {"type": ["string", "null"], "description": "Directory to search (default: the workspace)."},
                            "limit": {"type": ["integer", "null"], "minimum": 1, "description": "Maximum number of paths (default 500)."}
                        },
                        "required": ["pattern", "path", "limit"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Find files"),
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
impl Tool for GlobTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("?");
        let place = match input.get("path").and_then(Value::as_str) {
            Some(p) => format!(" in {p}"),
            None => String::new(),
        };
        wield_core::one_line(&format!("glob: {pattern:?}{place}"), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", Some("."), CoreAccess::Read)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("glob", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let cancel = ctx.cancel.clone();
        let cut = ListingCut::of(ctx);
        blocking(move || {
            let (root, is_file) = match start(&conf, input.path.as_deref()) {
                Ok(s) => s,
                Err(r) => return r,
            };
            if is_file {
                return ToolResult::error(format!(
                    "{} is a file: glob searches a directory",
                    conf.display_path(&root)
                ));
            }
            let pattern = input.pattern.trim_start_matches("./");
            // An absolute pattern below the search directory is made relative to it.
            let root_text = format!("{}/", root.display());
            let pattern = pattern.strip_prefix(root_text.as_str()).unwrap_or(pattern);
            // A set of one, whose build reports a pattern too large to
            // compile (deeply nested braces) where `compile_matcher` panics.
            let matcher = match GlobBuilder::new(pattern)
                .literal_separator(true)
                .build()
                .and_then(|g| GlobSetBuilder::new().add(g).build())
            {
                Ok(set) => set,
                Err(e) => return ToolResult::error(format!("invalid glob pattern {pattern:?}: {e}")),
            };
            // As with `rg --files -g`, the pattern also whitelists matching
            // files that are hidden or ignored (in directories that are not);
            // anchored at the search directory so `*` stays at the top level.
            let mut walk = builder(&root, Filters::STANDARD);
            match OverrideBuilder::new(&root)
                .add(&format!("/{pattern}"))
                .and_then(|b| b.build())
            {
                Ok(o) => {
                    walk.overrides(o);
                }
                Err(e) => return ToolResult::error(format!("invalid glob pattern {pattern:?}: {e}")),
            }
            let found: Mutex<Vec<(Option<SystemTime>, PathBuf)>> = Mutex::new(Vec::new());
            walk.build_parallel().run(|| {
                let (matcher, root, found, cancel, conf) = (&matcher, &root, &found, &cancel, &conf);
                Box::new(move |entry| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        return WalkState::Continue;
                    }
                    let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
                    if matcher.is_match(rel) && conf.contains(entry.path(), Access::Read) {
                        let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
                        let mut list = found.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                        list.push((mtime, entry.into_path()));
                    }
                    WalkState::Continue
                })
            });
            if cancel.is_cancelled() {
                return ToolResult::error("cancelled");
            }
            let mut found = found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            render(
                &conf,
                &cut,
                &root,
                pattern,
                found,
                input.limit.unwrap_or(DEFAULT_LIMIT).max(1),
            )
        })
        .await
    }
}

fn render(
    conf: &Arc<wield_sandbox::fs::Confinement>,
    cut: &ListingCut,
    root: &Path,
    pattern: &str,
    found: Vec<(Option<SystemTime>, PathBuf)>,
    limit: usize,
) -> ToolResult {
    let total = found.len();
    if total == 0 {
        return ToolResult::ok(format!("No files match {pattern:?} in {}", conf.display_path(root)))
            .with_meta("count", 0)
            .with_meta("truncated", false);
    }
    let mut out = String::new();
    for (_, path) in found.iter().take(limit) {
        out.push_str(&listed(&conf.display_path(path)));
        out.push('\n');
    }
    if total > limit {
        out.push_str(&format!(
            "[{} more files not shown ({total} in all); narrow the pattern or raise limit]\n",
            total - limit
        ));
    }
    listing(cut, out, total > limit).with_meta("count", total)
}
