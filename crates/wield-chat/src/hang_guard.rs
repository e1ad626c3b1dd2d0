//! The unit tests' guard against a parser that never ends: before libtest's
//! `main`, a thread of its own parses every document of the corpus and ends
//! the test process when that takes more than ten seconds. Parsing is one
//! forward pass; a parse that keeps going has hung, and the tests parsing
//! on libtest's threads would otherwise hang the run for ever (they hold
//! every thread, so no test could notice).
#![allow(clippy::unwrap_used)]

use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

// Linux runs the functions of `.init_array` before `main`.
#[used]
#[unsafe(link_section = ".init_array")]
static START: extern "C" fn() = {
    extern "C" fn start() {
        std::thread::spawn(watch);
    }
    start
};

fn watch() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let texts: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let (done, finished) = channel();
    std::thread::spawn(move || {
        for text in &texts {
            let doc = crate::parse::parse(text);
            drop(doc);
        }
        let _ = done.send(());
    });
    if let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(Duration::from_secs(10)) {
        eprintln!("wield-chat: parsing the corpus did not end within 10 s: the parser hangs");
        std::process::abort();
    }
}
