//! What a command did to the git repositories under the workspace that git
//! would later run: hooks, and config keys naming programs
//! (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`, `core.pager`,
//! `alias.*`, …). Commands may create and change nested repositories
//! (`cargo new`, tests do), so this is reported rather than refused: the
//! person sees it in the call's result and in the event stream before
//! running git there.
//!
//! A snapshot is taken before the command and compared with one taken
//! after. Finding the repositories is bounded: directories only (no `stat`
//! per file), at most [`MAX_DEPTH`] levels and [`MAX_DIRS`] directories, the
//! inside of `.git` never entered. A `.git` file (`gitdir: …`) is followed to
//! the directory it names.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use wield_core::{Context, ToolResult};

/// Levels below the workspace searched for repositories.
pub(crate) const MAX_DEPTH: usize = 6;
/// Directories looked at, at most, per snapshot.
pub(crate) const MAX_DIRS: usize = 20_000;

/// Keys (lowercase `section.key`, or `section.*.key` for any subsection)
/// whose value git runs as a program, or that bring in other config.
const WATCHED: &[&str] = &[
    "core.fsmonitor",
    "core.hookspath",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "sequence.editor",
    "diff.external",
    "credential.helper",
    "gpg.program",
    "include.path",
    "includeif.*.path",
    "filter.*.clean",
    "filter.*.smudge",
    "filter.*.process",
    "diff.*.textconv",
    "diff.*.command",
    "merge.*.driver",
    "pager.*",
    "alias.*",
];

/// The watched state of one repository.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Repo {
    /// Watched keys and their values, in file order.
    keys: BTreeMap<String, Vec<String>>,
    /// Executable hooks: name → (size, change time in ns, inode).
    hooks: BTreeMap<String, (u64, i128, u64)>,
}

/// The watched state of every repository found under the workspace.
#[derive(Clone, Debug, Default)]
pub(crate) struct Snapshot {
    repos: BTreeMap<PathBuf, Repo>,
    /// Nested wield configs (`pkg/.wield/config.toml`), whose hooks and
    /// settings wield takes when used there: (size, change time, inode).
    wield_configs: BTreeMap<PathBuf, (u64, i128, u64)>,
    /// The search stopped at [`MAX_DIRS`].
    pub(crate) incomplete: bool,
}

impl Snapshot {
    /// Look at the repositories under `workspace`. Directory listings are
    /// cached (in `listings`, the command runner's) and listed again only when the directory's
    /// change time moved: an entry added, removed or renamed changes it, and
    /// unlike the modification time no command can set it back. So a
    /// snapshot of an unchanged tree costs one `stat` per directory.
    pub(crate) fn take(workspace: &Path, listings: &Listings) -> Self {
        let mut cache = listings.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut snap = Self::default();
        // With the workspace at HOME, its git config applies to every
        // repository.
        for global in [".gitconfig", ".config/git/config"] {
            let file = workspace.join(global);
            if file.exists() {
                let mut repo = Repo::default();
                repo.read_config(&file);
                snap.repos.insert(file, repo);
            }
        }
        let mut queue = std::collections::VecDeque::from([(workspace.to_path_buf(), 0usize)]);
        let mut seen = 0usize;
        while let Some((dir, depth)) = queue.pop_front() {
            seen += 1;
            if seen > MAX_DIRS {
                snap.incomplete = true;
                break;
            }
            let Ok(meta) = std::fs::symlink_metadata(&dir) else {
                continue;
            };
            let stamp = (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec());
            let uncached;
            let listing = if cache.get(&dir).is_some_and(|l| l.stamp == stamp) {
                cache.get(&dir)
            } else {
                let Some(l) = Listing::read(&dir, stamp) else { continue };
                // Change times are kept at the kernel's clock tick: a
                // directory changed in the last moments could change again
                // without its change time moving, so it is not cached.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(i64::MAX, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
                let recent = meta.ctime() >= now.saturating_sub(2);
                if recent {
                    uncached = l;
                    Some(&uncached)
                } else {
                    if cache.len() >= MAX_DIRS * 2 {
                        cache.clear();
                    }
                    cache.insert(dir.clone(), l);
                    cache.get(&dir)
                }
            };
            let Some(listing) = listing else { continue };
            // A git directory of another name (a bare repository, or the
            // workspace itself made one), which git finds from the
            // directories below it.
            let has = |name: &str| listing.dirs.iter().any(|d| d.file_name() == Some(name.as_ref()));
            if has("objects") && has("refs") {
                snap.repos.insert(dir.clone(), Repo::read(&dir));
            }
            if listing.wield {
                // Followed as wield follows it: a link counts.
                let config = dir.join(".wield/config.toml");
                if let Ok(meta) = std::fs::metadata(&config) {
                    let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
                    snap.wield_configs.insert(config, (meta.len(), ctime, meta.ino()));
                }
            }
            for (path, is_dir) in &listing.git {
                if let Some(gitdir) = git_dir(path, *is_dir) {
                    // A linked worktree's config and hooks are those of the
                    // common directory it names.
                    if let Some(common) = common_dir(&gitdir) {
                        let repo = Repo::read(&common);
                        snap.repos.insert(common, repo);
                    }
                    snap.repos.insert(gitdir.clone(), Repo::read(&gitdir));
                }
            }
            if depth < MAX_DEPTH {
                queue.extend(listing.dirs.iter().map(|d| (d.clone(), depth + 1)));
            }
        }
        snap
    }

