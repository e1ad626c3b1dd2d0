use super::*;
use crate::patch::ChunkLine::{Add, Context, Remove};

/// Parses `text` on a thread of its own and fails the test when that takes
/// more than two seconds: parsing is one forward pass, so a patch that keeps
/// it busy longer has hung it (and the tool call that sent it). After one
/// hang every later parse fails at once, so that the hung threads do not
/// pile up while the other tests wait for their deadlines.
pub(crate) fn parse_in_time(text: &str) -> Result<Patch, ParseError> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{RecvTimeoutError, channel};
    static HUNG: AtomicBool = AtomicBool::new(false);
    assert!(!HUNG.load(Ordering::Relaxed), "an earlier parse hung");
    let (done, result) = channel();
    let text = text.to_owned();
    std::thread::spawn(move || done.send(parse(&text)));
    match result.recv_timeout(std::time::Duration::from_secs(2)) {
        Ok(parsed) => parsed,
        Err(RecvTimeoutError::Timeout) => {
            HUNG.store(true, Ordering::Relaxed);
            panic!("the parser did not finish within 2 s")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("the parser panicked"),
    }
}

fn ok(text: &str) -> Patch {
    match parse_in_time(text) {
        Ok(patch) => patch,
        Err(e) => panic!("expected the patch to parse, got: {e}"),
    }
}

fn err(text: &str) -> ParseError {
    match parse_in_time(text) {
        Ok(patch) => panic!("expected an error, got {patch:?}"),
        Err(e) => e,
    }
}

fn chunks(op: &Operation) -> &[Chunk] {
    match op {
        Operation::Update { chunks, .. } => chunks,
        other => panic!("not an update: {other:?}"),
    }
}

fn s(text: &str) -> String {
    text.to_string()
}

