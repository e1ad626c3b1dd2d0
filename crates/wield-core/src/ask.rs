//! Asking the person a question on the model's behalf: the question's
//! shape, who answers it (the front-end: a terminal prompt, an MCP client's
//! form, a `.chat` block) and where a session keeps that answerer. Like the
//! approver, the front-end brings it; without one, nobody is asked.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::Session;

/// One choice offered with a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskOption {
    pub label: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// A question for the person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    pub question: String,
    #[serde(default)]
    pub options: Vec<AskOption>,
    #[serde(default)]
    pub multi_select: bool,
}

/// Who answers questions. `Err` is told to the model.
#[async_trait]
pub trait Asker: Send + Sync {
    async fn ask(&self, question: &Question) -> Result<String, String>;
}

/// A session's answerer, if it has one.
#[derive(Default)]
struct AskerSlot(Mutex<Option<Arc<dyn Asker>>>);

/// Who answers `session`'s questions from now on (`None`: nobody).
pub fn set_asker(session: &Session, asker: Option<Arc<dyn Asker>>) {
    *session
        .extension(AskerSlot::default)
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = asker;
}

/// Who answers `session`'s questions, if anyone.
pub fn asker(session: &Session) -> Option<Arc<dyn Asker>> {
    session
        .extension(AskerSlot::default)
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}
