//! The session's todo list: `todo_write` replaces it, `todo_progress`
//! updates items by index, `todo_list` shows it with counts.
//!
//! The list is a session extension ([`TodoList`]); at most one item is
//! `in_progress` (a change that would make two is refused whole). Every
//! change also refreshes the session's [`HandOff`] note, so an agent that
//! compacts its conversation carries the list across; [`items`] and
//! [`restore`] let a front-end save it with a session and bring it back.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wield_core::{Context, HandOff, Session, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};

use crate::fs::parse;

/// The title of the list's hand-off note.
pub const HANDOFF_TITLE: &str = "Todo list";

/// An item's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Done,
}

impl Status {
    fn mark(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[~]",
            Status::Done => "[x]",
        }
    }
}

/// One item of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    pub content: String,
    pub status: Status,
}

/// The list, as a session extension.
#[derive(Debug, Default)]
pub struct TodoList(Mutex<Vec<TodoItem>>);

/// The session's todo list (empty when none was written).
pub fn items(session: &Session) -> Vec<TodoItem> {
    session
        .get_extension::<TodoList>()
        .map(|l| l.0.lock().unwrap_or_else(PoisonError::into_inner).clone())
        .unwrap_or_default()
}

/// Replace the session's list (a resumed session's saved one).
pub fn restore(session: &Session, list: Vec<TodoItem>) {
    store(session, list);
}

fn store(session: &Session, list: Vec<TodoItem>) {
    HandOff::of(session).set(HANDOFF_TITLE, &render(&list));
    let ext = session.extension(TodoList::default);
    *ext.0.lock().unwrap_or_else(PoisonError::into_inner) = list;
}

/// The list as numbered lines, `1. [x] content`; empty for no items.
pub fn render(list: &[TodoItem]) -> String {
    list.iter()
        .enumerate()
        .map(|(i, item)| format!("{}. {} {}\n", i + 1, item.status.mark(), item.content))
        .collect()
}

/// The list with its counts, as the tools answer.
fn report(list: &[TodoItem]) -> ToolResult {
    let count = |s: Status| list.iter().filter(|i| i.status == s).count();
    let (done, doing, pending) = (count(Status::Done), count(Status::InProgress), count(Status::Pending));
    let head = format!(
        "{} items: {done} done, {doing} in progress, {pending} pending",
        list.len()
    );
    let text = if list.is_empty() {
        "The todo list is empty.".to_owned()
    } else {
        format!("{head}\n{}", render(list))
    };
    ToolResult::ok(text)
        .with_meta("total", list.len())
        .with_meta("done", done)
        .with_meta("in_progress", doing)
        .with_meta("pending", pending)
}

/// `Err` with why, when more than one item is in progress.
fn check_one_in_progress(list: &[TodoItem]) -> Result<(), String> {
    let doing: Vec<String> = list
        .iter()
        .enumerate()
        .filter(|(_, i)| i.status == Status::InProgress)
        .map(|(n, _)| (n + 1).to_string())
        .collect();
    if doing.len() > 1 {
        return Err(format!(
            "at most one item may be in_progress, this would make {} (items {}); nothing was changed: \
             mark the others pending or done",
            doing.len(),
            doing.join(", ")
        ));
    }
    Ok(())
}

/// The todo tools.
pub fn tools() -> Vec<ToolRef> {
    vec![
        Arc::new(TodoWrite::new()),
        Arc::new(TodoProgress::new()),
        Arc::new(TodoList::tool()),
    ]
}

fn status_schema() -> Value {
    json!({"type": "string", "enum": ["pending", "in_progress", "done"]})
}

fn traits(parallel: bool) -> ToolTraits {
    // The list is the session's own state: changing it touches nothing
    // outside, so the tools are read-only for approval (`$readonly`).
    ToolTraits {
        parallel,
        read_only: true,
        groups: vec!["todo".into()],
        ..ToolTraits::default()
    }
}

pub struct TodoWrite {
    base: ToolBase,
}

impl Default for TodoWrite {
    fn default() -> Self {
        Self::new()
    }
}

impl TodoWrite {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "todo_write",
                    "Replace this session's todo list. Use it for tasks of several steps: list the steps, keep \
                     exactly one in_progress while you work on it, mark items done as soon as they are. At most \
                     one item may be in_progress. The list survives context compaction.",
                    json!({
                        "type": "object",
                        "properties": {
                            "items": {
                                "type": "array",
                                "description": "The whole new list, in order.",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "content": {"type": "string", "description": "What to do."},
                                        "status": status_schema()
                                    },
                                    "required": ["content", "status"],
                                    "additionalProperties": false
                                }
                            }
                        },
                        "required": ["items"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Write the todo list"),
                traits(false),
            ),
        }
    }
}

#[derive(Deserialize)]
struct WriteArgs {
    items: Vec<TodoItem>,
}

