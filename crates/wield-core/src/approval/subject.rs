//! What an argument pattern (`tool:GLOB`) is matched against: the call's
//! subject, which the tool describes ([`Tool::approval_subject`]) and the
//! executor completes (a path's resolved form).
//!
//! A shell command line is never matched as a plain string: a string cannot
//! say what bash will run. The tool that runs it parses it
//! ([`CommandLine`]); an approve pattern then matches only a line that is one
//! simple command of literal words, and a deny pattern matches every command
//! the line may run, or any line that could not be analysed.
//!
//! [`Tool::approval_subject`]: crate::Tool::approval_subject

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::names::glob_match;
use crate::tool::PathUse;

/// What argument patterns see of a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Subject {
    /// No argument: only tool-name patterns apply.
    #[default]
    None,
    /// A text argument the tool does not analyse (a `command` of a tool that
    /// does not say how it runs it): matched as a whole; an approve pattern
    /// other than `*` matches it only when it holds nothing but plain words.
    Text(String),
    /// A shell command line, as the tool parsed it.
    Command(CommandLine),
    /// The paths the call touches, each as given and as resolved: a path
    /// pattern approves only when it holds for all of them, and denies when
    /// it holds for any.
    Paths(Vec<PathSubject>),
}

impl Subject {
    /// The default subject of a call: the paths the tool declares
    /// ([`Tool::paths`](crate::Tool::paths)), whose resolved forms the
    /// executor adds; [`Subject::None`] when it declares none.
    pub fn from_paths(declared: &[PathUse]) -> Self {
        if declared.is_empty() {
            return Self::None;
        }
        Self::Paths(declared.iter().map(|p| PathSubject::new(p.path.clone())).collect())
    }
}

/// A path argument: what the call said, and where it leads once symbolic
/// links are followed. A path rule must hold for both: deny if either form
/// matches, approve only if both do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSubject {
    /// The path as given (relative to the workspace unless absolute).
    pub given: String,
    /// The absolute path it leads to, symbolic links followed (missing
    /// components taken by name). `None` until the executor resolved it; it
    /// is then matched as the given path.
    pub resolved: Option<PathBuf>,
}

impl PathSubject {
    pub fn new(given: impl Into<String>) -> Self {
        Self {
            given: given.into(),
            resolved: None,
        }
    }

    /// Fill in [`resolved`](Self::resolved): where the path leads from
    /// `workspace`, following symbolic links as the kernel (and the
    /// confined file tools, inside their roots) would.
    /// A path inside the workspace is given under the workspace's own name
    /// even when that name goes through a link, so `src/*` still matches.
    pub fn resolve(&mut self, workspace: &Path) {
        let real = follow_links(&workspace.join(&self.given));
        let real_ws = follow_links(workspace);
        self.resolved = Some(match real.strip_prefix(&real_ws) {
            Ok(inside) if real_ws != workspace => workspace.join(inside),
            _ => real,
        });
    }
}

/// How many symbolic links one resolution follows, like the kernel's
/// `MAXSYMLINKS`; past that the path is taken as it stands (the kernel
/// would refuse it, so nothing is touched through it).
const MAX_LINKS: usize = 40;

/// `path` with every symbolic link of its existing part followed, `.` and
/// `..` applied where the kernel applies them (after a link, not before);
/// components past the first missing one are taken by name.
fn follow_links(path: &Path) -> PathBuf {
    let mut pending: VecDeque<OsString> = components(path);
    let mut out = PathBuf::from("/");
    let mut missing = false;
    let mut hops = 0;
    while let Some(name) = pending.pop_front() {
        match name.to_str() {
            Some("/") => out = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                out.pop();
            }
            _ => {
                let next = out.join(&name);
                if !missing {
                    match std::fs::symlink_metadata(&next) {
                        Ok(meta) if meta.file_type().is_symlink() && hops < MAX_LINKS => {
                            if let Ok(target) = std::fs::read_link(&next) {
                                hops += 1;
                                for c in components(&target).into_iter().rev() {
                                    pending.push_front(c);
                                }
                                continue;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => missing = true,
                    }
                }
                out = next;
            }
        }
    }
    out
}

/// The components of a path as names, the root as `/`.
fn components(path: &Path) -> VecDeque<OsString> {
    path.components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => OsString::from("/"),
            Component::CurDir => OsString::from("."),
            Component::ParentDir => OsString::from(".."),
            Component::Normal(n) => n.to_owned(),
        })
        .collect()
}

