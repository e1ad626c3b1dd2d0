//! Memory that outlives sessions: `memory_write` and `memory_read`.
//!
//! Entries are markdown files, `KEY.md`, in the workspace's
//! `.wield/memory/` (local) or in `memory/` under wield's global config
//! directory (global); a person may read and edit them by hand. Keys are
//! plain file names ([`store::check_key`]). Each store is reached through a
//! confinement rooted at its directory and written atomically, so
//! concurrent writers never leave a partial file. Search is SQLite FTS5
//! over an index kept in a private directory beside the store
//! (`.wield/index/`), refreshed from the files before each search.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};

use crate::fs::{blocking, parse};

pub mod index;
pub mod store;

pub use store::{Scope, Store, check_key};

/// The memory tools.
pub fn tools() -> Vec<ToolRef> {
    vec![Arc::new(MemoryWrite::new()), Arc::new(MemoryRead::new())]
}

/// The local store of a workspace.
pub fn local_store(workspace: &Path) -> Store {
    let state = workspace.join(".wield");
    Store {
        scope: Scope::Local,
        dir: state.join("memory"),
        index: state.join("index").join("memory.sqlite"),
    }
}

/// The user's global store, in wield's global configuration directory
/// `global` when there is one.
pub fn global_store(global: Option<&Path>) -> Option<Store> {
    global.map(|dir| Store {
        scope: Scope::Global,
        dir: dir.join("memory"),
        index: dir.join("index").join("memory.sqlite"),
    })
}

/// The global configuration directory of the runtime a call runs in (see
/// [`crate::GlobalConfigDir`]).
fn global_dir(ctx: &Context) -> Option<PathBuf> {
    ctx.services.get::<crate::GlobalConfigDir>().and_then(|g| g.0.clone())
}

fn store_for(scope: Scope, ctx: &Context) -> Result<Store, String> {
    let workspace = &ctx.cwd;
    match scope {
        Scope::Local => Ok(local_store(workspace)),
        Scope::Global => global_store(global_dir(ctx).as_deref()).ok_or_else(|| {
            "there is no global memory: neither XDG_CONFIG_HOME nor HOME is set; use scope local".into()
        }),
    }
}

/// The stores a read looks in: the one named, or local then global.
fn stores_for(scope: Option<Scope>, ctx: &Context) -> Result<Vec<Store>, String> {
    match scope {
        Some(s) => Ok(vec![store_for(s, ctx)?]),
        None => Ok(std::iter::once(local_store(&ctx.cwd))
            .chain(global_store(global_dir(ctx).as_deref()))
            .collect()),
    }
}

fn scope_schema() -> Value {
    json!({"type": ["string", "null"], "enum": ["local", "global", null]})
}

pub struct MemoryWrite {
    base: ToolBase,
}

