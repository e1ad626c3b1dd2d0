//! `skill`: instructions for a kind of task, loaded when the model needs
//! them (progressive disclosure).
//!
//! A skill is a directory holding `SKILL.md`, whose frontmatter gives its
//! `name` and `description`. Skills are found in the workspace's
//! `.wield/skills/`, the user's global `skills/` (under wield's config
//! directory), then `.claude/skills/` and `.agents/skills/`; the first of a
//! name wins. Only names and descriptions go into the tool's description;
//! `skill {name}` returns the body and the files beside it. The tool exists
//! only when at least one skill does ([`tools`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolRef, ToolResult, ToolSpec, ToolTraits};
use wield_sandbox::fs::{Confinement, Kind};

use crate::fs::{blocking, parse};

/// The largest SKILL.md read, in bytes.
const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The most files listed beside a skill.
const MAX_FILES: usize = 200;

/// One skill found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub dir: PathBuf,
}

/// The directories skills are looked for in, in order (`global`: wield's
/// global configuration directory, when there is one).
pub fn skill_roots(workspace: &Path, global: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![workspace.join(".wield").join("skills")];
    if let Some(dir) = global {
        roots.push(dir.join("skills"));
    }
    roots.push(workspace.join(".claude").join("skills"));
    roots.push(workspace.join(".agents").join("skills"));
    roots
}

/// The `name` and `description` of a SKILL.md's frontmatter, and its body.
pub fn parse_skill(text: &str) -> (Option<String>, Option<String>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---").filter(|r| r.starts_with(['\n', '\r'])) else {
        return (None, None, text);
    };
    let Some(end) = rest.find("\n---") else {
        return (None, None, text);
    };
    let front = &rest[..end];
    let after = &rest[end + 4..];
    let body = after.split_once('\n').map_or("", |(_, b)| b);
    let (mut name, mut description) = (None, None);
    for line in front.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        if v.is_empty() {
            continue;
        }
        match k.trim() {
            "name" => name = Some(v.to_owned()),
            "description" => description = Some(v.to_owned()),
            _ => {}
        }
    }
    (name, description, body)
}

fn read_skill_md(dir: &Path) -> Option<String> {
    use std::io::Read;
    let conf = Confinement::builder(dir)
        .protected(Vec::<PathBuf>::new())
        .temp_dir(None)
        .build()
        .ok()?;
    // Opened once beneath the skill's directory and checked on the
    // descriptor (a regular file, not a kernel file a link was swapped to).
    let (file, _) = conf.open_ordinary("SKILL.md").ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Every skill of a workspace, by name (the first of a name wins).
pub fn discover(workspace: &Path, global: Option<&Path>) -> Vec<Skill> {
    let mut found: Vec<Skill> = Vec::new();
    for root in skill_roots(workspace, global) {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            let Some(text) = read_skill_md(&dir) else { continue };
            let (name, description, _) = parse_skill(&text);
            let Some(description) = description else { continue };
            let name = name.unwrap_or_else(|| {
                dir.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            });
            if name.is_empty() || found.iter().any(|s| s.name == name) {
                continue;
            }
            found.push(Skill { name, description, dir });
        }
    }
    found
}

/// The skill tool, when the workspace has at least one skill.
pub fn tools(workspace: &Path, global: Option<&Path>) -> Vec<ToolRef> {
    let skills = discover(workspace, global);
    if skills.is_empty() {
        return Vec::new();
    }
    vec![Arc::new(SkillTool::new(skills))]
}

pub struct SkillTool {
    base: ToolBase,
    skills: Vec<Skill>,
}

impl SkillTool {
    pub fn new(skills: Vec<Skill>) -> Self {
        let listed: String = skills
            .iter()
            .map(|s| format!("\n- {}: {}", s.name, s.description))
            .collect();
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "skill",
                    format!(
                        "Load a skill: instructions for a kind of task, with the files that come with it. Call it \
                         when a task matches a skill's description, before starting. Skills:{listed}"
                    ),
                    json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "The skill's name, as listed above."}
                        },
                        "required": ["name"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Load a skill"),
                ToolTraits {
                    read_only: true,
                    groups: vec!["skills".into()],
                    ..ToolTraits::default()
                },
            ),
            skills,
        }
    }
}

#[derive(Deserialize)]
struct Args {
    name: String,
}

/// The files below a skill's directory, relative, in order (SKILL.md left
/// out), at most [`MAX_FILES`].
fn files_beside(dir: &Path) -> Vec<String> {
    let Ok(conf) = Confinement::builder(dir)
        .protected(Vec::<PathBuf>::new())
        .temp_dir(None)
        .build()
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::from(".")];
    while let Some(rel) = todo.pop() {
        let Ok(entries) = conf.read_dir(&rel) else { continue };
        for e in entries {
            let path = rel.join(&e.name);
            let shown = path.strip_prefix(".").unwrap_or(&path).to_string_lossy().into_owned();
            match e.kind {
                Kind::Dir => todo.push(path),
                _ if shown == "SKILL.md" => {}
                _ => out.push(shown),
            }
            if out.len() >= MAX_FILES {
                break;
            }
        }
    }
    out.sort();
    out
}

#[async_trait]
impl Tool for SkillTool {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    async fn execute(&self, input: Value, _ctx: &Context) -> ToolResult {
        let args: Args = match parse("skill", input) {
            Ok(a) => a,
            Err(r) => return r,
        };
        let Some(skill) = self.skills.iter().find(|s| s.name == args.name).cloned() else {
            let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return ToolResult::error(format!(
                "there is no skill {:?}; the skills are: {}",
                args.name,
                names.join(", ")
            ));
        };
        blocking(move || {
            let Some(text) = read_skill_md(&skill.dir) else {
                return ToolResult::error(format!(
                    "the skill {} can no longer be read from {}",
                    skill.name,
                    skill.dir.display()
                ));
            };
            let (_, _, body) = parse_skill(&text);
            let files = files_beside(&skill.dir);
            let mut out = format!(
                "# Skill: {}\n(directory: {})\n\n{}",
                skill.name,
                skill.dir.display(),
                body.trim()
            );
            if !files.is_empty() {
                out.push_str("\n\nFiles in the skill's directory:\n");
                for f in &files {
                    out.push_str(&format!("- {f}\n"));
                }
            }
            ToolResult::ok(out)
                .with_meta("dir", skill.dir.display().to_string())
                .with_meta("files", files)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_gives_name_description_and_body() {
        let (n, d, b) = parse_skill("---\nname: release\ndescription: \"Cut a release\"\n---\nStep 1\n");
        assert_eq!(n.as_deref(), Some("release"));
        assert_eq!(d.as_deref(), Some("Cut a release"));
        assert_eq!(b, "Step 1\n");
        let (n, d, b) = parse_skill("no frontmatter");
        assert_eq!((n, d, b), (None, None, "no frontmatter"));
    }

    #[test]
    fn no_skill_no_tool_and_the_first_of_a_name_wins() {
        let ws = tempfile::tempdir().unwrap();
        assert!(tools(ws.path(), None).is_empty());
        for (root, desc) in [(".wield/skills/a", "from wield"), (".claude/skills/a", "from claude")] {
            std::fs::create_dir_all(ws.path().join(root)).unwrap();
            std::fs::write(
                ws.path().join(root).join("SKILL.md"),
                format!("---\nname: a\ndescription: {desc}\n---\nbody\n"),
            )
            .unwrap();
        }
        let found = discover(ws.path(), None);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].description, "from wield");
        assert_eq!(tools(ws.path(), None).len(), 1);
    }
}
