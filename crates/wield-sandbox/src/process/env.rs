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
pub const SECRET_PATTERNS: &[&str] = &[
    "KEY",
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "COOKIE",
    "WEBHOOK",
];

/// Whole words of a name (split at `_`, `-`, `.`; case-insensitive) that
/// mark a variable as a secret: `MYSQL_PWD`, `SENTRY_DSN`, `CI_JOB_JWT`,
/// `GH_PAT`, `NPM_CONFIG__AUTH`, `SSH_AUTH_SOCK`, `APP_SESSION` — but not
/// `GIT_AUTHOR_NAME` or `PWD` itself.
pub const SECRET_WORDS: &[&str] = &["PWD", "PASS", "DSN", "JWT", "PAT", "AUTH", "SESSION", "SID", "CREDS"];

/// Value prefixes of well-known credentials: GitHub, GitLab, Slack, OpenAI
/// and other `sk-` keys, Stripe, npm, PyPI, Google API keys.
const TOKEN_PREFIXES: &[&str] = &[
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "xoxe-",
    "xapp-",
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "npm_",
    "pypi-",
    "AIza",
    "hf_",
    "shpat_",
    "dop_v1_",
    "glrt-",
    "gsk_",
    "ya29.",
    "AGE-SECRET-KEY-",
];

/// Keys of `key=value` settings inside a value that hold a credential
/// whatever the variable is called, besides those [`is_secret_name`] takes
/// (`password=`, `AccountKey=`, `access_token=`): `pwd=` and `pass=` of
/// connection strings, `sig=` of a signed (SAS) URL.
const SECRET_SETTINGS: &[&str] = &["PWD", "PASS", "SIG"];

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
            // The core variables are needed as they are (a PATH entry named
            // like a token must not cost the command its PATH).
            let core = CORE_VARS.iter().any(|c| OsStr::new(c) == name);
            if kept || (inherited && !is_secret_name(&name) && (core || !is_secret_value(&value))) {
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
    if SECRET_PATTERNS.iter().any(|p| upper.contains(p)) {
        return true;
    }
    let words: Vec<&str> = upper.split(['_', '-', '.']).collect();
    // `PWD` alone is the working directory, not a password.
    words.len() > 1 && words.iter().any(|w| SECRET_WORDS.contains(w))
}

/// Whether a value looks like a credential whatever its name: a URL with a
/// password or a long user part (`postgres://u:p@db`, `http://u:p@proxy`,
/// a Sentry DSN), a Slack webhook, or a word shaped like a known token
/// (`ghp_…`, `xoxb-…`, `sk-…`, `AKIA…`, a JWT `eyJ….….…`).
pub fn is_secret_value(value: &OsStr) -> bool {
    let v = value.to_string_lossy();
    if v.contains("hooks.slack.com/services/")
        || v.contains("PRIVATE KEY-----")
        || url_has_credentials(&v)
        || has_secret_setting(&v)
    {
        return true;
    }
    v.split(|c: char| c.is_whitespace() || matches!(c, ':' | ',' | ';' | '=' | '"' | '\'' | '/' | '@'))
        .any(looks_like_token)
}

fn url_has_credentials(v: &str) -> bool {
    v.match_indices("://").any(|(i, _)| {
        let rest = &v[i + 3..];
        let authority = rest.split(['/', '?', '#', ' ']).next().unwrap_or("");
        match authority.rsplit_once('@') {
            Some((user, _)) => user.contains(':') || user.len() >= 16,
            None => false,
        }
    })
}

