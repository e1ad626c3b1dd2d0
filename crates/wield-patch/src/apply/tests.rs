use super::*;
use crate::fold::Level;
use crate::indent::Shift;
use crate::mismatch::MismatchKind;
use crate::parser::tests::parse_in_time;
use crate::patch::Operation;

/// Parses a one-file update body (the lines between the Update header and
/// `*** End Patch`) and returns its chunks.
fn chunks(body: &str) -> Vec<Chunk> {
    let text = format!("*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch\n");
    match parse_in_time(&text) {
        Ok(patch) => match patch.ops.into_iter().next() {
            Some(Operation::Update { chunks, .. }) => chunks,
            other => panic!("{other:?}"),
        },
        Err(e) => panic!("{e}"),
    }
}

fn apply(original: &str, body: &str) -> String {
    match apply_chunks(original, &chunks(body)) {
        Ok(applied) => applied.text,
        Err(e) => panic!("expected the chunks to apply, got:\n{e}"),
    }
}

fn fail(original: &str, body: &str) -> MatchError {
    match apply_chunks(original, &chunks(body)) {
        Ok(applied) => panic!("expected a mismatch, got {:?}", applied.text),
        Err(e) => e,
    }
}

#[test]
fn replaces_a_line_in_the_middle() {
    assert_eq!(apply("a\nb\nc\n", " a\n-b\n+B\n c"), "a\nB\nc\n");
}

#[test]
fn each_matching_pass_applies_and_keeps_the_file_text_of_kept_lines() {
    // Trailing whitespace in the file.
    assert_eq!(apply("keep   \nold  \n", " keep\n-old\n+new"), "keep   \nnew\n");
    // Indentation differs: the kept line keeps the file's, the added line
    // gets the same offset.
    assert_eq!(apply("    keep\n    old\n", " keep\n-old\n+new"), "    keep\n    new\n");
    // Unicode punctuation in the file, ASCII in the patch.
    let file = "// a \u{2014} b\nlet s = \u{201C}hi\u{201D};\nlet t = \u{2018}x\u{2019};\u{00A0}\n";
    let out = apply(file, " // a - b\n-let s = \"hi\";\n+let s = \"bye\";\n let t = 'x';");
    assert_eq!(
        out,
        "// a \u{2014} b\nlet s = \"bye\";\nlet t = \u{2018}x\u{2019};\u{00A0}\n"
    );
}

#[test]
fn stricter_pass_wins_even_when_a_fuzzy_match_comes_first() {
    assert_eq!(apply("  x\nx\n", "-x\n+y"), "  x\ny\n");
}

#[test]
fn context_line_is_found_first_then_the_lines_after_it() {
    let file = "fn a() {\n    return 1;\n}\nfn b() {\n    return 1;\n}\n";
    let out = apply(file, "@@ fn b() {\n-    return 1;\n+    return 2;");
    assert_eq!(out, "fn a() {\n    return 1;\n}\nfn b() {\n    return 2;\n}\n");
    // A fragment of the line is enough for `@@`.
    let expected = "fn a() {\n    return 1;\n}\nfn b() {\n    return 3;\n}\n";
    assert_eq!(apply(file, "@@ fn b\n-    return 1;\n+    return 3;"), expected);
}

#[test]
fn several_context_lines_narrow_the_location() {
    let file = "impl A {\n    fn f() {\n        x\n    }\n}\nimpl B {\n    fn f() {\n        x\n    }\n}\n";
    let out = apply(file, "@@ impl B {\n@@     fn f() {\n-        x\n+        y");
    assert!(out.ends_with("impl B {\n    fn f() {\n        y\n    }\n}\n"), "{out}");
    assert!(out.starts_with("impl A {\n    fn f() {\n        x\n"), "{out}");
}

#[test]
fn first_old_line_may_repeat_the_context_line() {
    assert_eq!(
        apply("a\nfn f() {\n  x\n}\n", "@@ fn f() {\n fn f() {\n-  x\n+  y"),
        "a\nfn f() {\n  y\n}\n"
    );
}