/// A shell command line as the tool that runs it parsed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// The line as given, trimmed.
    pub text: String,
    /// The words of the line when it is exactly one simple command whose
    /// words are all literal (no expansion, substitution, glob, assignment,
    /// or redirection other than to `/dev/null` or another descriptor),
    /// after quote removal. Only such a line can be approved by a pattern
    /// (other than `*`), and only such a line gives a reusable remembered
    /// pattern.
    pub literal: Option<Vec<String>>,
    /// Every command the line may run, nested ones and wrapped ones
    /// (`env rm`, `bash -c '…'`, `find -exec …`) included, each with its
    /// command name normalised (no directory, quotes or escapes): what deny
    /// rules are matched against.
    pub commands: Vec<RunCommand>,
    /// Why the line could not be fully analysed (a syntax error, an
    /// expansion as a command name, a shell reading commands from its
    /// input), if so: it then counts as matching every deny rule of the tool.
    pub opaque: Option<String>,
}

/// One command a line may run, for deny rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCommand {
    /// The command name, then its arguments up to the first one that is
    /// not literal.
    pub words: Vec<String>,
    /// Arguments not known before it runs follow `words` (an expansion, or
    /// what `xargs` appends): a deny pattern matches when it could match
    /// some completion.
    pub open: bool,
}

/// Why a list is being matched: approvals are read narrowly (an argument
/// pattern approves a shell command only when it is a single literal
/// command), deny rules and removals broadly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    Approve,
    Deny,
}

/// Whether the argument glob `arg` matches `subject` for `purpose`.
/// `path_forms` gives the forms a path is matched in.
pub(crate) fn subject_matches(
    arg: &str,
    subject: &Subject,
    purpose: Purpose,
    path_forms: &dyn Fn(&str) -> Vec<String>,
) -> bool {
    let everything = arg.chars().all(|c| c == '*');
    match subject {
        Subject::None => false,
        Subject::Text(text) => match purpose {
            Purpose::Approve => glob_match(arg, text, false) && (everything || is_plain(text)),
            Purpose::Deny => glob_match(arg, text, false),
        },
        Subject::Command(line) => match purpose {
            Purpose::Approve => {
                everything
                    || line.literal.as_ref().is_some_and(|words| {
                        glob_match(arg, &line.text, false) || glob_match(arg, &words.join(" "), false)
                    })
            }
            Purpose::Deny => {
                line.opaque.is_some()
                    || glob_match(arg, &line.text, false)
                    || line.commands.iter().any(|c| {
                        let shown = c.words.join(" ");
                        if c.open {
                            glob_may_match_after(arg, &format!("{shown} "))
                        } else {
                            glob_match(arg, &shown, false)
                        }
                    })
            }
        },
        Subject::Paths(paths) => {
            let holds = |p: &PathSubject| {
                let given = path_forms(&p.given);
                let resolved = match &p.resolved {
                    Some(r) => path_forms(&r.to_string_lossy()),
                    None => given.clone(),
                };
                let any = |forms: &[String]| forms.iter().any(|f| glob_match(arg, f, false));
                match purpose {
                    Purpose::Approve => any(&given) && any(&resolved),
                    Purpose::Deny => any(&given) || any(&resolved),
                }
            };
            match purpose {
                Purpose::Approve => !paths.is_empty() && paths.iter().all(holds),
                Purpose::Deny => paths.iter().any(holds),
            }
        }
    }
}

/// Text that is plain words whatever reads it: letters, digits, spaces and
/// `-_./,:=+@%`, nothing a shell would expand, chain or redirect.
pub(crate) fn is_plain(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_alphanumeric() || c == ' ' || "-_./,:=+@%".contains(c))
}