    /// What changed from `self` to `after`, one line per change, paths shown
    /// relative to `workspace`.
    pub(crate) fn changes(&self, after: &Self, workspace: &Path) -> Vec<String> {
        let empty = Repo::default();
        let mut out = Vec::new();
        for (dir, now) in &after.repos {
            let before = self.repos.get(dir).unwrap_or(&empty);
            let shown = dir.strip_prefix(workspace).unwrap_or(dir).display().to_string();
            for (key, values) in &now.keys {
                if before.keys.get(key) != Some(values) {
                    out.push(format!(
                        "{shown}: {key} = {} (git runs this)",
                        values.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            for (name, stamp) in &now.hooks {
                match before.hooks.get(name) {
                    None => out.push(format!("{shown}: hook {name}: a new executable hook")),
                    Some(old) if old != stamp => out.push(format!("{shown}: hook {name}: an executable hook changed")),
                    Some(_) => {}
                }
            }
        }
        for (config, stamp) in &after.wield_configs {
            if self.wield_configs.get(config) != Some(stamp) {
                let shown = config.strip_prefix(workspace).unwrap_or(config).display();
                out.push(format!(
                    "{shown}: a wield config was created or changed (wield takes its hooks and settings when used there)"
                ));
            }
        }
        out
    }
}

/// [`Snapshot::take`] of `svc`'s workspace off the async runtime (an empty
/// one when `bash.git_watch` is off).
pub(crate) async fn snapshot(svc: &super::ShellService) -> Snapshot {
    if !svc.settings.git_watch {
        return Snapshot::default();
    }
    let workspace = svc.workspace().to_path_buf();
    let listings = std::sync::Arc::clone(&svc.listings);
    tokio::task::spawn_blocking(move || Snapshot::take(&workspace, &listings))
        .await
        .unwrap_or_default()
}

/// The directory listings the snapshots of one command runner share (one
/// runtime's: another runtime in the process keeps its own).
#[derive(Default)]
pub(crate) struct Listings(std::sync::Mutex<BTreeMap<PathBuf, Listing>>);

impl std::fmt::Debug for Listings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Listings")
    }
}

/// Tell of `changes` in a call's result (a `[git]` line each, and the
/// `git_changes` metadata) and as notice events.
pub(crate) fn report(mut result: ToolResult, changes: &[String], after: &Snapshot, ctx: &Context) -> ToolResult {
    if after.incomplete {
        // Past the bound, repositories deeper in the tree went unseen.
        result = result.with_meta("git_watch_incomplete", true);
    }
    if changes.is_empty() {
        return result;
    }
    if !result.output.is_empty() && !result.output.ends_with('\n') {
        result.output.push('\n');
    }
    for c in changes {
        ctx.emit_notice("git_config", c);
        result.output.push_str("[git] ");
        result.output.push_str(c);
        result.output.push('\n');
    }
    result.output.push_str(
        "[git] a command set what git (or wield) runs later in a directory under the workspace: check it before using git (or wield) there",
    );
    result.with_meta("git_changes", changes.to_vec())
}

/// What of a directory's entries the search needs: its subdirectories and
/// its `.git` entry, as of a change time.
struct Listing {
    stamp: (u64, u64, i64, i64),
    dirs: Vec<PathBuf>,
    /// The `.git` entry and whether it is a directory.
    git: Vec<(PathBuf, bool)>,
    /// Whether there is a `.wield` entry (a directory, or a link to one).
    wield: bool,
}

impl Listing {
    fn read(dir: &Path, stamp: (u64, u64, i64, i64)) -> Option<Self> {
        let entries = std::fs::read_dir(dir).ok()?;
        let mut l = Self {
            stamp,
            dirs: Vec::new(),
            git: Vec::new(),
            wield: false,
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            l.wield |= entry.file_name() == ".wield";
            if entry.file_name() == ".git" {
                l.git.push((entry.path(), kind.is_dir()));
            } else if kind.is_dir() {
                l.dirs.push(entry.path());
            }
        }
        Some(l)
    }
}

/// The git directory a `.git` entry stands for: itself, or where a
/// `gitdir: PATH` file points.
fn git_dir(entry: &Path, is_dir: bool) -> Option<PathBuf> {
    if is_dir {
        return Some(entry.to_path_buf());
    }
    let meta = std::fs::symlink_metadata(entry).ok()?;
    // A link to a directory is one to git.
    if meta.is_symlink() && std::fs::metadata(entry).is_ok_and(|m| m.is_dir()) {
        return Some(entry.to_path_buf());
    }
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(entry).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let target = Path::new(target);
    Some(match entry.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target.to_path_buf(),
    })
}

/// The workspace's own hooks directory when its repository sets
/// `core.hooksPath` to one inside it (`.githooks`, as given, relative to
/// the workspace): git runs the executable files there.
pub(crate) fn workspace_hooks_path(workspace: &Path) -> Option<PathBuf> {
    let entry = workspace.join(".git");
    let meta = std::fs::symlink_metadata(&entry).ok()?;
    let gitdir = git_dir(&entry, meta.is_dir())?;
    // The common directory's config first: the worktree's own wins.
    let mut values = Vec::new();
    for dir in common_dir(&gitdir).into_iter().chain([gitdir]) {
        values.extend(Repo::read(&dir).keys.remove("core.hookspath").unwrap_or_default());
    }
    let dir = Path::new(values.last()?);
    match dir.strip_prefix(workspace) {
        Ok(inside) => Some(inside.to_path_buf()),
        Err(_) if dir.is_relative() && !dir.starts_with("~") => Some(dir.to_path_buf()),
        Err(_) => None,
    }
}

/// The common directory a linked worktree's git directory names in its
/// `commondir` file (relative to the git directory, or absolute).
fn common_dir(gitdir: &Path) -> Option<PathBuf> {
    let file = gitdir.join("commondir");
    let meta = std::fs::metadata(&file).ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(&file).ok()?;
    let target = text.lines().next()?.trim();
    if target.is_empty() {
        return None;
    }
    // `..` taken out, so the directory is shown (and known) by one name.
    Some(wield_core::approval::normalize_lexically(&gitdir.join(target)))
}

impl Repo {
    fn read(gitdir: &Path) -> Self {
        let mut repo = Self::default();
        repo.read_config(&gitdir.join("config"));
        // Read too when `extensions.worktreeConfig` is set.
        repo.read_config(&gitdir.join("config.worktree"));
        repo.read_hooks(&gitdir.join("hooks"), "");
        // Hooks in a `core.hooksPath` directory run as well; a relative one
        // is taken from the top of the working tree.
        let hooks_path = repo.keys.get("core.hookspath").and_then(|v| v.last()).cloned();
        if let Some(dir) = hooks_path.filter(|d| !d.starts_with('~')) {
            let top = gitdir.parent().unwrap_or(gitdir);
            let shown = format!("{dir}/");
            repo.read_hooks(&top.join(&dir), &shown);
        }
        repo
    }

