//! Any text parses, never a panic; writing the document back gives the
//! text byte for byte, and reading that again gives the same document;
//! every line number is inside the text; the state, the conversation and
//! the legacy rewrite never panic, and the rewrite writes a document that
//! reads back as itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let doc = wield_chat::parse(&text);
    let written = doc.write();
    assert_eq!(written, text, "the round trip changed the text");
    assert_eq!(wield_chat::parse(&written), doc);
    let lines = text.split_inclusive('\n').count().max(1);
    assert!(doc.diagnostics.iter().all(|d| d.line >= 1 && d.line <= lines));
    assert!(
        doc.messages
            .iter()
            .all(|m| m.lines.start <= m.lines.end && m.lines.end <= lines)
    );
    let _ = doc.state();
    let _ = doc.conversation_unchecked(&wield_chat::ConvertOptions::default());
    let (again, _) = doc.rewrite_legacy();
    assert_eq!(wield_chat::parse(&again).write(), again);
});
