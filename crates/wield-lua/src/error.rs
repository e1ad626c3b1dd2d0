//! [`LuaError`]: why a script could not be loaded or run.

use std::path::PathBuf;

/// Why a Lua file or snippet could not be loaded or run. The message names
/// the file and line where Lua knows them.
#[derive(Debug, thiserror::Error)]
pub enum LuaError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The code failed to compile or run (the message carries `file:line:`).
    #[error("{0}")]
    Script(String),
    /// The code ran but what it returned is not what wield expects.
    #[error("{where_}: {message}")]
    Shape { where_: String, message: String },
}

impl LuaError {
    pub(crate) fn shape(where_: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Shape {
            where_: where_.into(),
            message: message.into(),
        }
    }
}

impl From<mlua::Error> for LuaError {
    fn from(e: mlua::Error) -> Self {
        Self::Script(message(&e))
    }
}

/// An mlua error as one readable message: the innermost cause, without the
/// stack traceback.
pub(crate) fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        mlua::Error::WithContext { cause, context } => format!("{context}: {}", message(cause)),
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::MemoryError(_) => "the script ran out of memory (its memory limit, lua.memory_limit)".to_owned(),
        other => other.to_string(),
    };
    match text.split_once("\nstack traceback:") {
        Some((head, _)) => head.trim_end().to_owned(),
        None => text.trim_end().to_owned(),
    }
}
