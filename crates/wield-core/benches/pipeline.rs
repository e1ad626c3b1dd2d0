//! Pipeline overhead: lookup, validation, approval, execution of a tool that
//! returns at once, and the size guard — for one call and a batch of 25.
//! Criterion reports elements per second, i.e. calls per second.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use async_trait::async_trait;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wield_core::{
    Call, Config, Context, ExecutorBuilder, Registry, Session, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits,
};

struct Noop {
    base: ToolBase,
}

#[async_trait]
impl Tool for Noop {
    fn base(&self) -> &ToolBase {
        &self.base
    }
    async fn execute(&self, _input: Value, _ctx: &Context) -> ToolResult {
        ToolResult::ok("ok")
    }
}

fn bench(c: &mut Criterion) {
    let mut registry = Registry::new();
    registry
        .register(Arc::new(Noop {
            base: ToolBase::new(
                ToolSpec::new(
                    "noop",
                    "returns at once",
                    json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":["integer","null"]}},
                       "required":["path","n"],"additionalProperties":false}),
                )
                .strict(true),
                ToolTraits {
                    read_only: true,
                    ..ToolTraits::default()
                },
            ),
        }))
        .unwrap();
    let executor = ExecutorBuilder::new(Arc::new(registry), Arc::new(Config::default()), "/").build();
    let session = Arc::new(Session::new("bench", true));
    let cancel = CancellationToken::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let input = json!({"path": "src/main.rs"});

    let mut g = c.benchmark_group("pipeline");
    g.throughput(Throughput::Elements(1));
    g.bench_function("one_call", |b| {
        b.to_async(&rt).iter(|| async {
            let r = executor
                .run_one(Call::new("1", "noop", input.clone()), &session, &cancel)
                .await;
            assert!(r.success);
        });
    });
    g.throughput(Throughput::Elements(25));
    g.bench_function("batch_of_25", |b| {
        b.to_async(&rt).iter(|| async {
            let calls = (0..25)
                .map(|i| Call::new(i.to_string(), "noop", input.clone()))
                .collect();
            let r = executor.run_batch(calls, &session, &cancel).await;
            assert_eq!(r.len(), 25);
        });
    });
    let ctx = Context::detached("/");
    let tool = executor.registry().get("noop").unwrap().tool.clone();
    g.throughput(Throughput::Elements(1));
    g.bench_function("direct_execute_baseline", |b| {
        b.to_async(&rt)
            .iter(|| async { tool.execute(input.clone(), &ctx).await });
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
