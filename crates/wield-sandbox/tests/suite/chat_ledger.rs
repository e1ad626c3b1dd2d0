//! The list of `.chat` documents wield chat has run on, as other runtimes
//! read it.

use std::fs;

use wield_sandbox::fs::chat::Ledger;

#[test]
fn each_document_is_listed_once() {
    let home = tempfile::tempdir().unwrap();
    let ledger = Ledger::at(home.path().join("chat-documents"));
    let (a, b) = (home.path().join("a.chat"), home.path().join("b.chat"));
    fs::write(&a, "").unwrap();
    fs::write(&b, "").unwrap();
    ledger.record(&a).unwrap();
    ledger.record(&b).unwrap();
    ledger.record(&a).unwrap();
    let listed = fs::read_to_string(ledger.path()).unwrap();
    assert_eq!(listed, format!("{}\n{}\n", a.display(), b.display()));
}