#[test]
fn chunks_apply_in_file_order_and_repeated_lines_in_order() {
    let file = "x\n}\nx\n}\nx\n}\n";
    let out = apply(file, "@@\n-x\n+one\n@@\n-x\n+two\n@@\n-x\n+three");
    assert_eq!(out, "one\n}\ntwo\n}\nthree\n}\n");
    // Two chunks on the same region: the second must find a later copy.
    let e = fail("x\ny\n", "@@\n-x\n@@\n-x");
    assert_eq!((e.chunk, e.chunk_count, e.kind), (2, 2, MismatchKind::Lines));
}

#[test]
fn out_of_order_chunks_are_reported_with_where_the_lines_are() {
    let e = fail("a\nb\nc\nd\n", "@@\n-c\n+C\n@@\n-a\n+A");
    assert_eq!(e.chunk, 2);
    assert_eq!(e.found_elsewhere, Some(1));
    assert_eq!(e.searched_from, 4);
    assert!(e.to_string().contains("list chunks in the order"), "{e}");
}

#[test]
fn append_only_chunk_goes_to_the_end() {
    assert_eq!(apply("a\nb\n", "+c\n+d"), "a\nb\nc\nd\n");
    assert_eq!(apply("", "+first"), "first\n");
    // Other chunks may follow an append and still change earlier lines.
    assert_eq!(apply("a\nb\n", "@@\n+z\n@@\n-a\n+A"), "A\nb\nz\n");
}

#[test]
fn insert_only_chunk_with_context_goes_after_the_context_line() {
    assert_eq!(
        apply("fn f() {\n}\nend\n", "@@ fn f() {\n+    body();"),
        "fn f() {\n    body();\n}\nend\n"
    );
}

#[test]
fn end_of_file_anchors_at_the_end() {
    let file = "x\nend\nx\nend\n";
    assert_eq!(apply(file, "-x\n-end\n+last\n*** End of File"), "x\nend\nlast\n");
    let e = fail("x\nend\ny\n", "-x\n-end\n*** End of File");
    assert_eq!(e.kind, MismatchKind::EndOfFile);
    assert_eq!(e.found_elsewhere, Some(1));
    assert!(e.to_string().contains("`*** End of File`"), "{e}");
    // Only added lines with End of File: appended.
    assert_eq!(apply("a\n", "@@ a\n+b\n*** End of File"), "a\nb\n");
}

#[test]
fn trailing_empty_context_line_is_optional_at_the_end_of_the_file() {
    assert_eq!(apply("a\nb\n", " a\n-b\n+c\n \n"), "a\nc\n");
    assert_eq!(apply("a\nb", "-b\n+c\n \n*** End of File"), "a\nc\n");
}

#[test]
fn crlf_is_preserved_and_new_lines_get_crlf() {
    assert_eq!(apply("a\r\nb\r\nc\r\n", " a\n-b\n+B\n+B2\n c"), "a\r\nB\r\nB2\r\nc\r\n");
    // Mixed endings: each kept line keeps its own; new lines take the majority.
    assert_eq!(apply("a\r\nb\nc\r\nd\r\n", "-a\n+A\n b"), "A\r\nb\nc\r\nd\r\n");
}

#[test]
fn missing_final_newline_is_kept_unless_a_chunk_touches_the_end() {
    assert_eq!(apply("a\nb\nc", "-a\n+A"), "A\nb\nc");
    assert_eq!(apply("a\nb\nc", " b\n-c\n+C"), "a\nb\nC\n");
    assert_eq!(apply("a\nb\nc", " b\n c\n+d"), "a\nb\nc\nd\n");
    assert_eq!(apply("a\nb", "+c"), "a\nb\nc\n");
    assert_eq!(apply("a\r\nb", "+c"), "a\r\nb\r\nc\r\n");
}

#[test]
fn deleting_every_line_leaves_an_empty_file() {
    assert_eq!(apply("a\nb\n", "-a\n-b"), "");
}

