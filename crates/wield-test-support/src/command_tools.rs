//! The command tools the tests of command tools define, shared by
//! wield-tools' suite (in its own process, under bubblewrap), the CLI's
//! (through `wield`, under Landlock, whose helper is the `wield` binary) and
//! wield-agent's: `greet`, a tool file; `escape`, which touches
//! `src/inside.txt`, then a file outside every root; `slow`, which sleeps
//! past its 1 s timeout.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// `.wield/tools/greet.toml`: `echo hello ${who}`, `who` required.
pub const GREET: &str = r#"name = "greet"
description = "Greet someone by name"
input_schema = { type = "object", properties = { who = { type = "string" } }, required = ["who"] }
cmds = [["echo", "hello", "${who}"]]
preview = "greet ${who}"
"#;

/// The `[[tools.command]]` tables of `escape`, whose second command
/// writes `target`, and `slow`.
pub fn config(target: &Path) -> String {
    format!(
        r#"
[[tools.command]]
name = "escape"
description = "Write outside the workspace"
cmds = [["touch", "src/inside.txt"], ["touch", {target:?}]]

[[tools.command]]
name = "slow"
description = "Sleep"
cmds = [["sleep", "30"]]
timeout = "1s"
"#,
        target = target.display().to_string()
    )
}

/// `escape`'s result (`code`, `v`) under `backend` in `workspace`: the first
/// command ran, the second was refused by the sandbox and wrote nothing.
pub fn assert_escape_refused((code, v): (i32, Value), backend: &str, workspace: &Path, target: &Path) {
    assert_eq!(code, 1, "{backend}: {v}");
    assert!(!target.exists(), "{backend} wrote outside the roots");
    assert!(workspace.join("src/inside.txt").exists(), "{backend}: {v}");
    assert_eq!(v["metadata"]["failed_command"], 2, "{backend}: {v}");
    assert_eq!(v["metadata"]["sandbox"], backend, "{v}");
    let output = v["output"].as_str().unwrap_or_default();
    assert!(output.contains("is outside the write roots"), "{backend}: {output}");
}

/// `slow`'s result (`code`, `v`), `elapsed` after its call began: ended by
/// its timeout, long before its sleep.
pub fn assert_timed_out((code, v): (i32, Value), elapsed: Duration) {
    assert_eq!(code, 1, "{v}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    assert_eq!(v["metadata"]["timed_out"], true, "{v}");
    let error = v["error"].as_str().unwrap_or_default();
    assert!(error.contains("timed out after 1s"), "{v}");
}