#[async_trait]
impl Tool for TodoWrite {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let args: WriteArgs = match parse("todo_write", input) {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(n) = args.items.iter().position(|i| i.content.trim().is_empty()) {
            return ToolResult::error(format!(
                "item {} has no content; nothing was changed: give every item a text",
                n + 1
            ));
        }
        if let Err(why) = check_one_in_progress(&args.items) {
            return ToolResult::error(why);
        }
        store(&ctx.session, args.items.clone());
        report(&args.items)
    }
}

pub struct TodoProgress {
    base: ToolBase,
}

impl Default for TodoProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl TodoProgress {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "todo_progress",
                    "Update items of this session's todo list by their 1-based index. When an item is marked \
                     done and none is in_progress, the next pending item becomes in_progress.",
                    json!({
                        "type": "object",
                        "properties": {
                            "updates": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "index": {"type": "integer", "minimum": 1, "description": "1-based, as todo_list numbers them."},
                                        "status": status_schema()
                                    },
                                    "required": ["index", "status"],
                                    "additionalProperties": false
                                }
                            }
                        },
                        "required": ["updates"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Update the todo list"),
                traits(false),
            ),
        }
    }
}

#[derive(Deserialize)]
struct Update {
    index: usize,
    status: Status,
}

#[derive(Deserialize)]
struct ProgressArgs {
    updates: Vec<Update>,
}

/// The list after `updates`, with the next pending item promoted when an
/// item was marked done and none is left in progress.
fn apply(mut list: Vec<TodoItem>, updates: &[Update]) -> Result<Vec<TodoItem>, String> {
    let mut finished = false;
    for u in updates {
        let len = list.len();
        let Some(item) = u.index.checked_sub(1).and_then(|i| list.get_mut(i)) else {
            return Err(format!(
                "there is no item {} (the list has {len}); nothing was changed: call todo_list to see the numbers",
                u.index
            ));
        };
        finished |= u.status == Status::Done && item.status != Status::Done;
        item.status = u.status;
    }
    check_one_in_progress(&list)?;
    if finished
        && !list.iter().any(|i| i.status == Status::InProgress)
        && let Some(next) = list.iter_mut().find(|i| i.status == Status::Pending)
    {
        next.status = Status::InProgress;
    }
    Ok(list)
}

#[async_trait]
impl Tool for TodoProgress {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, ctx: &Context) -> ToolResult {
        let args: ProgressArgs = match parse("todo_progress", input) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let list = items(&ctx.session);
        if list.is_empty() {
            return ToolResult::error("the todo list is empty: write one with todo_write first");
        }
        match apply(list, &args.updates) {
            Ok(list) => {
                store(&ctx.session, list.clone());
                report(&list)
            }
            Err(why) => ToolResult::error(why),
        }
    }
}

/// `todo_list`.
pub struct TodoListTool {
    base: ToolBase,
}

impl TodoList {
    fn tool() -> TodoListTool {
        TodoListTool {
            base: ToolBase::new(
                ToolSpec::new(
                    "todo_list",
                    "Show this session's todo list, numbered, with counts of done, in-progress and pending items.",
                    json!({"type": "object", "properties": {}, "additionalProperties": false}),
                )
                .strict(true)
                .title("Show the todo list"),
                traits(true),
            ),
        }
    }
}

#[async_trait]
impl Tool for TodoListTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, _input: Value, ctx: &Context) -> ToolResult {
        report(&items(&ctx.session))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: Status) -> TodoItem {
        TodoItem {
            content: content.into(),
            status,
        }
    }

    fn up(index: usize, status: Status) -> Update {
        Update { index, status }
    }

    #[test]
    fn marking_one_done_promotes_the_next_pending() {
        let list = vec![
            item("a", Status::InProgress),
            item("b", Status::Pending),
            item("c", Status::Pending),
        ];
        let list = apply(list, &[up(1, Status::Done)]).unwrap();
        assert_eq!(
            list.iter().map(|i| i.status).collect::<Vec<_>>(),
            [Status::Done, Status::InProgress, Status::Pending]
        );
    }

    #[test]
    fn a_second_in_progress_is_refused_and_a_bad_index_too() {
        let list = vec![item("a", Status::InProgress), item("b", Status::Pending)];
        let err = apply(list.clone(), &[up(2, Status::InProgress)]).unwrap_err();
        assert!(err.contains("at most one item may be in_progress"), "{err}");
        let err = apply(list, &[up(3, Status::Done)]).unwrap_err();
        assert!(err.contains("no item 3"), "{err}");
    }

    #[test]
    fn the_list_is_a_session_extension_with_a_hand_off_note() {
        let session = Session::new("s", true);
        assert!(items(&session).is_empty());
        restore(&session, vec![item("ship it", Status::InProgress)]);
        assert_eq!(items(&session), vec![item("ship it", Status::InProgress)]);
        assert_eq!(
            HandOff::render(&session).as_deref(),
            Some("## Todo list\n1. [~] ship it")
        );
        assert!(items(&Session::new("other", true)).is_empty());
    }
}
