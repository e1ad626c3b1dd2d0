//! A command line as approval rules see it: parsed by a real bash grammar
//! (tree-sitter-bash), never split as a string.
//!
//! Two readings come out of one parse ([`analyse`]):
//!
//! - **literal**: the line is exactly one simple command whose words are all
//!   literal — plain words, quoted text without expansions — with no
//!   assignment, comment, glob, brace or tilde, and redirections only from a
//!   file, to `/dev/null` or to another descriptor. Only such a line can be
//!   approved by an argument pattern. Whatever the grammar and bash might
//!   disagree on is refused here rather than guessed: the text between
//!   words must be plain blanks, words may hold only characters that mean
//!   nothing to the shell.
//! - **commands**: every simple command the line may run, anywhere in it
//!   (pipelines, lists, subshells, functions, substitutions), with its
//!   name's directory, quotes and escapes removed, wrappers unwrapped
//!   (`env`, `sudo`, `timeout`, `xargs`, …, `find -exec`), and the scripts
//!   of `bash -c`, `sh -c`, `eval` and of quoted text that holds a
//!   substitution parsed in turn. Deny rules are matched against these. A
//!   line that cannot be accounted for — a syntax error, a command name that
//!   is not literal, a shell reading its commands from its input — is
//!   marked opaque and matches every deny rule of its tool.

use tree_sitter::{Node, Parser};
use wield_core::approval::{CommandLine, RunCommand};

/// How deep scripts inside scripts (`bash -c "eval '…'"`) are followed
/// before the line is taken as opaque.
const MAX_DEPTH: usize = 8;

/// Programs that run the rest of their arguments as a command (after
/// options of their own, which every later word is tried as the start of).
const WRAPPERS: &[&str] = &[
    "env",
    "command",
    "exec",
    "nice",
    "nohup",
    "timeout",
    "xargs",
    "sudo",
    "doas",
    "time",
    "stdbuf",
    "setsid",
    "ionice",
    "chrt",
    "taskset",
    "flock",
    "unbuffer",
    "builtin",
    "busybox",
    "nsenter",
    "unshare",
    "chroot",
    "runuser",
    "su",
    "watch",
    "strace",
    "ltrace",
    "fakeroot",
    "firejail",
    "script",
    "parallel",
    "torsocks",
    "proxychains",
    "caffeinate",
    "systemd-run",
    "sg",
    "numactl",
    "cpulimit",
    "trickle",
    "catchsegv",
    "valgrind",
    "setpriv",
    "prlimit",
    "bwrap",
    "setarch",
    "linux32",
    "linux64",
    "capsh",
    "pkexec",
    "perf",
    "gdb",
    "rlwrap",
    "sshpass",
    "faketime",
    "dbus-launch",
    "xvfb-run",
    "chronic",
    "sem",
    "ip",
    "proot",
    "fakechroot",
    "schroot",
    "start-stop-daemon",
    "daemonize",
    "toybox",
];

/// Wrappers that append arguments read at run time to the command.
const APPENDING: &[&str] = &["xargs", "parallel"];

/// Shells whose `-c` argument is a script, and that read commands from their
/// input without one.
const SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash", "fish", "csh", "tcsh",
];

/// Variables whose value a program runs as a command line (git's pager and
/// editor, `ssh` for git, `less`'s input filter, bash's prompt command).
const PROGRAM_VARS: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
    "PROMPT_COMMAND",
];

/// Variables naming a script a shell reads as it starts (`bash -c`, `sh`).
const STARTUP_VARS: &[&str] = &["BASH_ENV", "ENV"];

/// `find` actions (and `fd` options) whose following words, up to `;` or
/// `+`, are a command.
const FIND_EXEC: &[&str] = &[
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-x",
    "--exec",
    "-X",
    "--exec-batch",
];

/// git options whose value is a command line: `rebase --exec`,
/// `difftool --extcmd`.
const GIT_EXEC: &[&str] = &["-x", "--exec", "--extcmd"];