    /// The watched keys of a config file. A config file is small; a huge
    /// one is not read (nor would git use it happily).
    fn read_config(&mut self, file: &Path) {
        if let Ok(meta) = std::fs::metadata(file)
            && meta.len() <= 1 << 20
            && let Ok(text) = std::fs::read_to_string(file)
        {
            for (key, value) in parse_config(&text) {
                if is_watched(&key) {
                    self.keys.entry(key).or_default().push(value);
                }
            }
        }
    }

    /// The executable files of a hooks directory, by name (after `prefix`).
    /// The change time stands for the content: unlike the modification
    /// time, no command can set it back.
    fn read_hooks(&mut self, dir: &Path, prefix: &str) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten().take(1000) {
            // Git runs hooks by their exact names; `*.sample` never runs.
            let name = entry.file_name();
            if name.to_string_lossy().ends_with(".sample") {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_file() && meta.mode() & 0o111 != 0 {
                let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
                self.hooks.insert(
                    format!("{prefix}{}", name.to_string_lossy()),
                    (meta.len(), ctime, meta.ino()),
                );
            }
        }
    }
}

pub(crate) fn is_watched(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    WATCHED.iter().any(|w| {
        let wp: Vec<&str> = w.split('.').collect();
        match (wp.as_slice(), parts.as_slice()) {
            ([ws, "*"], [s, ..]) => ws == s,
            ([ws, "*", wk], [s, _sub @ .., k]) if parts.len() >= 3 => ws == s && wk == k,
            ([ws, wk], [s, k]) => ws == s && wk == k,
            _ => false,
        }
    })
}

/// `(section[.subsection].key, value)` pairs of a git config file, section
/// and key names lowercased (as git compares them), subsections kept.
/// Handles `[section "sub"]`, `[section.sub]`, entries on the section's
/// own line, comments, quoting and `\` line continuations.
fn parse_config(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(raw) = lines.next() {
        let mut line = raw.to_owned();
        while line.ends_with('\\') && !line.ends_with("\\\\") {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next),
                None => break,
            }
        }
        let mut rest = line.trim_start();
        if let Some(after) = rest.strip_prefix('[') {
            let Some(end) = after.find(']') else { continue };
            section = section_name(&after[..end]);
            rest = after[end + 1..].trim_start();
        }
        let rest = strip_comment(rest);
        if rest.is_empty() || section.is_empty() {
            continue;
        }
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n.trim(), unquote(v.trim())),
            None => (rest.trim(), "true".to_owned()),
        };
        if !name.is_empty() {
            out.push((format!("{section}.{}", name.to_ascii_lowercase()), value));
        }
    }
    out
}