#[test]
fn context_not_found_names_the_chunk_and_the_closest_line() {
    let e = fail("fn alpha() {}\nfn beta(x: u8) {}\n", "@@ fn beta(y: u16)\n-x\n+y");
    assert_eq!(e.kind, MismatchKind::Context);
    assert_eq!(e.expected, vec!["fn beta(y: u16)".to_string()]);
    let closest = e.closest.clone().expect("a closest line");
    assert_eq!(closest.first_line, 2);
    let msg = e.to_string();
    assert!(msg.contains("chunk 1 of 1 (patch line 3)"), "{msg}");
    assert!(msg.contains("`@@` context line was not found"), "{msg}");
    assert!(msg.contains("     2 | fn beta(x: u8) {}"), "{msg}");
}

#[test]
fn lines_not_found_report_the_expected_lines_and_the_closest_region() {
    let file = "use std::io;\n\nfn main() {\n    let a = 1;\n    let b = 2;\n    println!(\"{}\", a + b);\n}\n";
    let e = fail(
        file,
        "@@\n fn main() {\n     let a = 1;\n-    let b = 3;\n+    let b = 4;\n     println!(\"{}\", a + b);",
    );
    assert_eq!(e.kind, MismatchKind::Lines);
    assert_eq!(e.expected.len(), 4);
    let closest = e.closest.clone().expect("a region");
    assert_eq!(closest.first_line, 3);
    assert_eq!(closest.similar, 3);
    let msg = e.to_string();
    assert!(
        msg.contains("chunk 1 of 1 (patch line 3) does not match the file"),
        "{msg}"
    );
    assert!(msg.contains("|     let b = 3;"), "{msg}");
    assert!(
        msg.contains("Closest region in the file: lines 3-6 (3 of 4 expected lines similar)"),
        "{msg}"
    );
    assert!(msg.contains("     5 |     let b = 2;"), "{msg}");
    assert!(msg.contains("Re-read the file"), "{msg}");
}

#[test]
fn no_similar_lines_says_so() {
    let e = fail("a\nb\n", "-zzz");
    assert_eq!(e.closest, None);
    assert!(e.to_string().contains("No similar lines"), "{e}");
}

#[test]
fn empty_file_accepts_only_appends() {
    assert_eq!(fail("", "-x").kind, MismatchKind::Lines);
    assert_eq!(fail("", "@@ x\n+y").kind, MismatchKind::Context);
}

#[test]
fn indexed_search_agrees_with_direct_scan_on_far_chunks() {
    // Chunks far apart (beyond the direct-scan window) go through the index.
    let mut file = String::new();
    for i in 0..20_000 {
        file.push_str(&format!("line {i}\n"));
    }
    let file = file.replace("line 15000\n", "  line 15000 \u{2014} x\n");
    let out = apply(
        &file,
        "@@\n-line 12000\n+twelve\n@@\n-line 15000 - x\n+fifteen\n@@\n-line 19999\n+last",
    );
    assert!(out.contains("line 11999\ntwelve\nline 12001\n"));
    assert!(out.contains("line 14999\n  fifteen\nline 15001\n"));
    assert!(out.ends_with("line 19998\nlast\n"));
}

#[test]
fn fold_level_is_the_last_resort() {
    let lines = crate::lines::FileLines::new("a \u{2013} b\n");
    let searcher = Searcher::new(&lines);
    assert_eq!(searcher.find(&["a - b"], 0), Some((0, Level::Fold)));
}

fn applied(original: &str, body: &str) -> Applied {
    match apply_chunks(original, &chunks(body)) {
        Ok(applied) => applied,
        Err(e) => panic!("expected the chunks to apply, got:\n{e}"),
    }
}

