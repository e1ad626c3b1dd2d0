//! Approval patterns: what an entry of `approval.auto_approve`, `confirm`,
//! `deny`, a preset or a remembered rule means, and the pattern a person's
//! "allow for this project / everywhere" derives from a call.
//!
//! An entry is a tool-name glob (`read`, `mcp__*`), a group (`group:fs`), a
//! preset (`$readonly`, `$standard`, or a user preset), or a tool plus an
//! argument glob (`bash:git commit*`, `write:/tmp/*`). `*` is the only
//! wildcard; it crosses `/` and newlines in arguments. Tool names match
//! case-insensitively, arguments exactly.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::config::{ApprovalConfig, PresetConfig};
use crate::names::glob_match;

use super::ApprovalCall;

/// Tool names `$standard` adds to `$readonly`.
pub const STANDARD_WRITE_TOOLS: &[&str] = &["write", "edit", "patch", "mkdir"];

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

/// Why a list is being matched: approvals are read narrowly (an argument
/// pattern approves a shell command only when it is a single command), deny
/// rules and removals broadly (they also match any part of a compound one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    Approve,
    Deny,
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
                    "standard" => {
                        call.traits.read_only || STANDARD_WRITE_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(call.tool))
                    }
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

/// The argument of a call against an argument glob: bash's `command` (the
/// whole command, trimmed), else `path` (normalised, so `..` cannot climb
/// out of a pattern's directory).
fn argument_matches(arg: &str, call: &ApprovalCall<'_>, purpose: Purpose) -> bool {
    if let Some(cmd) = call.input.get("command").and_then(Value::as_str) {
        let cmd = cmd.trim();
        let whole = glob_match(arg, cmd, false);
        return match purpose {
            // A pattern such as `git status*` must not approve
            // `git status; rm -rf ~`: only a single command, unless the
            // pattern is the bare `*` that approves everything anyway.
            Purpose::Approve => whole && (arg.chars().all(|c| c == '*') || !is_compound(cmd)),
            Purpose::Deny => {
                whole
                    || command_segments(cmd)
                        .iter()
                        .chain(&chain_segments(cmd))
                        .any(|s| glob_match(arg, s, false))
            }
        };
    }
    if let Some(path) = call.input.get("path").and_then(Value::as_str) {
        return path_forms(path, call.workspace)
            .iter()
            .any(|form| glob_match(arg, form, false));
    }
    false
}

/// Whether a shell command chains or nests other commands: `;`, `&&`, `||`,
/// `|`, `&`, a newline, backticks, `$(`, or a process substitution (`<(`,
/// `>(`) outside quotes (backticks and `$(` also inside double quotes).
/// `2>&1`-style redirections do not count.
pub fn is_compound(cmd: &str) -> bool {
    command_segments(cmd).len() > 1
}

/// The simple commands of a shell command line, split at the operators
/// [`is_compound`] looks for, each trimmed. An approximation of shell
/// grammar that errs towards splitting.
pub fn command_segments(cmd: &str) -> Vec<String> {
    split(cmd, true)
}

/// The commands of a line split at the operators that chain them only
/// (`;`, `&&`, `||`, `|`, `&`, newlines), nested commands left in their
/// place: what a deny pattern that names a substitution (`bash <(curl*`)
/// is matched against.
fn chain_segments(cmd: &str) -> Vec<String> {
    split(cmd, false)
}

#[derive(Clone, Copy, PartialEq)]
enum Quote {
    None,
    Single,
    Double,
    /// `$'…'`, where a backslash escapes (`$'\''` is one quote).
    Ansi,
}

