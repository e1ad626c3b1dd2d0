//! The system prompt: a concise built-in one (the workspace, the OS, the
//! date, the sandbox, how to use the tools), or the configuration's
//! replacement; the deferred tools by name; the project's `AGENTS.md` (or
//! `CLAUDE.md` when there is none); the configured instructions.

use std::path::{Path, PathBuf};

/// Builds a run's system prompt.
#[derive(Clone, Debug)]
pub struct SystemPrompt {
    workspace: PathBuf,
    os: String,
    date: String,
    sandboxed: bool,
    replacement: Option<String>,
    deferred: Option<String>,
    instructions: Vec<String>,
}

/// The project instruction files, in the order one is looked for.
pub const PROJECT_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

impl SystemPrompt {
    /// The built-in prompt for `workspace`, on this OS, today (UTC).
    pub fn new(workspace: &Path) -> Self {
        Self {
            workspace: workspace.to_owned(),
            os: std::env::consts::OS.to_owned(),
            date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            sandboxed: false,
            replacement: None,
            deferred: None,
            instructions: Vec::new(),
        }
    }

    /// Whether commands run in a process sandbox.
    #[must_use]
    pub fn sandboxed(mut self, sandboxed: bool) -> Self {
        self.sandboxed = sandboxed;
        self
    }

    /// The date the prompt states (`YYYY-MM-DD`).
    #[must_use]
    pub fn date(mut self, date: impl Into<String>) -> Self {
        self.date = date.into();
        self
    }

    /// A prompt to use instead of the built-in one (`agent.system_prompt`).
    #[must_use]
    pub fn replace(mut self, prompt: Option<String>) -> Self {
        self.replacement = prompt.filter(|p| !p.trim().is_empty());
        self
    }

    /// The block listing the deferred tools by name and how to load them
    /// (the policy's `deferred_prompt`), if there are any.
    #[must_use]
    pub fn deferred(mut self, block: Option<String>) -> Self {
        self.deferred = block;
        self
    }

    /// Instructions appended at the end (`agent.instructions`).
    #[must_use]
    pub fn instructions(mut self, instructions: Vec<String>) -> Self {
        self.instructions = instructions;
        self
    }

    /// The prompt.
    pub fn build(&self) -> String {
        let mut prompt = match &self.replacement {
            Some(text) => text.trim().to_owned(),
            None => format!(
                "You are a coding agent working in the workspace {} on {}; today is {}. Use the tools to inspect \
                 and change it; paths are relative to the workspace. Commands run {}. Read a file before you \
                 change it, prefer small precise edits, and check your work (build, tests) when you can. Calls \
                 that do not depend on each other can go in one turn. A call may be refused (policy, approval, \
                 sandbox): read why, and do not repeat it unchanged. When the task is done, answer with a short \
                 summary of what you did.",
                self.workspace.display(),
                self.os,
                self.date,
                if self.sandboxed {
                    "in a sandbox (writes outside the workspace and the network may fail)"
                } else {
                    "without a sandbox"
                }
            ),
        };
        if let Some(block) = &self.deferred {
            prompt.push_str(&format!("\n\n{}", block.trim()));
        }
        if let Some((name, text)) = project_instructions(&self.workspace) {
            prompt.push_str(&format!("\n\n# Project instructions ({name})\n\n{}", text.trim()));
        }
        for text in &self.instructions {
            prompt.push_str(&format!("\n\n{}", text.trim()));
        }
        prompt
    }
}

/// The project's instructions: `AGENTS.md`, else `CLAUDE.md`, in the
/// workspace.
pub fn project_instructions(workspace: &Path) -> Option<(&'static str, String)> {
    PROJECT_FILES.into_iter().find_map(|name| {
        let text = std::fs::read_to_string(workspace.join(name)).ok()?;
        Some((name, text))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_prompt_names_the_workspace_os_date_and_sandbox() {
        let dir = std::env::temp_dir().join(format!("wield-agent-prompt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = SystemPrompt::new(&dir).date("2026-01-02").sandboxed(true).build();
        assert!(p.contains(&dir.display().to_string()), "{p}");
        assert!(p.contains(std::env::consts::OS) && p.contains("2026-01-02") && p.contains("in a sandbox"));
        assert!(!p.contains("deferred") && !p.contains("Project instructions"));

        // CLAUDE.md when there is no AGENTS.md; AGENTS.md wins.
        std::fs::write(dir.join("CLAUDE.md"), "claude rules\n").unwrap();
        assert!(SystemPrompt::new(&dir).build().contains("(CLAUDE.md)\n\nclaude rules"));
        std::fs::write(dir.join("AGENTS.md"), "agents rules\n").unwrap();
        let p = SystemPrompt::new(&dir)
            .deferred(Some(
                "<available-deferred-tools>\nmcp__docs__search\n</available-deferred-tools>".into(),
            ))
            .replace(Some("You review code.".into()))
            .instructions(vec!["Be brief.".into()])
            .build();
        assert!(p.starts_with("You review code."), "{p}");
        assert!(!p.contains("coding agent") && !p.contains("claude rules"));
        assert!(p.contains("\n\n<available-deferred-tools>\nmcp__docs__search\n"), "{p}");
        assert!(
            p.contains("(AGENTS.md)\n\nagents rules") && p.ends_with("\n\nBe brief."),
            "{p}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
