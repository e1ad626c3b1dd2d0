//! Problems are diagnostics with their line and severity; the errors block
//! sending.

use wield_chat::{ChatError, DiagnosticKind as K, Severity, parse};

use super::doc;

fn found(text: &str) -> Vec<(K, usize, Severity)> {
    parse(text)
        .diagnostics
        .iter()
        .map(|d| (d.kind, d.line, d.severity))
        .collect()
}

#[test]
fn the_errors_document_reports_each_problem_on_its_line() {
    use Severity::*;
    assert_eq!(
        found(&doc("errors")),
        vec![
            (K::InvalidToolInput, 14, Error),
            (K::ToolUseWithoutFence, 17, Error),
            (K::DuplicateToolUseId, 19, Error),
            (K::InvalidToolInput, 21, Error),
            (K::UnmatchedToolResult, 32, Error),
            (K::IgnoredHeaderText, 38, Warning),
            (K::ToolResultWithoutFence, 38, Error),
            (K::UnknownRole, 42, Warning),
            (K::UnclosedFence, 48, Error),
            (K::UnclosedFence, 48, Error),
        ]
    );
}

#[test]
fn messages_say_what_to_do() {
    let src = doc("errors");
    let d = parse(&src);
    let text: Vec<String> = d.diagnostics.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|t| t.starts_with("line 14: error: the input of the tool use `toolu_bad_json` is not valid JSON"))
    );
    assert!(
        text.iter()
            .any(|t| t.contains("`toolu_unknown` answers no tool use; fix its id or remove it"))
    );
    let Err(ChatError::Blocked { diagnostics }) = d.conversation(&Default::default()) else {
        panic!()
    };
    assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
    assert_eq!(d.blocking().len(), diagnostics.len());
}

#[test]
fn frontmatter_languages() {
    assert_eq!(
        found(&doc("lua_frontmatter")),
        vec![(K::TextBeforeFirstMessage, 5, Severity::Warning)]
    );
    let src = doc("lua_frontmatter");
    let lua = parse(&src);
    assert_eq!(
        lua.frontmatter.as_ref().unwrap().code(),
        "flemma.opt.tools.auto_approve = { \"$standard\" }\nflemma.opt.tools.auto_approve:remove(\"write\")\n"
    );
    assert_eq!(lua.write(), doc("lua_frontmatter"));
    assert_eq!(
        found("```yaml\na: 1\n```\n@You:\nhi\n"),
        vec![(K::UnsupportedFrontmatter, 1, Severity::Error)]
    );
    assert_eq!(found("```toml\na = \n```\n@You:\nhi\n")[0].0, K::InvalidFrontmatter);
    assert_eq!(found("```json\n[1]\n```\n@You:\nhi\n")[0].0, K::InvalidFrontmatter);
    assert!(found("```json\n{\"flemma\": {}}\n```\n@You:\nhi\n").is_empty());
    // Only line 1, three backticks and a word: anything else is body.
    assert!(parse("\n```toml\na = 1\n```\n@You:\nhi\n").frontmatter.is_none());
    assert!(parse("````toml\na = 1\n````\n@You:\nhi\n").frontmatter.is_none());
    let unclosed = found("```toml\na = 1\n@You:\nhi\n");
    assert_eq!(unclosed[0], (K::UnclosedFrontmatter, 1, Severity::Warning));
}

#[test]
fn legacy_forms_are_warnings_naming_the_rewrite() {
    let src = doc("legacy");
    let d = parse(&src);
    let kinds: Vec<_> = d.diagnostics.iter().map(|d| (d.kind, d.line, d.severity)).collect();
    assert_eq!(
        kinds,
        vec![
            (K::LegacyInlineRole, 1, Severity::Warning),
            (K::LegacyInlineRole, 2, Severity::Warning),
            (K::LegacyPlaceholder, 27, Severity::Warning),
            (K::LegacyPlaceholder, 32, Severity::Warning),
            (K::LegacyPlaceholder, 38, Severity::Warning),
        ]
    );
    assert!(d.diagnostics[2].message.contains("read as `(pending)`"));
}

#[test]
fn duplicate_results_and_unclosed_thinking() {
    let text = "@Assistant:\n**Tool Use:** `a` (`x`)\n\n```json\n{}\n```\n@You:\n**Tool Result:** `x`\n\n```\n1\n```\n**Tool Result:** `x`\n```\n2\n```\n@Assistant:\n<thinking>\nnever closed\n";
    assert_eq!(
        found(text),
        vec![
            (K::DuplicateToolResult, 13, Severity::Error),
            (K::UnclosedThinking, 18, Severity::Warning)
        ]
    );
    // The last result counts.
    assert_eq!(parse(text).tool_calls()[0].result.as_deref(), Some("2"));
}

/// A misspelled status (any case, bare or as `status=`) is an error with
/// the status it was likely meant to be, never a finished empty result;
/// `key=value` metadata beside a real status is no error.
#[test]
fn a_misspelled_status_is_an_error_with_a_did_you_mean() {
    let text = |suffix: &str| {
        format!(
            "@Assistant:\n**Tool Use:** `ls` (`c1`)\n\n```json\n{{}}\n```\n\n@You:\n**Tool Result:** `c1` {suffix}\n\n```\n```\n"
        )
    };
    for (suffix, meant) in [
        ("(aproved)", "approved"),
        ("(Approved)", "approved"),
        ("(approve)", "approved"),
        ("(status=aproved)", "approved"),
        ("(pendign sandbox=false)", "pending"),
        ("(rejectd)", "rejected"),
    ] {
        let src = text(suffix);
        let d = parse(&src);
        let errors: Vec<String> = d.blocking().iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 1, "{suffix}: {errors:?}");
        assert!(
            errors[0].starts_with("line 9: error:") && errors[0].contains(&format!("did you mean `({meant})`")),
            "{suffix}: {errors:?}"
        );
        assert!(
            matches!(d.conversation(&Default::default()), Err(ChatError::Blocked { .. })),
            "{suffix} was sent"
        );
        assert!(d.state().unresolved.contains(&"c1".to_owned()), "{suffix} read as done");
    }
    let far_src = text("(zzzzzz)");
    let far = parse(&far_src);
    let message = far.blocking()[0].to_string();
    assert!(
        !message.contains("did you mean") && message.contains("`(pending)`"),
        "{message}"
    );
    for fine in ["(approved sandbox=false)", "(error)", ""] {
        assert!(parse(&text(fine)).blocking().is_empty(), "{fine}");
    }
}
