//! Reading and writing large `.chat` documents.
//!
//! - `parse/{5,10}MB`: a document of repeated exchanges (a question with a
//!   file reference, a reply with signed thinking, text and two tool uses,
//!   their results, one of them holding a nested fence); the two sizes
//!   show the cost is linear.
//! - `write/10MB`: writing the parsed 10 MB document back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

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

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("chat");
    group.sample_size(20);
    for mb in [5, 10] {
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
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
