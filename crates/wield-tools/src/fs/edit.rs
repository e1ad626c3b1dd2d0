//! `edit`: replace an exact piece of text in a file.
//!
//! The match is exact, so the model must quote what is there. When it does
//! not, the error shows where the text nearly is: a place that differs only
//! in whitespace, else the most similar lines, so the next attempt can copy
//! them.

use std::collections::HashSet;
use std::io::Read;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Access as CoreAccess, Context, PathUse, Refusal, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::{Access, Confinement, Kind, Resolved};

use super::{blocking, check_read_before_write, confinement, diff, fail, mark_seen, parse, path_use, resolve_for_call};

/// Largest file edit works on.
const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// Lines of the unified diff shown in the result.
const DIFF_LINES: usize = 60;
/// How far the closest-lines search looks, to keep an error cheap.
const MAX_SUGGEST_LINES: usize = 100_000;

pub struct EditTool {
    base: ToolBase,
}

impl Default for EditTool {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct Input {
    path: String,
    old_text: String,
    new_text: String,
    replace_all: Option<bool>,
}

struct Plan {
    resolved: Resolved,
    shown: String,
    before: String,
    after: String,
    count: usize,
}

impl EditTool {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "edit",
                    "Replace exact text in a file. old_text must match the file exactly (including indentation) \
                     and only once, unless replace_all is true; include enough surrounding lines to make it \
                     unique. The file must have been read in this session first. The result shows a diff of \
                     the change.",
                    json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File path, relative to the workspace or absolute."},
                            "old_text": {"type": "string", "description": "The exact text to replace."},
                            "new_text": {"type": "string", "description": "The text to put in its place."},
                            "replace_all": {"type": ["boolean", "null"], "description": "Replace every occurrence (default false)."}
                        },
                        "required": ["path", "old_text", "new_text", "replace_all"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Edit file"),
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
impl Tool for EditTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let get = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
        let (removed, added) = diff::line_counts(get("old_text"), get("new_text"));
        let all = if input.get("replace_all").and_then(Value::as_bool) == Some(true) {
            ", all"
        } else {
            ""
        };
        let path = input.get("path").and_then(Value::as_str).unwrap_or("?");
        wield_core::one_line(&format!("edit: {path} (-{removed} +{added} lines{all})"), width)
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
        let input: Input = serde_json::from_value(input.clone()).ok()?;
        let conf = confinement(ctx).ok()?;
        let resolved = conf.resolve(&input.path, Access::Write).ok()?;
        let plan = plan(&conf, &input, resolved).ok()?;
        Some(diff::unified(&plan.shown, &plan.before, &plan.after, 400))
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let input: Input = match parse("edit", input) {
            Ok(i) => i,
            Err(r) => return r,
        };
        if input.old_text.is_empty() {
            return ToolResult::error(
                "old_text is empty: give the exact text to replace (to create a file, use write)",
            );
        }
        if input.old_text == input.new_text {
            return ToolResult::error("old_text and new_text are the same: there is nothing to change");
        }
        if let Err(msg) = check_read_before_write(ctx, &input.path) {
            return ToolResult::error(msg.to_string());
        }
        let conf = match confinement(ctx) {
            Ok(c) => c,
            Err(r) => return r,
        };
        // The object the executor's path check resolved, when it made one.
        let resolved = match resolve_for_call(ctx, &conf, &input.path, Access::Write) {
            Ok(r) => r,
            Err(e) => return fail(&e),
        };
        let ctx = ctx.clone();
        blocking(move || {
            let plan = match plan(&conf, &input, resolved) {
                Ok(p) => p,
                Err(r) => return r,
            };
            if let Err(e) = conf.write_resolved(&plan.resolved, plan.after.as_bytes()) {
                return fail(&e);
            }
            mark_seen(&ctx, &conf, plan.resolved.real_path());
            let noun = if plan.count == 1 { "replacement" } else { "replacements" };
            let diff = diff::unified(&plan.shown, &plan.before, &plan.after, DIFF_LINES);
            ToolResult::ok(format!("Edited {}: {} {noun}\n{diff}", plan.shown, plan.count))
                .with_meta("path", plan.shown)
                .with_meta("replacements", plan.count)
        })
        .await
    }
}

