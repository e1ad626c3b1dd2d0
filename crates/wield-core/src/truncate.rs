//! Output truncation that never cuts inside a line or a UTF-8 character.
//!
//! When text is cut, the full text is saved to a file in the runtime's
//! saved-output directory ([`SavedOutputs`]: the project's `.wield/outputs`,
//! else the temp dir) and a notice naming it is appended, so a model can
//! read the rest on purpose:
//! `[Showing lines 1-2000 of 48211 (50.0KB limit). Full output: /srv/app/.wield/outputs/wield-output-<id>.txt]`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

pub const DEFAULT_MAX_LINES: usize = 2000;
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

/// Line and byte limits for a tool's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// The result of a truncation: the text to show and the facts about the cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Truncated {
    pub text: String,
    pub truncated: bool,
    pub total_lines: usize,
    /// 1-based inclusive range of lines kept (head or tail), if cut.
    pub shown: Option<(usize, usize)>,
    /// Where the full text was saved, if cut and the save succeeded.
    pub full_output: Option<PathBuf>,
}

impl Truncated {
    fn whole(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            truncated: false,
            total_lines: count_lines(text),
            shown: None,
            full_output: None,
        }
    }

    /// Metadata entries describing the cut (`truncated`, `full_output`, …).
    pub fn metadata(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("truncated".into(), self.truncated.into());
        if self.truncated {
            m.insert("total_lines".into(), self.total_lines.into());
            if let Some(p) = &self.full_output {
                m.insert("full_output".into(), p.display().to_string().into());
            }
        }
        m
    }
}

fn count_lines(text: &str) -> usize {
    if text.is_empty() { 0 } else { text.lines().count() }
}

/// Lines with their terminators, so joining them restores the text exactly.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

fn human_kb(bytes: usize) -> String {
    format!("{:.1}KB", bytes as f64 / 1024.0)
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// How saved outputs are named: `wield-output-<id>.txt`.
const SAVED_PREFIX: &str = "wield-output-";
const SAVED_SUFFIX: &str = ".txt";

/// Saved outputs kept at most, all wield processes of a user together: past
/// these the oldest are removed, so a client that makes calls print a lot
/// cannot fill the disk.
const KEEP_FILES: usize = 500;
/// Bytes of saved outputs kept at most.
const KEEP_BYTES: u64 = 512 << 20;
/// Saved outputs older than this are removed.
const KEEP_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// Where one runtime saves the full text of the outputs it cuts: a value
/// each runtime holds (in its [`Services`](crate::Services)) rather than a
/// process global, so that two runtimes in one process, for two projects,
/// each keep their outputs in their own project. With no directory, or when
/// it cannot be made, saved outputs go to the process's temp dir.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SavedOutputs {
    dir: Option<PathBuf>,
}

impl SavedOutputs {
    /// Saved outputs in `dir`: a per-project, per-user directory (a runtime
    /// uses its workspace's `.wield/outputs`), made on first use with mode
    /// 0700 and a `.gitignore` ignoring everything in it.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: Some(dir.into()) }
    }

    /// Saved outputs in the process's temp dir (`$TMPDIR`), as when no
    /// runtime chose a directory.
    pub fn in_temp_dir() -> Self {
        Self::default()
    }

    /// The directory chosen, if any (see [`SavedOutputs::in_dir`]).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The directory saved outputs go to now: the chosen one when it exists
    /// or can be made, the temp dir otherwise, so that a cut output still
    /// names a file the model can read.
    fn target(&self) -> PathBuf {
        match &self.dir {
            Some(dir) if crate::private_dir::ensure_state_dir(dir).is_ok() => dir.clone(),
            _ => std::env::temp_dir(),
        }
    }

    /// Save text to a new `wield-output-<id>.txt` in this directory and
    /// return the path. The file is new (never one that was there, nor a
    /// link planted in its place) and readable by its owner alone: it holds
    /// what a command printed. Saved outputs are kept for later calls to read
    /// (also by later `wield` processes), within [`KEEP_FILES`],
    /// [`KEEP_BYTES`] and [`KEEP_AGE`]: the oldest go first.
    pub fn save(&self, text: &str) -> std::io::Result<PathBuf> {
        let path = save_new_output(&self.target(), text)?;
        if let Some(dir) = path.parent() {
            prune_outputs(dir, &path, KEEP_FILES, KEEP_BYTES, KEEP_AGE);
        }
        Ok(path)
    }
}

