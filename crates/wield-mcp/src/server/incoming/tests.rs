//! The reader and the parse against the SDK's.

use super::*;

/// The message as the SDK parses it, in a form that shows everything
/// (`_meta` is serialized from the request's extensions).
fn sdk(line: &str) -> String {
    let m: RxJsonRpcMessage<RoleServer> = serde_json::from_str(line).unwrap();
    format!("{} {m:?}", serde_json::to_string(&m).unwrap())
}

fn ours(line: &str) -> String {
    match parse(line.as_bytes()) {
        Incoming::Message(m) => format!("{} {m:?}", serde_json::to_string(&m).unwrap()),
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn a_plain_call_is_the_message_the_sdk_parses() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"a.txt"}}}"#,
        r#"{"method":"tools/call","params":{"arguments":{"n":[1,{"x":null}]},"name":"calc"},"id":"abc","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"é\"\u0041"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
    ] {
        assert!(plain_call(line.as_bytes()).is_some(), "{line}");
        assert_eq!(ours(line), sdk(line), "{line}");
    }
}

#[test]
fn anything_else_takes_the_sdk_parse() {
    for line in [
        // `_meta` carries the progress token: the SDK moves it into the request.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{},"_meta":{"progressToken":5}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","requestState":"s"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
        // Arrays where objects belong: the SDK refuses them.
        r#"["2.0",1,"tools/call",["read",{"path":"x"}]]"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["read",{"path":"x"}]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
    ] {
        assert!(plain_call(line.as_bytes()).is_none(), "{line}");
        match serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line) {
            // A standard method the SDK could only take as a custom
            // one: refused here with `Invalid params`.
            Ok(_) if sdk(line).contains("CustomRequest") => {
                assert!(
                    matches!(parse(line.as_bytes()), Incoming::Refuse(Some(_), e) if e.code.0 == -32602),
                    "{line}"
                );
            }
            Ok(_) => assert_eq!(ours(line), sdk(line), "{line}"),
            Err(_) => assert!(!matches!(parse(line.as_bytes()), Incoming::Message(_)), "{line}"),
        }
    }
}

/// What a transport makes of `input`: the messages it yields and the
/// replies it writes by itself.
async fn drive<T: rmcp::transport::Transport<RoleServer>>(
    make: impl FnOnce(tokio::io::ReadHalf<tokio::io::DuplexStream>, tokio::io::WriteHalf<tokio::io::DuplexStream>) -> T,
    input: &str,
) -> (Vec<String>, String) {
    use tokio::io::AsyncReadExt;
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(ours);
    let (mut their_read, mut their_write) = tokio::io::split(theirs);
    tokio::io::AsyncWriteExt::write_all(&mut their_write, input.as_bytes())
        .await
        .unwrap();
    tokio::io::AsyncWriteExt::shutdown(&mut their_write).await.unwrap();
    let mut transport = make(read, write);
    let mut messages = Vec::new();
    while let Some(m) = transport.receive().await {
        messages.push(format!("{} {m:?}", serde_json::to_string(&m).unwrap()));
    }
    // Let spawned writes land, then close.
    tokio::task::yield_now().await;
    transport.close().await.unwrap();
    drop(transport);
    drop(their_write);
    let mut written = String::new();
    their_read.read_to_string(&mut written).await.unwrap();
    (messages, written)
}

#[tokio::test]
async fn every_line_is_taken_as_the_sdk_transport_takes_it() {
    let input = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        "",
        "not json",
        r#"{"jsonrpc":"2.0","id":1,"#,
        r#"{"jsonrpc":"2.0","method":"vendor/thing"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/vendor","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":1}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\r",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"x"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{},"_meta":{"progressToken":"p"}}}"#,
        "   ",
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#,
        "[]",
        r#"["2.0",1,"tools/call",["read",{"path":"x"}]]"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":["read",{"path":"x"}]}"#,
        "trailing line without a newline",
    ]
    .join("\n");
    let sdk = drive(rmcp::transport::async_rw::AsyncRwTransport::new_server, &input).await;
    let framed = drive(super::super::bounded::Bounded::new, &input).await;
    // The same messages, except the `tools/call` without a name that the
    // SDK passes on as an unknown method (answered "method not found").
    let expected: Vec<&String> = sdk.0.iter().filter(|m| !m.contains("CustomRequest")).collect();
    assert_eq!(sdk.0.len(), 8, "{:#?}", sdk.0);
    assert_eq!(framed.0.iter().collect::<Vec<_>>(), expected);
    // The same refusals, but each to its request's id when it has one
    // (JSON-RPC's `null` when not), and the call without a name told
    // what is wrong with its params.
    assert_eq!(sdk.1.matches("-32600").count(), 5, "{}", sdk.1);
    let replies: Vec<serde_json::Value> = framed.1.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary: Vec<(serde_json::Value, i64)> = replies
        .iter()
        .map(|r| (r["id"].clone(), r["error"]["code"].as_i64().unwrap()))
        .collect();
    use serde_json::json;
    // Text that is not JSON, which the SDK skips, gets `Parse error`
    // (but not the last line, which the input's end leaves unanswered).
    assert_eq!(
        summary,
        [
            (json!(null), -32700),
            (json!(null), -32700),
            (json!(1), -32600),
            (json!(1), -32602),
            (json!(1), -32600),
            (json!(null), -32600),
            (json!(null), -32600),
            (json!(4), -32602),
        ]
    );
    let why = replies[3]["error"]["message"].as_str().unwrap();
    assert!(
        why.contains("tools/call") && why.contains("missing field `name`"),
        "{why}"
    );
}