/// A `key=value` setting with a secret-looking key and a value, as in a
/// connection string (`host=db password=…`, `…;Password=…;`,
/// `jdbc:…?user=u&password=…`, `AccountKey=…`) or a signed URL (`sig=…`).
fn has_secret_setting(v: &str) -> bool {
    v.split(|c: char| c.is_whitespace() || matches!(c, '?' | '&' | ';' | ','))
        .filter_map(|part| part.split_once('='))
        .any(|(key, value)| {
            let (key, value) = (key.trim(), value.trim());
            // A switch (`StrictHostKeyChecking=no`) is no secret.
            let switch = ["yes", "no", "true", "false", "on", "off", "ask"]
                .iter()
                .any(|w| value.eq_ignore_ascii_case(w));
            !key.is_empty()
                && !value.is_empty()
                && !switch
                && (is_secret_name(OsStr::new(key)) || SECRET_SETTINGS.iter().any(|s| key.eq_ignore_ascii_case(s)))
        })
}

fn looks_like_token(word: &str) -> bool {
    let tokenish = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    if word.len() >= 20 && tokenish(word) && TOKEN_PREFIXES.iter().any(|p| word.starts_with(p)) {
        return true;
    }
    // AWS access key ids.
    if word.len() == 20
        && (word.starts_with("AKIA") || word.starts_with("ASIA"))
        && word.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return true;
    }
    // A JWT: three base64url parts, the first a JSON header (`{"` is `eyJ`).
    word.starts_with("eyJ") && word.len() >= 30 && tokenish(word) && word.split('.').count() == 3
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
    fn secret_shaped_names_and_values_are_dropped() {
        let input = vars(&[
            ("MYSQL_PWD", "x"),
            (
                "SENTRY_DSN",
                "https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/1",
            ),
            ("CI_JOB_JWT", "x"),
            ("GH_PAT", "x"),
            ("NPM_CONFIG__AUTH", "x"),
            ("SSH_AUTH_SOCK", "/tmp/ssh/agent.1"),
            ("APP_SESSION", "x"),
            ("SLACK_WEBHOOK_URL", "x"),
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/app"),
            ("https_proxy", "http://user:pass@proxy:3128"),
            ("MY_VAR", "ghp_0123456789abcdefghijABCDEFGHIJ0123"),
            ("OTHER", "--flag=xoxb-1234-5678-abcdefghijkl"),
            ("AWS_ID", "AKIAIOSFODNN7EXAMPLE"),
            ("J", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlAAAA"),
            ("PWD", "/w"),
            ("OLDPWD", "/v"),
            ("GIT_AUTHOR_NAME", "A"),
            ("PATH", "/usr/bin:/bin"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("REPO", "ssh://git@github.com/a/b"),
            ("LANG", "sk-SK.UTF-8"),
            ("HOME", "/home/ghp_0123456789abcdefghijABCDEFGHIJ0123"),
            ("TOOL_DIR", "/opt/sk-learn/bin"),
            ("PG_CONN", "host=db user=app password=hunter2 dbname=x"),
            ("JDBC", "jdbc:postgresql://db/x?user=app&password=hunter2"),
            ("MSSQL", "Server=tcp:x;Database=y;User Id=u;Pwd=hunter2;"),
            ("AZ_STORE", "AccountName=a;AccountKey=c2VjcmV0;EndpointSuffix=x"),
            ("BLOB", "https://x.blob.core.windows.net/c?sv=2020&sig=abcd%2Bxyz"),
            (
                "DEPLOY_CERT",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n-----END OPENSSH PRIVATE KEY-----",
            ),
            ("HF", "hf_abcdefghijklmnopqrstuvwxyz123456"),
            ("LS_COLORS", "rs=0:di=01;34:ln=01;36"),
            ("GOFLAGS", "-mod=mod"),
            ("PG_OPTS", "host=db user=app sslmode=require"),
            ("GIT_SSH_COMMAND", "ssh -o StrictHostKeyChecking=no"),
        ]);
        let env = EnvPolicy::new(Inherit::All).apply(input);
        assert_eq!(
            names(&env),
            [
                "GIT_AUTHOR_NAME",
                "GIT_SSH_COMMAND",
                "GOFLAGS",
                "HOME",
                "HTTP_PROXY",
                "LANG",
                "LS_COLORS",
                "OLDPWD",
                "PATH",
                "PG_OPTS",
                "PWD",
                "REPO",
                "TOOL_DIR"
            ]
        );
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