/// Parse `text` and read it both ways (see the module documentation).
pub fn analyse(text: &str) -> CommandLine {
    let text = text.trim();
    let mut line = CommandLine {
        text: text.to_owned(),
        ..CommandLine::default()
    };
    let mut found = Found::default();
    match parse(text) {
        Some(tree) => {
            let root = tree.root_node();
            line.literal = literal_line(root, text.as_bytes());
            collect(root, text.as_bytes(), 0, &mut found);
        }
        None => found.opaque = Some("the shell grammar could not parse it".into()),
    }
    line.commands = found.commands;
    line.opaque = found.opaque;
    line
}

fn parse(text: &str) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    parser.parse(text, None)
}

/// How many scripts inside one line (quoted text, `-c` arguments) are
/// parsed in all before the line is taken as opaque.
const MAX_NESTED: usize = 32;

/// How many words the commands read from one line may hold in all (a
/// wrapper's every suffix is a command): past that the line is opaque, so
/// a long line of wrappers costs bounded time.
const MAX_WORDS: usize = 20_000;

/// What the deny reading gathers.
#[derive(Default)]
struct Found {
    commands: Vec<RunCommand>,
    opaque: Option<String>,
    /// Nested scripts parsed so far.
    parsed: usize,
    /// Words in `commands`.
    words: usize,
}

impl Found {
    fn opaque(&mut self, why: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(why.into());
        }
    }
}

fn text_of<'s>(node: Node<'_>, src: &'s [u8]) -> &'s str {
    node.utf8_text(src).unwrap_or("")
}

fn children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

// ---------------------------------------------------------------------------
// The literal reading.

/// The words of a line that is one simple command of literal words.
fn literal_line(root: Node<'_>, src: &[u8]) -> Option<Vec<String>> {
    if root.has_error() {
        return None;
    }
    let statements = children(root);
    let [statement] = statements.as_slice() else {
        return None;
    };
    let (command, redirects) = match statement.kind() {
        "command" => (*statement, Vec::new()),
        "redirected_statement" => {
            let parts = children(*statement);
            let body = statement.child_by_field_name("body")?;
            let redirects: Vec<Node<'_>> = parts.into_iter().filter(|n| n.id() != body.id()).collect();
            if body.kind() != "command" {
                return None;
            }
            (body, redirects)
        }
        _ => return None,
    };
    if !blank_between(root, &[*statement], src, true) || !blank_between(*statement, &children(*statement), src, false) {
        return None;
    }
    for r in &redirects {
        if !harmless_redirect(*r, src) {
            return None;
        }
    }
    let parts = children(command);
    if !blank_between(command, &parts, src, false) {
        return None;
    }
    // Two words with nothing between them are one word to bash, whatever
    // the grammar made of them; only a redirection's operator separates
    // without a blank.
    let is_redirect = |n: &Node<'_>| n.kind().ends_with("redirect");
    if parts
        .windows(2)
        .any(|w| w[0].end_byte() == w[1].start_byte() && !is_redirect(&w[0]) && !is_redirect(&w[1]))
    {
        return None;
    }
    let mut words = Vec::new();
    for part in parts {
        match part.kind() {
            "command_name" => {
                let [name] = children(part).try_into().ok()?;
                let word = literal_word(name, src)?;
                // `a=b` as a name would be an assignment to bash.
                if word.is_empty() || word.contains('=') {
                    return None;
                }
                words.push(word);
            }
            "file_redirect" | "herestring_redirect" => {
                if !harmless_redirect(part, src) {
                    return None;
                }
            }
            _ => words.push(literal_word(part, src)?),
        }
    }
    (!words.is_empty()).then_some(words)
}

/// Whether the text of `parent` outside `parts` is blanks only (no
/// operator, comment or escape the grammar may have read differently), and
/// no newline unless `lines` (a newline ends a command for bash, whatever
/// the grammar made of it).
fn blank_between(parent: Node<'_>, parts: &[Node<'_>], src: &[u8], lines: bool) -> bool {
    let mut at = parent.start_byte();
    let blank = |from: usize, to: usize| {
        src.get(from..to)
            .is_some_and(|gap| gap.iter().all(|b| matches!(b, b' ' | b'\t') || (lines && *b == b'\n')))
    };
    for p in parts {
        if !blank(at, p.start_byte()) {
            return false;
        }
        at = at.max(p.end_byte());
    }
    blank(at, parent.end_byte())
}

