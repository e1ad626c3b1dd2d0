//! The parsed form of a patch.
//!
//! Paths are kept exactly as the patch wrote them (trimmed of surrounding
//! whitespace only): resolving them against a workspace, and refusing the
//! ones that escape it, is the caller's job.

/// A whole `*** Begin Patch` … `*** End Patch` document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The operations in the order the patch lists them. Never empty, and no
    /// path appears in two operations (as a target or a move destination).
    pub ops: Vec<Operation>,
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// `*** Add File: PATH` followed by `+` lines.
    Add {
        path: String,
        /// The new file's full text: every `+` line followed by `\n`.
        contents: String,
        /// 1-based line of the header in the patch text.
        line: usize,
    },
    /// `*** Delete File: PATH`.
    Delete { path: String, line: usize },
    /// `*** Update File: PATH`, optionally `*** Move to: PATH`, then chunks.
    Update {
        path: String,
        move_to: Option<String>,
        /// Never empty; in patch order, which must also be file order.
        chunks: Vec<Chunk>,
        line: usize,
    },
}

impl Operation {
    /// The file the operation reads or creates (not the move destination).
    pub fn path(&self) -> &str {
        match self {
            Operation::Add { path, .. } | Operation::Delete { path, .. } | Operation::Update { path, .. } => path,
        }
    }

    /// 1-based line of the operation's header in the patch text.
    pub fn line(&self) -> usize {
        match self {
            Operation::Add { line, .. } | Operation::Delete { line, .. } | Operation::Update { line, .. } => *line,
        }
    }
}

/// One change inside an Update: where it goes and what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The texts of the chunk's `@@ TEXT` lines, outermost first. Each one is
    /// located in turn (each after the previous) before the chunk's old lines
    /// are searched. Empty for `@@` alone or a first chunk without `@@`.
    pub context: Vec<String>,
    /// The body, in order, with its `' '`, `'-'` or `'+'` prefix removed.
    pub lines: Vec<ChunkLine>,
    /// `*** End of File` closed the chunk: its old lines must be the file's
    /// last lines (or, with no old lines, the new lines are appended).
    pub end_of_file: bool,
    /// 1-based line in the patch text where the chunk starts, for messages.
    pub line: usize,
}

/// One body line of a [`Chunk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkLine {
    /// `' '` (or an empty line): present before and after.
    Context(String),
    /// `'-'`: present before only.
    Remove(String),
    /// `'+'`: present after only.
    Add(String),
}

impl Chunk {
    /// The lines the file must contain where the chunk applies: context and
    /// removed lines, in order.
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            ChunkLine::Context(text) | ChunkLine::Remove(text) => Some(text.as_str()),
            ChunkLine::Add(_) => None,
        })
    }

    /// The lines that replace them: context and added lines, in order.
    pub fn new_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|line| match line {
            ChunkLine::Context(text) | ChunkLine::Add(text) => Some(text.as_str()),
            ChunkLine::Remove(_) => None,
        })
    }
}
