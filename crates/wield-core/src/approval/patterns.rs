//! Approval patterns: what an entry of `approval.auto_approve`, `confirm`,
//! `deny`, a preset or a remembered rule means, and the pattern a person's
//! "allow for this project / everywhere" derives from a call.
//!
//! An entry is a tool-name glob (`read`, `mcp__*`), a group (`group:fs`), a
//! preset (`$readonly`, `$standard`, or a user preset), or a tool plus an
//! argument glob (`bash:git commit*`, `write:/tmp/*`). `*` is the only
//! wildcard; it crosses `/` and newlines in arguments. Tool names match
//! case-insensitively, arguments exactly. What an argument glob is matched
//! against is the call's [`Subject`] (see [`super::subject`]).

use std::path::{Component, Path, PathBuf};

use crate::config::{ApprovalConfig, PresetConfig};
use crate::names::glob_match;

use super::ApprovalCall;
use super::subject::{Purpose, Subject, is_plain, subject_matches};

/// Commands whose first two words make the remembered pattern
/// (`git commit*` rather than `git*`): tools whose subcommand is what a person
/// actually approves.
pub const TWO_WORD_COMMANDS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "docker",
    "kubectl",
    "go",
    "pip",
    "make",
    "pip3",
    "uv",
    "bun",
    "deno",
    "poetry",
    "podman",
    "helm",
    "terraform",
    "gh",
    "rustup",
    "dotnet",
    "systemctl",
    "brew",
    "apt",
    "apt-get",
    "just",
];

/// One entry of an approval list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Pattern {
    Tool(String),
    Group(String),
    Preset(String),
    Argument { tool: String, arg: String },
}

fn parse_pattern(entry: &str) -> Pattern {
    let e = entry.trim();
    if let Some(p) = e.strip_prefix('$') {
        return Pattern::Preset(p.to_owned());
    }
    if let Some(g) = e.strip_prefix("group:") {
        return Pattern::Group(g.to_owned());
    }
    if let Some((tool, arg)) = e.split_once(':') {
        return Pattern::Argument {
            tool: tool.to_owned(),
            arg: arg.to_owned(),
        };
    }
    Pattern::Tool(e.to_owned())
}

/// Matches approval lists against a call, with the presets of a config.
pub struct PatternSet<'c> {
    config: &'c ApprovalConfig,
}

/// How deep user presets may refer to other presets before we stop (a preset
/// naming itself must not recurse forever).
const MAX_PRESET_DEPTH: usize = 8;

impl<'c> PatternSet<'c> {
    pub fn new(config: &'c ApprovalConfig) -> Self {
        Self { config }
    }

    fn user_preset(&self, name: &str) -> Option<&'c PresetConfig> {
        self.config
            .presets
            .get(&format!("${name}"))
            .or_else(|| self.config.presets.get(name))
    }

    fn pattern_matches(&self, p: &Pattern, call: &ApprovalCall<'_>, depth: usize, purpose: Purpose) -> bool {
        match p {
            Pattern::Tool(g) => glob_match(g, call.tool, true),
            Pattern::Group(g) => call.traits.in_group(g),
            Pattern::Argument { tool, arg } => {
                glob_match(tool, call.tool, true) && argument_matches(arg, call, purpose)
            }
            // User presets override the built-ins by name.
            Pattern::Preset(name) => match self.user_preset(name) {
                Some(preset) => {
                    depth < MAX_PRESET_DEPTH && self.matching(&preset.approve, call, depth + 1, purpose).is_some()
                }
                None => match name.as_str() {
                    "readonly" => call.traits.read_only,
                    "standard" => call.traits.read_only || call.traits.writes_files,
                    _ => false,
                },
            },
        }
    }

    /// The first entry of `list` that approves the call, honouring `-name`
    /// removals (which win over any entry of the list) and `+name` additions.
    pub fn list_matches(&self, list: &[String], call: &ApprovalCall<'_>, depth: usize) -> Option<String> {
        self.matching(list, call, depth, Purpose::Approve)
    }

    /// Like [`list_matches`](Self::list_matches), read as deny rules.
    pub fn list_denies(&self, list: &[String], call: &ApprovalCall<'_>) -> Option<String> {
        self.matching(list, call, 0, Purpose::Deny)
    }

    /// The `-name` entry of `list` that removes the call, if any.
    pub fn removal(&self, list: &[String], call: &ApprovalCall<'_>, depth: usize) -> Option<String> {
        list.iter()
            .find(|e| {
                e.trim()
                    .strip_prefix('-')
                    .is_some_and(|r| self.pattern_matches(&parse_pattern(r), call, depth, Purpose::Deny))
            })
            .cloned()
    }

    pub(crate) fn matching(
        &self,
        list: &[String],
        call: &ApprovalCall<'_>,
        depth: usize,
        purpose: Purpose,
    ) -> Option<String> {
        if self.removal(list, call, depth).is_some() {
            return None;
        }
        list.iter()
            .filter(|e| !e.trim().starts_with('-'))
            .find(|e| {
                let e = e.trim();
                let e = e.strip_prefix('+').unwrap_or(e);
                self.pattern_matches(&parse_pattern(e), call, depth, purpose)
            })
            .cloned()
    }

    /// Deny entries of the user presets named in `list`.
    pub fn preset_denies(&self, list: &[String], call: &ApprovalCall<'_>) -> Option<String> {
        for e in list {
            let Some(name) = e.trim().strip_prefix('$') else {
                continue;
            };
            if let Some(p) = self.user_preset(name)
                && let Some(hit) = self.matching(&p.deny, call, 1, Purpose::Deny)
            {
                return Some(format!("{hit} (preset ${name})"));
            }
        }
        None
    }
}

