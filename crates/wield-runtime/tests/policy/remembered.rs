//! Remembered approvals: the project and global files of
//! `FileApprovalStore` (what `wield approvals` and the approval prompt
//! change), their effect on later calls, the patterns an approval for the
//! project or everywhere derives, and concurrent writers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use wield_core::Approver;
use wield_core::Scope;
use wield_core::approval::HeadlessApprover;
use wield_runtime::{FileApprovalStore, check_pattern};
use wield_test_support::pipeline::{Answers, error_of};

use super::support::{Env, args};

const STRICT: &str = "[approval]\nauto_approve = []\n";

impl Env {
    /// The store `wield approvals` opens here.
    fn store(&self) -> FileApprovalStore {
        FileApprovalStore::new(self.ws(), Some(&self.global_dir()))
    }

    /// A call in a runtime loaded afresh (a new `wield call`), which no one
    /// can approve.
    fn call(&self, tool: &str, a: &str) -> (i32, Value) {
        self.call_with(Arc::new(HeadlessApprover), tool, a)
    }

    fn call_with(&self, approver: Arc<dyn Approver>, tool: &str, a: &str) -> (i32, Value) {
        self.plain().call(approver, tool, args(a))
    }
}

#[test]
fn add_list_remove_and_their_effect() {
    let e = Env::with_config(STRICT);
    let store = e.store();
    let calc = r#"{"expression":"1+1"}"#;
    assert_eq!(e.call("calculator", calc).0, 1);
    assert_eq!(store.load(Scope::Project).unwrap(), Vec::<String>::new());
    assert_eq!(store.load(Scope::Global).unwrap(), Vec::<String>::new());
    assert!(store.add(Scope::Project, "calculator").unwrap());
    // Already remembered.
    assert!(!store.add(Scope::Project, "calculator").unwrap());
    assert_eq!(e.call("calculator", calc).0, 0);
    assert!(store.add(Scope::Global, "debug_echo:git *").unwrap());
    assert!(e.global_approvals().contains("\"debug_echo:git *\""));
    assert_eq!(e.call("debug_echo", r#"{"command":"git log"}"#).0, 0);
    assert_eq!(store.load(Scope::Project).unwrap(), ["calculator"]);
    assert_eq!(store.load(Scope::Global).unwrap(), ["debug_echo:git *"]);
    assert!(store.remove(Scope::Project, "calculator").unwrap());
    assert_eq!(e.call("calculator", calc).0, 1);
    // Not remembered any more, in either file.
    assert!(!store.remove(Scope::Project, "calculator").unwrap());
    assert!(!store.remove(Scope::Global, "calculator").unwrap());
    // A blank pattern is refused.
    assert!(check_pattern(" ").is_err());
    assert!(store.add(Scope::Project, " ").is_err());
    // A broken file is reported, not overwritten.
    std::fs::write(e.ws().join(".wield/approvals.toml"), "auto = [").unwrap();
    let err = store.add(Scope::Project, "y").unwrap_err();
    assert!(err.to_string().contains("approvals.toml is not valid TOML"), "{err}");
    assert_eq!(
        std::fs::read_to_string(e.ws().join(".wield/approvals.toml")).unwrap(),
        "auto = ["
    );
}

#[test]
fn approving_for_the_project_or_everywhere_stores_the_derived_pattern() {
    // The temp dir is a root only when configured: a path outside the
    // workspace that the path check lets through.
    let tmp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let e = Env::with_config(&format!(
        "{STRICT}\n[sandbox]\nwrite = [{:?}]\n",
        tmp.display().to_string()
    ));
    let echo = |scope: Option<Scope>, a: &str| match scope {
        Some(s) => e.call_with(Answers::allow(s), "debug_echo", a),
        None => e.call("debug_echo", a),
    };
    let project = Some(Scope::Project);
    assert_eq!(echo(project, r#"{"command":"cargo test -p x"}"#).0, 0);
    assert_eq!(echo(project, r#"{"command":"ls -la"}"#).0, 0);
    assert_eq!(echo(project, r#"{"path":"src/a/b.rs"}"#).0, 0);
    let stored = e.project_approvals();
    assert!(
        stored.contains(
            "auto = [\n    \"debug_echo:cargo test*\",\n    \"debug_echo:ls*\",\n    \"debug_echo:src/a/*\",\n]"
        ),
        "{stored}"
    );
    // Remembered patterns approve later calls in new runtimes, with no one to ask.
    assert_eq!(echo(None, r#"{"command":"cargo test --all"}"#).0, 0);
    assert_eq!(echo(None, r#"{"path":"src/a/deeper/c.rs"}"#).0, 0);
    assert_eq!(echo(None, r#"{"path":"src/other.rs"}"#).0, 1);
    let (code, r) = echo(None, r#"{"command":"cargo publish"}"#);
    assert_eq!(code, 1);
    assert!(
        error_of(&r).contains("wield approvals add 'debug_echo:cargo publish*'"),
        "{r}"
    );
    // Everywhere: the global file. A top-level file derives `./*`, a path
    // outside the workspace its absolute directory, no argument the bare name.
    let global = Some(Scope::Global);
    assert_eq!(echo(global, r#"{"path":"top.txt"}"#).0, 0);
    let tmp = tmp.display();
    assert_eq!(echo(global, &format!(r#"{{"path":"{tmp}/x.log"}}"#)).0, 0);
    assert_eq!(echo(global, "{}").0, 0);
    let stored = e.global_approvals();
    assert!(
        stored.contains(&format!(
            "auto = [\n    \"debug_echo\",\n    \"debug_echo:./*\",\n    \"debug_echo:{tmp}/*\",\n]"
        )),
        "{stored}"
    );
    assert_eq!(echo(None, r#"{"path":"src/other.rs"}"#).0, 0);
}

/// Writers that each open the files themselves, as separate `wield`
/// processes do: each add locks and replaces the file on its own open file
/// description, so they exclude one another as processes would.
#[test]
fn concurrent_adds_never_lose_a_rule() {
    const WRITERS: usize = 8;
    const EACH: usize = 100;
    let e = Env::new();
    let started = Instant::now();
    std::thread::scope(|s| {
        for p in 0..WRITERS {
            let e = &e;
            s.spawn(move || {
                for i in 0..EACH {
                    let scope = if i % 4 == 0 { Scope::Global } else { Scope::Project };
                    // A store of its own for each add, as each `wield approvals add` opens one.
                    assert!(e.store().add(scope, &format!("tool_{p}_{i}:arg*")).unwrap());
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let mut all = BTreeSet::new();
    for text in [e.project_approvals(), e.global_approvals()] {
        let t: toml::Table = toml::from_str(&text).unwrap();
        for v in t["auto"].as_array().unwrap() {
            assert!(all.insert(v.as_str().unwrap().to_owned()), "duplicate {v}");
        }
    }
    assert_eq!(all.len(), WRITERS * EACH);
    for p in 0..WRITERS {
        for i in 0..EACH {
            assert!(all.contains(&format!("tool_{p}_{i}:arg*")));
        }
    }
    for dir in [e.ws().join(".wield"), e.global_dir()] {
        let leftovers: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
    eprintln!("{} concurrent adds in {elapsed:?}", WRITERS * EACH);
}
