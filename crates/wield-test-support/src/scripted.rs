//! A scripted model provider for the agent's tests: a local HTTP server that
//! answers request N with turn N in OpenAI's Chat Completions streaming
//! format (small `data:` chunks, usage last, `[DONE]`), and checks on every
//! request that each tool call has exactly one result right after it, as the
//! real APIs demand (a request that breaks the rule gets a 400 naming the
//! calls).

use std::io::Write;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// One scripted model turn.
#[derive(Clone, Debug)]
pub enum Turn {
    /// One tool call.
    Call(&'static str, Value),
    /// Several tool calls in one reply.
    Calls(Vec<(&'static str, Value)>),
    /// A text answer.
    Text(&'static str),
    /// A text answer streamed a word at a time, `delay` apart.
    Slow(&'static str, Duration),
    /// Thinking, then a text answer.
    Think(&'static str, &'static str),
    /// An HTTP error with this status and JSON body.
    Error(u16, Value),
    /// The start of a text reply, then nothing for a minute.
    Hang(&'static str),
    /// A text answer whose first token comes after `delay` (a model slow to
    /// start, as a local one is).
    Late(&'static str, Duration),
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
    )
}

/// The stream's chunks for turn `n`, each with the pause before it.
fn chunks(turn: &Turn, n: usize) -> Vec<(Duration, String)> {
    let now = |s: String| (Duration::ZERO, s);
    // One call is `call_N`; several are `call_N_0`, `call_N_1`, …
    let calls = |calls: &[(&str, Value)], single: bool| {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(k, (name, args))| {
                let id = if single {
                    format!("call_{n}")
                } else {
                    format!("call_{n}_{k}")
                };
                json!({ "index": k, "id": id, "type": "function",
                        "function": { "name": name, "arguments": args.to_string() } })
            })
            .collect();
        vec![now(chunk(&json!({ "tool_calls": calls }), Some("tool_calls")))]
    };
    let mut out = match turn {
        Turn::Call(name, args) => calls(&[(name, args.clone())], true),
        Turn::Calls(list) => calls(list, false),
        Turn::Error(..) => return Vec::new(),
        Turn::Hang(text) => {
            return vec![
                now(chunk(&json!({ "content": text }), None)),
                (Duration::from_secs(60), String::new()),
            ];
        }
        Turn::Text(text) => vec![now(chunk(&json!({ "content": text }), Some("stop")))],
        Turn::Late(text, delay) => vec![(*delay, chunk(&json!({ "content": text }), Some("stop")))],
        Turn::Slow(text, delay) => {
            let mut v: Vec<(Duration, String)> = text
                .split_inclusive(' ')
                .map(|w| (*delay, chunk(&json!({ "content": w }), None)))
                .collect();
            v.push(now(chunk(&json!({}), Some("stop"))));
            v
        }
        Turn::Think(thinking, text) => vec![
            now(chunk(&json!({ "reasoning_content": thinking }), None)),
            now(chunk(&json!({ "content": text }), Some("stop"))),
        ],
    };
    out.push(now(
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10}}\n\n".into(),
    ));
    out.push(now("data: [DONE]\n\n".into()));
    out
}

/// Every tool call of an assistant message is answered by exactly one
/// `tool` message right after it.
pub fn check_pairing(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().ok_or("no messages")?;
    for (k, m) in messages.iter().enumerate() {
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        let mut answers: Vec<&str> = messages[k + 1..]
            .iter()
            .take_while(|n| n["role"] == "tool")
            .filter_map(|n| n["tool_call_id"].as_str())
            .collect();
        let mut ids: Vec<&str> = calls.iter().filter_map(|c| c["id"].as_str()).collect();
        answers.sort_unstable();
        ids.sort_unstable();
        if answers != ids {
            return Err(format!("calls {ids:?} answered by {answers:?}"));
        }
    }
    Ok(())
}

/// The names of the tools a request offered, in its order.
pub fn offered(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The `tool` messages of a request, as (the call's id, its content).
pub fn tool_results(request: &Value) -> Vec<(String, String)> {
    request["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| {
                    (
                        m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                        m["content"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A running scripted provider.
pub struct Scripted {
    /// The base URL to configure (`…/v1`).
    pub url: String,
    /// The requests' bodies, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
}

impl Scripted {
    /// A provider answering request N with `turns[N]` (then "(no more turns)").
    pub fn start(turns: Vec<Turn>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for (n, stream_in) in listener.incoming().enumerate() {
                let Ok(mut s) = stream_in else { return };
                let body = crate::http_request::read_body(&s);
                let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let pairing = check_pairing(&body);
                seen.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(body);
                if let Err(why) = pairing {
                    let e = json!({ "error": { "message": format!("unpaired tool calls: {why}") } }).to_string();
                    let _ = write!(
                        s,
                        "HTTP/1.1 400 X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{e}",
                        e.len()
                    );
                    continue;
                }
                let turn = turns.get(n).cloned().unwrap_or(Turn::Text("(no more turns)"));
                if let Turn::Error(status, e) = &turn {
                    let e = e.to_string();
                    let _ = write!(
                        s,
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{e}",
                        e.len()
                    );
                    continue;
                }
                // Each reply on its own thread, so a slow one does not hold the next request.
                std::thread::spawn(move || {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
                    );
                    for (pause, piece) in chunks(&turn, n) {
                        std::thread::sleep(pause);
                        if s.write_all(piece.as_bytes()).and_then(|()| s.flush()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { url, requests }
    }

    /// The `[providers.fake]` configuration pointing at this server.
    pub fn config(&self) -> String {
        format!(
            "[providers.fake]\nkind = \"openai-compatible\"\nbase_url = \"{}\"\nmodel = \"m\"\n",
            self.url
        )
    }

    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}
