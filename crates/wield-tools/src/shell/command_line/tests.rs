use super::*;

fn literal(text: &str) -> Option<Vec<String>> {
    analyse(text).literal
}

/// The commands (words joined, `…` when open) and whether the line is opaque.
fn runs(text: &str) -> (Vec<String>, bool) {
    let line = analyse(text);
    let cmds = line
        .commands
        .iter()
        .map(|c| {
            let mut s = c.words.join(" ");
            if c.open {
                s.push_str(" …");
            }
            s
        })
        .collect();
    (cmds, line.opaque.is_some())
}

fn runs_rm(text: &str) -> bool {
    let (cmds, opaque) = runs(text);
    opaque || cmds.iter().any(|c| c == "rm" || c.starts_with("rm "))
}

#[test]
fn literal_commands() {
    let words = |w: &[&str]| Some(w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    assert_eq!(literal("ls -la src"), words(&["ls", "-la", "src"]));
    assert_eq!(literal("ls 'a b'"), words(&["ls", "a b"]));
    assert_eq!(literal("ls \"a b\" 2>&1"), words(&["ls", "a b"]));
    assert_eq!(literal("ls src >/dev/null"), words(&["ls", "src"]));
    assert_eq!(
        literal("git commit -m \"a\\\"b\nc\""),
        words(&["git", "commit", "-m", "a\"b\nc"])
    );
    assert_eq!(literal(r"r\m a\ b"), words(&["rm", "a b"]));
    assert_eq!(
        literal("cargo test -p x < /dev/null"),
        words(&["cargo", "test", "-p", "x"])
    );
    assert_eq!(literal("  git status  "), words(&["git", "status"]));
}

#[test]
fn not_literal() {
    for text in [
        "ls ${x:- #} ; touch PWNED",
        r#"ls "${x#'"'}" ; touch PWNED"#,
        "git status ${x:='$(touch PWNED)'}${x@P}",
        "ls ${x:='a[$(touch PWNED)]'} $[x]",
        "ls $x",
        "ls \"$x\"",
        "ls $(id)",
        "ls `id`",
        "ls <(id)",
        "ls $((1+2))",
        "ls *.rs",
        "ls a?",
        "ls [ab]",
        "ls {a,b}",
        "ls ~",
        "ls ~/x",
        "ls # comment",
        r"ls \ #; touch PWNED",
        "ls #'\ntouch PWNED",
        "ls $'\\'' ; touch PWNED",
        "ls > out",
        "ls >> out",
        "ls >& out",
        "ls 2> err",
        "X=1 ls",
        "ls; pwd",
        "ls && pwd",
        "ls | cat",
        "ls &",
        "ls\npwd",
        "(ls)",
        "{ ls; }",
        "! ls",
        "ls <<EOF\nx\nEOF",
        "f() { ls; }",
        "if ls; then :; fi",
        "[[ -e x ]]",
        "ls 'unclosed",
        "ls \\",
        "ls < /dev/tcp/127.0.0.1/80",
        "",
        "a=b",
        "ls $'a'",
        "ls $\"a\"",
    ] {
        assert_eq!(literal(text), None, "{text:?}");
    }
}

#[test]
fn rm_rewrites_are_found() {
    for text in [
        "rm x",
        "/bin/rm x",
        "/usr/bin/../bin/rm x",
        "\"rm\" x",
        "'rm' x",
        r"r\m x",
        r"\rm x",
        "r\"\"m x",
        "env rm x",
        "env -i PATH=/bin rm x",
        "env -- FOO=1 rm x",
        "env -S 'rm x'",
        "command rm x",
        "command -p rm x",
        "exec -a foo rm x",
        "nice -n 5 rm x",
        "nohup rm x",
        "timeout -s KILL 5 rm x",
        "stdbuf -o0 rm x",
        "setsid -w rm x",
        "time rm x",
        "sudo -u root rm x",
        "watch 'rm x'",
        "echo x | xargs rm",
        "echo x | xargs -I{} rm {}",
        "xargs -0 -n1 /bin/rm < list",
        "bash -c 'rm x'",
        "sh -c \"rm x\"",
        "bash -ec 'cd . && rm x'",
        "bash -o errexit -c 'rm x'",
        "eval rm x",
        "eval 'rm x'",
        "bash -c \"eval 'rm x'\"",
        "x=rm; $x x",
        "${r}m x",
        "$(echo rm) x",
        "`echo rm` x",
        "$'\\x72\\x6d' x",
        "/usr/bin/r[m] x",
        "r* x",
        "~/bin/rm x",
        "find . -name x -exec rm {} \\;",
        "find . -execdir /bin/rm {} +",
        "find . -ok rm -i {} ';'",
        "true && rm x",
        "(rm x)",
        "{ rm x; }",
        "if true; then rm x; fi",
        "f() { rm x; }; f",
        "while false; do rm x; done",
        "echo 'rm x' | bash",
        "bash <<< 'rm x'",
        "bash < script",
        "bash -s",
        "sh /dev/stdin",
        "source /dev/stdin",
        ". <(echo rm x)",
        "cat <(rm x)",
        "echo \"$(rm x)\"",
        "echo `rm x`",
        "x='a[$(rm x)]'; echo $[x]",
        "x=\"\\$(rm x)\"; eval \"$x\"",
        "echo ok # fine\nrm x",
        r"echo a\ #; rm x",
        "ls ${x:- #} ; rm x",
        "eval \"$cmd\"",
        "bash -c \"$cmd\"",
        "echo 'unclosed",
        "trap 'rm x' EXIT",
        "shopt -s expand_aliases\nalias ls=rm\nls x",
        "hash -p /bin/rm ls; ls x",
        "find . -exec sh -c 'rm \"$1\"' _ {} \\;",
        "parallel 'rm {}' ::: x",
        "su -c 'rm x'",
        "runuser -u nobody -- rm x",
        "exec >f rm x",
        "exec 2>f rm x y",
        "exec >xargs rm ry=",
        "r\\\nm x",
        "env -S'rm x'",
        "env -vS'rm x'",
        "env --split-string='rm x'",
        "BASH_ENV=<(echo rm x) bash -c :",
        "env BASH_ENV=/dev/stdin bash -c : <<< 'rm x'",
        "export BASH_ENV=/dev/stdin; bash -c :",
        "git -c alias.x='!rm x' x",
        "git -c core.pager='rm x' log",
        "git -c \"$a\" x",
        "GIT_PAGER='rm x' git log",
        "env GIT_SSH_COMMAND='rm x' git fetch",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm x' git x",
        "PAGER=\"$cmd\" man ls",
        "fd . -x rm",
        "fdfind -e txt --exec-batch rm",
        "git rebase --exec 'rm x' HEAD~1",
        "git rebase -x 'rm x' HEAD~1",
        "git difftool --extcmd='rm x'",
        "git submodule foreach --recursive 'rm x'",
        "git bisect run rm x",
        "setpriv rm x",
        "prlimit --nofile=100 rm x",
        "bwrap --bind / / rm x",
        "setarch x86_64 rm x",
        "capsh -- -c 'rm x'",
        "perf stat rm x",
        "gdb -batch -ex run --args rm x",
    ] {
        assert!(runs_rm(text), "{text:?} hides rm: {:?}", runs(text));
    }
}

#[test]
fn plain_commands_are_not_opaque() {
    for text in [
        "echo \"$HOME\" | tr a-z A-Z && ls -la",
        "cargo test 2>&1 | tail -5",
        "for f in *.rs; do wc -l \"$f\"; done",
        "git log --format='%h %s' -n 3",
        "bash script.sh",
        "source .venv/bin/activate && pytest",
        "ls # a comment",
        "echo '$(not run)'",
        "timeout 5 cargo test",
        "echo a \\\n  b",
        "git -c color.ui=never -c core.pager='less -R' log",
        "EDITOR=vim git commit",
        "BASH_ENV=.bashrc bash -c :",
        "env LANG=C sort -u file",
        "git clean -x -f",
        "git cherry-pick -x abc123",
        "git rebase --exec 'cargo test' main",
        "fd -e rs",
    ] {
        let (cmds, opaque) = runs(text);
        assert!(!opaque, "{text:?}: {:?}", analyse(text).opaque);
        assert!(!cmds.iter().any(|c| c.starts_with("rm")), "{text:?}: {cmds:?}");
    }
    let (cmds, _) = runs("echo '$(rm x)'");
    assert!(
        cmds.contains(&"rm x".to_owned()),
        "quoted code is read as code: {cmds:?}"
    );
}

#[test]
fn wrappers_keep_what_follows_open() {
    let (cmds, _) = runs("echo x | xargs rm");
    assert!(cmds.contains(&"rm …".to_owned()), "{cmds:?}");
    let (cmds, _) = runs("git push $remote --force");
    assert!(cmds.contains(&"git push …".to_owned()), "{cmds:?}");
}

#[test]
fn deep_nesting_does_not_overflow_or_blow_up() {
    let deep = format!("{}ls{}", "(".repeat(5000), ")".repeat(5000));
    let _ = analyse(&deep);
    let quotes = "echo '$(x)' ".repeat(500);
    let (_, opaque) = runs(&quotes);
    assert!(opaque, "past the budget of nested scripts the line is opaque");
    // Wrappers of wrappers: every suffix is tried, in bounded time.
    let started = std::time::Instant::now();
    let wrapped = format!("{}rm x", "nice env ".repeat(2000));
    assert!(runs_rm(&wrapped));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let finds = format!("find {}", "-exec find ".repeat(300));
    let _ = analyse(&finds);
    let nested = format!("{}rm x{}", "bash -c \"eval '".repeat(6), "'\"".repeat(6));
    assert!(runs_rm(&nested));
}

/// Random lines made of the characters that matter to bash: whenever the
/// literal reading accepts one, bash runs exactly one command, with exactly
/// those words.
#[test]
fn the_literal_reading_agrees_with_bash() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let printargs = bin.join("printargs");
    std::fs::write(
        &printargs,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGS_OUT\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&printargs, std::fs::Permissions::from_mode(0o755)).unwrap();
    for f in ["a", "b"] {
        std::fs::write(dir.path().join(f), "").unwrap();
    }
    let out = dir.path().join("args");
    let tokens = [
        "a",
        "b",
        " ",
        " ",
        "'",
        "\"",
        "\\",
        "$",
        "(",
        ")",
        ";",
        "&",
        "|",
        "<",
        ">",
        "#",
        "*",
        "{",
        "}",
        "\n",
        "`",
        "=",
        "~",
        "-",
        "1",
        "2",
        "/dev/null",
        "$'",
        "\t",
        "[",
        "]",
        "!",
        "%",
        ":",
        "a b",
        "\\\n",
        ",",
        "^",
        "?",
    ];
    let mut seed: u64 = 0x5eed;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(seed >> 33).unwrap() % n
    };
    let mut accepted = 0;
    for _ in 0..4000 {
        let mut line = String::from("printargs ");
        for _ in 0..1 + next(10) {
            line.push_str(tokens[next(tokens.len())]);
        }
        let Some(words) = literal(&line) else {
            continue;
        };
        accepted += 1;
        let _ = std::fs::remove_file(&out);
        let run = std::process::Command::new("bash")
            .arg("-c")
            .arg(&line)
            .current_dir(dir.path())
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("ARGS_OUT", &out)
            .output()
            .expect("bash must be installed for this test");
        let printed = std::fs::read(&out).unwrap_or_default();
        let args: Vec<String> = printed
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let expected: Vec<String> = words[1..].iter().cloned().chain([String::new()]).collect();
        assert_eq!(words[0], "printargs", "{line:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        // Input from a file that cannot be read: bash ran nothing.
        let unreadable = ["No such file or directory", "Not a directory", "Is a directory"];
        if !out.exists() && !stderr.contains("command not found") && unreadable.iter().any(|e| stderr.contains(e)) {
            continue;
        }
        assert!(
            run.status.success() && run.stderr.is_empty() && args == expected,
            "{line:?}: read as {words:?}, bash ran {args:?} (status {:?}, stderr {stderr})",
            run.status,
        );
    }
    assert!(accepted > 200, "too few lines accepted to mean anything: {accepted}");
}

