//! Any bytes as a response body of each wire format, split at the first
//! byte's value: never a panic; a reply or an error.
#![no_main]

use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use wield_llm::decode::{Anthropic, Chat, Decoding, Gemini, Responses, WireDecoder, decode_body};
use wield_llm::{Origin, Turn};

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let cut = usize::from(first).min(body.len());
    for kind in 0..4 {
        let decoder: Box<dyn WireDecoder> = match kind {
            0 => Box::new(Anthropic::default()),
            1 => Box::new(Chat),
            2 => Box::new(Responses::default()),
            _ => Box::new(Gemini),
        };
        let turn = Turn::new(
            Origin {
                provider: "f".into(),
                model: "m".into(),
            },
            "g",
        );
        let pieces = vec![Ok::<_, std::io::Error>(&body[..cut]), Ok(&body[cut..])];
        let _ = block_on(decode_body(futures::stream::iter(pieces), Decoding::new(decoder, turn)));
    }
});
