//! The environment a command sees: a small inherited core (or everything, or
//! nothing), minus anything whose name looks like a secret, plus explicit
//! settings.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::str::FromStr;

/// The variables `inherit = "core"` passes through.
pub const CORE_VARS: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "TMPDIR", "TERM"];

/// Name fragments (case-insensitive) that mark a variable as a secret.
pub const SECRET_PATTERNS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// Which variables of wield's own environment a command inherits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Inherit {
    /// Only [`CORE_VARS`].
    #[default]
    Core,
    /// Everything (secrets are still dropped).
    All,
    /// Nothing.
    None,
}

impl FromStr for Inherit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "core" => Ok(Self::Core),
            "all" => Ok(Self::All),
            "none" => Ok(Self::None),
            other => Err(format!(
                "unknown env inheritance `{other}`: use \"core\", \"all\" or \"none\""
            )),
        }
    }
}

/// How to build a command's environment from wield's.
///
/// Order: inherit (core, all or none) → drop names matching a secret pattern
/// unless they are in `keep` → apply `set`. Names in `keep` are passed through
/// from wield's environment whatever `inherit` says: keeping a variable is
/// asking for it. `keep` entries are exact names or globs with `*`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvPolicy {
    pub inherit: Inherit,
    pub keep: Vec<String>,
    pub set: BTreeMap<String, String>,
}

impl EnvPolicy {
    pub fn new(inherit: Inherit) -> Self {
        Self {
            inherit,
            ..Self::default()
        }
    }

    #[must_use]
    pub fn keep(mut self, name: impl Into<String>) -> Self {
        self.keep.push(name.into());
        self
    }

    #[must_use]
    pub fn set(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.set.insert(name.into(), value.into());
        self
    }

    /// The environment for a command, from wield's current environment.
    pub fn build(&self) -> Vec<(OsString, OsString)> {
        self.apply(std::env::vars_os())
    }

    /// The environment for a command, from the given variables.
    pub fn apply<I>(&self, vars: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut out: BTreeMap<OsString, OsString> = BTreeMap::new();
        for (name, value) in vars {
            let kept = self.is_kept(&name);
            let inherited = match self.inherit {
                Inherit::All => true,
                Inherit::Core => CORE_VARS.iter().any(|c| OsStr::new(c) == name),
                Inherit::None => false,
            };
            if kept || (inherited && !is_secret_name(&name)) {
                out.insert(name, value);
            }
        }
        for (name, value) in &self.set {
            out.insert(name.into(), value.into());
        }
        out.into_iter().collect()
    }

    fn is_kept(&self, name: &OsStr) -> bool {
        let name = name.as_bytes();
        self.keep.iter().any(|pattern| glob_match(pattern.as_bytes(), name))
    }
}

/// Whether a variable name looks like it holds a secret.
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    SECRET_PATTERNS.iter().any(|p| upper.contains(p))
}

/// `*` matches any run of bytes; everything else matches itself.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.iter().position(|&b| b == b'*') {
        None => pattern == text,
        Some(star) => {
            let (prefix, rest) = (&pattern[..star], &pattern[star + 1..]);
            if !text.starts_with(prefix) {
                return false;
            }
            let text = &text[prefix.len()..];
            (0..=text.len()).any(|i| glob_match(rest, &text[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn core_keeps_only_core_names() {
        let env = EnvPolicy::default().apply(vars(&[("PATH", "/bin"), ("FOO", "1"), ("HOME", "/h")]));
        assert_eq!(names(&env), ["HOME", "PATH"]);
    }

    #[test]
    fn secrets_are_dropped_case_insensitively_unless_kept() {
        let input = vars(&[
            ("FOO_TOKEN", "t"),
            ("my_api_key", "k"),
            ("DB_Password", "p"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("KEEP_TOKEN", "x"),
            ("PLAIN", "y"),
        ]);
        let env = EnvPolicy::new(Inherit::All).keep("KEEP_*").apply(input);
        assert_eq!(names(&env), ["KEEP_TOKEN", "PLAIN"]);
    }

    #[test]
    fn none_inherits_nothing_but_keep_and_set_apply() {
        let env = EnvPolicy::new(Inherit::None)
            .keep("GITHUB_TOKEN")
            .set("A_TOKEN", "explicit")
            .apply(vars(&[("PATH", "/bin"), ("GITHUB_TOKEN", "g")]));
        assert_eq!(names(&env), ["A_TOKEN", "GITHUB_TOKEN"]);
    }

    #[test]
    fn set_overrides_inherited_values() {
        let env = EnvPolicy::default()
            .set("PATH", "/only")
            .apply(vars(&[("PATH", "/bin")]));
        assert_eq!(env, vars(&[("PATH", "/only")]));
    }

    #[test]
    fn inherit_parses() {
        assert_eq!("all".parse::<Inherit>(), Ok(Inherit::All));
        assert!("everything".parse::<Inherit>().unwrap_err().contains("\"core\""));
    }

    #[test]
    fn globs() {
        assert!(glob_match(b"A*C", b"ABBC"));
        assert!(glob_match(b"*", b""));
        assert!(!glob_match(b"A*C", b"ABD"));
        assert!(glob_match(b"*_TOKEN", b"GH_TOKEN"));
    }
}
