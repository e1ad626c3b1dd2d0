//! Reading and writing large `.chat` documents.
//!
//! - `parse/{1,10}MB`: a document of repeated exchanges (a question with a
//!   file reference, a reply with signed thinking, text and two tool uses,
//!   their results, one of them holding a nested fence); the two sizes
//!   show the cost is linear.
//! - `write/10MB`: writing the parsed 10 MB document back.
//! - `parse+write/10MB`: both, as a save after an edit does.
//!
//! Before criterion's wall-clock figures, the CPU time of each (the
//! thread's own CPU clock, the median of 15 runs) is printed: on a loaded
//! machine it is the steadier figure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

fn document(bytes: usize) -> String {
    let mut text = String::from("```toml\nmodel = \"m\"\n```\n@System:\nYou are terse.\n\n");
    let mut i = 0;
    while text.len() < bytes {
        write!(
            text,
            "@You:\nWhat does @./src/file_{i}.rs do? Compare it with the notes.\n\n\
             @Assistant:\nLet me look at both files before answering.\n\n\
             **Tool Use:** `read` (`toolu_{i}_a`)\n\n```json\n{{\"path\":\"src/file_{i}.rs\",\"offset\":1,\"limit\":200}}\n```\n\n\
             **Tool Use:** `grep` (`toolu_{i}_b`)\n\n```json\n{{\"pattern\":\"fn main\",\"path\":\"src\"}}\n```\n\n\
             <thinking anthropic:signature=\"EqQBCkgIARABGAIiQL{i}abcdefghijklmnopqrstuvwxyz0123456789\">\n\
             The user wants a comparison; read the file first, then search.\n</thinking>\n\n\
             @You:\n**Tool Result:** `toolu_{i}_a`\n\n````\nfn main() {{\n    println!(\"{i}\");\n}}\n```rust\nlet x = 1;\n```\n````\n\n\
             **Tool Result:** `toolu_{i}_b` (error)\n\n```\nno match\n```\n\nThanks, go on.\n\n\
             @Assistant:\nThe file prints its number; nothing else matches.\n\n"
        )
        .unwrap();
        i += 1;
    }
    text
}

/// The time this thread has run on a CPU, in nanoseconds.
fn cpu_ns() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(u64::try_from(t.tv_nsec).ok()?)
}

/// The median CPU time of `f` over 15 runs, in milliseconds.
fn cpu_ms(mut f: impl FnMut()) -> Option<f64> {
    let mut runs = Vec::new();
    for _ in 0..15 {
        let start = cpu_ns()?;
        f();
        runs.push(cpu_ns()?.saturating_sub(start));
    }
    runs.sort_unstable();
    Some(runs[runs.len() / 2] as f64 / 1e6)
}

fn cpu_report() {
    let small = document(1 << 20);
    let large = document(10 << 20);
    let doc = wield_chat::parse(&large);
    let figures = [
        (
            "parse/1MB",
            cpu_ms(|| drop(black_box(wield_chat::parse(black_box(&small))))),
        ),
        (
            "parse/10MB",
            cpu_ms(|| drop(black_box(wield_chat::parse(black_box(&large))))),
        ),
        ("write/10MB", cpu_ms(|| drop(black_box(black_box(&doc).write())))),
        (
            "parse+write/10MB",
            cpu_ms(|| drop(black_box(wield_chat::parse(black_box(&large)).write()))),
        ),
    ];
    for (name, ms) in figures {
        match ms {
            Some(ms) => println!("chat/{name}: {ms:.1} ms of CPU time (median of 15)"),
            None => println!("chat/{name}: CPU time not available here"),
        }
    }
}

fn bench(c: &mut Criterion) {
    cpu_report();
    let mut group = c.benchmark_group("chat");
    group.sample_size(20);
    for mb in [1, 10] {
        let text = document(mb << 20);
        group.bench_function(format!("parse/{mb}MB"), |b| {
            b.iter(|| black_box(wield_chat::parse(black_box(&text))))
        });
    }
    let text = document(10 << 20);
    let doc = wield_chat::parse(&text);
    assert!(doc.diagnostics.is_empty(), "{:?}", &doc.diagnostics[..1]);
    assert_eq!(doc.write(), text);
    group.bench_function("write/10MB", |b| b.iter(|| black_box(black_box(&doc).write())));
    group.bench_function("parse+write/10MB", |b| {
        b.iter(|| black_box(wield_chat::parse(black_box(&text)).write()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
