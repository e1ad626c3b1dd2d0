//! The corpus: every document writes back byte for byte, and its state
//! (what `wield chat status --json` will print) matches its snapshot.

use wield_chat::parse;

use super::corpus;

#[test]
fn every_corpus_document_writes_back_byte_for_byte() {
    for (name, text) in corpus() {
        assert_eq!(parse(&text).write(), text, "{name}");
    }
}

#[test]
fn corpus_states_match_their_snapshots() {
    for (name, text) in corpus() {
        insta::assert_json_snapshot!(name.as_str(), parse(&text).state());
    }
}

#[test]
fn crlf_endings_and_a_missing_final_newline_write_back_unchanged() {
    for (name, text) in corpus() {
        let crlf = text.replace('\n', "\r\n");
        let doc = parse(&crlf);
        assert_eq!(doc.write(), crlf, "{name} with CRLF");
        let (a, b) = (doc.state(), parse(&text).state());
        assert_eq!(
            (a.messages, a.diagnostics),
            (b.messages, b.diagnostics),
            "{name}: CRLF reads the same"
        );
        let calls = |s: wield_chat::State| {
            s.tool_uses
                .into_iter()
                .map(|c| (c.id, c.status, c.input))
                .collect::<Vec<_>>()
        };
        assert_eq!(calls(doc.state()), calls(parse(&text).state()), "{name}");
        let cut = text.trim_end_matches('\n');
        assert_eq!(parse(cut).write(), cut, "{name} without its final newline");
    }
}

#[test]
fn odd_inputs_never_panic_and_write_back() {
    let odd = [
        "",
        "\n",
        "@You:",
        "@You:\n",
        "```",
        "```toml",
        "```toml\n",
        "```toml\n```",
        "```lua\n```\n@You:\nhi",
        "@Assistant:\n<thinking",
        "@Assistant:\n<thinking>",
        "@Assistant:\n<thinking x:signature=\"\" />",
        "@Assistant:\n**Tool Use:** `a` (`b`)",
        "@Assistant:\n**Tool Use:** `a` (`b`)\n```",
        "@Assistant:\n**Tool Use:** `a` (`b`)\n\n\n",
        "@You:\n**Tool Result:** `x` (",
        "@You:\n**Tool Result:** `x` ()\n```\n",
        "@You: \r\n**Tool Result:** `x` (status=)\r\n````\r\n```\r\n",
        "@You:\n@./\n@~/ @//\n%\n@./%e2%28",
        "\u{feff}@You:\nbom",
        "@You:é\n@Assistant:\n<!--wield:aborted:-->",
        "\r\r\n@@You:\n@:\n@You:@You:",
    ];
    for text in odd {
        let doc = parse(text);
        assert_eq!(doc.write(), text, "{text:?}");
        let _ = doc.state();
        let _ = doc.conversation_unchecked(&Default::default());
        let _ = doc.rewrite_legacy();
    }
}

#[test]
fn parsing_is_linear_in_pathological_inputs() {
    // Inputs that would be quadratic for a reader that searches forward
    // from every line or every `@`: each is read well under a second.
    let cases = [
        "@You:\n".to_string() + &"@".repeat(2_000_000),
        "@Assistant:\n".to_string() + &"<thinking>\n".repeat(200_000),
        "@Assistant:\n".to_string() + &"**Tool Use:** `a` (`b`)\n\n".repeat(100_000),
        "@You:\n".to_string() + &"**Tool Result:** `a`\n\n".repeat(100_000),
        "```toml\n".to_string() + &"x = 1\n".repeat(300_000),
        "@You:\n".to_string() + &"``` @./a\n".repeat(300_000),
    ];
    for text in cases {
        let start = std::time::Instant::now();
        let doc = parse(&text);
        assert_eq!(doc.write(), text);
        assert!(start.elapsed().as_secs_f64() < 2.0, "{:?}", &text[..40]);
    }
}

/// Documents stitched from fragments of the grammar, broken ones included:
/// the fuzz target's properties, checked on every test run.
#[test]
fn stitched_documents_write_back_and_read_back_the_same() {
    const FRAGMENTS: &[&str] = &[
        "@You:\n",
        "@Assistant:\n",
        "@System:\n",
        "@You: inline\n",
        "@Other:\n",
        "text with @./a%20b.txt,\n",
        "\n",
        "  \r\n",
        "```\n",
        "````json\n",
        "```flemma:tool status=rejected x=1\n",
        "{\"a\": 1}\n",
        "**Tool Use:** `read` (`t1`)\n",
        "**Tool Use:** `read` (`t2`)\n",
        "**Tool Result:** `t1`\n",
        "**Tool Result:** `t2` (pending)\n",
        "**Tool Result:** `t1` (status=error deny)\n",
        "<thinking>\n",
        "<thinking anthropic:signature=\"s\">\n",
        "<thinking openai:signature=\"e30=\" />\n",
        "<thinking redacted>\n",
        "</thinking>\n",
        "<!-- wield:aborted: stop -->\n",
        "```toml\n",
        "no newline",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..3000 {
        let len = (next() % 24) as usize;
        let text: String = (0..len)
            .map(|_| FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize])
            .collect();
        let doc = parse(&text);
        let written = doc.write();
        assert_eq!(written, text);
        assert_eq!(parse(&written), doc, "{text:?}");
        let lines = text.split_inclusive('\n').count().max(1);
        assert!(
            doc.diagnostics.iter().all(|d| (1..=lines).contains(&d.line)),
            "{text:?}"
        );
        let _ = doc.state();
        let _ = doc.conversation_unchecked(&Default::default());
        let (again, _) = doc.rewrite_legacy();
        assert_eq!(parse(&again).write(), again);
    }
}