/// `cmd` split at chain operators, and also at nested commands when
/// `nested`. Comments (`#` at the start of a word) are left out, up to the
/// newline that ends them.
fn split(cmd: &str, nested: bool) -> Vec<String> {
    let chars: Vec<char> = cmd.chars().collect();
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut quote = Quote::None;
    // The character before, and whether it was escaped (`\>&` is no
    // redirection, `\ #` starts no comment).
    let mut prev: Option<char> = None;
    let mut prev_escaped = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if matches!(quote, Quote::Single | Quote::Ansi) {
            if quote == Quote::Ansi && c == '\\' {
                (i, prev) = push_escaped(&mut current, &chars, i);
                prev_escaped = true;
                continue;
            }
            if c == '\'' {
                quote = Quote::None;
            }
            current.push(c);
            i += 1;
            prev = Some(c);
            prev_escaped = false;
            continue;
        }
        let double = quote == Quote::Double;
        let word_start =
            prev.is_none() || (!prev_escaped && prev.is_some_and(|p| p.is_whitespace() || "|&;()<>".contains(p)));
        let splits = match c {
            '\\' => {
                (i, prev) = push_escaped(&mut current, &chars, i);
                prev_escaped = true;
                continue;
            }
            '#' if !double && word_start => {
                // A comment: nothing in it runs.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                prev = Some('#');
                prev_escaped = false;
                continue;
            }
            '$' if !double && next == Some('\'') => {
                current.push_str("$'");
                quote = Quote::Ansi;
                i += 2;
                prev = Some('\'');
                prev_escaped = false;
                continue;
            }
            '\'' if !double => {
                quote = Quote::Single;
                false
            }
            '"' => {
                quote = if double { Quote::None } else { Quote::Double };
                false
            }
            '`' => nested,
            '$' if next == Some('(') && nested => {
                cut(&mut current, &mut segments);
                i += 2;
                prev = Some('(');
                prev_escaped = false;
                continue;
            }
            // Process substitution runs the command inside: `cat <(rm x)`.
            '<' | '>' if !double && next == Some('(') && nested => {
                cut(&mut current, &mut segments);
                i += 2;
                prev = Some('(');
                prev_escaped = false;
                continue;
            }
            // `)` ends a substitution or subshell: what follows is the
            // outer command's again.
            ')' => !double && nested,
            ';' | '\n' | '|' => !double,
            // Not in `2>&1` or `<&3`; `&>` is split (in `sh` it runs what
            // comes before in the background).
            '&' => !double && (prev_escaped || !matches!(prev, Some('>' | '<'))),
            _ => false,
        };
        if splits {
            cut(&mut current, &mut segments);
        } else {
            current.push(c);
        }
        i += 1;
        prev = Some(c);
        prev_escaped = false;
    }
    cut(&mut current, &mut segments);
    segments
}

/// Push the backslash at `i` and the character it escapes; the index after
/// them, and the escaped character.
fn push_escaped(current: &mut String, chars: &[char], i: usize) -> (usize, Option<char>) {
    let escaped = chars.get(i + 1).copied();
    current.push('\\');
    current.extend(escaped);
    (i + 2, escaped)
}

fn cut(current: &mut String, segments: &mut Vec<String>) {
    let s = current
        .trim()
        .trim_start_matches(['(', '{', '!'])
        .trim_end_matches([')', '}'])
        .trim()
        .to_owned();
    if !s.is_empty() {
        segments.push(s);
    }
    current.clear();
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

/// The pattern a remembered approval stores for a call: bash → the command's
/// first word (two for git, cargo, npm, …) plus `*`; file tools → the file's
/// directory plus `/*` (relative to the workspace when inside it, `./*` for
/// its top level, absolute outside); anything else → the bare tool name.
pub fn derive_pattern(tool: &str, input: &Value, workspace: &Path) -> String {
    if let Some(cmd) = input.get("command").and_then(Value::as_str) {
        let cmd = cmd.trim_start();
        let first = cmd.split_whitespace().next().unwrap_or("");
        if first.is_empty() {
            return tool.to_owned();
        }
        let words = if TWO_WORD_COMMANDS.contains(&first) { 2 } else { 1 };
        // Keep the command's own spacing so the pattern matches it verbatim.
        let end = word_end(cmd, words);
        return format!("{tool}:{}*", &cmd[..end]);
    }
    if let Some(path) = input.get("path").and_then(Value::as_str) {
        let forms = path_forms(path, workspace);
        let abs = PathBuf::from(&forms[0]);
        let dir = abs.parent().map(Path::to_path_buf).unwrap_or(abs);
        let ws = normalize_lexically(workspace);
        let shown = match dir.strip_prefix(&ws) {
            Ok(rel) if ws.is_absolute() && rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) if ws.is_absolute() => rel.to_string_lossy().into_owned(),
            _ => dir.to_string_lossy().into_owned(),
        };
        let shown = shown.trim_end_matches('/');
        return format!("{tool}:{shown}/*");
    }
    tool.to_owned()
}