fn save_new_output(dir: &Path, text: &str) -> std::io::Result<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let id = format!(
        "{}-{:x}-{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let path = dir.join(format!("{SAVED_PREFIX}{id}{SAVED_SUFFIX}"));
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?
    };
    std::io::Write::write_all(&mut file, text.as_bytes())?;
    Ok(path)
}

/// Remove this user's saved outputs in `dir` (regular files named
/// `wield-output-*.txt`) older than `max_age`, then the oldest until at most
/// `max_files` of them, of at most `max_bytes` together, are left; `keep`
/// (the one just written) stays.
fn prune_outputs(dir: &Path, keep: &Path, max_files: usize, max_bytes: u64, max_age: std::time::Duration) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    // The user's id, from the file just made, whose size counts too.
    let Ok(kept) = std::fs::symlink_metadata(keep) else {
        return;
    };
    let me = kept.uid();
    let now = std::time::SystemTime::now();
    let mut saved: Vec<(std::time::SystemTime, u64, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.starts_with(SAVED_PREFIX) || !name.ends_with(SAVED_SUFFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() || meta.uid() != me || path == keep {
            continue;
        }
        let modified = meta.modified().unwrap_or(now);
        if now.duration_since(modified).is_ok_and(|age| age > max_age) {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        saved.push((modified, meta.len(), path));
    }
    // Newest first; what falls past the limits goes.
    saved.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut files = 1;
    let mut bytes = kept.len();
    for (_, len, path) in saved {
        files += 1;
        bytes += len;
        if files > max_files || bytes > max_bytes {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn notice(first: usize, last: usize, total: usize, max_bytes: usize, saved: &Option<PathBuf>) -> String {
    let place = match saved {
        Some(p) => format!("Full output: {}", p.display()),
        None => "Full output could not be saved".to_owned(),
    };
    format!(
        "[Showing lines {first}-{last} of {total} ({} limit). {place}]",
        human_kb(max_bytes)
    )
}

/// Cut a single over-long line at a character boundary within `max_bytes`.
fn cut_at_char(line: &str, max_bytes: usize) -> &str {
    let mut end = max_bytes.min(line.len());
    while end > 0 && !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Keep the first lines that fit in `max_lines` and `max_bytes`; when cut,
/// the full text is saved in `saved`.
pub fn truncate_head(text: &str, max_lines: usize, max_bytes: usize, saved: &SavedOutputs) -> Truncated {
    if text.len() <= max_bytes && count_lines(text) <= max_lines {
        return Truncated::whole(text);
    }
    let lines = split_lines(text);
    let total = lines.len();
    let mut kept = String::new();
    let mut n = 0;
    for line in &lines {
        if n >= max_lines || kept.len() + line.len() > max_bytes {
            break;
        }
        kept.push_str(line);
        n += 1;
    }
    if n == 0 {
        // The first line alone exceeds the byte limit: keep a prefix of it.
        kept.push_str(cut_at_char(lines.first().copied().unwrap_or(""), max_bytes));
        n = 1;
    }
    finish(kept, (1, n, total), max_bytes, text, saved)
}

/// Keep the last lines that fit in `max_lines` and `max_bytes`; when cut,
/// the full text is saved in `saved`.
pub fn truncate_tail(text: &str, max_lines: usize, max_bytes: usize, saved: &SavedOutputs) -> Truncated {
    if text.len() <= max_bytes && count_lines(text) <= max_lines {
        return Truncated::whole(text);
    }
    let lines = split_lines(text);
    let total = lines.len();
    let mut size = 0;
    let mut start = total;
    while start > 0 {
        let line = lines[start - 1];
        if total - start >= max_lines || size + line.len() > max_bytes {
            break;
        }
        size += line.len();
        start -= 1;
    }
    let kept: String = if start == total {
        let last = lines.last().copied().unwrap_or("");
        let mut from = last.len().saturating_sub(max_bytes);
        while from < last.len() && !last.is_char_boundary(from) {
            from += 1;
        }
        start = total - 1;
        last[from..].to_owned()
    } else {
        lines[start..].concat()
    };
    finish(kept, (start + 1, total, total), max_bytes, text, saved)
}

/// Keep the first `head` and last `tail` lines (command output), within
/// `max_bytes` overall (half of it for the head), with a marker where lines
/// were left out; when cut, the full text is saved in `saved`. The cut
/// points are found by searching for newlines from both ends, not by
/// splitting the text into lines: command output can hold millions of them.
pub fn truncate_middle(text: &str, head: usize, tail: usize, max_bytes: usize, saved: &SavedOutputs) -> Truncated {
    let total = count_lines(text);
    if total <= head + tail && text.len() <= max_bytes {
        return Truncated::whole(text);
    }
    // End of the kept head: after `h` whole lines within half the budget.
    let (mut head_end, mut h) = (0, 0);
    while h < head {
        let Some(nl) = text[head_end..].find('\n') else {
            break;
        };
        let next = head_end + nl + 1;
        if next > max_bytes / 2 {
            break;
        }
        head_end = next;
        h += 1;
    }
    // Start of the kept tail: `t` whole lines from the end, after the head.
    let budget = max_bytes.saturating_sub(head_end);
    let (mut tail_start, mut t) = (text.len(), 0);
    let mut search_end = text.strip_suffix('\n').map_or(text.len(), str::len);
    while t < tail && tail_start > head_end {
        let start = text[head_end..search_end]
            .rfind('\n')
            .map_or(head_end, |i| head_end + i + 1);
        if text.len() - start > budget {
            break;
        }
        tail_start = start;
        t += 1;
        if start == head_end {
            break;
        }
        search_end = start - 1;
    }
    if h + t >= total {
        return Truncated::whole(text);
    }
    let saved = saved.save(text).ok();
    let place = match &saved {
        Some(p) => format!("Full output: {}", p.display()),
        None => "Full output could not be saved".to_owned(),
    };
    // No whole line of the tail fits: the end of the last line does.
    let mut cut_last = 0;
    if t == 0 {
        let last = text[head_end..search_end]
            .rfind('\n')
            .map_or(head_end, |i| head_end + i + 1);
        let mut from = search_end.saturating_sub(budget.saturating_sub(200)).max(last);
        while from < search_end && !text.is_char_boundary(from) {
            from += 1;
        }
        tail_start = from;
        cut_last = search_end - from;
    }
    let mut shown = Vec::new();
    if h > 0 {
        shown.push(format!("lines 1-{h}"));
    }
    if t > 0 {
        shown.push(format!("lines {}-{total}", total - t + 1));
    }
    let omitted = if cut_last > 0 {
        shown.push(format!("the last {cut_last} bytes of line {total}"));
        format!("{} lines omitted or cut", total - h)
    } else {
        format!("{} lines omitted", total - h - t)
    };
    let shown = if shown.is_empty() {
        "nothing".to_owned()
    } else {
        shown.join(" and ")
    };
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 200);
    out.push_str(&text[..head_end]);
    out.push_str(&format!("[... {omitted}: showing {shown} of {total}. {place}]\n"));
    out.push_str(&text[tail_start..]);
    Truncated {
        text: out,
        truncated: true,
        total_lines: total,
        shown: Some((1, h)),
        full_output: saved,
    }
}

/// The cut text with its notice, given the first and last lines kept and
/// the total, the full text saved in `outputs`.
fn finish(
    mut kept: String,
    (first, last, total): (usize, usize, usize),
    max_bytes: usize,
    full: &str,
    outputs: &SavedOutputs,
) -> Truncated {
    let saved = outputs.save(full).ok();
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(&notice(first, last, total, max_bytes, &saved));
    Truncated {
        text: kept,
        truncated: true,
        total_lines: total,
        shown: Some((first, last)),
        full_output: saved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: saved outputs were readable by every user (0644) in a
    /// shared temporary directory.
    #[test]
    fn a_saved_output_is_its_owners_alone() {
        use std::os::unix::fs::PermissionsExt;
        let path = SavedOutputs::in_temp_dir().save("secret").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "secret");
        std::fs::remove_file(path).unwrap();
    }

    /// A saved-output directory of the test's own, so that tests leave
    /// nothing in the shared temp dir.
    fn outputs() -> (tempfile::TempDir, SavedOutputs) {
        let dir = tempfile::tempdir().unwrap();
        let out = SavedOutputs::in_dir(dir.path().join("outputs"));
        (dir, out)
    }

    /// Two saved-output directories in one process each keep their own
    /// outputs: the directory is the value's, not the process's.
    #[test]
    fn each_saved_output_directory_keeps_its_own_outputs() {
        use std::os::unix::fs::PermissionsExt;
        let (_a_dir, a) = outputs();
        let (_b_dir, b) = outputs();
        let text = numbered(3000);
        let cut_a = truncate_head(&text, 10, 1 << 20, &a);
        let cut_b = truncate_tail(&text, 10, 1 << 20, &b);
        let (in_a, in_b) = (cut_a.full_output.unwrap(), cut_b.full_output.unwrap());
        assert_eq!(in_a.parent(), a.dir());
        assert_eq!(in_b.parent(), b.dir());
        assert_eq!(std::fs::read_to_string(&in_a).unwrap(), text);
        let a_dir = a.dir().unwrap();
        let mode = std::fs::metadata(a_dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert_eq!(std::fs::read_to_string(a_dir.join(".gitignore")).unwrap(), "*\n");
        // A directory that cannot be made falls back to the temp dir.
        let blocked = SavedOutputs::in_dir(in_a.join("below-a-file"));
        let saved = blocked.save("x").unwrap();
        assert_eq!(saved.parent(), Some(std::env::temp_dir().as_path()));
        std::fs::remove_file(saved).unwrap();
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn short_text_is_untouched() {
        let (_dir, out) = outputs();
        let t = truncate_head("a\nb\n", 10, 100, &out);
        assert!(!t.truncated);
        assert_eq!(t.text, "a\nb\n");
    }

    #[test]
    fn head_keeps_first_lines_and_saves_everything() {
        let (_dir, out) = outputs();
        let text = numbered(5000);
        let t = truncate_head(&text, 2000, 1_000_000, &out);
        assert!(t.truncated);
        assert!(t.text.starts_with("line 1\n"));
        assert!(t.text.contains("line 2000\n"));
        assert!(!t.text.contains("line 2001\n"));
        assert!(
            t.text
                .contains("[Showing lines 1-2000 of 5000 (976.6KB limit). Full output: ")
        );
        let saved = std::fs::read_to_string(t.full_output.unwrap()).unwrap();
        assert_eq!(saved, text);
    }

    #[test]
    fn head_respects_bytes_and_never_splits_utf8() {
        let (_dir, out) = outputs();
        let text = "é".repeat(100) + "\n" + &"x\n".repeat(10);
        let t = truncate_head(&text, 2000, 51, &out);
        assert!(t.truncated);
        assert!(t.text.starts_with(&"é".repeat(25)));
        assert!(std::str::from_utf8(t.text.as_bytes()).is_ok());
    }

    #[test]
    fn tail_keeps_last_lines() {
        let (_dir, out) = outputs();
        let text = numbered(100);
        let t = truncate_tail(&text, 10, 100_000, &out);
        assert!(t.text.starts_with("line 91\n"));
        assert!(t.text.contains("line 100\n"));
        assert!(t.text.contains("[Showing lines 91-100 of 100"));
    }

    #[test]
    fn middle_keeps_head_and_tail() {
        let (_dir, out) = outputs();
        let text = numbered(300);
        let t = truncate_middle(&text, 100, 80, 1_000_000, &out);
        assert!(t.text.contains("line 100\n"));
        assert!(!t.text.contains("line 101\n"));
        assert!(t.text.contains("line 221\n"));
        assert!(!t.text.contains("line 220\n"));
        assert!(t.text.contains("120 lines omitted"));
        // Within the byte budget too: half for the head, the rest for the tail.
        let t = truncate_middle(&text, 100, 80, 600, &out);
        assert!(t.truncated && t.text.starts_with("line 1\n"));
        let (head, tail) = t.text.split_once("lines omitted").unwrap();
        assert!(head.len() <= 300 + 10, "{head}");
        assert!(tail.contains("line 300\n"));
        // 181 lines need a cut of one line; 180 fit whole.
        assert!(
            truncate_middle(&numbered(181), 100, 80, 1_000_000, &out)
                .text
                .contains("1 lines omitted")
        );
        assert!(!truncate_middle(&numbered(180), 100, 80, 1_000_000, &out).truncated);
        let whole = truncate_middle("a\nb", 100, 80, 1000, &out);
        assert!(!whole.truncated);
        assert_eq!(whole.text, "a\nb");
    }

    #[test]
    fn a_last_line_too_long_for_the_tail_shows_its_end() {
        let (_dir, out) = outputs();
        let text = format!("a\n{}Z\n", "x".repeat(300_000));
        let t = truncate_middle(&text, 100, 80, 50_000, &out);
        assert!(t.truncated);
        assert!(
            t.text
                .starts_with("a\n[... 1 lines omitted or cut: showing lines 1-1 and the last "),
            "{}",
            &t.text[..200]
        );
        assert!(t.text.contains(" bytes of line 2 of 2."));
        assert!(t.text.ends_with("xxZ\n"));
        assert!(t.text.len() <= 50_000 + 300, "{}", t.text.len());
        // Nor does the head: no "lines 1-0".
        let one = format!("{}\n", "y".repeat(300_000));
        let t = truncate_middle(&one, 100, 80, 50_000, &out);
        assert!(
            t.text.starts_with("[... 1 lines omitted or cut: showing the last "),
            "{}",
            &t.text[..100]
        );
    }

    /// Saved outputs past the limits go, oldest first, and old ones go;
    /// the one just written, other files and other names stay.
    #[test]
    fn saved_outputs_are_pruned_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str, bytes: usize, age_s: u64| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![b'x'; bytes]).unwrap();
            let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age_s);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
            path
        };
        let ancient = at("wield-output-ancient.txt", 1, 30 * 24 * 3600);
        let old = at("wield-output-old.txt", 10, 300);
        let mid = at("wield-output-mid.txt", 10, 200);
        let new = at("wield-output-new.txt", 10, 100);
        let other = at("notes.txt", 10, 400);
        let keep = at("wield-output-keep.txt", 10, 0);
        let day = std::time::Duration::from_secs(24 * 3600);
        prune_outputs(dir.path(), &keep, 2, 1 << 20, day);
        let left = |p: &PathBuf| p.exists();
        assert!(
            !left(&ancient) && !left(&old) && !left(&mid),
            "past the age and the count"
        );
        assert!(left(&new) && left(&keep) && left(&other));
        // By bytes: the newest that fit stay.
        let more = at("wield-output-more.txt", 10, 50);
        prune_outputs(dir.path(), &keep, 100, 25, day);
        assert!(left(&keep) && left(&more) && !left(&new));
    }
}
