//! What wield's client corrects in the SDK's transports, which it runs
//! on: over stdio (`AsyncRwTransport`) [`ReadableReplies`] stands between
//! the server's output and the SDK and hands it only lines it reads; over
//! HTTP [`readable_events`] does the same for the messages of an event
//! stream.
//!
//! - A reply that is not JSON (`NaN`, or half a surrogate pair, which
//!   JavaScript's `JSON.stringify` writes for a string cut inside an emoji)
//!   the SDK passes over without a word; one of the wrong shape it answers
//!   with an `Invalid request` error to the server and passes over. Either
//!   way the call it answers waits for its timeout. Here half a surrogate
//!   pair is read as U+FFFD (as the TypeScript SDK reads it), and a reply
//!   that still cannot be read becomes an error to its id that says why;
//!   any other line the SDK cannot read (a request, a notification, JSON
//!   logging) is passed over here, so the server is not answered for it.
//! - A line longer than the SDK reads ([`MAX_MESSAGE`]) it drops, with a
//!   log line only: the call it answers waits for its timeout. Here it is
//!   dropped too, and said ([`Long`]), so the call fails at once. Over
//!   HTTP the SDK ends the stream at an event past its limit (16 MiB),
//!   without the answer; on the stream of a request's answer, the event
//!   becomes an error to the request that says so (the SDK's error for it
//!   is known by its text: [`super::sse_event_too_large`]).
//!
//! - Its types leave out what they do not model, and a result with one
//!   part they cannot read is not read at all: a tool's `execution` is
//!   dropped, so which tools must be called as tasks is read from the raw
//!   listing (`Health::capture`, `listing::task_required`); a tool result
//!   with one content block of an unknown kind is not a `CallToolResult`
//!   but the SDK's `CustomResult`, read block by block by `raw_result`.
//! - Its error for a failure of its HTTP client holds that error without
//!   naming it its source; [`cause_of`] follows it (so "error sending
//!   request" goes on to "Connection refused").
//!
//! The tests drive the SDK alone and fail when it stops doing what is
//! corrected.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::StreamExt;
use futures::stream::BoxStream;
use rmcp::model::{ErrorCode, JsonRpcError, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpError};
use rmcp::{ErrorData, RoleClient};
use sse_stream::Sse;
use tokio::io::{AsyncRead, ReadBuf};

use crate::wire::{repair_lone_surrogates, request_id_in, strip_bom};

/// The longest message wield reads from a server, its newline included;
/// the SDK's transport is set to the same limit.
pub(crate) const MAX_MESSAGE: usize = crate::wire::MAX_LINE;

/// How much of the start of a line is searched for its members (every SDK
/// writes `jsonrpc`, `id` and `method` before the parameters or result).
const HEAD: usize = 256;

/// How much is read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// A line longer than [`MAX_MESSAGE`].
#[derive(Debug, PartialEq)]
pub(crate) enum Long {
    /// A request or a notification: it names its `method` at its start.
    Message,
    /// A reply, with its id when that comes before the result (as the
    /// Python and Rust SDKs write it).
    Reply(Option<String>),
}

/// A server's output as the SDK can read it (see the module's notes).
pub(crate) struct ReadableReplies<R> {
    inner: R,
    chunk: Box<[u8]>,
    /// Read and not yet made into lines for the SDK: part of a line.
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no newline.
    scanned: usize,
    /// Lines for the SDK, and how much of them it has.
    ready: Vec<u8>,
    given: usize,
    /// Dropping the rest of a line longer than [`MAX_MESSAGE`].
    discarding: bool,
    ended: bool,
    on_long: Box<dyn Fn(Long) + Send + Sync>,
}

impl<R: AsyncRead + Unpin> ReadableReplies<R> {
    /// `inner`, a server's output; `on_long` is told of each line longer
    /// than [`MAX_MESSAGE`], as soon as it is that long.
    pub(crate) fn new(inner: R, on_long: impl Fn(Long) + Send + Sync + 'static) -> Self {
        Self {
            inner,
            chunk: vec![0; CHUNK].into_boxed_slice(),
            pending: Vec::with_capacity(CHUNK),
            scanned: 0,
            ready: Vec::with_capacity(CHUNK),
            given: 0,
            discarding: false,
            ended: false,
            on_long: Box::new(on_long),
        }
    }