fn section_name(inside: &str) -> String {
    let inside = inside.trim();
    match inside.split_once(char::is_whitespace) {
        Some((name, sub)) => {
            let sub = sub.trim().trim_matches('"').replace("\\\"", "\"");
            format!("{}.{sub}", name.to_ascii_lowercase())
        }
        None => match inside.split_once('.') {
            Some((name, sub)) => format!("{}.{}", name.to_ascii_lowercase(), sub.to_ascii_lowercase()),
            None => inside.to_ascii_lowercase(),
        },
    }
}

/// The text before a `#` or `;` that is outside double quotes.
fn strip_comment(s: &str) -> &str {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => return s[..i].trim_end(),
            _ => {}
        }
    }
    s.trim_end()
}

fn unquote(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {}
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shapes_git_accepts() {
        let text = "[core]\n\trepositoryformatversion = 0\n[CoRe] fsMonitor = \"touch x\" # c\n\
                    [alias \"x\"]\n[alias]\n\tst = !sh -c 'id' ; comment\n[core.x]\n\tpager = less\n\
                    [filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n[core]\n\tsshCommand = ssh \\\n -i k\n";
        let keys: Vec<(String, String)> = parse_config(text).into_iter().filter(|(k, _)| is_watched(k)).collect();
        assert_eq!(
            keys,
            [
                ("core.fsmonitor".to_owned(), "touch x".to_owned()),
                ("alias.st".to_owned(), "!sh -c 'id'".to_owned()),
                ("filter.lfs.clean".to_owned(), "git-lfs clean -- %f".to_owned()),
                ("core.sshcommand".to_owned(), "ssh  -i k".to_owned()),
            ]
        );
    }

    #[test]
    fn reports_new_keys_and_hooks_in_nested_and_linked_repositories() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let listings = Listings::default();
        std::fs::create_dir_all(ws.join("a/b/.git/hooks")).unwrap();
        std::fs::write(ws.join("a/b/.git/config"), "[core]\n\tbare = false\n").unwrap();
        let before = Snapshot::take(ws, &listings);
        std::fs::write(ws.join("a/b/.git/config"), "[core]\n\tbare = false\n\thooksPath = /x\n").unwrap();
        let hook = ws.join("a/b/.git/hooks/pre-commit");
        std::fs::write(&hook, "#!/bin/sh\nid\n").unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(ws.join("store")).unwrap();
        std::fs::write(ws.join("store/config"), "[alias]\n\tx = !id\n").unwrap();
        std::fs::create_dir_all(ws.join("c")).unwrap();
        std::fs::write(ws.join("c/.git"), "gitdir: ../store\n").unwrap();
        let after = Snapshot::take(ws, &listings);
        let changes = before.changes(&after, ws);
        assert_eq!(changes.len(), 3, "{changes:?}");
        assert!(
            changes.iter().any(|c| c.contains("a/b/.git: core.hookspath = \"/x\"")),
            "{changes:?}"
        );
        assert!(
            changes
                .iter()
                .any(|c| c.contains("a/b/.git: hook pre-commit: a new executable hook"))
        );
        assert!(changes.iter().any(|c| c.contains("alias.x = \"!id\"")), "{changes:?}");
        assert!(Snapshot::take(ws, &listings).changes(&after, ws).is_empty());
        // A workspace at HOME: its own git config counts too.
        std::fs::write(ws.join(".gitconfig"), "[core]\n\tpager = sh -c id\n").unwrap();
        let changes = after.changes(&Snapshot::take(ws, &listings), ws);
        assert_eq!(changes, [".gitconfig: core.pager = \"sh -c id\" (git runs this)"]);
        // A linked worktree: its common directory's config and hooks count.
        for d in ["common/objects", "common/refs", "common/hooks", "wt", "d"] {
            std::fs::create_dir_all(ws.join(d)).unwrap();
        }
        std::fs::write(ws.join("wt/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(ws.join("wt/commondir"), "../common\n").unwrap();
        std::fs::write(ws.join("d/.git"), "gitdir: ../wt\n").unwrap();
        let linked = Snapshot::take(ws, &listings);
        std::fs::write(ws.join("common/config"), "[core]\n\tfsmonitor = id\n").unwrap();
        let hook = ws.join("common/hooks/post-checkout");
        std::fs::write(&hook, "#!/bin/sh\nid\n").unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let changes = linked.changes(&Snapshot::take(ws, &listings), ws);
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert!(
            changes.iter().any(|c| c.starts_with("common: core.fsmonitor = \"id\"")),
            "{changes:?}"
        );
        assert!(changes.iter().any(|c| c.contains("hook post-checkout")), "{changes:?}");
    }
}
