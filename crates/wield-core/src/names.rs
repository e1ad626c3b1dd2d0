//! Names: provider-safe API names, `*` globs over tool names, did-you-mean.

/// Map a tool name to one providers accept (`[a-zA-Z0-9_-]`): `.` becomes
/// `_`, `:` becomes `__`, anything else outside the set becomes `_`.
pub fn api_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => out.push(c),
            ':' => out.push_str("__"),
            _ => out.push('_'),
        }
    }
    out
}

/// The longest name a user-defined tool may have: what providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// Whether `name` may name a tool a user defines (a command tool, a Lua
/// tool): 1 to 64 ASCII letters, digits, `_` or `-`, starting with a letter,
/// so that it is its own API name and every provider accepts it; not
/// `mcp__…`, which names bridged tools. The error says what to change.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    let shape = !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !shape {
        return Err(format!(
            "the tool name `{name}` must be 1 to {MAX_TOOL_NAME} ASCII letters, digits, `_` or `-`, starting with a letter"
        ));
    }
    if name.to_ascii_lowercase().starts_with("mcp__") {
        return Err(format!(
            "the tool name `{name}` starts with `mcp__`, which names the tools of bridged MCP servers; choose another"
        ));
    }
    Ok(())
}

/// Whether `pattern` (only `*` is special, anchored at both ends) matches
/// `text`. Tool-name matching is case-insensitive; argument matching is not.
pub fn glob_match(pattern: &str, text: &str, case_insensitive: bool) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = if case_insensitive {
        (
            pattern.chars().flat_map(char::to_lowercase).collect(),
            text.chars().flat_map(char::to_lowercase).collect(),
        )
    } else {
        (pattern.chars().collect(), text.chars().collect())
    };
    // Iterative wildcard matching with backtracking to the last star: linear
    // in practice, no recursion, no regex compilation per call.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The candidate closest to `word`, if any is reasonably close.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    closest_n(word, candidates, 1).into_iter().next()
}

/// Up to `n` candidates close to `word`, best first.
pub fn closest_n<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    let w = word.to_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .map(|c| {
            let lc = c.to_lowercase();
            let mut score = strsim::jaro_winkler(&w, &lc);
            if lc.contains(&w) || w.contains(&lc) {
                score = score.max(0.85);
            }
            (score, c)
        })
        .filter(|(s, _)| *s >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_tool_names() {
        for ok in ["run_tests", "a", "Fmt-check2"] {
            assert_eq!(check_tool_name(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(MAX_TOOL_NAME + 1);
        for bad in [
            "",
            "2x",
            "_x",
            "run tests",
            "a.b",
            "a:b",
            "é",
            long.as_str(),
            "mcp__s__t",
            "MCP__x",
        ] {
            assert!(check_tool_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn api_names() {
        assert_eq!(api_name("file.read"), "file_read");
        assert_eq!(api_name("server:tool"), "server__tool");
        assert_eq!(api_name("ok_name-1"), "ok_name-1");
    }

    #[test]
    fn globs() {
        assert!(glob_match("mcp__*", "mcp__x__y", true));
        assert!(glob_match("READ", "read", true));
        assert!(!glob_match("read", "reader", true));
        assert!(glob_match("git commit*", "git commit -m 'a/b\nc'", false));
        assert!(glob_match("*", "", false));
        assert!(!glob_match("a*b", "acd", false));
        assert!(glob_match("a*b*c", "axxbyyc", false));
    }

    #[test]
    fn did_you_mean() {
        assert_eq!(closest("calculater", ["calculator", "read"]), Some("calculator"));
        assert_eq!(closest("zzz", ["calculator", "read"]), None);
    }
}
