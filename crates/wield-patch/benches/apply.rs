//! Patch cost against file size and patch size.
//!
//! - `apply_1000_chunks/{5,10}MB`: one update of 1,000 chunks spread evenly
//!   over a generated source file; the two sizes show the cost is linear in
//!   the file.
//! - `apply_1000_indent_drift/10MB`: the same chunks written without the
//!   file's indentation, so that every chunk fails the exact and
//!   trailing-whitespace passes before the trimmed pass places it.
//! - `parse_and_apply_100_files`: a 100-file patch (parse, then every
//!   update applied to its in-memory original).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use wield_patch::{Chunk, Operation, apply_chunks, parse};

/// Functions of five lines plus a blank, about 130 bytes each.
fn source(bytes: usize) -> (String, usize) {
    let mut text = String::with_capacity(bytes + 256);
    let mut functions = 0;
    while text.len() < bytes {
        let i = functions;
        writeln!(text, "fn function_{i}(input: u64) -> u64 {{").unwrap();
        writeln!(text, "    let a_{i} = input + {i};").unwrap();
        writeln!(text, "    let b_{i} = a_{i} * 2;").unwrap();
        writeln!(text, "    a_{i} + b_{i}").unwrap();
        writeln!(text, "}}\n").unwrap();
        functions += 1;
    }
    (text, functions)
}

fn update_patch(functions: usize, chunks: usize, indent: &str) -> String {
    let mut patch = String::from("*** Begin Patch\n*** Update File: src/big.rs\n");
    for k in 0..chunks {
        let i = k * functions / chunks;
        writeln!(patch, "@@ fn function_{i}(input: u64) -> u64 {{").unwrap();
        writeln!(patch, " {indent}let a_{i} = input + {i};").unwrap();
        writeln!(patch, "-{indent}let b_{i} = a_{i} * 2;").unwrap();
        writeln!(patch, "+{indent}let b_{i} = a_{i} * 3;").unwrap();
        writeln!(patch, " {indent}a_{i} + b_{i}").unwrap();
    }
    patch.push_str("*** End Patch\n");
    patch
}

fn chunks_of(patch: &str) -> Vec<Chunk> {
    match parse(patch).unwrap().ops.into_iter().next() {
        Some(Operation::Update { chunks, .. }) => chunks,
        other => panic!("{other:?}"),
    }
}

fn bench_chunks(c: &mut Criterion) {
    let mut group = c.benchmark_group("apply_1000_chunks");
    group.sample_size(20);
    for mb in [5, 10] {
        let (text, functions) = source(mb << 20);
        let chunks = chunks_of(&update_patch(functions, 1000, "    "));
        // Check once that every chunk lands, so the bench measures success.
        let out = apply_chunks(&text, &chunks).unwrap();
        assert_eq!(out.text.matches("* 3;").count(), 1000);
        group.bench_function(format!("{mb}MB"), |b| {
            b.iter(|| apply_chunks(black_box(&text), &chunks).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("apply_1000_indent_drift");
    group.sample_size(20);
    let (text, functions) = source(10 << 20);
    let chunks = chunks_of(&update_patch(functions, 1000, ""));
    // Every chunk matches with its indentation ignored and is re-indented.
    let out = apply_chunks(&text, &chunks).unwrap();
    assert_eq!(out.text.matches("    let b_0 = a_0 * 3;").count(), 1);
    assert_eq!((out.text.matches("* 3;").count(), out.fuzzy.len()), (1000, 1000));
    group.bench_function("10MB", |b| b.iter(|| apply_chunks(black_box(&text), &chunks).unwrap()));
    group.finish();
}

fn bench_many_files(c: &mut Criterion) {
    let (original, functions) = source(16 << 10);
    let mut patch = String::from("*** Begin Patch\n");
    for f in 0..100 {
        writeln!(patch, "*** Update File: src/module_{f}.rs").unwrap();
        for k in 0..3 {
            let i = k * functions / 3 + f % 7;
            writeln!(patch, "@@ fn function_{i}(input: u64) -> u64 {{").unwrap();
            writeln!(patch, "-    let a_{i} = input + {i};").unwrap();
            writeln!(patch, "+    let a_{i} = input + {i} + {f};").unwrap();
        }
    }
    patch.push_str("*** Add File: src/new.rs\n+pub fn new() {}\n*** Delete File: src/old.rs\n*** End Patch\n");
    // The originals, as the caller would have read them.
    let files: Vec<String> = (0..100).map(|_| original.clone()).collect();
    let run = |patch: &str| {
        let parsed = parse(patch).unwrap();
        let mut written = 0;
        for (op, file) in parsed.ops.iter().zip(files.iter().chain(std::iter::repeat(&original))) {
            if let Operation::Update { chunks, .. } = op {
                written += apply_chunks(file, chunks).unwrap().text.len();
            }
        }
        written
    };
    assert!(run(&patch) > 0);
    c.bench_function("parse_and_apply_100_files", |b| b.iter(|| run(black_box(&patch))));
}

criterion_group!(benches, bench_chunks, bench_many_files);
criterion_main!(benches);
