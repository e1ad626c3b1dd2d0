//! The input is a patch and an original file separated by a NUL byte. The
//! patch is parsed as given, or else as the body of a one-file update, and
//! its first update's chunks are applied to the original. Never a panic; an
//! error renders; chunks that only keep lines leave the file as it was
//! (a final newline aside).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wield_patch::{ChunkLine, Operation, apply_chunks, parse};

fuzz_target!(|data: &[u8]| {
    let (patch, original) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, &b""[..]),
    };
    let patch = String::from_utf8_lossy(patch);
    let original = String::from_utf8_lossy(original);
    let parsed = parse(&patch)
        .or_else(|_| parse(&format!("*** Begin Patch\n*** Update File: f\n{patch}\n*** End Patch\n")));
    let Ok(parsed) = parsed else { return };
    let Some(chunks) = parsed.ops.iter().find_map(|op| match op {
        Operation::Update { chunks, .. } => Some(chunks),
        _ => None,
    }) else {
        return;
    };
    match apply_chunks(&original, chunks) {
        Ok(out) => {
            let keeps_only = chunks.iter().all(|c| c.lines.iter().all(|l| matches!(l, ChunkLine::Context(_))));
            if keeps_only {
                let rest = out.text.strip_prefix(original.as_ref());
                assert!(matches!(rest, Some("" | "\n" | "\r\n" | "\r")), "context-only chunks changed the file");
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