#[test]
fn an_under_indented_chunk_is_re_indented_and_reported() {
    let file = "def f(x):\n    if x:\n        return 1\n    return 0\n";
    // The model dropped one level on every line of the chunk.
    let out = applied(
        file,
        "@@\n if x:\n-    return 1\n+    y = x * 2\n+    return y\n return 0",
    );
    assert_eq!(
        out.text,
        "def f(x):\n    if x:\n        y = x * 2\n        return y\n    return 0\n"
    );
    let [fuzzy] = out.fuzzy.as_slice() else {
        panic!("{:?}", out.fuzzy)
    };
    assert_eq!((fuzzy.chunk, fuzzy.first_line, fuzzy.line_count), (1, 2, 3));
    assert_eq!(fuzzy.pass, Level::Trim);
    assert_eq!(fuzzy.shift, Some(Shift::Deeper("    ".into())));
    let said = fuzzy.to_string();
    assert!(
        said.starts_with("chunk 1 matched lines 2-4 only when leading and trailing whitespace is ignored"),
        "{said}"
    );
    assert!(said.contains("indented 4 spaces deeper than the patch"), "{said}");
}

#[test]
fn an_over_indented_chunk_is_shifted_back() {
    let file = "fn f() {\n\tlet a = 1;\n}\n";
    let out = applied(
        file,
        "@@\n \tfn f() {\n-\t\tlet a = 1;\n+\t\tlet a = 2;\n+\n+\t\tlet b = a;\n \t}",
    );
    assert_eq!(out.text, "fn f() {\n\tlet a = 2;\n\n\tlet b = a;\n}\n");
    assert_eq!(out.fuzzy[0].shift, Some(Shift::Shallower("\t".into())));
}

#[test]
fn an_uneven_indentation_offset_is_refused_not_guessed() {
    let file = "if a:\n    if b:\n        x()\n";
    // Line 1 matches as is, line 2 is 4 short, line 3 is 8 short.
    let e = fail(file, "@@\n if a:\n if b:\n-x()\n+y()");
    assert_eq!(e.kind, MismatchKind::Indentation);
    let said = e.to_string();
    assert!(said.contains("by different amounts on different lines"), "{said}");
    assert!(said.contains("The file's lines 1-3:"), "{said}");
    assert!(said.contains("indentation included"), "{said}");
    // An added line indented less than the offset to take away.
    let e = fail("x = 1\n", "@@\n-    x = 1\n+  x = 2");
    assert_eq!(e.kind, MismatchKind::Indentation);
}

#[test]
fn exact_matches_are_not_reported_and_trailing_whitespace_is_reported_without_a_shift() {
    assert!(applied("a\nb\n", "-a\n+A").fuzzy.is_empty());
    let out = applied("a  \nb\n", "-a\n+A");
    assert_eq!(out.text, "A\nb\n");
    assert_eq!((out.fuzzy[0].pass, out.fuzzy[0].shift.clone()), (Level::TrimEnd, None));
    assert_eq!(
        out.fuzzy[0].to_string(),
        "chunk 1 matched line 1 only when whitespace at the ends of lines is ignored"
    );
}

#[test]
fn lone_cr_files_are_split_into_lines_and_stay_cr() {
    let out = apply("one\rtwo\rthree\r", "@@\n-one\n+uno\n@@\n two\n+\n+between\n three");
    assert_eq!(out, "uno\rtwo\r\rbetween\rthree\r");
}

#[test]
fn replacing_lines_keeps_their_endings_and_insertions_take_the_majority() {
    // Mixed file: the replaced line was CRLF, so its replacement is too.
    assert_eq!(
        apply("one\r\ntwo\nthree\r\nfour\n", " two\n-three\n+THREE\n four"),
        "one\r\ntwo\nTHREE\r\nfour\n"
    );
    // Two removed lines with different endings, three added: in order, the
    // extra one like the last removed.
    assert_eq!(
        apply("a\nb\r\nc\nd\n", " a\n-b\n-c\n+B\n+C\n+X\n d"),
        "a\nB\r\nC\nX\nd\n"
    );
    // A pure insertion takes the majority (LF here), whatever its neighbours.
    assert_eq!(apply("a\r\nb\nc\n", " a\r\n+new\n b"), "a\r\nnew\nb\nc\n");
    // Replacing a last line that had no ending gives it the majority ending.
    assert_eq!(apply("a\r\nb\r\nc", "-c\n+C"), "a\r\nb\r\nC\r\n");
}

