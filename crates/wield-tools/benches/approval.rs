//! What reading a command line for approval rules costs per `bash` call:
//! the tree-sitter-bash parse and the analysis (literal words for approve
//! rules, every command run for deny rules), on lines an agent sends, and
//! on a long line of wrappers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use wield_core::approval::Subject;

fn bench(c: &mut Criterion) {
    let lines = [
        ("simple", "git status --short".to_owned()),
        (
            "chain",
            "cd crates/wield-tools && cargo test -p wield-tools --lib 2>&1 | tail -n 50".to_owned(),
        ),
        (
            "script",
            "for f in $(git diff --name-only HEAD~1); do if [ -f \"$f\" ]; then rustfmt --check \"$f\" || echo \"$f\"; fi; done"
                .to_owned(),
        ),
        (
            "wrappers",
            format!("{}rm -rf target", "env A=1 nice -n 5 timeout 10 nohup command ".repeat(200)),
        ),
    ];
    let mut group = c.benchmark_group("approval_subject");
    for (name, line) in &lines {
        let input = json!({ "command": line });
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| {
                let subject = wield_tools::shell::approval_subject(std::hint::black_box(&input));
                assert!(matches!(subject, Subject::Command(_)));
                subject
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