impl Default for MemoryWrite {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryWrite {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "memory_write",
                    "Save a note that later sessions can read: a markdown entry under a key (a plain name such \
                     as `build-steps`), replacing any entry of that key. scope local (default) keeps it with this \
                     project, global with the user for every project. Start with a one-line summary: listings \
                     show the first line.",
                    json!({
                        "type": "object",
                        "properties": {
                            "key": {"type": "string", "description": "The entry's name: no `/`, no `..`, no leading dot."},
                            "content": {"type": "string", "description": "Markdown; the first line is its summary."},
                            "scope": scope_schema()
                        },
                        "required": ["key", "content", "scope"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Write memory"),
                ToolTraits {
                    parallel: false,
                    writes_files: true,
                    groups: vec!["memory".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[derive(Deserialize)]
struct WriteArgs {
    key: String,
    content: String,
    scope: Option<Scope>,
}

#[async_trait]
impl Tool for MemoryWrite {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let args: WriteArgs = match parse("memory_write", input) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let key = match check_key(&args.key) {
            Ok(k) => k.to_owned(),
            Err(why) => return ToolResult::error(why).with_meta("refused", true),
        };
        if args.content.len() > store::MAX_ENTRY_BYTES {
            return ToolResult::error(format!(
                "the entry is {} bytes, more than the {} an entry may hold: keep it shorter or split it",
                args.content.len(),
                store::MAX_ENTRY_BYTES
            ));
        }
        let store = match store_for(args.scope.unwrap_or(Scope::Local), ctx) {
            Ok(s) => s,
            Err(e) => return ToolResult::error(e),
        };
        blocking(move || match store.write(&key, &args.content) {
            Ok(path) => ToolResult::ok(format!(
                "saved {} memory {key:?} ({} bytes)",
                store.scope.as_str(),
                args.content.len()
            ))
            .with_meta("path", path.display().to_string())
            .with_meta("scope", store.scope.as_str()),
            Err(e) => ToolResult::error(e),
        })
        .await
    }
}

pub struct MemoryRead {
    base: ToolBase,
}

impl Default for MemoryRead {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryRead {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "memory_read",
                    "Read saved notes. With key: that entry. With query: a ranked full-text search with \
                     snippets. With neither: every entry with its first line. scope local or global limits it to \
                     one store (default both, local first).",
                    json!({
                        "type": "object",
                        "properties": {
                            "key": {"type": ["string", "null"], "description": "The entry to read."},
                            "query": {"type": ["string", "null"], "description": "Words to search for."},
                            "scope": scope_schema()
                        },
                        "required": ["key", "query", "scope"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Read memory"),
                ToolTraits {
                    read_only: true,
                    groups: vec!["memory".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[derive(Deserialize)]
struct ReadArgs {
    key: Option<String>,
    query: Option<String>,
    scope: Option<Scope>,
}

/// How many search results come back.
const SEARCH_LIMIT: usize = 10;

#[async_trait]
impl Tool for MemoryRead {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let args: ReadArgs = match parse("memory_read", input) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let stores = match stores_for(args.scope, ctx) {
            Ok(s) => s,
            Err(e) => return ToolResult::error(e),
        };
        blocking(move || match (args.key, args.query) {
            (Some(_), Some(_)) => {
                ToolResult::error("give either key (to read one entry) or query (to search), not both")
            }
            (Some(key), None) => read_one(&stores, &key),
            (None, Some(query)) => search(&stores, &query),
            (None, None) => list(&stores),
        })
        .await
    }
}

fn read_one(stores: &[Store], key: &str) -> ToolResult {
    let key = match check_key(key) {
        Ok(k) => k,
        Err(why) => return ToolResult::error(why).with_meta("refused", true),
    };
    for s in stores {
        match s.read(key) {
            Ok(Some(text)) => return ToolResult::ok(text).with_meta("scope", s.scope.as_str()),
            Ok(None) => {}
            Err(e) => return ToolResult::error(e),
        }
    }
    let known = list_keys(stores);
    ToolResult::error(format!(
        "there is no memory {key:?}; {}",
        if known.is_empty() {
            "there are no entries yet".to_owned()
        } else {
            format!("the entries are: {}", known.join(", "))
        }
    ))
}

fn list_keys(stores: &[Store]) -> Vec<String> {
    stores
        .iter()
        .flat_map(|s| s.list().unwrap_or_default())
        .map(|l| l.key)
        .collect()
}

fn list(stores: &[Store]) -> ToolResult {
    let mut out = String::new();
    let mut count = 0;
    for s in stores {
        let listed = match s.list().and_then(|l| s.read_listed(&l)) {
            Ok(l) => l,
            Err(e) => return ToolResult::error(e),
        };
        for (l, text) in listed {
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            out.push_str(&format!(
                "- {} ({}): {}\n",
                l.key,
                s.scope.as_str(),
                wield_core::one_line(first, 120)
            ));
            count += 1;
        }
    }
    if count == 0 {
        return ToolResult::ok("There are no memory entries yet; save one with memory_write.").with_meta("count", 0);
    }
    ToolResult::ok(out).with_meta("count", count)
}

fn search(stores: &[Store], query: &str) -> ToolResult {
    let mut hits = Vec::new();
    for s in stores {
        match index::search(s, query, SEARCH_LIMIT) {
            Ok(found) => hits.extend(found.into_iter().map(|h| (s.scope, h))),
            Err(e) => return ToolResult::error(e),
        }
    }
    hits.sort_by(|a, b| a.1.rank.total_cmp(&b.1.rank));
    hits.truncate(SEARCH_LIMIT);
    if hits.is_empty() {
        return ToolResult::ok(format!("No memory entry matches {query:?}.")).with_meta("count", 0);
    }
    let out: String = hits
        .iter()
        .enumerate()
        .map(|(i, (scope, h))| {
            format!(
                "{}. {} ({}): {}\n",
                i + 1,
                h.key,
                scope.as_str(),
                h.snippet.replace('\n', " ")
            )
        })
        .collect();
    ToolResult::ok(out).with_meta("count", hits.len())
}