#[test]
fn a_one_line_file_says_one_line() {
    let e = fail("only\n", "-other\n+x");
    assert!(e.to_string().contains("(the file has 1 line;"), "{e}");
    let e = fail("a\nb\n", "-other\n+x");
    assert!(e.to_string().contains("(the file has 2 lines;"), "{e}");
}

/// A fuzzy match of two lines at line 3 names both lines, 3-4.
#[test]
fn a_fuzzy_match_names_its_first_and_last_line() {
    let out = applied("a\nb\nc  \nd\n", " c\n-d\n+D");
    assert_eq!(out.text, "a\nb\nc  \nD\n");
    assert!(
        out.fuzzy[0].to_string().starts_with("chunk 1 matched lines 3-4 only"),
        "{}",
        out.fuzzy[0]
    );
}

/// The old lines of a chunk are looked for after its `@@` line, so a line
/// that repeats the `@@` text further down is the one changed.
#[test]
fn old_lines_are_found_after_the_context_line() {
    assert_eq!(apply("x\ny\nx\n", "@@ x\n-x\n+z"), "x\ny\nz\n");
}

/// After an insertion below an `@@` line, the next chunk is placed after
/// that line, not on it.
#[test]
fn the_chunk_after_an_insertion_is_searched_below_its_context_line() {
    assert_eq!(
        apply("x\nx\n", "@@ x\n+after first\n@@\n-x\n+second"),
        "x\nafter first\nsecond\n"
    );
}

/// Only blank trailing context lines may be dropped at the end of the file;
/// a trailing line with text must match, and a chunk is never reduced to
/// nothing.
#[test]
fn only_blank_trailing_context_is_optional() {
    assert_eq!(fail("a\nb\n", " a\n-b\n+c\n zzz").kind, MismatchKind::Lines);
    assert_eq!(fail("a\nb\n", "@@\n+x\n ").kind, MismatchKind::Lines);
}

/// A blank patch line matched to a line of spaces and a zero-width
/// character says nothing about indentation: the chunk still applies.
#[test]
fn a_blank_line_holding_an_invisible_character_is_not_indentation() {
    assert_eq!(apply("a\n    \u{FEFF}\nb\n", " a\n \n-b\n+B"), "a\n    \u{FEFF}\nB\n");
}

/// An `*** End of File` chunk whose lines occur elsewhere says where, and
/// that the end of the file is not there.
#[test]
fn end_of_file_mismatch_says_where_the_lines_are() {
    let e = fail("x\nend\ny\n", "-x\n-end\n*** End of File");
    let said = e.to_string();
    assert!(
        said.contains("They occur at line 1, which is not the end of the file"),
        "{said}"
    );
}

/// A context line that is not found is shown with the closest single line.
#[test]
fn context_mismatch_shows_the_closest_line_not_a_region() {
    let e = fail("fn alpha() {}\nfn beta(x: u8) {}\n", "@@ fn beta(y: u16)\n-x\n+y");
    let said = e.to_string();
    assert!(
        said.contains("Closest line in the file:\n     2 | fn beta(x: u8) {}"),
        "{said}"
    );
    assert!(!said.contains("Closest region"), "{said}");
}

/// A message lists at most 40 expected lines and says how many more there
/// were.
#[test]
fn long_expected_text_is_cut_at_forty_lines() {
    let body = |n: usize| (0..n).map(|i| format!("-missing {i}")).collect::<Vec<_>>().join("\n");
    let said = fail("a\n", &body(40)).to_string();
    assert!(said.contains("| missing 39\n"), "{said}");
    assert!(!said.contains("more lines"), "{said}");
    let said = fail("a\n", &body(41)).to_string();
    assert!(!said.contains("missing 40"), "{said}");
    assert!(said.contains("… 1 more lines"), "{said}");
}
