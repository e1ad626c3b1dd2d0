//! Decoding recorded streams: SSE framing plus the wire decoder, per event,
//! for each format (the goal is at most 2 µs per event).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::executor::block_on;
use wield_llm::decode::{Anthropic, Chat, Decoding, Responses, WireDecoder, decode_body};
use wield_llm::{Origin, Turn};

const EVENTS: usize = 5_000;

/// The system allocator, counting the bytes in use and their peak.
struct Counting;

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = IN_USE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's pointer and layout, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    // The system's own realloc (which grows a large block in place when it
    // can), counted by the change in size.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let now = IN_USE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: the caller's pointer, layout and size, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The peak memory held while decoding a streamed 1 MB answer (10,000
/// deltas of 100 bytes), beyond what was held before, as a multiple of the
/// answer's size: the reply's text, every event, and the decoders' buffers.
fn memory_of_a_1mb_answer() {
    let delta = "x".repeat(100);
    let mut s = String::new();
    for _ in 0..10_000 {
        writeln!(
            s,
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{delta}\"}}}}]}}\n"
        )
        .unwrap();
    }
    s.push_str("data: [DONE]\n\n");
    let chunks: Vec<Vec<u8>> = s.into_bytes().chunks(4096).map(<[u8]>::to_vec).collect();
    let before = IN_USE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    // As a provider streams it: each event handed on, then dropped.
    let response = block_on(async {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;
        let stream = futures::stream::iter(chunks.iter().map(|c| Ok::<_, std::io::Error>(c.as_slice())));
        let turn = Turn::new(
            Origin {
                provider: "chat".into(),
                model: "m".into(),
            },
            "g",
        );
        let mut decoding = Decoding::new(decoder("chat"), turn);
        let mut out = std::collections::VecDeque::new();
        let mut sse = stream.eventsource();
        while let Some(Ok(event)) = sse.next().await {
            decoding.event(&event.event, &event.data, &mut out).unwrap();
            out.clear();
        }
        decoding.finish(&mut out).unwrap()
    });
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let answer: usize = response
        .content
        .iter()
        .map(|b| match b {
            wield_llm::Block::Text { text } => text.len(),
            _ => 0,
        })
        .sum();
    println!(
        "memory: a {:.2} MB streamed answer peaked at {:.2} MB held while decoding ({:.2}× the answer)",
        answer as f64 / 1e6,
        peak as f64 / 1e6,
        peak as f64 / answer as f64
    );
}

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
    memory_of_a_1mb_answer();
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