/// The call's subject against an argument glob; a path is matched in its
/// normalised forms (so `..` cannot climb out of a pattern's directory).
fn argument_matches(arg: &str, call: &ApprovalCall<'_>, purpose: Purpose) -> bool {
    subject_matches(arg, call.subject, purpose, &|p| path_forms(p, call.workspace))
}

/// Remove `.` and `..` without touching the file system (the file may not
/// exist yet); `..` never climbs above the root.
pub fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The forms a path argument is matched in: absolute, and for paths inside
/// the workspace also relative to it (`src/a.rs` and `./src/a.rs`).
fn path_forms(raw: &str, workspace: &Path) -> Vec<String> {
    let ws = normalize_lexically(workspace);
    let p = Path::new(raw);
    let abs = if p.is_absolute() {
        normalize_lexically(p)
    } else {
        normalize_lexically(&ws.join(p))
    };
    let mut forms = vec![abs.to_string_lossy().into_owned()];
    if ws.is_absolute()
        && let Ok(rel) = abs.strip_prefix(&ws)
    {
        let rel = rel.to_string_lossy();
        if rel.is_empty() {
            forms.push(".".into());
        } else {
            forms.push(format!("./{rel}"));
            forms.push(rel.into_owned());
        }
    }
    forms
}

/// The pattern "allow for this session / project / everywhere" would
/// remember for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DerivedPattern {
    pub pattern: String,
    /// Whether remembering it would approve later calls. A command line that
    /// no pattern can approve (several commands, expansions, …) gets its
    /// exact text, for display only: remembering a wider pattern would
    /// approve more than the person saw.
    pub reusable: bool,
}

/// The pattern a remembered approval stores for a call: a shell command →
/// its first word (two for git, cargo, npm, …) plus `*`, when the line is
/// one simple command of literal words; file tools → the file's directory
/// plus `/*` (relative to the workspace when inside it, `./*` for its top
/// level, absolute outside); anything else → the bare tool name.
pub fn derive_pattern(tool: &str, subject: &Subject, workspace: &Path) -> DerivedPattern {
    let reusable = |pattern: String| DerivedPattern {
        pattern,
        reusable: true,
    };
    let exact = |text: &str| DerivedPattern {
        pattern: format!("{tool}:{text}"),
        reusable: false,
    };
    match subject {
        Subject::None => reusable(tool.to_owned()),
        Subject::Command(line) => match &line.literal {
            Some(words) => match leading_words(words.iter().map(String::as_str)) {
                Some(lead) => reusable(format!("{tool}:{lead}*")),
                None => exact(&line.text),
            },
            None => exact(&line.text),
        },
        Subject::Text(text) if text.trim().is_empty() => reusable(tool.to_owned()),
        Subject::Text(text) if is_plain(text) => match leading_words(text.split_whitespace()) {
            Some(lead) => reusable(format!("{tool}:{lead}*")),
            None => exact(text),
        },
        Subject::Text(text) => exact(text),
        Subject::Paths(paths) => {
            let Some(p) = paths.first() else {
                return reusable(tool.to_owned());
            };
            // The directory the file really is in: a remembered rule for
            // the link's directory would not approve the next call anyway.
            let real = p
                .resolved
                .as_ref()
                .map_or_else(|| p.given.clone(), |r| r.to_string_lossy().into_owned());
            let forms = path_forms(&real, workspace);
            let abs = PathBuf::from(&forms[0]);
            let dir = abs.parent().map(Path::to_path_buf).unwrap_or(abs);
            let ws = normalize_lexically(workspace);
            let shown = match dir.strip_prefix(&ws) {
                Ok(rel) if ws.is_absolute() && rel.as_os_str().is_empty() => ".".to_owned(),
                Ok(rel) if ws.is_absolute() => rel.to_string_lossy().into_owned(),
                _ => dir.to_string_lossy().into_owned(),
            };
            let shown = shown.trim_end_matches('/');
            if shown.contains('*') {
                return exact(&p.given);
            }
            reusable(format!("{tool}:{shown}/*"))
        }
    }
}