/// Characters that mean nothing to the shell in an unquoted word.
fn plain_char(c: char) -> bool {
    c.is_alphanumeric() || "-_./,:=+@%^".contains(c)
}

/// The value of a word made only of literal text, or `None`.
fn literal_word(node: Node<'_>, src: &[u8]) -> Option<String> {
    let text = text_of(node, src);
    match node.kind() {
        "word" | "number" => unescape_word(text),
        "raw_string" => text.strip_prefix('\'')?.strip_suffix('\'').map(str::to_owned),
        "string" => {
            if children(node)
                .iter()
                .any(|c| c.is_named() && c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            unescape_double_quoted(inner)
        }
        "concatenation" => children(node)
            .into_iter()
            .map(|c| literal_word(c, src))
            .collect::<Option<Vec<_>>>()
            .map(|parts| parts.concat()),
        _ => None,
    }
}

/// An unquoted word: plain characters and backslash escapes only.
fn unescape_word(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next()? {
                '\n' => {}
                escaped => out.push(escaped),
            }
        } else if plain_char(c) {
            out.push(c);
        } else {
            return None;
        }
    }
    Some(out)
}

/// The inside of `"…"` without expansions: no `$` or backquote at all, and
/// the escapes bash honours there.
fn unescape_double_quoted(inner: &str) -> Option<String> {
    if inner.contains(['$', '`']) {
        return None;
    }
    let mut out = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('"' | '\\') => out.extend(chars.next()),
                Some('\n') => {
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// A redirection that neither writes a file nor runs anything: input from a
/// literal file or here-string, output to `/dev/null`, or a descriptor
/// duplicated or closed.
fn harmless_redirect(node: Node<'_>, src: &[u8]) -> bool {
    let parts = children(node);
    if !blank_between(node, &parts, src, false) {
        return false;
    }
    let op = parts.iter().find(|p| !p.is_named()).map(|p| p.kind()).unwrap_or("");
    let targets: Vec<Node<'_>> = parts
        .iter()
        .copied()
        .filter(|p| p.is_named() && p.kind() != "file_descriptor")
        .collect();
    let [target] = targets.as_slice() else {
        return false;
    };
    let Some(value) = literal_word(*target, src) else {
        return false;
    };
    match (node.kind(), op) {
        ("herestring_redirect", _) => true,
        // Not `/dev/tcp/…`, which bash turns into a connection.
        ("file_redirect", "<") => value == "/dev/null" || !value.starts_with("/dev/"),
        ("file_redirect", ">" | ">>" | "&>" | "&>>" | ">|") => value == "/dev/null",
        ("file_redirect", ">&" | "<&") => {
            value == "-" || (!value.is_empty() && value.trim_end_matches('-').chars().all(|c| c.is_ascii_digit()))
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// The deny reading.

/// Gather every command of the tree at `root` (a line, or a script inside
/// one at `depth`).
fn collect(root: Node<'_>, src: &[u8], depth: usize, found: &mut Found) {
    // An explicit stack: a deeply nested line must not exhaust ours.
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if node.is_error() || node.is_missing() {
            found.opaque("the shell grammar could not parse all of it");
        }
        match node.kind() {
            "command" => command(node, src, depth, found),
            "variable_assignment" => {
                let name = node.child_by_field_name("name").map(|n| text_of(n, src));
                let value = node.child_by_field_name("value");
                let literal = value.map_or(Some(String::new()), |v| literal_word(v, src));
                assignment(name.unwrap_or(""), literal.as_deref(), depth, found);
            }
            "comment" if !comment_starts_a_word(node, src) => {
                found.opaque("a `#` the grammar read as a comment where bash may not");
            }
            "raw_string" | "ansi_c_string" | "string" => {
                // Quoted text holding a substitution may be run later
                // (`eval`, arithmetic on a variable, `${x@P}`): read it as
                // the script it may become. Substitutions the grammar saw
                // inside double quotes are visited as they are; only
                // escaped ones are read again.
                let text = text_of(node, src);
                let inner = text.trim_start_matches('$').trim_matches(['\'', '"']);
                if node.kind() != "string" && (inner.contains("$(") || inner.contains('`')) {
                    nested(inner, depth, found, false);
                } else if node.kind() == "string" && (inner.contains("\\$(") || inner.contains("\\`")) {
                    nested(&inner.replace('\\', ""), depth, found, false);
                }
            }
            _ => {}
        }
        stack.extend(children(node));
    }
}

/// Whether a comment begins where bash begins one: at the start of a word,
/// after an unescaped blank or an operator.
fn comment_starts_a_word(node: Node<'_>, src: &[u8]) -> bool {
    let at = node.start_byte();
    let Some(before) = at.checked_sub(1) else {
        return true;
    };
    if !matches!(src[before], b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')') {
        return false;
    }
    // The blank or operator itself must not be escaped.
    let escapes = src[..before].iter().rev().take_while(|b| **b == b'\\').count();
    escapes % 2 == 0
}

/// A script inside the line (`bash -c`, `eval`, quoted text): its commands
/// are the line's; when `strict`, its being opaque makes the line opaque.
fn nested(script: &str, depth: usize, found: &mut Found, strict: bool) {
    if depth >= MAX_DEPTH || found.parsed >= MAX_NESTED {
        found.opaque("scripts nested too deeply or too often to follow");
        return;
    }
    found.parsed += 1;
    let Some(tree) = parse(script) else {
        if strict {
            found.opaque("a nested script the shell grammar could not parse");
        }
        return;
    };
    let mut inner = Found {
        parsed: found.parsed,
        words: found.words,
        ..Found::default()
    };
    collect(tree.root_node(), script.as_bytes(), depth + 1, &mut inner);
    found.commands.extend(inner.commands);
    found.parsed = inner.parsed;
    found.words = inner.words;
    if strict && let Some(why) = inner.opaque {
        found.opaque(why);
    }
}

/// `name=value` before a command, in `export`, or as a word of `env`:
/// a value some program later runs as a command line is read as one
/// (`None` when it is not literal, which makes the line opaque).
fn assignment(name: &str, value: Option<&str>, depth: usize, found: &mut Found) {
    if PROGRAM_VARS.contains(&name) || name.starts_with("GIT_CONFIG_VALUE_") {
        match value {
            Some(v) => nested(v.strip_prefix('!').unwrap_or(v), depth, found, true),
            None => found.opaque(format!("`{name}` is given a command line that is not literal")),
        }
    } else if name == "GIT_CONFIG_PARAMETERS" || name.starts_with("BASH_FUNC_") {
        found.opaque(format!("`{name}` may hold commands that a program runs"));
    } else if STARTUP_VARS.contains(&name) && value.is_none_or(reads_input) {
        found.opaque(format!("`{name}` names a script that is not a named file"));
    }
}

/// One simple command: its literal words (up to the first that is not),
/// then what it runs.
fn command(node: Node<'_>, src: &[u8], depth: usize, found: &mut Found) {
    let mut words = Vec::new();
    let mut open = false;
    // The grammar gives a redirection every word after its operator; bash
    // only the first, the rest are the command's arguments (`exec >f rm x`
    // runs `rm x`), wherever the redirection was attached.
    let mut parts = Vec::new();
    for part in children(node) {
        if part.kind() == "file_redirect" {
            parts.extend(redirect_extras(part));
        } else {
            parts.push(part);
        }
    }
    if let Some(parent) = node.parent()
        && parent.kind() == "redirected_statement"
        && parent.child_by_field_name("body").is_some_and(|b| b.id() == node.id())
    {
        for r in children(parent) {
            if r.kind() == "file_redirect" {
                parts.extend(redirect_extras(r));
            }
        }
    }
    // Two words with nothing between them but line continuations are one
    // word to bash, whatever the grammar made of them (`r\<newline>m` is
    // `rm`).
    let word = |n: &Node<'_>| n.is_named() && !n.kind().ends_with("redirect");
    let joined = |a: &Node<'_>, b: &Node<'_>| {
        src.get(a.end_byte()..b.start_byte())
            .is_some_and(|gap| gap.chunks(2).all(|c| c == b"\\\n"))
    };
    if parts
        .windows(2)
        .any(|w| word(&w[0]) && word(&w[1]) && joined(&w[0], &w[1]))
    {
        found.opaque("words the grammar split where bash joins them");
        return;
    }
    for part in parts {
        match part.kind() {
            "command_name" => {
                let name = children(part).first().and_then(|n| literal_word(*n, src));
                match name {
                    Some(n) => words.push(n),
                    None => {
                        found.opaque(format!("the command name `{}` is not literal text", text_of(part, src)));
                        return;
                    }
                }
            }
            "variable_assignment" | "file_redirect" | "herestring_redirect" | "subshell" | "comment" => {}
            _ if !part.is_named() => {}
            _ if open => {}
            _ => match literal_word(part, src) {
                Some(w) => words.push(w),
                None => open = true,
            },
        }
    }
    if words.is_empty() {
        return;
    }
    run(words, open, depth, found);
}

/// The words the grammar hung on a redirection after its target.
fn redirect_extras(redirect: Node<'_>) -> Vec<Node<'_>> {
    children(redirect)
        .into_iter()
        .filter(|n| n.is_named() && n.kind() != "file_descriptor")
        .skip(1)
        .collect()
}

/// `words` as a command that runs: its name normalised, then wrappers,
/// shells and `eval` unwrapped.
fn run(mut words: Vec<String>, open: bool, depth: usize, found: &mut Found) {
    if depth >= MAX_DEPTH {
        found.opaque("wrappers nested too deeply to follow");
        return;
    }
    found.words += words.len();
    if found.words > MAX_WORDS {
        found.opaque("too many commands to follow");
        return;
    }
    let Some(first) = words.first_mut() else {
        return;
    };
    // A name with blanks came from a wrapper's quoted argument
    // (`env -S 'rm x'`, `watch 'rm x'`): read it as a script.
    if first.contains([' ', '\t', '\n']) {
        // An option holding one (`env -S'rm x'`, `--split-string=…`)
        // cannot be told from the rest of its text.
        if first.starts_with('-') {
            found.opaque(format!("the option `{first}` may hold a command line"));
            return;
        }
        let script = std::mem::take(first);
        nested(&script, depth, found, true);
        return;
    }
    // `env NAME=value …`: a wrapper's assignment.
    if let Some((name, value)) = first.split_once('=')
        && !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        let value = value.to_owned();
        assignment(name, Some(&value), depth, found);
        return;
    }
    *first = normalise_name(first);
    let name = first.clone();
    found.commands.push(RunCommand {
        words: words.clone(),
        open,
    });
    let args = &words[1..];
    if SHELLS.contains(&name.as_str()) {
        shell(args, open, depth, found);
    } else if name == "eval" {
        if open {
            found.opaque("`eval` of text that is not literal");
        } else {
            nested(&args.join(" "), depth, found, true);
        }
    } else if name == "trap" {
        // `trap 'rm x' EXIT` runs its first argument later.
        match args.first() {
            Some(script) if !script.starts_with('-') => nested(script, depth, found, true),
            None if open => found.opaque("`trap` of a command that is not literal"),
            _ => {}
        }
    } else if (name == "alias" && args.iter().any(|a| a.contains('=')))
        || (name == "hash" && args.iter().any(|a| a.starts_with("-p")))
    {
        found.opaque(format!("`{name}` may give a command another name"));
    } else if name == "source" || name == "." {
        let from_input = match args.first() {
            Some(file) => reads_input(file),
            None => open,
        };
        if from_input {
            found.opaque("`source` of a script that is not a named file");
        }
    } else if name == "git" {
        git_commands(args, open, depth, found);
    } else if matches!(name.as_str(), "find" | "fd" | "fdfind") {
        for (i, w) in args.iter().enumerate() {
            if FIND_EXEC.contains(&w.as_str()) {
                let rest = &args[i + 1..];
                let end = rest.iter().position(|w| w == ";" || w == "+");
                if found.words > MAX_WORDS {
                    return;
                }
                let cmd = rest[..end.unwrap_or(rest.len())].to_vec();
                run(cmd, open && end.is_none(), depth + 1, found);
            }
        }
    } else if WRAPPERS.contains(&name.as_str()) {
        let appends = APPENDING.contains(&name.as_str());
        for i in 0..args.len() {
            if found.words > MAX_WORDS {
                return;
            }
            run(args[i..].to_vec(), open || appends, depth + 1, found);
        }
        if args.is_empty() && open {
            found.opaque(format!("`{name}` runs a command that is not literal"));
        }
    }
}

/// git's arguments that are command lines: `-c KEY=VALUE` for a key whose
/// value git runs (`alias.x=!rm x`, `core.pager`, …), `rebase --exec`,
/// `difftool --extcmd`, `submodule foreach` and `bisect run`.
fn git_commands(args: &[String], open: bool, depth: usize, found: &mut Found) {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if let Some(at) = ["foreach", "run"].iter().find_map(|w| (a == *w).then_some(i + 1))
            && i > 0
            && matches!(args[i - 1].as_str(), "submodule" | "bisect")
        {
            let rest: Vec<String> = args[at..].iter().skip_while(|w| w.starts_with("--")).cloned().collect();
            if args[i - 1] == "submodule" {
                nested(&rest.join(" "), depth, found, true);
            } else {
                run(rest, open, depth + 1, found);
            }
            return;
        }
        if let Some(value) = ["--exec=", "--extcmd="].iter().find_map(|p| a.strip_prefix(p)) {
            nested(value, depth, found, true);
        } else if GIT_EXEC.contains(&a) {
            match args.get(i + 1) {
                Some(value) => nested(value, depth, found, true),
                None if open => found.opaque(format!("`git {a}` of a command that is not literal")),
                None => {}
            }
        }
        if a == "-c" {
            match args.get(i + 1).and_then(|kv| kv.split_once('=')) {
                Some((key, value)) if super::git_watch::is_watched(&key.to_ascii_lowercase()) => {
                    nested(value.strip_prefix('!').unwrap_or(value), depth, found, true);
                }
                Some(_) => {}
                None if open && i + 1 == args.len() => {
                    found.opaque("`git -c` of a setting that is not literal");
                }
                None => {}
            }
            i += 1;
        }
        i += 1;
    }
}

/// A command name as it is matched: without its directory (`/bin/rm`,
/// `./rm` → `rm`).
fn normalise_name(name: &str) -> String {
    match name.rsplit_once('/') {
        Some((_, base)) if !base.is_empty() => base.to_owned(),
        _ => name.to_owned(),
    }
}

/// A file name that is the process's input.
fn reads_input(file: &str) -> bool {
    file == "-" || file.starts_with("/dev/") || file.starts_with("/proc/")
}

/// A shell's arguments: its `-c` script is read in turn; without one it
/// runs a script file (which no rule can see into) or reads its commands
/// from its input (which makes the line opaque).
fn shell(args: &[String], open: bool, depth: usize, found: &mut Found) {
    let mut dash_c = false;
    let mut reads_stdin = false;
    let mut operands = Vec::new();
    let mut i = 0;
    let mut options_done = false;
    while i < args.len() {
        let a = args[i].as_str();
        if !options_done && (a == "--" || a == "-") {
            options_done = true;
        } else if !options_done && matches!(a, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 1;
        } else if !options_done && a.starts_with("--") {
        } else if !options_done && (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            dash_c |= a.starts_with('-') && a.contains('c');
            reads_stdin |= a.starts_with('-') && a.contains('s');
        } else {
            operands.push(a);
        }
        i += 1;
    }
    if dash_c {
        match operands.first() {
            Some(script) => nested(script, depth, found, true),
            None => found.opaque("a shell's `-c` script is not literal text"),
        }
    } else if reads_stdin || open || operands.first().is_none_or(|f| reads_input(f)) {
        found.opaque("a shell reading its commands from its input");
    }
}

#[cfg(test)]
mod tests;