#[test]
fn requests_wait_for_one_initialize() {
    let message = |line: &str| match parse(line.as_bytes()) {
        Incoming::Message(m) => m,
        other => panic!("{line}: {other:?}"),
    };
    let code = |l: Lifecycle| match l {
        Lifecycle::Refuse(_, e) => e.code.0,
        Lifecycle::Pass => 0,
        Lifecycle::Drop => 1,
    };
    let init = message(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
    );
    let call = message(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":{}}}"#);
    let inline = message(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}"#,
    );
    let ping = message(r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#);
    let note = message(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(code(lifecycle(&init, false)), 0);
    assert_eq!(code(lifecycle(&ping, false)), 0);
    assert_eq!(code(lifecycle(&note, false)), 1);
    assert_eq!(code(lifecycle(&call, false)), -32600);
    assert_eq!(code(lifecycle(&inline, false)), -32600);
    assert_eq!(code(lifecycle(&init, true)), -32600);
    assert_eq!(code(lifecycle(&call, true)), 0);
    assert_eq!(code(lifecycle(&note, true)), 0);
    assert_eq!(code(lifecycle(&inline, true)), -32600);
    for line in [
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"prompts/list","params":{}}"#,
    ] {
        match lifecycle(&message(line), true) {
            Lifecycle::Refuse(_, e) => {
                assert_eq!(e.code.0, -32601);
                assert!(
                    e.message.contains("this server offers initialize, ping, tools/list"),
                    "{e:?}"
                );
            }
            other => panic!("{line}: {other:?}"),
        }
    }
    // Regression: a notification sent as a request got `Invalid
    // params`, and a member given twice an error that did not say so.
    for (line, code, says) in [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"notifications/cancelled","params":{"requestId":1}}"#,
            -32600,
            "send it without an `id`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","name":"b","arguments":{}}}"#,
            -32602,
            "duplicate field `name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/list"}"#,
            -32600,
            "duplicate field `method`",
        ),
        // Regression: a member given twice within the arguments or
        // `_meta` was taken, the last one winning.
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo safe","command":"rm -rf x"}}}"#,
            -32600,
            "member `command` given twice",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"echo safe","command":"rm -rf x"},"_meta":{"progressToken":1}}}"#,
            -32600,
            "member `command` given twice",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"edit","arguments":{"edits":[{"old":"a","old":"b"}]}}}"#,
            -32600,
            "member `old` given twice",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":{},"_meta":{"progressToken":1,"progressToken":2}}}"#,
            -32600,
            "member `progressToken` given twice",
        ),
    ] {
        match parse(line.as_bytes()) {
            Incoming::Refuse(Some(id), e) => {
                assert_eq!((id.to_string(), e.code.0), ("7".to_owned(), code), "{line}");
                assert!(e.message.contains(says), "{line}: {e:?}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
    // An answer that gives a member twice becomes an error for the
    // request it answers.
    let line = r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"approve":false,"approve":true}}}"#;
    match parse(line.as_bytes()) {
        Incoming::Message(m) => match *m {
            JsonRpcMessage::Error(e) => {
                assert_eq!(e.id, Some(RequestId::Number(0)));
                assert!(e.error.message.contains("member `approve` given twice"), "{e:?}");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{line}: {other:?}"),
    }
    // Regression: a notification giving `method` twice, the last naming
    // one outside the protocol, was dropped as such a notification.
    let line = r#"{"jsonrpc":"2.0","method":"notifications/initialized","method":"x"}"#;
    match parse(line.as_bytes()) {
        Incoming::Refuse(None, e) => assert!(e.message.contains("duplicate field `method`"), "{e:?}"),
        other => panic!("{line}: {other:?}"),
    }
    // So is a notification that does, where the SDK would keep the last.
    let line = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"_meta":{"a":1,"a":2}}}"#;
    match parse(line.as_bytes()) {
        Incoming::Refuse(None, e) => assert!(e.message.contains("member `a` given twice"), "{e:?}"),
        other => panic!("{line}: {other:?}"),
    }
    let line = r#"{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}"#;
    match parse(line.as_bytes()) {
        Incoming::Refuse(None, e) => assert!(e.message.contains("duplicate field `id`"), "{e:?}"),
        other => panic!("{line}: {other:?}"),
    }
}

#[test]
fn valid_json_the_parser_cannot_take_is_answered() {
    // A string cut inside a surrogate pair: taken, with U+FFFD.
    let line = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write","arguments":{"content":"cut \ud83d, kept \ud83d\ude00, \\ud83d, \udc00"}}}"#;
    let Incoming::Message(m) = parse(line.as_bytes()) else {
        panic!("{line}");
    };
    let text = serde_json::to_string(&m).unwrap();
    assert!(
        text.contains(
            r#""content":"cut \u{fffd}, kept 😀, \\ud83d, \u{fffd}""#.replace("\\u{fffd}", "\u{fffd}").as_str()
        ),
        "{text}"
    );
    assert_eq!(repair_lone_surrogates(br#"{"a":"\ud83d\ude00 \\ud83d"}"#), None);
    // A number out of range, nesting past the limit: `Parse error`, to the id.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{}{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    for line in [
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","arguments":{"n":1e400}}}"#,
        deep.as_str(),
    ] {
        match parse(line.as_bytes()) {
            Incoming::Refuse(Some(id), e) => {
                assert_eq!((id.to_string(), e.code.0), ("6".to_owned(), -32700), "{line}");
            }
            other => panic!("{line}: {other:?}"),
        }
    }
}