    /// Make the whole lines in `pending` lines for the SDK.
    fn frame(&mut self) {
        let mut start = 0;
        while let Some(at) = memchr::memchr(b'\n', &self.pending[start + self.scanned..]) {
            let end = start + self.scanned + at + 1;
            let line = &self.pending[start..end];
            if std::mem::take(&mut self.discarding) {
                // The end of a line already dropped.
            } else if line.len() > MAX_MESSAGE {
                (self.on_long)(long(&line[..HEAD]));
            } else {
                readable_line(line, &mut self.ready);
            }
            start = end;
            self.scanned = 0;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len();
        if self.pending.len() >= MAX_MESSAGE || (self.discarding && !self.pending.is_empty()) {
            if !self.discarding {
                (self.on_long)(long(&self.pending[..HEAD.min(self.pending.len())]));
                self.discarding = true;
            }
            self.pending.clear();
            self.scanned = 0;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for ReadableReplies<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.given < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.given);
                buf.put_slice(&this.ready[this.given..this.given + n]);
                this.given += n;
                return Poll::Ready(Ok(()));
            }
            this.ready.clear();
            this.given = 0;
            // What a long line took is given back once it is read.
            this.ready.shrink_to(CHUNK);
            if this.pending.is_empty() {
                this.pending.shrink_to(CHUNK);
            }
            if this.ended {
                return Poll::Ready(Ok(()));
            }
            let mut into = ReadBuf::new(&mut this.chunk[..]);
            match Pin::new(&mut this.inner).poll_read(cx, &mut into) {
                Poll::Ready(Ok(())) => {
                    let read = into.filled();
                    if read.is_empty() {
                        // A last line without its newline: the SDK passes
                        // it over at the end of input.
                        this.ended = true;
                    } else {
                        this.pending.extend_from_slice(read);
                        this.frame();
                    }
                }
                other => return other,
            }
        }
    }
}

/// What a line longer than the limit starting with `head` is.
fn long(head: &[u8]) -> Long {
    if memchr::memmem::find(head, b"\"method\"").is_some() {
        Long::Message
    } else {
        Long::Reply(crate::wire::id_token(head).map(|(text, _)| text))
    }
}

/// Append `line` (with its newline) to `out` as the SDK can read it: as it
/// is when it can, made readable, or not at all.
fn readable_line(line: &[u8], out: &mut Vec<u8>) {
    let body = strip_bom(line).trim_ascii();
    if body.is_empty() {
        return;
    }
    if surely_read(body) {
        out.extend_from_slice(line);
        return;
    }
    match serde_json::from_slice::<ServerJsonRpcMessage>(body) {
        Ok(_) => out.extend_from_slice(line),
        Err(error) => {
            if let Some(message) = unreadable(body, &error)
                && serde_json::to_writer(&mut *out, &message).is_ok()
            {
                out.push(b'\n');
            }
        }
    }
}

/// `events` with each message that does not parse made readable, as
/// [`unreadable`] does; on the stream of the answer to
/// request `id`, an event larger than the SDK reads becomes an error to
/// the request that says so (the stream would end without the answer).
pub(crate) fn readable_events(
    events: BoxStream<'static, Result<Sse, SseError>>,
    id: Option<RequestId>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    events
        .map(move |event| match (event, &id) {
            (Err(e), Some(id)) if super::sse_event_too_large(&e) => Ok(too_large(id, &e)),
            (event, _) => event.map(mend),
        })
        .boxed()
}

fn too_large(id: &RequestId, e: &SseError) -> Sse {
    let error = ServerJsonRpcMessage::error(
        ErrorData::internal_error(
            format!(
                "the server's reply is larger than wield reads in one message ({e}), so it was dropped; ask the \
                 tool for less at a time"
            ),
            None,
        ),
        Some(id.clone()),
    );
    Sse::default().data(serde_json::to_string(&error).unwrap_or_default())
}

