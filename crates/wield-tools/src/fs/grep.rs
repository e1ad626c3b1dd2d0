//! `grep`: regex search with ripgrep's own crates, in process.
//!
//! The walk is ripgrep's parallel walker with ripgrep's filters, the search
//! is `grep-searcher` with `grep-regex`, binary files are detected the way
//! ripgrep does (a NUL byte stops the search of that file), and the output is
//! `rg -n`'s (`path:line:text`, context lines `path-line-text`, `--` between
//! groups), sorted by path like `rg --sort path`. Only the first `limit`
//! matches (by path order) are kept in memory; the rest are only counted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::Confinement;

use super::walk::{Filters, builder, start};
use super::{ListingCut, blocking, confinement, fail, listed, listing, parse, path_use};

const DEFAULT_LIMIT: usize = 100;
/// Longest line text shown; minified files would drown the output otherwise.
const MAX_LINE_BYTES: usize = 2000;
const MAX_CONTEXT: usize = 20;

pub struct GrepTool {
    base: ToolBase,
}

impl Default for GrepTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Content,
    Files,
    Count,
}

#[derive(Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    case_insensitive: Option<bool>,
    context: Option<usize>,
    output_mode: Option<Mode>,
    limit: Option<usize>,
}

impl GrepTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "grep",
                    "Search file contents with a regular expression (ripgrep syntax), in the workspace or under \
                     `path`. Output is like `rg -n`: `path:line:text`, sorted by path. Hidden files, files \
                     ignored by .gitignore and binary files are skipped. `glob` filters files (`*.rs`, \
                     `!*_test.go`); output_mode \"files\" lists matching files, \"count\" counts matches per \
                     file. At most `limit` matches (default 100) are shown, with a count of the rest.",
                    json!({
                        "type": "object",
                        "properties": {
                            "pattern": {"type": "string", "description": "Regular expression, e.g. \"fn\\\\s+main\"."},
                            "path": {"type": ["string", "null"], "description": "File or directory to search (default: the workspace)."},
                            "glob": {"type": ["string", "null"], "description": "Only files matching this glob, e.g. \"*.rs\"; a leading ! excludes."},
                            "case_insensitive": {"type": ["boolean", "null"], "description": "Ignore case (default false)."},
                            "context": {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_CONTEXT, "description": "Lines of context around each match (default 0)."},
                            "output_mode": {"type": ["string", "null"], "enum": ["content", "files", "count", null], "description": "content (default), files, or count."},
                            "limit": {"type": ["integer", "null"], "minimum": 1, "description": "Maximum matches shown (files in files/count mode); default 100."}
                        },
                        "required": ["pattern", "path", "glob", "case_insensitive", "context", "output_mode", "limit"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Search file contents"),
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
impl Tool for GrepTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let pattern = input.get("pattern").and_then(Value::as_str).unwrap_or("?");
        let place = match input.get("path").and_then(Value::as_str) {
            Some(p) => format!(" in {p}"),
            None => String::new(),
        };
        let glob = match input.get("glob").and_then(Value::as_str) {
            Some(g) => format!(" ({g})"),
            None => String::new(),
        };
        wield_core::one_line(&format!("grep: {pattern:?}{place}{glob}"), width)
    }

    fn paths(&self, input: &Value) -> Vec<PathUse> {
        path_use(input, "path", Some("."), CoreAccess::Read)
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("grep", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        let cancel = ctx.cancel.clone();
        let cut = ListingCut::of(ctx);
        blocking(move || search(&conf, &input, &cancel, &cut).unwrap_or_else(|r| r)).await
    }
}

/// One line of output kept for a file.
enum Hit {
    Match(u64, String),
    Context(u64, String),
    Break,
}

#[derive(Default)]
struct FileHits {
    hits: Vec<Hit>,
    matches: usize,
}

/// Collects one file's matches, keeping at most `keep` matching lines.
struct Collect {
    mode: Mode,
    keep: usize,
    file: FileHits,
}

fn line_text(bytes: &[u8]) -> String {
    let mut b = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    b = b.strip_suffix(b"\r").unwrap_or(b);
    if b.len() <= MAX_LINE_BYTES {
        return String::from_utf8_lossy(b).into_owned();
    }
    let text = String::from_utf8_lossy(&b[..MAX_LINE_BYTES]);
    format!("{}… [line cut]", text.trim_end_matches('\u{FFFD}'))
}

impl Sink for Collect {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.file.matches += 1;
        match self.mode {
            // One match is enough to list the file.
            Mode::Files => return Ok(false),
            Mode::Count => return Ok(true),
            Mode::Content => {}
        }
        if self.file.matches <= self.keep {
            let n = m.line_number().unwrap_or(0);
            self.file.hits.push(Hit::Match(n, line_text(m.bytes())));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.file.matches <= self.keep {
            let n = c.line_number().unwrap_or(0);
            self.file.hits.push(Hit::Context(n, line_text(c.bytes())));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.file.matches <= self.keep {
            self.file.hits.push(Hit::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        // Like ripgrep: stop searching a file once it turns out binary.
        Ok(false)
    }
}

/// The first files by path order whose matches cover `limit`, plus totals.
struct Results {
    files: BTreeMap<PathBuf, FileHits>,
    kept: usize,
    limit: usize,
}

impl Results {
    fn weight(mode: Mode, f: &FileHits) -> usize {
        if mode == Mode::Content { f.matches } else { 1 }
    }

    fn add(&mut self, mode: Mode, path: PathBuf, hits: FileHits) {
        self.kept += Self::weight(mode, &hits);
        self.files.insert(path, hits);
        // Drop files that sort after the first `limit` matches; done in
        // batches so the cost stays linear.
        if self.kept > 2 * self.limit + 64 {
            let mut acc = 0;
            let mut cut = None;
            for (p, f) in &self.files {
                if acc >= self.limit {
                    cut = Some(p.clone());
                    break;
                }
                acc += Self::weight(mode, f);
            }
            if let Some(p) = cut {
                self.files.split_off(&p);
            }
            self.kept = acc;
        }
    }
}

fn search(
    conf: &Confinement,
    input: &Input,
    cancel: &tokio_util::sync::CancellationToken,
    cut: &ListingCut,
) -> Result<ToolResult, ToolResult> {
    let mode = input.output_mode.unwrap_or(Mode::Content);
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let context = input.context.unwrap_or(0).min(MAX_CONTEXT);
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|e| ToolResult::error(format!("invalid regular expression {:?}: {e}", input.pattern)))?;
    let (root, is_file) = start(conf, input.path.as_deref())?;
    let searcher = || {
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .before_context(if mode == Mode::Content { context } else { 0 })
            .after_context(if mode == Mode::Content { context } else { 0 })
            .build()
    };
    let results = Mutex::new(Results {
        files: BTreeMap::new(),
        kept: 0,
        limit,
    });
    let total = AtomicUsize::new(0);
    let files_matched = AtomicUsize::new(0);
    let errors = AtomicUsize::new(0);
    let search_one = |searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path, file: std::fs::File| {
        let mut sink = Collect {
            mode,
            keep: limit,
            file: FileHits::default(),
        };
        if searcher.search_file(matcher, &file, &mut sink).is_err() {
            errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if sink.file.matches > 0 {
            total.fetch_add(sink.file.matches, Ordering::Relaxed);
            files_matched.fetch_add(1, Ordering::Relaxed);
            let mut r = results.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            r.add(mode, path.to_path_buf(), sink.file);
        }
    };
    if is_file {
        let file = conf.open_read(&root).map_err(|e| fail(&e))?;
        search_one(&mut searcher(), &matcher, &root, file);
    } else {
        let mut walk = builder(&root, Filters::STANDARD);
        if let Some(glob) = input.glob.as_deref().filter(|g| !g.is_empty()) {
            let overrides = OverrideBuilder::new(&root)
                .add(glob)
                .and_then(|b| b.build())
                .map_err(|e| ToolResult::error(format!("invalid glob {glob:?}: {e}")))?;
            walk.overrides(overrides);
        }
        walk.build_parallel().run(|| {
            let mut searcher = searcher();
            let matcher = matcher.clone();
            let (search_one, errors) = (&search_one, &errors);
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
                match conf.open_walked(entry.path()) {
                    Ok(file) => search_one(&mut searcher, &matcher, entry.path(), file),
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                WalkState::Continue
            })
        });
    }
    if cancel.is_cancelled() {
        return Err(ToolResult::error("cancelled"));
    }
    let results = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (total, files) = (total.into_inner(), files_matched.into_inner());
    let place = conf.display_path(&root);
    if total == 0 {
        return Ok(ToolResult::ok(format!("No matches for {:?} in {place}", input.pattern))
            .with_meta("matches", 0)
            .with_meta("files", 0)
            .with_meta("truncated", false));
    }
    let (text, limited) = render(conf, &results, mode, limit, context, total, files);
    Ok(listing(cut, text, limited)
        .with_meta("matches", total)
        .with_meta("files", files)
        .with_meta("errors", errors.into_inner()))
}

fn render(
    conf: &Confinement,
    results: &Results,
    mode: Mode,
    limit: usize,
    context: usize,
    total: usize,
    files: usize,
) -> (String, bool) {
    let mut out = String::new();
    let mut shown = 0;
    for (path, f) in &results.files {
        if shown >= limit {
            break;
        }
        let p = conf.display_path(path);
        let p = listed(&p);
        match mode {
            Mode::Files => out.push_str(&format!("{p}\n")),
            Mode::Count => out.push_str(&format!("{p}:{}\n", f.matches)),
            Mode::Content => {
                if context > 0 && !out.is_empty() {
                    out.push_str("--\n");
                }
                let mut after_left = 0;
                for hit in &f.hits {
                    match hit {
                        Hit::Match(n, text) => {
                            if shown >= limit {
                                break;
                            }
                            shown += 1;
                            after_left = context;
                            out.push_str(&format!("{p}:{n}:{text}\n"));
                        }
                        Hit::Context(n, text) => {
                            if shown >= limit {
                                if after_left == 0 {
                                    break;
                                }
                                after_left -= 1;
                            }
                            out.push_str(&format!("{p}-{n}-{text}\n"));
                        }
                        Hit::Break if shown >= limit => break,
                        Hit::Break => out.push_str("--\n"),
                    }
                }
                continue;
            }
        }
        shown += 1;
    }
    let all = if mode == Mode::Content { total } else { files };
    let limited = all > shown;
    if limited {
        let (what, summary) = match mode {
            Mode::Content => ("matches", format!("{total} matches in {files} files")),
            Mode::Count => ("files", format!("{total} matches in {files} files")),
            // Files mode stops reading a file at its first match.
            Mode::Files => ("files", format!("{files} files match")),
        };
        out.push_str(&format!(
            "[{} more {what} not shown ({summary}); narrow the pattern, path or glob, or raise limit]\n",
            all - shown
        ));
    }
    (out, limited)
}