/// The byte offset just after the `n`th whitespace-separated word (or the end).
fn word_end(text: &str, n: usize) -> usize {
    let mut seen = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                seen += 1;
                if seen == n {
                    return i;
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn derived_patterns() {
        let ws = Path::new("/ws");
        let d = |tool, v| derive_pattern(tool, &v, ws);
        assert_eq!(d("bash", json!({"command":"git commit -m x"})), "bash:git commit*");
        assert_eq!(d("bash", json!({"command":"  ls -la"})), "bash:ls*");
        assert_eq!(d("bash", json!({"command":"npx  prettier ."})), "bash:npx  prettier*");
        for two in [
            "npx", "pnpm", "yarn", "go", "pip", "make", "cargo", "docker", "kubectl", "npm",
        ] {
            assert_eq!(
                d("bash", json!({"command": format!("{two} sub x")})),
                format!("bash:{two} sub*")
            );
        }
        assert_eq!(d("bash", json!({"command":"git"})), "bash:git*");
        assert_eq!(d("bash", json!({"command":"   "})), "bash");
        assert_eq!(d("write", json!({"path":"src/a.rs"})), "write:src/*");
        assert_eq!(d("write", json!({"path":"a.rs"})), "write:./*");
        assert_eq!(d("write", json!({"path":"/tmp/x/y.txt"})), "write:/tmp/x/*");
        assert_eq!(d("write", json!({"path":"../out/y.txt"})), "write:/out/*");
        assert_eq!(d("write", json!({"path":"/ws/src/../lib/m.rs"})), "write:lib/*");
        assert_eq!(d("calculator", json!({})), "calculator");
    }

    #[test]
    fn compound_commands() {
        assert!(!is_compound("git commit -m 'a; b && c'"));
        assert!(!is_compound("cargo test 2>&1"));
        assert!(!is_compound("git commit -m \"line1\nline2\""));
        for c in [
            "a; b",
            "a && b",
            "a || b",
            "a | b",
            "a & b",
            "a\nb",
            "echo `id`",
            "echo \"$(id)\"",
            "echo <(rm x)",
            "echo >(rm x)",
            "cat < <(rm x)",
            "diff <(ls a) <(ls b)",
        ] {
            assert!(is_compound(c), "{c}");
        }
        // Regression: quoting, comments and escapes that hid a second
        // command from the split (each ran it under `bash -c`).
        for c in [
            r"git status $'\'' ; touch pwn",
            "git status #'\ntouch pwn",
            r"git status \>& touch pwn",
            "git status &>f touch pwn",
            r"git status a\ #; touch pwn",
        ] {
            assert!(is_compound(c), "{c}");
        }
        for c in [
            "ls # a; b && c",
            "echo $# ${#x}",
            r"echo $'a\'b' c",
            "cargo test 2>&1 >out <&0",
        ] {
            assert!(!is_compound(c), "{c}");
        }
        // A deny pattern that names a substitution still finds it in a chain.
        assert!(
            chain_segments("cd /tmp && bash <(curl -s x)")
                .iter()
                .any(|s| s.starts_with("bash <(curl"))
        );
        // Quoted, it is text; a redirection is not a substitution.
        assert!(!is_compound("echo '<(rm x)' \">(rm x)\""));
        assert!(!is_compound("sort < in.txt > out.txt"));
        assert_eq!(command_segments("ls && (rm -rf x)"), vec!["ls", "rm -rf x"]);
        assert_eq!(command_segments("echo <(rm b.txt)"), vec!["echo", "rm b.txt"]);
        assert_eq!(command_segments("cat >(rm c.txt) x"), vec!["cat", "rm c.txt", "x"]);
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