fn mend(mut event: Sse) -> Sse {
    let Some(data) = event.data.as_deref().filter(|d| !d.trim().is_empty()) else {
        return event;
    };
    let Err(error) = serde_json::from_str::<ServerJsonRpcMessage>(data) else {
        return event;
    };
    if let Some(message) = unreadable(data.as_bytes(), &error)
        && let Ok(text) = serde_json::to_string(&message)
    {
        event.data = Some(text);
    }
    event
}

/// Whether the SDK surely reads `body` (a reply with a result), told at a
/// fraction of the cost of its own reading, which buffers the whole
/// message and tries each kind of message on it in turn: every reply to a
/// call would otherwise be read twice. The members the SDK tells a reply
/// by are read with its own types, each given once; every value is read as
/// serde reads JSON for the SDK (numbers in range, strings of UTF-8 without
/// half a surrogate pair), but kept nowhere; the result the SDK reads
/// whatever it is (as its `CustomResult` at worst). `false` says nothing:
/// the line is then read as the SDK reads it.
fn surely_read(body: &[u8]) -> bool {
    serde_json::from_slice::<Reply>(body).is_ok_and(|Reply(read)| read)
}

/// Whether a message is a reply the SDK reads ([`surely_read`]).
struct Reply(bool);

impl<'de> serde::Deserialize<'de> for Reply {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;

        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Reply;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON-RPC reply")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Reply, A::Error> {
                let (mut jsonrpc, mut id, mut result, mut other) = (0, 0, 0, false);
                while let Some(key) = map.next_key::<Valid>()? {
                    match key.0 {
                        Some("jsonrpc") => {
                            map.next_value::<rmcp::model::JsonRpcVersion2_0>()?;
                            jsonrpc += 1;
                        }
                        Some("id") => {
                            map.next_value::<RequestId>()?;
                            id += 1;
                        }
                        Some(name) => {
                            map.next_value::<Valid>()?;
                            result += usize::from(name == "result");
                            other |= name == "method" || name == "error";
                        }
                        None => {
                            map.next_value::<Valid>()?;
                            other = true;
                        }
                    }
                }
                Ok(Reply(jsonrpc == 1 && id == 1 && result == 1 && !other))
            }
        }

        d.deserialize_map(Members)
    }
}

/// A JSON value read in full and kept nowhere; for a member's name, which
/// of the names a reply is told by it is.
struct Valid(Option<&'static str>);

impl<'de> serde::Deserialize<'de> for Valid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any;

        impl<'de> serde::de::Visitor<'de> for Any {
            type Value = Valid;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON value")
            }

            fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
                Ok(Valid(None))
            }

            fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
                Ok(Valid(None))
            }

            fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
                Ok(Valid(None))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
                Ok(Valid(None))
            }

            fn visit_str<E>(self, text: &str) -> Result<Valid, E> {
                let known = ["jsonrpc", "id", "result", "method", "error"];
                Ok(Valid(known.into_iter().find(|k| *k == text).or(Some(""))))
            }

            fn visit_unit<E>(self) -> Result<Valid, E> {
                Ok(Valid(None))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
                while seq.next_element::<Valid>()?.is_some() {}
                Ok(Valid(None))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
                while map.next_key::<Valid>()?.is_some() {
                    map.next_value::<Valid>()?;
                }
                Ok(Valid(None))
            }
        }

        d.deserialize_any(Any)
    }
}

/// The error `e` comes from: its `source`, or for the SDK's HTTP transport
/// error, the HTTP client's error it holds without naming it its source (so
/// "error sending request" goes on to "Connection refused").
pub(crate) fn cause_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a (dyn std::error::Error + 'static)> {
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => Some(inner),
        _ => e.source(),
    }
}

