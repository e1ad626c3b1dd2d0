//! Any text either parses or yields an error whose message renders; never a
//! panic. A parsed patch always has operations and chunks with lines.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wield_patch::{Operation, parse};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse(&text) {
        Ok(patch) => {
            assert!(!patch.ops.is_empty());
            for op in &patch.ops {
                assert!(!op.path().is_empty());
                assert!(op.line() >= 1);
                if let Operation::Update { chunks, .. } = op {
                    assert!(!chunks.is_empty());
                    assert!(chunks.iter().all(|c| !c.lines.is_empty()));
                }
            }
        }
        Err(e) => {
            assert!(e.line >= 1);
            assert!(!e.to_string().is_empty());
        }
    }
});