#[test]
fn full_example_with_every_operation() {
    let patch = ok("*** Begin Patch
*** Add File: path/new.rs
+line one
+line two
*** Update File: path/old.rs
*** Move to: path/renamed.rs
@@ fn context_line
 unchanged line
-removed line
+added line
*** End of File
*** Delete File: path/gone.rs
*** End Patch
");
    assert_eq!(patch.ops.len(), 3);
    assert_eq!(
        patch.ops[0],
        Operation::Add {
            path: s("path/new.rs"),
            contents: s("line one\nline two\n"),
            line: 2
        }
    );
    assert_eq!(
        patch.ops[1],
        Operation::Update {
            path: s("path/old.rs"),
            move_to: Some(s("path/renamed.rs")),
            chunks: vec![Chunk {
                context: vec![s("fn context_line")],
                lines: vec![
                    Context(s("unchanged line")),
                    Remove(s("removed line")),
                    Add(s("added line"))
                ],
                end_of_file: true,
                line: 7,
            }],
            line: 5,
        }
    );
    assert_eq!(
        patch.ops[2],
        Operation::Delete {
            path: s("path/gone.rs"),
            line: 12
        }
    );
    assert_eq!(patch.ops[2].path(), "path/gone.rs");
    assert_eq!(patch.ops[1].line(), 5);
}

#[test]
fn old_and_new_lines_follow_the_body() {
    let patch = ok("*** Begin Patch\n*** Update File: a\n a\n-b\n+c\n d\n*** End Patch");
    let chunk = &chunks(&patch.ops[0])[0];
    assert_eq!(chunk.old_lines().collect::<Vec<_>>(), ["a", "b", "d"]);
    assert_eq!(chunk.new_lines().collect::<Vec<_>>(), ["a", "c", "d"]);
}

#[test]
fn first_chunk_without_at_at_and_later_chunks_with_it() {
    let patch = ok("*** Begin Patch\n*** Update File: a.txt\n-x\n+y\n@@\n-z\n+w\n@@ ctx\n-p\n*** End Patch\n");
    let cs = chunks(&patch.ops[0]);
    assert_eq!(cs.len(), 3);
    assert_eq!(cs[0].context, Vec::<String>::new());
    assert_eq!(cs[0].line, 3);
    assert_eq!(cs[1].context, Vec::<String>::new());
    assert_eq!(cs[1].line, 5);
    assert_eq!(cs[2].context, vec![s("ctx")]);
    assert_eq!(cs[2].lines, vec![Remove(s("p"))]);
}

#[test]
fn consecutive_context_lines_accumulate() {
    let patch = ok("*** Begin Patch\n*** Update File: a\n@@ impl Foo\n@@     fn bar()\n-x\n*** End Patch");
    assert_eq!(chunks(&patch.ops[0])[0].context, vec![s("impl Foo"), s("    fn bar()")]);
}

#[test]
fn unified_diff_ranges_are_dropped_from_context() {
    let patch = ok("*** Begin Patch\n*** Update File: a\n@@ -3,4 +3,5 @@ fn f()\n-x\n@@ -1 +1 @@\n-y\n*** End Patch");
    let cs = chunks(&patch.ops[0]);
    assert_eq!(cs[0].context, vec![s("fn f()")]);
    assert!(cs[1].context.is_empty());
}

#[test]
fn whitespace_around_markers_is_accepted() {
    let patch = ok(
        "  \n   *** Begin Patch   \n\t*** Update File:   a b.txt  \n  *** Move to: c.txt \n@@ x  \n-y\n   *** End of File  \n *** Delete File: d \n  *** End Patch  \n\n",
    );
    assert_eq!(patch.ops.len(), 2);
    match &patch.ops[0] {
        Operation::Update {
            path, move_to, chunks, ..
        } => {
            assert_eq!(path, "a b.txt");
            assert_eq!(move_to.as_deref(), Some("c.txt"));
            assert!(chunks[0].end_of_file);
            assert_eq!(chunks[0].context, vec![s("x")]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(patch.ops[1].path(), "d");
}

#[test]
fn crlf_patch_text_is_read_as_lines() {
    let patch = ok("*** Begin Patch\r\n*** Update File: a\r\n-x\r\n+y\r\n*** End Patch\r\n");
    assert_eq!(chunks(&patch.ops[0])[0].lines, vec![Remove(s("x")), Add(s("y"))]);
}

#[test]
fn heredoc_wrappers_are_stripped_and_line_numbers_kept() {
    for opener in ["<<'EOF'", "<<EOF", "<<\"EOF\"", "apply_patch <<'EOF'", "  <<'PATCH'  "] {
        let closer = if opener.contains("PATCH") { "PATCH" } else { "EOF" };
        let text = format!("{opener}\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n{closer}\n");
        let patch = ok(&text);
        assert_eq!(patch.ops, vec![Operation::Delete { path: s("a"), line: 3 }], "{opener}");
    }
    // An error inside a heredoc names the line of the original text.
    assert_eq!(
        err("<<'EOF'\n*** Begin Patch\n*** Frobnicate: a\n*** End Patch\nEOF\n").line,
        3
    );
}

#[test]
fn heredoc_without_closer_still_parses() {
    let patch = ok("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n");
    assert_eq!(patch.ops.len(), 1);
}

#[test]
fn blank_lines_between_chunks_and_operations_are_separators() {
    let patch = ok(
        "*** Begin Patch\n\n*** Update File: a\n\n@@ one\n-x\n+y\n\n\n@@ two\n-z\n\n*** Delete File: b\n\n*** End Patch\n",
    );
    let cs = chunks(&patch.ops[0]);
    assert_eq!(cs[0].lines, vec![Remove(s("x")), Add(s("y"))]);
    assert_eq!(cs[1].lines, vec![Remove(s("z"))]);
    assert_eq!(patch.ops[1].path(), "b");
}

#[test]
fn empty_line_inside_a_chunk_is_an_empty_context_line() {
    let patch = ok("*** Begin Patch\n*** Update File: a\n@@\n fn a() {}\n\n-fn b() {}\n\n\n+fn c() {}\n*** End Patch");
    assert_eq!(
        chunks(&patch.ops[0])[0].lines,
        vec![
            Context(s("fn a() {}")),
            Context(s("")),
            Remove(s("fn b() {}")),
            Context(s("")),
            Context(s("")),
            Add(s("fn c() {}"))
        ]
    );
}

#[test]
fn add_file_contents_and_blank_lines() {
    let patch = ok("*** Begin Patch\n*** Add File: a\n+one\n\n+three\n+\n\n*** Add File: empty\n*** End Patch");
    assert_eq!(
        patch.ops[0],
        Operation::Add {
            path: s("a"),
            contents: s("one\n\nthree\n\n"),
            line: 2
        }
    );
    assert_eq!(
        patch.ops[1],
        Operation::Add {
            path: s("empty"),
            contents: s(""),
            line: 8
        }
    );
}

#[test]
fn marker_text_behind_a_body_prefix_is_content() {
    let patch = ok("*** Begin Patch\n*** Update File: a\n-*** End Patch\n+*** Add File: x\n ***bold***\n*** End Patch");
    assert_eq!(
        chunks(&patch.ops[0])[0].lines,
        vec![
            Remove(s("*** End Patch")),
            Add(s("*** Add File: x")),
            Context(s("***bold***"))
        ]
    );
}

#[test]
fn unknown_header_names_the_line_and_lists_valid_headers() {
    let e = err("*** Begin Patch\n*** Delete File: a\n*** Rename File: b\n*** End Patch");
    assert_eq!(e.line, 3);
    assert_eq!(
        e.kind,
        ParseErrorKind::UnknownHeader {
            found: s("*** Rename File: b")
        }
    );
    let msg = e.to_string();
    assert!(msg.contains("line 3"), "{msg}");
    assert!(msg.contains("unknown header `*** Rename File: b`"), "{msg}");
    for header in [
        "*** Add File: PATH",
        "*** Update File: PATH",
        "*** Delete File: PATH",
        "*** Move to: PATH",
        "*** End Patch",
    ] {
        assert!(msg.contains(header), "{header} missing from: {msg}");
    }
}

#[test]
fn update_without_chunks_is_refused() {
    let e = err("*** Begin Patch\n*** Update File: a.rs\n*** Delete File: b\n*** End Patch");
    assert_eq!(
        (e.line, e.kind.clone()),
        (2, ParseErrorKind::EmptyUpdate { path: s("a.rs") })
    );
    assert!(e.to_string().contains("`*** Update File: a.rs` has no chunks"), "{e}");
    let e = err("*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n\n*** End Patch");
    assert_eq!(e.kind, ParseErrorKind::EmptyUpdate { path: s("a.rs") });
}

#[test]
fn chunk_with_context_but_no_lines_is_refused() {
    let e = err("*** Begin Patch\n*** Update File: a\n-x\n@@ ctx\n*** End Patch");
    assert_eq!((e.line, e.kind), (4, ParseErrorKind::EmptyChunk { path: s("a") }));
}

#[test]
fn missing_end_patch_is_refused() {
    let e = err("*** Begin Patch\n*** Update File: a\n-x\n+y\n");
    assert_eq!((e.line, e.kind.clone()), (4, ParseErrorKind::MissingEnd));
    assert!(e.to_string().contains("missing `*** End Patch`"), "{e}");
}

#[test]
fn missing_begin_and_empty_text_are_refused() {
    let e = err("*** Update File: a\n-x\n*** End Patch");
    assert_eq!(
        (e.line, e.kind),
        (
            1,
            ParseErrorKind::MissingBegin {
                found: s("*** Update File: a")
            }
        )
    );
    assert_eq!(err("").kind, ParseErrorKind::Empty);
    assert_eq!(err("\n  \n").kind, ParseErrorKind::Empty);
}

#[test]
fn patch_without_operations_modifies_nothing() {
    let e = err("*** Begin Patch\n*** End Patch\n");
    assert_eq!((e.line, e.kind.clone()), (2, ParseErrorKind::NoOperations));
    assert!(e.to_string().contains("no files were modified"), "{e}");
}

#[test]
fn bad_lines_in_add_and_update_are_refused() {
    let e = err("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch");
    assert_eq!(
        (e.line, e.kind),
        (
            4,
            ParseErrorKind::BadAddLine {
                path: s("a"),
                found: s("y")
            }
        )
    );
    let e = err("*** Begin Patch\n*** Update File: a\n-x\nforgot the prefix\n*** End Patch");
    assert_eq!(e.line, 4);
    assert!(
        e.to_string()
            .contains("must start with ' ' (context), '-' (remove), '+' (add)"),
        "{e}"
    );
}

#[test]
fn misplaced_markers_are_refused() {
    let e = err("*** Begin Patch\n*** Move to: b\n*** End Patch");
    assert!(
        matches!(e.kind, ParseErrorKind::MisplacedLine { .. }) && e.line == 2,
        "{e}"
    );
    let e = err("*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch");
    assert!(
        matches!(e.kind, ParseErrorKind::MisplacedLine { .. }) && e.line == 3,
        "{e}"
    );
    let e = err("*** Begin Patch\n*** Begin Patch\n*** End Patch");
    assert!(
        matches!(e.kind, ParseErrorKind::MisplacedLine { .. }) && e.line == 2,
        "{e}"
    );
    let e = err("*** Begin Patch\n-x\n*** End Patch");
    assert!(e.to_string().contains("must follow an `*** Update File:`"), "{e}");
}

#[test]
fn empty_paths_are_refused() {
    let e = err("*** Begin Patch\n*** Delete File:   \n*** End Patch");
    assert_eq!(
        e.kind,
        ParseErrorKind::EmptyPath {
            header: "*** Delete File:"
        }
    );
}

#[test]
fn a_path_in_two_operations_is_refused() {
    let e = err("*** Begin Patch\n*** Update File: a\n-x\n*** Delete File: a\n*** End Patch");
    assert_eq!(
        (e.line, e.kind),
        (
            4,
            ParseErrorKind::DuplicatePath {
                path: s("a"),
                first_line: 2
            }
        )
    );
    let e = err("*** Begin Patch\n*** Update File: a\n*** Move to: b\n-x\n*** Add File: b\n+y\n*** End Patch");
    assert_eq!(
        e.kind,
        ParseErrorKind::DuplicatePath {
            path: s("b"),
            first_line: 2
        }
    );
}

#[test]
fn a_deleted_path_may_be_created_again_once() {
    let ok = |text: &str| match parse_in_time(text) {
        Ok(p) => p.ops.len(),
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        ok("*** Begin Patch\n*** Delete File: b\n*** Update File: a\n*** Move to: b\n-x\n*** End Patch"),
        2
    );
    assert_eq!(
        ok("*** Begin Patch\n*** Delete File: b\n*** Add File: b\n+y\n*** End Patch"),
        2
    );
    // Not twice, not before the delete, and not an update of it.
    for (text, line) in [
        (
            "*** Begin Patch\n*** Delete File: b\n*** Add File: b\n+y\n*** Add File: b\n+z\n*** End Patch",
            5,
        ),
        (
            "*** Begin Patch\n*** Add File: b\n+y\n*** Delete File: b\n*** End Patch",
            4,
        ),
        (
            "*** Begin Patch\n*** Delete File: b\n*** Update File: b\n-x\n*** End Patch",
            3,
        ),
        (
            "*** Begin Patch\n*** Delete File: b\n*** Delete File: b\n*** End Patch",
            3,
        ),
    ] {
        let e = err(text);
        assert_eq!(e.line, line, "{text}");
        assert!(matches!(e.kind, ParseErrorKind::DuplicatePath { .. }), "{text}");
    }
}

#[test]
fn text_after_end_patch_is_refused() {
    let e = err("*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Begin Patch\n");
    assert_eq!(e.line, 4);
    assert!(matches!(e.kind, ParseErrorKind::TrailingText { .. }));
}

#[test]
fn long_lines_are_shortened_in_messages() {
    let long = "x".repeat(500);
    let e = err(&format!("*** Begin Patch\n*** {long}\n*** End Patch"));
    assert!(e.to_string().len() < 1000, "{e}");
    assert!(e.to_string().contains('…'));
}

/// A patch cut off after a blank line is refused for its missing end, at
/// its last line.
#[test]
fn a_patch_cut_off_after_blank_lines_is_missing_its_end() {
    let e = err("*** Begin Patch\n*** Update File: a\n-x\n\n");
    assert_eq!((e.line, e.kind), (4, ParseErrorKind::MissingEnd));
    let e = err("*** Begin Patch\n*** Add File: a\n+x\n\n");
    assert_eq!((e.line, e.kind), (4, ParseErrorKind::MissingEnd));
}

/// `*** End of File` right after an `@@` line ends a chunk with no lines,
/// which is refused at the `@@` line.
#[test]
fn end_of_file_after_a_bare_context_line_is_an_empty_chunk() {
    let e = err("*** Begin Patch\n*** Update File: a\n-x\n@@ ctx\n*** End of File\n*** End Patch");
    assert_eq!((e.line, e.kind), (4, ParseErrorKind::EmptyChunk { path: s("a") }));
}

/// A heredoc delimiter may hold underscores; a first line with `<<` and
/// anything but a word after it is no heredoc, and is refused as the
/// patch's first line.
#[test]
fn heredoc_delimiters_are_words() {
    let patch = ok("<<'END_PATCH'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEND_PATCH\n");
    assert_eq!(patch.ops, vec![Operation::Delete { path: s("a"), line: 3 }]);
    let e = err("<<'not a word'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n");
    assert_eq!(
        (e.line, e.kind),
        (
            1,
            ParseErrorKind::MissingBegin {
                found: s("<<'not a word'")
            }
        )
    );
}
