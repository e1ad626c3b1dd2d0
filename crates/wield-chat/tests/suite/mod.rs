mod attacks;
mod convert;
mod corpus;
mod cycle;
mod diagnostics;
mod document;
mod edit;
mod press;
mod structure;

use std::path::PathBuf;

/// The documents under `tests/corpus`, by file stem, sorted.
pub fn corpus() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "chat"))
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 11, "the corpus is missing documents: {}", out.len());
    out
}

/// A corpus document by name.
pub fn doc(name: &str) -> String {
    corpus().into_iter().find(|(n, _)| n == name).unwrap().1
}
