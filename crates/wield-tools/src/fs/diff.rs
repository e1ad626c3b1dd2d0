//! Unified diffs for approval previews and edit results.

use std::time::Duration;

use similar::TextDiff;

/// A unified diff of `old` → `new` labelled with `path`, at most `max_lines`
/// lines (with a note of how many were left out). The diff gives up on
/// finding the minimal edit after a short deadline, so a huge file cannot
/// stall an approval prompt.
pub(crate) fn unified(path: &str, old: &str, new: &str, max_lines: usize) -> String {
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let a = if old.is_empty() {
        "/dev/null".to_owned()
    } else {
        format!("a/{path}")
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&a, &format!("b/{path}"))
        .to_string();
    cap_lines(text, max_lines)
}

/// A diff cut to `max_lines` lines, with a note of how many were left out.
pub(crate) fn cap_lines(text: String, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= max_lines {
        return text;
    }
    let mut cut = lines[..max_lines].join("\n");
    cut.push_str(&format!("\n… {} more diff lines\n", lines.len() - max_lines));
    cut
}

/// Lines removed and added, for one-line previews.
pub(crate) fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let count = |s: &str| if s.is_empty() { 0 } else { s.lines().count() };
    (count(old), count(new))
}