fn plan(conf: &Confinement, input: &Input, resolved: Resolved) -> Result<Plan, ToolResult> {
    let shown = conf.display_path(resolved.real_path());
    match resolved.kind() {
        None => {
            return Err(ToolResult::error(format!(
                "{}: no such file (to create a file, use write)",
                input.path
            )));
        }
        Some(Kind::Dir) => return Err(ToolResult::error(format!("{shown} is a directory, not a file"))),
        Some(_) => {}
    }
    if resolved.size().unwrap_or(0) > MAX_EDIT_BYTES {
        return Err(ToolResult::error(format!(
            "{shown} is larger than {} MB: edit works on smaller files",
            MAX_EDIT_BYTES / (1024 * 1024)
        )));
    }
    let mut bytes = Vec::new();
    conf.open_resolved(&resolved)
        .map_err(|e| fail(&e))?
        .read_to_end(&mut bytes)
        .map_err(|e| ToolResult::error(format!("{shown}: {e}")))?;
    let before = String::from_utf8(bytes)
        .map_err(|_| ToolResult::error(format!("{shown} is not UTF-8 text: edit only changes text files")))?;
    let (mut old, mut new) = (input.old_text.clone(), input.new_text.clone());
    let mut at = match_offsets(&before, &old);
    // A model quotes lines with \n; a CRLF file has \r\n.
    if at.is_empty() && before.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        let (crlf_old, crlf_new) = (old.replace('\n', "\r\n"), new.replace('\n', "\r\n"));
        let crlf_at = match_offsets(&before, &crlf_old);
        if !crlf_at.is_empty() {
            (old, new, at) = (crlf_old, crlf_new, crlf_at);
        }
    }
    let replace_all = input.replace_all.unwrap_or(false);
    match at.len() {
        0 => return Err(ToolResult::error(no_match(&shown, &before, &input.old_text))),
        1 => {}
        n if !replace_all => {
            let mut lines: Vec<String> = at.iter().take(20).map(|&o| line_of(&before, o).to_string()).collect();
            if n > 20 {
                lines.push("…".into());
            }
            return Err(ToolResult::error(format!(
                "old_text matches {n} times in {shown} (at lines {}): include more surrounding lines to make \
                 it unique, or set replace_all to true to change every occurrence",
                lines.join(", ")
            ))
            .with_meta("matches", n));
        }
        _ => {}
    }
    let after = if replace_all {
        before.replace(&old, &new)
    } else {
        before.replacen(&old, &new, 1)
    };
    Ok(Plan {
        resolved,
        shown,
        before,
        after,
        count: at.len(),
    })
}

/// Byte offsets of the non-overlapping occurrences of `needle`.
fn match_offsets(hay: &str, needle: &str) -> Vec<usize> {
    hay.match_indices(needle).map(|(i, _)| i).collect()
}

/// The 1-based line number holding byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..offset]).count() + 1
}

fn numbered(lines: &[&str], first: usize) -> String {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", first + i))
        .collect()
}

fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The zero-match error: where the text nearly is.
fn no_match(shown: &str, content: &str, old: &str) -> String {
    let mut msg = format!("old_text was not found in {shown}.");
    let file: Vec<&str> = content.lines().take(MAX_SUGGEST_LINES).collect();
    let mut want: Vec<&str> = old.lines().collect();
    while want.last().is_some_and(|l| l.trim().is_empty()) {
        want.pop();
    }
    while want.first().is_some_and(|l| l.trim().is_empty()) {
        want.remove(0);
    }
    if want.is_empty() || file.len() < want.len() {
        msg.push_str(" Read the file again to see its current content.");
        return msg;
    }
    let n = want.len();
    let want_squashed: Vec<String> = want.iter().map(|l| squash(l)).collect();
    let file_squashed: Vec<String> = file.iter().map(|l| squash(l)).collect();
    if let Some(start) = (0..=file.len() - n).find(|&s| (0..n).all(|i| file_squashed[s + i] == want_squashed[i])) {
        msg.push_str(&format!(
            " The same text with different whitespace is at lines {}-{}:\n{}Copy old_text exactly from there \
             (indentation included).",
            start + 1,
            start + n,
            numbered(&file[start..start + n], start + 1)
        ));
        return msg;
    }
    // Score windows by word overlap, line by line, on the first lines only.
    let k = n.min(30);
    let words = |l: &str| -> HashSet<String> {
        l.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let want_words: Vec<HashSet<String>> = want[..k].iter().map(|l| words(l)).collect();
    let file_words: Vec<HashSet<String>> = file.iter().map(|l| words(l)).collect();
    let jaccard = |a: &HashSet<String>, b: &HashSet<String>| -> f64 {
        if a.is_empty() && b.is_empty() {
            return 1.0;
        }
        let inter = a.intersection(b).count() as f64;
        inter / (a.len() + b.len()) as f64 * 2.0
    };
    let best = (0..=file.len() - k)
        .map(|s| {
            let score: f64 = (0..k).map(|i| jaccard(&want_words[i], &file_words[s + i])).sum();
            (s, score / k as f64)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    match best {
        Some((start, score)) if score >= 0.3 => {
            let end = (start + n).min(file.len());
            msg.push_str(&format!(
                " The closest lines are {}-{}:\n{}Check them against old_text, or read the file again.",
                start + 1,
                end,
                numbered(&file[start..end], start + 1)
            ));
        }
        _ => msg.push_str(" Nothing similar was found; read the file again to see its current content."),
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_only_differences_are_pointed_out() {
        let content = "fn a() {\n    let x = 1;\n    let y = 2;\n}\n";
        let msg = no_match("f.rs", content, "let x = 1;\nlet y  = 2;");
        assert!(msg.contains("different whitespace is at lines 2-3"), "{msg}");
        assert!(msg.contains("     2\t    let x = 1;"), "{msg}");
    }

    #[test]
    fn the_closest_lines_are_suggested() {
        let content = "alpha beta\nfn compute_total(items: &[Item]) -> u64 {\n    items.len()\n}\nzeta\n";
        let msg = no_match(
            "f.rs",
            content,
            "fn compute_total(items: &[Thing]) -> u64 {\n    items.count()",
        );
        assert!(msg.contains("closest lines are 2-3"), "{msg}");
        let none = no_match("f.rs", content, "completely unrelated words here");
        assert!(none.contains("Nothing similar"), "{none}");
    }

    #[test]
    fn line_numbers_of_offsets() {
        let t = "a\nb\nc";
        assert_eq!(line_of(t, 0), 1);
        assert_eq!(line_of(t, 2), 2);
        assert_eq!(line_of(t, 4), 3);
    }
}
