use serde_json::json;

use super::*;

fn turn() -> Turn {
    Turn::new(
        Origin {
            provider: "p".into(),
            model: "m".into(),
        },
        "gen_",
    )
}

#[test]
fn a_call_announced_late_gets_its_earlier_arguments_and_adopts_a_late_id() {
    let mut t = turn();
    // Arguments before the name and before any id.
    t.call_piece(Some(0), None, None, Args::Text("{\"a\":"));
    t.call_piece(Some(0), Some("real_id"), Some("f"), Args::Text("1}"));
    let events: Vec<StreamEvent> = t.drain_events().collect();
    assert_eq!(
        events,
        [
            StreamEvent::ToolCallStarted {
                id: "real_id".into(),
                name: "f".into()
            },
            StreamEvent::ToolCallDelta {
                id: "real_id".into(),
                fragment: "{\"a\":".into()
            },
            StreamEvent::ToolCallDelta {
                id: "real_id".into(),
                fragment: "1}".into()
            },
        ]
    );
    let r = t.finish();
    assert_eq!(r.tool_calls().next(), Some(("real_id", "f", &json!({"a": 1}))));
}

#[test]
fn arguments_that_are_not_an_object_are_a_bad_call_and_the_turn_goes_on() {
    let mut t = turn();
    t.whole_call(Some("x"), "f", Args::Text("[1, 2]"));
    t.text("after");
    let r = t.finish();
    assert_eq!(r.bad_calls.len(), 1);
    assert!(r.bad_calls[0].error.contains("an array"), "{:?}", r.bad_calls);
    assert_eq!(r.text(), "after");
    assert_eq!(r.stop, Stop::ToolUse);
}

#[test]
fn the_stop_reason_is_normalized() {
    let mut t = turn();
    t.text("hi");
    t.stop(Stop::ToolUse);
    // A tool stop without calls is an ordinary end.
    assert_eq!(t.finish().stop, Stop::EndTurn);
    let mut t = turn();
    t.stop(Stop::MaxTokens);
    assert_eq!(t.finish().stop, Stop::MaxTokens);
}

#[test]
fn later_usage_reports_replace_earlier_ones_where_they_say_something() {
    let mut t = turn();
    t.usage(Usage {
        input: 10,
        output: 1,
        ..Usage::default()
    });
    t.usage(Usage {
        output: 40,
        ..Usage::default()
    });
    assert_eq!(
        t.finish().usage,
        Usage {
            input: 10,
            output: 40,
            ..Usage::default()
        }
    );
}