/// The command's first word, or two for [`TWO_WORD_COMMANDS`], joined by a
/// space; `None` when there is none or one holds a `*` (which a pattern
/// would read as a wildcard).
fn leading_words<'a>(mut words: impl Iterator<Item = &'a str>) -> Option<String> {
    let first = words.next().filter(|w| !w.is_empty())?;
    let mut lead = first.to_owned();
    if TWO_WORD_COMMANDS.contains(&first)
        && let Some(second) = words.next()
    {
        lead.push(' ');
        lead.push_str(second);
    }
    (!lead.contains('*')).then_some(lead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{CommandLine, PathSubject};
    use serde_json::json;

    fn lit(text: &str, words: &[&str]) -> Subject {
        Subject::Command(CommandLine {
            text: text.into(),
            literal: Some(words.iter().map(|w| (*w).to_owned()).collect()),
            ..CommandLine::default()
        })
    }

    #[test]
    fn derived_patterns() {
        let ws = Path::new("/ws");
        let d = |tool, v| derive_pattern(tool, &crate::approval::tests::subject_of(&v), ws).pattern;
        let c = |text: &str, words: &[&str]| derive_pattern("bash", &lit(text, words), ws);
        assert_eq!(
            c("git commit -m x", &["git", "commit", "-m", "x"]).pattern,
            "bash:git commit*"
        );
        assert_eq!(c("'ls' -la", &["ls", "-la"]).pattern, "bash:ls*");
        for two in [
            "npx", "pnpm", "yarn", "go", "pip", "make", "cargo", "docker", "kubectl", "npm",
        ] {
            let text = format!("{two} sub x");
            assert_eq!(c(&text, &[two, "sub", "x"]).pattern, format!("bash:{two} sub*"));
        }
        assert_eq!(c("git", &["git"]).pattern, "bash:git*");
        // Not one literal command: its exact text, never to be remembered.
        let line = Subject::Command(CommandLine {
            text: "ls $(id)".into(),
            ..CommandLine::default()
        });
        let p = derive_pattern("bash", &line, ws);
        assert_eq!((p.pattern.as_str(), p.reusable), ("bash:ls $(id)", false));
        // A `*` in a word would be a wildcard.
        assert!(!c("'l*' x", &["l*", "x"]).reusable);
        // A tool's unanalysed text: plain words only.
        assert_eq!(d("run", json!({"command":"npm run dev"})), "run:npm run*");
        assert!(!derive_pattern("run", &Subject::Text("a; b".into()), ws).reusable);
        assert_eq!(d("bash", json!({"command":"   "})), "bash");
        assert_eq!(d("write", json!({"path":"src/a.rs"})), "write:src/*");
        assert_eq!(d("write", json!({"path":"a.rs"})), "write:./*");
        assert_eq!(d("write", json!({"path":"/tmp/x/y.txt"})), "write:/tmp/x/*");
        assert_eq!(d("write", json!({"path":"../out/y.txt"})), "write:/out/*");
        assert_eq!(d("write", json!({"path":"/ws/src/../lib/m.rs"})), "write:lib/*");
        assert_eq!(d("calculator", json!({})), "calculator");
        // A path through a link: the real directory.
        let linked = Subject::Paths(vec![PathSubject {
            given: "src/up/README.md".into(),
            resolved: Some(PathBuf::from("/ws/README.md")),
        }]);
        assert_eq!(derive_pattern("write", &linked, ws).pattern, "write:./*");
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize_lexically(Path::new("/a/b/../c/./d")), PathBuf::from("/a/c/d"));
        assert_eq!(normalize_lexically(Path::new("/../x")), PathBuf::from("/x"));
        assert_eq!(normalize_lexically(Path::new("../x")), PathBuf::from("../x"));
        let f = path_forms("src/../a.rs", Path::new("/ws"));
        assert_eq!(f, vec!["/ws/a.rs", "./a.rs", "a.rs"]);
    }
}
