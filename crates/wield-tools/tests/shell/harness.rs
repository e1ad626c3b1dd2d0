//! A workspace laid out so that the sandbox's roots are known exactly, and
//! calls of the bash tool in it through an in-process runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use wield_core::Approver;
use wield_core::approval::{HeadlessApprover, YesApprover};
use wield_test_support::pipeline::Loaded;

use crate::support::Env;

/// `base/ws` is the workspace (with `src/`), `base/tmp` the commands' temp
/// dir (a write root), `base/outside` a directory in no
/// root. `base` itself is no root, and lies outside the temp dir of this
/// process (a write root too), so "outside the write roots" is a real place.
pub struct Ws {
    env: Env,
    pub ws: PathBuf,
    pub tmp: PathBuf,
    pub outside: PathBuf,
}

impl Ws {
    pub fn new() -> Self {
        let env = Env::new();
        let [ws, tmp, outside] = ["ws", "tmp", "outside"].map(|d| env.base.join(d));
        std::fs::create_dir_all(ws.join("src")).unwrap();
        Self { ws, tmp, outside, env }
    }

    /// The runtime of the workspace with `sets` (`--set`), after the
    /// settings that make `base/tmp` the commands' temp dir.
    pub fn load(&self, sets: &[&str]) -> Loaded {
        let tmp = self.env.tmp_sets();
        let sets: Vec<&str> = tmp.iter().map(String::as_str).chain(sets.iter().copied()).collect();
        Loaded::load(&self.ws, &sets).unwrap()
    }

    /// One call with `sets`, `approver` deciding what needs a person → (the
    /// exit code `wield call --json` would have, the result as JSON).
    pub fn call_as(&self, approver: Arc<dyn Approver>, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        self.load(sets).call(approver, tool, args)
    }

    /// A call approved as `wield -y call` approves.
    pub fn yes(&self, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        self.call_as(Arc::new(YesApprover), sets, tool, args)
    }

    /// A call with no one to approve it, as a headless `wield call`.
    pub fn headless(&self, sets: &[&str], tool: &str, args: Value) -> (i32, Value) {
        self.call_as(Arc::new(HeadlessApprover), sets, tool, args)
    }

    /// `bash` in a given backend ("landlock", "bwrap") or unsandboxed
    /// ("off", approved as `-y` approves).
    pub fn bash(&self, backend: &str, command: &str) -> (i32, Value) {
        let args = json!({ "command": command });
        match backend {
            "off" => self.yes(&["sandbox.enabled=false"], "bash", args),
            b => self.headless(&["sandbox.enabled=true", &backend_set(b)], "bash", args),
        }
    }
}

/// `sandbox.backend="BACKEND"`.
pub fn backend_set(backend: &str) -> String {
    format!("sandbox.backend=\"{backend}\"")
}

pub fn output(v: &Value) -> &str {
    v["output"].as_str().unwrap_or_default()
}

pub fn error(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}

/// Pids printed one per line (or space separated) in a text.
pub fn pids(text: &str) -> Vec<i32> {
    text.split_whitespace().filter_map(|w| w.parse().ok()).collect()
}

/// Gone: not running and not a zombie either.
pub fn assert_gone(pids: &[i32]) {
    assert!(!pids.is_empty(), "the test needs pids to check");
    for pid in pids {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
        assert!(stat.is_err(), "process {pid} survived: {stat:?}");
    }
}

/// Both backends work here: this machine is expected to have them, so a
/// missing one is a failure, not a reason to skip.
pub fn require_backends() {
    use wield_sandbox::process::sandbox::{BwrapStatus, bwrap_status, landlock_abi, seccomp_available};
    let abi = landlock_abi();
    assert!(
        abi.is_some(),
        "Landlock is unavailable on this machine, the sandbox tests cannot run"
    );
    assert!(abi.unwrap() >= 4, "Landlock ABI too old for these tests: {abi:?}");
    assert!(seccomp_available(), "seccomp is unavailable on this machine");
    assert!(
        matches!(bwrap_status(), BwrapStatus::Works { .. }),
        "bubblewrap does not work here (apt-get install bubblewrap): {:?}",
        bwrap_status()
    );
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
