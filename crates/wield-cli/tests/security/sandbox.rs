//! The process sandbox: Unix sockets, the private temp dir, protected paths against renames, wield's own memory, the kill-tree.

use std::process::Command;

use serde_json::{Value, json};

use crate::support::{Ws, call_json, output, require_backends};

const BACKENDS: [&str; 2] = ["landlock", "bwrap"];

/// The arguments that pick a backend.
fn backend_args(backend: &str) -> Vec<String> {
    vec![
        "--set".into(),
        "sandbox.enabled=true".into(),
        "--set".into(),
        format!("sandbox.backend=\"{backend}\""),
    ]
}

/// `ws.wield()` run as the unprivileged user `nobody` (uid and gid
/// 65534), the workspace layout handed to it first.
fn wield_as_nobody(ws: &Ws) -> Command {
    let base = ws.ws.parent().unwrap();
    let status = Command::new("chown")
        .arg("-R")
        .arg("65534:65534")
        .arg(base)
        .status()
        .unwrap();
    assert!(status.success(), "cannot hand {} to nobody", base.display());
    let template = ws.wield();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(template.get_program())
        .current_dir(&ws.ws)
        .env_clear()
        .stdin(std::process::Stdio::null());
    for (k, v) in template.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd
}

/// `bash` with a backend, as root (`nobody = false`) or as nobody, with
/// extra variables in wield's own environment.
fn bash_with(ws: &Ws, backend: &str, nobody: bool, env: &[(&str, &str)], args: &Value) -> (i32, Value) {
    let mut cmd = if nobody { wield_as_nobody(ws) } else { ws.wield() };
    cmd.envs(env.iter().copied())
        .args(backend_args(backend))
        .args(["call", "bash", &args.to_string(), "--json"]);
    call_json(cmd)
}

/// Item 7: as root under Landlock, a command read `/proc/<wield>/environ`
/// and got every variable the scrubber had removed. Now wield is not
/// dumpable and no sandboxed command keeps a capability: neither its
/// environment nor its memory map can be read, under both backends, as
/// root or not.
#[test]
fn commands_cannot_read_wields_environment_or_memory() {
    let ws = Ws::new();
    require_backends(&ws);
    let secret = "s3cr3t-value-7f1e";
    // Every process named wield that the command can see: its environment
    // and its memory map. The helper's own capabilities are printed too.
    let probe = format!(
        "seen=0; for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = wield ] || continue; seen=$((seen+1)); \
         if tr '\\0' '\\n' < $d/environ 2>/dev/null | grep -q {secret}; then echo LEAK-environ $d; fi; \
         if head -c 64 $d/maps >/dev/null 2>&1 && [ -n \"$(head -c 64 $d/maps 2>/dev/null)\" ]; then echo LEAK-maps $d; fi; \
         done; echo seen=$seen; grep CapEff /proc/self/status"
    );
    for nobody in [false, true] {
        for backend in BACKENDS {
            let (_, v) = bash_with(
                &ws,
                backend,
                nobody,
                &[("WIELD_TEST_TOKEN", secret)],
                &json!({ "command": probe }),
            );
            let text = output(&v);
            let who = if nobody { "nobody" } else { "root" };
            assert!(!text.contains("LEAK"), "{backend} as {who}: {text}");
            assert!(text.contains("CapEff:\t0000000000000000"), "{backend} as {who}: {text}");
            if backend == "landlock" {
                // Without a PID namespace wield is in sight: the check saw it.
                assert!(!text.contains("seen=0"), "{backend} as {who}: wield not found: {text}");
            }
        }
    }
}
