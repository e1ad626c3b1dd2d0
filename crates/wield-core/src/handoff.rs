//! [`HandOff`]: session state that must outlive a compaction of the
//! conversation. A tool family that keeps state a model relies on (a plan,
//! a todo list) writes its current text here under a title; an agent that
//! replaces its history with a summary carries every note into the summary
//! request and puts them back after the summary. Core knows no note by name.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::Session;

/// The notes of one session, by title; a session extension.
#[derive(Debug, Default)]
pub struct HandOff {
    notes: Mutex<BTreeMap<String, String>>,
}

impl HandOff {
    /// The session's notes (created on first use).
    pub fn of(session: &Session) -> std::sync::Arc<Self> {
        session.extension(Self::default)
    }

    /// Set the note `title` to `text`; an empty text removes it.
    pub fn set(&self, title: &str, text: &str) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if text.trim().is_empty() {
            notes.remove(title);
        } else {
            notes.insert(title.to_owned(), text.to_owned());
        }
    }

    /// The notes as `(title, text)`, in title order.
    pub fn notes(&self) -> Vec<(String, String)> {
        let notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        notes.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Every note of `session` as one markdown text (`## Title` and the
    /// text), `None` when it has none.
    pub fn render(session: &Session) -> Option<String> {
        let notes = session.get_extension::<Self>()?.notes();
        if notes.is_empty() {
            return None;
        }
        let parts: Vec<String> = notes
            .iter()
            .map(|(title, text)| format!("## {title}\n{}", text.trim_end()))
            .collect();
        Some(parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_render_in_title_order_and_an_empty_text_removes_one() {
        let session = Session::new("s", true);
        assert_eq!(HandOff::render(&session), None);
        HandOff::of(&session).set("Todo list", "1. [ ] a");
        HandOff::of(&session).set("Plan", "step");
        assert_eq!(
            HandOff::render(&session).as_deref(),
            Some("## Plan\nstep\n\n## Todo list\n1. [ ] a")
        );
        HandOff::of(&session).set("Plan", "  ");
        assert_eq!(HandOff::render(&session).as_deref(), Some("## Todo list\n1. [ ] a"));
    }
}
