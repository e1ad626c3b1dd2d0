//! Decoding recorded streams: SSE framing plus the wire decoder, per event,
//! for each format (the goal is at most 2 µs per event).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::executor::block_on;
use wield_llm::decode::{Anthropic, Chat, Decoding, Responses, WireDecoder, decode_body};
use wield_llm::{Origin, Turn};

const EVENTS: usize = 5_000;

/// A body of `EVENTS` text deltas (and a few tool-call pieces), in 4 KiB
/// reads as a socket would deliver them.
fn body(kind: &str) -> Vec<Vec<u8>> {
    let mut s = String::new();
    if kind == "chat" {
        s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n");
    }
    for i in 0..EVENTS {
        match kind {
            "anthropic" => writeln!(
                s,
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word {i} \"}}}}\n"
            ),
            "chat" => writeln!(
                s,
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{i},\"}}}}]}},\"finish_reason\":null}}]}}\n"
            ),
            _ => writeln!(
                s,
                "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{i},\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"word {i} \"}}\n"
            ),
        }
        .unwrap();
    }
    if kind == "responses" {
        s.push_str("data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n");
    }
    if kind == "anthropic" {
        s.push_str("data: {\"type\":\"message_stop\"}\n\n");
    }
    s.into_bytes().chunks(4096).map(<[u8]>::to_vec).collect()
}

fn decoder(kind: &str) -> Box<dyn WireDecoder> {
    match kind {
        "anthropic" => Box::new(Anthropic::default()),
        "chat" => Box::new(Chat),
        _ => Box::new(Responses::default()),
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_5000_events");
    group.throughput(Throughput::Elements(EVENTS as u64));
    for kind in ["anthropic", "chat", "responses"] {
        let chunks = body(kind);
        group.bench_function(kind, |b| {
            b.iter(|| {
                let stream = futures::stream::iter(chunks.iter().map(|c| Ok::<_, std::io::Error>(c.as_slice())));
                let turn = Turn::new(
                    Origin {
                        provider: kind.into(),
                        model: "m".into(),
                    },
                    "g",
                );
                let (events, _) = block_on(decode_body(stream, Decoding::new(decoder(kind), turn))).unwrap();
                assert!(events.len() >= EVENTS);
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