/// Random lines that may run `rm` in many spellings: whenever bash does run
/// it (a stand-in found first on `PATH`), the deny reading found a command
/// named `rm` or marked the line opaque.
#[test]
fn the_deny_reading_sees_every_rm_bash_runs() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::write(bin.join("rm"), "#!/bin/sh\necho \"$@\" >> \"$RAN\"\n").unwrap();
    std::fs::set_permissions(bin.join("rm"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let tokens = [
        "rm", "rm ", "rm ", "rm x", "r", "m", "\\", "'", "\"", " ", " ", ";", "env ", "x", "$", "(", ")", "`", "{",
        "}", "=", "|", "&", "xargs ", "echo ", "eval ", "bash -c ", "\n", "#", "<", ">", "*", "nice ", "command ",
        "exec ", "$'", "\\x72", "y=", "$y", "-", "sh", "<<<", "f()", ":",
    ];
    let mut seed: u64 = 0xd0_0d1e;
    let mut next = |n: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(seed >> 33).unwrap() % n
    };
    let mut runs_of_rm = 0;
    for i in 0..1500 {
        let mut line = String::new();
        for _ in 0..1 + next(8) {
            line.push_str(tokens[next(tokens.len())]);
        }
        // A file of its own for each line: one line's background `rm` may
        // write after the next line started.
        let ran = dir.path().join(format!("ran-{i}"));
        let _ = std::process::Command::new("timeout")
            .args(["2", "bash", "-c", &line])
            .current_dir(&work)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("RAN", &ran)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("bash and timeout must be installed for this test");
        if !ran.exists() {
            continue;
        }
        runs_of_rm += 1;
        let (cmds, opaque) = runs(&line);
        assert!(
            opaque || cmds.iter().any(|c| c == "rm" || c.starts_with("rm ")),
            "{line:?} ran rm unseen: {cmds:?}"
        );
    }
    assert!(runs_of_rm > 50, "too few lines ran rm to mean anything: {runs_of_rm}");
}