/// Whether `glob` matches some text that starts with `prefix`: true when a
/// leading part of the glob matches the prefix exactly (the rest of the
/// glob can then be met by the unknown text that follows).
fn glob_may_match_after(glob: &str, prefix: &str) -> bool {
    glob.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(glob.len()))
        .any(|end| glob_match(&glob[..end], prefix, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(literal: Option<&[&str]>, commands: &[(&[&str], bool)], opaque: bool) -> Subject {
        Subject::Command(CommandLine {
            text: "the line".into(),
            literal: literal.map(|w| w.iter().map(|s| (*s).to_owned()).collect()),
            commands: commands
                .iter()
                .map(|(w, open)| RunCommand {
                    words: w.iter().map(|s| (*s).to_owned()).collect(),
                    open: *open,
                })
                .collect(),
            opaque: opaque.then(|| "why".to_owned()),
        })
    }

    fn no_forms(p: &str) -> Vec<String> {
        vec![p.to_owned()]
    }

    #[test]
    fn approve_needs_one_literal_command() {
        let lit = line(Some(&["ls", "a b"]), &[(&["ls", "a b"], false)], false);
        assert!(subject_matches("ls *", &lit, Purpose::Approve, &no_forms));
        let not = line(None, &[(&["ls"], true)], false);
        assert!(!subject_matches("ls *", &not, Purpose::Approve, &no_forms));
        assert!(subject_matches("*", &not, Purpose::Approve, &no_forms));
    }

    #[test]
    fn deny_matches_every_command_open_ones_and_opaque_lines() {
        let s = line(None, &[(&["true"], false), (&["rm", "-rf", "x"], false)], false);
        assert!(subject_matches("rm *", &s, Purpose::Deny, &no_forms));
        let open = line(None, &[(&["rm"], true)], false);
        assert!(subject_matches("rm *", &open, Purpose::Deny, &no_forms));
        assert!(subject_matches("rm -rf*", &open, Purpose::Deny, &no_forms));
        assert!(!subject_matches("rmdir *", &open, Purpose::Deny, &no_forms));
        let git = line(None, &[(&["git", "push"], true)], false);
        assert!(subject_matches("git push --force*", &git, Purpose::Deny, &no_forms));
        assert!(!subject_matches("git commit*", &git, Purpose::Deny, &no_forms));
        let opaque = line(None, &[], true);
        assert!(subject_matches("anything", &opaque, Purpose::Deny, &no_forms));
    }

    #[test]
    fn prefix_viability() {
        assert!(glob_may_match_after("rm *", "rm "));
        assert!(glob_may_match_after("*rm*", "x "));
        assert!(glob_may_match_after("git push --force*", "git "));
        assert!(!glob_may_match_after("git push*", "git commit "));
        assert!(glob_may_match_after("a*b", "axxx"));
    }

    #[test]
    fn text_subjects() {
        let t = Subject::Text("npm run dev".into());
        assert!(subject_matches("npm run*", &t, Purpose::Approve, &no_forms));
        let t = Subject::Text("npm run dev; rm x".into());
        assert!(!subject_matches("npm run*", &t, Purpose::Approve, &no_forms));
        assert!(subject_matches("npm run*", &t, Purpose::Deny, &no_forms));
    }

    #[test]
    fn links_are_followed_where_the_kernel_follows_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(ws.join(".github")).unwrap();
        std::os::unix::fs::symlink("..", ws.join("src/up")).unwrap();
        std::os::unix::fs::symlink(ws.join(".github"), ws.join("gh")).unwrap();
        std::os::unix::fs::symlink("loop", ws.join("loop")).unwrap();
        let resolve = |p: &str| {
            let mut s = PathSubject::new(p);
            s.resolve(&ws);
            s.resolved.unwrap()
        };
        assert_eq!(resolve("src/up/README.md"), ws.join("README.md"));
        // `..` after a link climbs from the link's target.
        assert_eq!(resolve("src/up/../x"), ws.parent().unwrap().join("x"));
        assert_eq!(resolve("gh/new/dir/f"), ws.join(".github/new/dir/f"));
        assert_eq!(resolve("src/missing/../a"), ws.join("src/a"));
        assert_eq!(resolve("loop"), ws.join("loop"));
        assert_eq!(resolve(&ws.join("src/up/a").to_string_lossy()), ws.join("a"));
        // A workspace reached through a link keeps its name.
        std::os::unix::fs::symlink(&ws, ws.join("src/ws-link")).unwrap();
        let mut s = PathSubject::new("src/up/b");
        s.resolve(&ws.join("src/ws-link"));
        assert_eq!(s.resolved.unwrap(), ws.join("src/ws-link/b"));
    }

    #[test]
    fn paths_need_both_forms_to_approve_and_either_to_deny() {
        let p = Subject::Paths(vec![PathSubject {
            given: "src/up/a".into(),
            resolved: Some(PathBuf::from("a")),
        }]);
        assert!(!subject_matches("src/*", &p, Purpose::Approve, &no_forms));
        assert!(subject_matches("src/*", &p, Purpose::Deny, &no_forms));
        assert!(subject_matches("a", &p, Purpose::Deny, &no_forms));
        // Several paths: approve only when every one is covered.
        let two = Subject::Paths(vec![PathSubject::new("src/a"), PathSubject::new("lib/b")]);
        assert!(!subject_matches("src/*", &two, Purpose::Approve, &no_forms));
        assert!(subject_matches("lib/*", &two, Purpose::Deny, &no_forms));
        assert!(!subject_matches(
            "*",
            &Subject::Paths(vec![]),
            Purpose::Approve,
            &no_forms
        ));
    }
}