/// What wield makes of `line`, a message of the server's that does not
/// parse as one (`error`, why not): the message once half a surrogate pair
/// is replaced; for a reply to wield's request, an error to its id that says
/// why wield cannot read it; otherwise `None`, to pass it over.
pub(crate) fn unreadable(line: &[u8], error: &serde_json::Error) -> Option<RxJsonRpcMessage<RoleClient>> {
    if let Some(repaired) = repair_lone_surrogates(line)
        && let Ok(message) = serde_json::from_slice(&repaired)
    {
        return Some(message);
    }
    // Only a reply to wield's own request becomes an error; anything else
    // wield cannot read (a request, a notification, a line of JSON logging
    // that is no JSON-RPC at all) is passed over.
    if !is_reply(line) {
        tracing::debug!("an MCP server's line wield cannot read: {error}");
        return None;
    }
    let Some(id) = request_id_in(line) else {
        tracing::debug!("an MCP server's reply wield cannot read, to no id it can tell: {error}");
        return None;
    };
    Some(JsonRpcMessage::Error(JsonRpcError::new(
        Some(id),
        ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            format!("wield cannot read the server's reply, which is not valid JSON-RPC: {error}"),
            None,
        ),
    )))
}

/// Whether `line`, which does not parse as a message, is a JSON-RPC reply:
/// an object with `jsonrpc`, `id`, and `result` or `error`, and no `method`
/// or `params`. Read as JSON when it is JSON (a member of the wrong type);
/// otherwise (`NaN`) from the members named in its first [`HEAD`] bytes.
fn is_reply(line: &[u8]) -> bool {
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(line) {
        return m.contains_key("jsonrpc")
            && m.contains_key("id")
            && (m.contains_key("result") || m.contains_key("error"))
            && !m.contains_key("method")
            && !m.contains_key("params");
    }
    let head = &line[..line.len().min(HEAD)];
    let has = |member: &[u8]| memchr::memmem::find(head, member).is_some();
    has(b"\"jsonrpc\"") && (has(b"\"result\"") || has(b"\"error\"")) && !has(b"\"method\"") && !has(b"\"params\"")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, Mutex};

    use rmcp::model::{NumberOrString, ServerResult};
    use rmcp::transport::Transport;
    use rmcp::transport::async_rw::AsyncRwTransport;
    use serde_json::Value;
    use tokio::io::AsyncReadExt;

    use super::*;

    const NAN: &str = r#"{"jsonrpc":"2.0","id":4,"result":{"n":NaN}}"#;
    const CUT: &str = r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#;
    const WRONG_SHAPE: &str = r#"{"jsonrpc":"2.0","id":5,"error":{"code":"x","message":1}}"#;
    const FINE: &str = r#"{"jsonrpc":"2.0","id":6,"result":{}}"#;

    /// What the SDK's transport receives of `lines`, read as wield reads
    /// them or not, and what it writes back meanwhile.
    async fn sdk_reads(lines: &[&str], readable: bool, max: usize) -> (Vec<ServerJsonRpcMessage>, String) {
        let input = format!("{}\n", lines.join("\n")).into_bytes();
        let (mut back, written) = tokio::io::duplex(1 << 16);
        let mut received = Vec::new();
        if readable {
            let reader = ReadableReplies::new(std::io::Cursor::new(input), |_| {});
            let mut t = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, written).with_max_line_length(max);
            while let Some(m) = t.receive().await {
                received.push(m);
            }
        } else {
            let reader = std::io::Cursor::new(input);
            let mut t = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, written).with_max_line_length(max);
            while let Some(m) = t.receive().await {
                received.push(m);
            }
        }
        let mut text = String::new();
        back.read_to_string(&mut text).await.unwrap();
        (received, text)
    }

    fn id_of(m: &ServerJsonRpcMessage) -> Option<NumberOrString> {
        match m {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        }
    }

    /// Corrected by [`ReadableReplies`]: the SDK passes over a reply that
    /// is not JSON, and answers one of the wrong shape with an error to the
    /// server, telling the call nothing either way.
    #[tokio::test]
    async fn the_sdk_passes_over_replies_it_cannot_read() {
        let (received, written) = sdk_reads(&[NAN, CUT, WRONG_SHAPE, FINE], false, MAX_MESSAGE).await;
        assert_eq!(
            received.iter().map(id_of).collect::<Vec<_>>(),
            [Some(NumberOrString::Number(6))]
        );
        assert!(written.contains("Invalid request"), "{written}");
    }

    /// Corrected by [`ReadableReplies`]: the SDK drops a line past its
    /// limit with no word to the call it answers.
    #[tokio::test]
    async fn the_sdk_drops_a_line_past_its_limit() {
        let long = format!(r#"{{"jsonrpc":"2.0","id":2,"result":{{"t":"{}"}}}}"#, "x".repeat(100));
        let (received, _) = sdk_reads(&[&long, FINE], false, 64).await;
        assert_eq!(
            received.iter().map(id_of).collect::<Vec<_>>(),
            [Some(NumberOrString::Number(6))]
        );
    }

    #[tokio::test]
    async fn replies_are_read_or_fail_their_call_with_why() {
        let (received, written) = sdk_reads(&[NAN, CUT, WRONG_SHAPE, FINE], true, MAX_MESSAGE).await;
        assert_eq!(written, "", "nothing is answered to the server");
        let ids: Vec<_> = received.iter().map(id_of).collect();
        assert_eq!(ids, [4, 3, 5, 6].map(|n| Some(NumberOrString::Number(n))));
        let JsonRpcMessage::Response(cut) = &received[1] else {
            panic!("{:?}", received[1]);
        };
        let ServerResult::CallToolResult(result) = &cut.result else {
            panic!("{:?}", cut.result);
        };
        assert_eq!(result.content[0].as_text().unwrap().text, "cut \u{fffd}");
        for unread in [&received[0], &received[2]] {
            let JsonRpcMessage::Error(e) = unread else {
                panic!("{unread:?}");
            };
            assert!(e.error.message.contains("cannot read the server's reply"), "{e:?}");
        }
    }

    #[tokio::test]
    async fn lines_wield_cannot_read_and_that_are_no_replies_are_passed_over() {
        let lines = [
            r#"{"level":"info","id":2,"msg":"ready","n":NaN}"#,
            r#"{"level":"info","id":2,"msg":"ready"}"#,
            r#"{"jsonrpc":"2.0","id":2,"params":{"n":NaN},"method":"sampling/createMessage"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"n":NaN}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"roots/list","params":5}"#,
            "  ",
            "not json at all",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"x-1\",\"result\":{\"n\":NaN}}\r",
            FINE,
        ];
        let (received, written) = sdk_reads(&lines, true, MAX_MESSAGE).await;
        assert_eq!(written, "", "nothing is answered to the server");
        let ids: Vec<_> = received.iter().map(id_of).collect();
        assert_eq!(
            ids,
            [
                Some(NumberOrString::String("x-1".into())),
                Some(NumberOrString::Number(6))
            ]
        );
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_told_and_dropped() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let mut input = Vec::new();
        input.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"result":""#);
        input.resize(MAX_MESSAGE + 10, b'x');
        input.extend_from_slice(b"\"}\n");
        input.extend_from_slice(br#"{"jsonrpc":"2.0","method":"notifications/message","params":""#);
        input.resize(input.len() + MAX_MESSAGE, b'y');
        input.extend_from_slice(b"\"}\n");
        // Just under the limit, its newline included: kept.
        let mut under = br#"{"jsonrpc":"2.0","id":8,"result":{"t":""#.to_vec();
        under.resize(MAX_MESSAGE - 4, b'z');
        under.extend_from_slice(b"\"}}\n");
        assert_eq!(under.len(), MAX_MESSAGE);
        input.extend_from_slice(&under);
        input.extend_from_slice(FINE.as_bytes());
        input.push(b'\n');
        let seen = Arc::clone(&told);
        let reader = ReadableReplies::new(std::io::Cursor::new(input), move |l| seen.lock().unwrap().push(l));
        let mut t = AsyncRwTransport::<RoleClient, _, _>::new_client(reader, tokio::io::sink())
            .with_max_line_length(MAX_MESSAGE);
        let mut ids = Vec::new();
        while let Some(m) = t.receive().await {
            ids.push(id_of(&m));
        }
        assert_eq!(ids, [8, 6].map(|n| Some(NumberOrString::Number(n))));
        assert_eq!(*told.lock().unwrap(), [Long::Reply(Some("1".into())), Long::Message]);
    }

    /// What [`super::super::sse_event_too_large`] knows the SDK's error by:
    /// its HTTP client's error for an event past its limit, told only by
    /// its text.
    #[tokio::test]
    async fn the_sdk_says_an_event_is_too_large_in_its_text() {
        use rmcp::transport::streamable_http_client::{StreamableHttpClient, StreamableHttpPostResponse};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let event = format!("data: {}\n\n", "x".repeat(200));
        let app = axum::Router::new().fallback(move || {
            let event = event.clone();
            async move { ([("content-type", "text/event-stream")], event) }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        let ping: rmcp::model::ClientJsonRpcMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        let posted = reqwest::Client::new()
            .post_message_with_max_sse_event_size(
                format!("http://{addr}/mcp").into(),
                ping,
                None,
                None,
                std::collections::HashMap::new(),
                64,
            )
            .await
            .unwrap();
        let StreamableHttpPostResponse::Sse(mut events, _) = posted else {
            panic!("not an event stream");
        };
        let error = events.next().await.unwrap().unwrap_err();
        assert!(super::super::sse_event_too_large(&error), "{error}");
    }

    /// What [`super::super::without_type_names`] takes out: the SDK names
    /// its transport's type in its transport errors, and its message type
    /// in its error for a JSON body that is not a message.
    #[tokio::test]
    async fn the_sdk_names_its_types_in_its_errors() {
        use rmcp::ServiceExt;
        use rmcp::service::ClientInitializeError;
        use rmcp::transport::streamable_http_client::StreamableHttpClient;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(|| async { ([("content-type", "application/json")], r#"{"a":1}"#) });
        tokio::spawn(async move { axum::serve(listener, app).await });
        let ping: rmcp::model::ClientJsonRpcMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        let posted = reqwest::Client::new()
            .post_message(
                format!("http://{addr}/mcp").into(),
                ping,
                None,
                None,
                std::collections::HashMap::new(),
            )
            .await;
        let Err(StreamableHttpError::UnexpectedServerResponse(text)) = posted else {
            panic!("{:?}", posted.err());
        };
        let plain = super::super::without_type_names(text.to_string());
        assert!(plain.starts_with("the reply is not valid JSON-RPC"), "{text}");
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(format!("http://{addr}/mcp"));
        let error = ().serve(transport).await.err().unwrap();
        let ClientInitializeError::TransportError { error, .. } = error else {
            panic!("{error:?}");
        };
        let text = error.to_string();
        assert!(text.starts_with("Transport ["), "{text}");
        let plain = super::super::without_type_names(text.clone());
        assert!(
            !plain.contains("Transport [") && !plain.contains("rmcp::"),
            "{text} -> {plain}"
        );
    }

    /// Corrected by [`cause_of`]: the SDK's error for a failure of its
    /// HTTP client holds that error without naming it its source.
    #[tokio::test]
    async fn the_sdks_http_error_does_not_name_its_cause() {
        use rmcp::transport::streamable_http_client::StreamableHttpClient;
        use std::error::Error;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let ping: rmcp::model::ClientJsonRpcMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        let error = reqwest::Client::new()
            .post_message(
                format!("http://{addr}/mcp").into(),
                ping,
                None,
                None,
                std::collections::HashMap::new(),
            )
            .await
            .err()
            .unwrap();
        assert!(error.source().is_none(), "{error:?}");
        let cause = cause_of(&error).unwrap();
        assert!(
            cause
                .downcast_ref::<reqwest::Error>()
                .is_some_and(reqwest::Error::is_connect)
        );
    }

    /// Corrected by reading the raw listing: the SDK's tool type leaves
    /// out `execution`.
    #[test]
    fn the_sdks_tool_leaves_its_execution_out() {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}
        }))
        .unwrap();
        let again = serde_json::to_value(&tool).unwrap();
        assert!(again.get("execution").is_none(), "{again}");
    }

    /// Corrected by `raw_result`: one block the SDK cannot read makes the
    /// whole tool result unreadable to it, a `CustomResult`.
    #[test]
    fn the_sdk_reads_a_result_with_one_unknown_block_as_custom() {
        let result: ServerResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "kept"}, {"type": "hologram", "data": 1}]
        }))
        .unwrap();
        assert!(matches!(result, ServerResult::CustomResult(_)), "{result:?}");
    }

    /// What [`surely_read`] takes for read, the SDK reads: replies with
    /// results of every kind, and none of the lines it cannot read.
    #[test]
    fn the_sdk_reads_what_is_surely_read() {
        for result in ["{}", "5", "[1]", "\"x\"", "null", "{\"content\":\"x\"}"] {
            for id in ["1", "\"a\"", "-7"] {
                let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result},"x":{{}}}}"#);
                assert!(surely_read(line.as_bytes()), "{line}");
                let read = serde_json::from_str::<ServerJsonRpcMessage>(&line);
                assert!(matches!(read, Ok(JsonRpcMessage::Response(_))), "{line}: {read:?}");
            }
        }
        let escaped = r#"{"jsonrpc":"2.0","id":1,"result":{"t":"a\u00e9\n\"\\u"}}"#;
        let pair = r#"{"jsonrpc":"2.0","id":1,"result":{"t":"\ud83d\ude00"}}"#;
        for line in [escaped, pair] {
            assert!(surely_read(line.as_bytes()), "{line}");
            assert!(serde_json::from_str::<ServerJsonRpcMessage>(line).is_ok(), "{line}");
        }
        for line in [
            NAN,
            CUT,
            WRONG_SHAPE,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\u{1}b\"}}",
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
        ] {
            assert!(!surely_read(line.as_bytes()), "{line}");
        }
        // A number out of range, in the result or beside it: the SDK
        // cannot read it, and it is not taken for read.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"n":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"x":[-1e400]}"#,
        ] {
            assert!(!surely_read(line.as_bytes()), "{line}");
            assert!(serde_json::from_str::<ServerJsonRpcMessage>(line).is_err(), "{line}");
        }
        let mut not_utf8 = br#"{"jsonrpc":"2.0","id":1,"result":{"t":""#.to_vec();
        not_utf8.extend_from_slice(b"\xff\"}}");
        assert!(!surely_read(&not_utf8));
        assert!(serde_json::from_slice::<ServerJsonRpcMessage>(&not_utf8).is_err());
    }

    #[test]
    fn a_long_reply_is_known_by_its_top_level_id() {
        for (head, id) in [
            (r#"{"jsonrpc":"2.0","id":12,"result":{"#, Some("12")),
            (r#"{"jsonrpc": "2.0", "id" : "a-b", "result": {"#, Some("a-b")),
            (r#"{"jsonrpc":"id","id":-3,"#, Some("-3")),
            (r#"{"result":{"content":[{"id":7,"text":"#, None),
            (r#"{"result":{"x\"id":1},"id":4}"#, Some("4")),
            (r#"{"jsonrpc":"2.0","id":12"#, None),
            (r#"{"jsonrpc":"2.0","id":"a\"b","#, None),
            (r#"{"jsonrpc":"2.0","id":null,"#, None),
        ] {
            assert_eq!(long(head.as_bytes()), Long::Reply(id.map(str::to_owned)), "{head}");
        }
        assert_eq!(long(br#"{"jsonrpc":"2.0","method":"x","params":"#), Long::Message);
    }

    fn event(data: &str) -> Sse {
        Sse::default().data(data)
    }

    #[test]
    fn stream_messages_are_mended() {
        // Half a surrogate pair: replaced.
        let cut = mend(event(
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#,
        ));
        let v: Value = serde_json::from_str(cut.data.as_deref().unwrap()).unwrap();
        assert_eq!(v["result"]["content"][0]["text"], "cut \u{fffd}");
        // A reply wield cannot read: an error to its id.
        let nan = mend(event(r#"{"jsonrpc":"2.0","id":4,"result":{"n":NaN}}"#));
        let v: Value = serde_json::from_str(nan.data.as_deref().unwrap()).unwrap();
        assert_eq!(v["id"], 4);
        assert!(
            v["error"]["message"].as_str().unwrap().contains("not valid JSON-RPC"),
            "{v}"
        );
        // Readable messages, priming events and notifications it cannot read
        // are left as they are.
        for data in [
            r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
            "",
            r#"{"jsonrpc":"2.0","method":"x","params":NaN}"#,
        ] {
            assert_eq!(mend(event(data)).data.as_deref(), Some(data));
        }
    }
}
