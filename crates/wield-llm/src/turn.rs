//! [`Turn`]: what every decoder feeds while a reply streams. It emits the
//! [`StreamEvent`]s and builds the [`Response`], and it holds the rules that
//! keep tool calls apart whatever a server does with indexes and ids.

use serde_json::Value;

use crate::conversation::{BadCall, Block, Origin, Response, Stop, Thinking, Usage};
use crate::event::StreamEvent;

/// A piece of a tool call's arguments as a server sends it.
#[derive(Clone, Copy, Debug)]
pub enum Args<'a> {
    /// JSON text, whole or a fragment of it.
    Text(&'a str),
    /// An already parsed value (Ollama, Gemini): the whole arguments.
    Value(&'a Value),
    /// No arguments in this piece (`null` or absent).
    None,
}

impl<'a> Args<'a> {
    /// From a JSON value as it appears in a stream: a string is text, null
    /// is nothing, anything else a parsed value.
    pub fn from_json(value: Option<&'a Value>) -> Self {
        match value {
            None | Some(Value::Null) => Args::None,
            Some(Value::String(s)) => Args::Text(s),
            Some(other) => Args::Value(other),
        }
    }
}

/// One tool call being assembled.
#[derive(Debug)]
struct Call {
    index: Option<u64>,
    id: String,
    /// The id was made up here (the server sent none).
    generated: bool,
    name: String,
    args: String,
    /// A thought signature that came with the call (Gemini's compatible
    /// endpoint), to send back with it.
    signature: Option<String>,
    started: bool,
    /// The arguments read (or why they could not be), once the call is
    /// finished; `None` while it is open.
    parsed: Option<Result<Value, String>>,
}

impl Call {
    fn open(&self) -> bool {
        self.parsed.is_none()
    }
}

/// The blocks of a reply in the order they came.
#[derive(Debug)]
enum Slot {
    Text(String),
    Thinking(usize),
    Call(usize),
}

/// A reply being assembled from a stream.
#[derive(Debug)]
pub struct Turn {
    origin: Origin,
    /// Prefix of the ids made up for calls that came without one, unique to
    /// this turn so that two turns never share an id.
    id_prefix: String,
    slots: Vec<Slot>,
    thinking: Vec<Thinking>,
    calls: Vec<Call>,
    usage: Usage,
    stop: Option<Stop>,
    events: Vec<StreamEvent>,
}

impl Turn {
    /// A turn of `origin`'s model; ids made up for calls start with
    /// `id_prefix`.
    pub fn new(origin: Origin, id_prefix: impl Into<String>) -> Self {
        Self {
            origin,
            id_prefix: id_prefix.into(),
            slots: Vec::new(),
            thinking: Vec::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            stop: None,
            events: Vec::new(),
        }
    }

    /// The events produced since the last call, in order.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, StreamEvent> {
        self.events.drain(..)
    }

    pub fn origin(&self) -> &Origin {
        &self.origin
    }

    /// Text of the reply.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        match self.slots.last_mut() {
            Some(Slot::Text(text)) => text.push_str(delta),
            _ => self.slots.push(Slot::Text(delta.to_owned())),
        }
        self.events.push(StreamEvent::TextDelta { text: delta.to_owned() });
    }

    /// The thinking block being written, opened if needed.
    fn thinking_slot(&mut self) -> &mut Thinking {
        let k = match self.slots.last() {
            Some(&Slot::Thinking(k)) => k,
            _ => self.push_thinking(Thinking::default()),
        };
        &mut self.thinking[k]
    }

    fn push_thinking(&mut self, thinking: Thinking) -> usize {
        let k = self.thinking.len();
        self.thinking.push(Thinking {
            origin: Some(self.origin.clone()),
            ..thinking
        });
        self.slots.push(Slot::Thinking(k));
        k
    }

    /// Reasoning text.
    pub fn thinking(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.thinking_slot().text.push_str(delta);
        self.events.push(StreamEvent::ThinkingDelta { text: delta.to_owned() });
    }

    /// Starts a new thinking block even when one is open (a new block of
    /// the provider's own).
    pub fn new_thinking(&mut self) {
        self.push_thinking(Thinking::default());
    }

    /// The signature of the open thinking block (appended: it may come in
    /// pieces).
    pub fn thinking_signature(&mut self, piece: &str) {
        self.thinking_slot()
            .signature
            .get_or_insert_with(String::new)
            .push_str(piece);
    }

    /// An opaque reasoning item: an Anthropic redacted block, or a
    /// Responses reasoning item with its encrypted content and summary.
    pub fn opaque_thinking(&mut self, item_id: Option<&str>, data: Option<&str>, text: &str) {
        self.push_thinking(Thinking {
            text: text.to_owned(),
            signature: None,
            redacted_data: data.map(str::to_owned),
            item_id: item_id.map(str::to_owned),
            origin: None,
        });
    }

    /// Completes the reasoning block streamed so far with the item it
    /// belongs to (Responses `output_item.done`): its id, its encrypted
    /// content, and its summary when no text streamed.
    pub fn close_reasoning(&mut self, item_id: Option<&str>, data: Option<&str>, summary: &str) {
        let t = self.thinking_slot();
        t.item_id = item_id.map(str::to_owned);
        t.redacted_data = data.map(str::to_owned);
        if t.text.is_empty() {
            t.text = summary.to_owned();
        }
    }

    /// A piece of a tool call, Chat Completions style: calls are told apart
    /// by `index`; a non-empty id that differs from the call at that index
    /// starts a new call; without an index, by id, then the last open call.
    /// Calls without an id get one made up.
    pub fn call_piece(&mut self, index: Option<u64>, id: Option<&str>, name: Option<&str>, args: Args<'_>) {
        let id = id.map(str::trim).filter(|s| !s.is_empty());
        let found = match index {
            Some(i) => self
                .calls
                .iter()
                .rposition(|c| c.index == Some(i) && c.open())
                .filter(|&k| id.is_none_or(|id| self.calls[k].id == id || self.calls[k].generated)),
            None => match id {
                Some(id) => self.calls.iter().rposition(|c| c.id == id && c.open()),
                None => self.calls.iter().rposition(Call::open),
            },
        };
        let k = match found {
            Some(k) => k,
            None => self.open_call(index, id),
        };
        let call = &mut self.calls[k];
        if let Some(id) = id
            && call.generated
            && call.id != id
        {
            call.id = id.to_owned();
            call.generated = false;
        }
        if let Some(name) = name.filter(|n| !n.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        self.announce(k);
        let call = &mut self.calls[k];
        let fragment = match args {
            Args::Text(t) => t.to_owned(),
            Args::Value(v) => {
                // A whole value replaces what came before.
                call.args.clear();
                v.to_string()
            }
            Args::None => String::new(),
        };
        if !fragment.is_empty() {
            call.args.push_str(&fragment);
            if call.started {
                self.events.push(StreamEvent::ToolCallDelta {
                    id: call.id.clone(),
                    fragment,
                });
            }
        }
    }

    /// A whole tool call (Responses `output_item.done`, Gemini, Ollama):
    /// started, given its arguments, and finished at once.
    pub fn whole_call(&mut self, id: Option<&str>, name: &str, args: Args<'_>) {
        let id = id.map(str::trim).filter(|s| !s.is_empty());
        let k = self.open_call(None, id);
        self.calls[k].name = name.to_owned();
        self.announce(k);
        let call = &mut self.calls[k];
        match args {
            Args::Text(t) => call.args.push_str(t),
            Args::Value(v) => call.args = v.to_string(),
            Args::None => {}
        }
        if !call.args.is_empty() {
            self.events.push(StreamEvent::ToolCallDelta {
                id: call.id.clone(),
                fragment: call.args.clone(),
            });
        }
        self.finish_call(k);
    }

    /// A thought signature for the call under `index` (else the last call),
    /// kept as an empty thinking block just before it in the reply.
    pub fn call_signature(&mut self, index: Option<u64>, signature: &str) {
        let k = match index {
            Some(i) => self.calls.iter().rposition(|c| c.index == Some(i)),
            None => self.calls.len().checked_sub(1),
        };
        if let Some(k) = k {
            self.calls[k]
                .signature
                .get_or_insert_with(String::new)
                .push_str(signature);
        }
    }

    /// Finishes the call started under `index` (Anthropic `content_block_stop`).
    pub fn finish_index(&mut self, index: u64) {
        if let Some(k) = self.calls.iter().rposition(|c| c.index == Some(index) && c.open()) {
            self.finish_call(k);
        }
    }

    fn open_call(&mut self, index: Option<u64>, id: Option<&str>) -> usize {
        let k = self.calls.len();
        let (id, generated) = match id {
            Some(id) => (id.to_owned(), false),
            None => (format!("{}{k}", self.id_prefix), true),
        };
        self.calls.push(Call {
            index,
            id,
            generated,
            name: String::new(),
            args: String::new(),
            signature: None,
            started: false,
            parsed: None,
        });
        self.slots.push(Slot::Call(k));
        k
    }

    /// Says a call started once its name is known.
    fn announce(&mut self, k: usize) {
        let call = &mut self.calls[k];
        if call.started || call.name.is_empty() {
            return;
        }
        call.started = true;
        self.events.push(StreamEvent::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
        // Arguments that came before the name.
        if !call.args.is_empty() {
            self.events.push(StreamEvent::ToolCallDelta {
                id: call.id.clone(),
                fragment: call.args.clone(),
            });
        }
    }

    fn finish_call(&mut self, k: usize) {
        let call = &mut self.calls[k];
        if !call.open() {
            return;
        }
        let parsed = parse_args(&call.args);
        let input = parsed.clone().unwrap_or_else(|_| Value::Object(Default::default()));
        call.parsed = Some(parsed);
        self.events.push(StreamEvent::ToolCallFinished {
            id: call.id.clone(),
            name: call.name.clone(),
            input,
        });
    }

    /// Usage so far; later reports replace earlier ones field by field
    /// where they say something (output counts are cumulative).
    pub fn usage(&mut self, usage: Usage) {
        let u = &mut self.usage;
        for (mine, theirs) in [
            (&mut u.input, usage.input),
            (&mut u.output, usage.output),
            (&mut u.cache_read, usage.cache_read),
            (&mut u.cache_write, usage.cache_write),
            (&mut u.reasoning, usage.reasoning),
        ] {
            if theirs > 0 {
                *mine = theirs;
            }
        }
        self.events.push(StreamEvent::Usage { usage: self.usage });
    }

    /// The provider's stop reason (the turn is still a tool turn when calls
    /// came, whatever this says).
    pub fn stop(&mut self, stop: Stop) {
        self.stop = Some(stop);
    }

    /// Whether the provider said why the turn ended.
    pub fn has_stop(&self) -> bool {
        self.stop.is_some()
    }

    /// Ends the turn: open calls are finished, and the stop reason is
    /// `tool_use` when any call came.
    pub fn finish(&mut self) -> Response {
        for k in 0..self.calls.len() {
            self.finish_call(k);
        }
        let has_calls = !self.calls.is_empty();
        let stop = match self.stop.take() {
            _ if has_calls => Stop::ToolUse,
            Some(Stop::ToolUse) | None => Stop::EndTurn,
            Some(stop) => stop,
        };
        let mut bad_calls = Vec::new();
        let mut content = Vec::with_capacity(self.slots.len());
        for slot in self.slots.drain(..) {
            match slot {
                Slot::Text(text) => content.push(Block::Text { text }),
                Slot::Thinking(k) => {
                    let t = std::mem::take(&mut self.thinking[k]);
                    if !t.text.is_empty() || t.signature.is_some() || t.redacted_data.is_some() {
                        content.push(Block::Thinking(t));
                    }
                }
                Slot::Call(k) => {
                    let call = &mut self.calls[k];
                    if let Some(signature) = &call.signature {
                        content.push(Block::Thinking(Thinking {
                            signature: Some(signature.clone()),
                            origin: Some(self.origin.clone()),
                            ..Thinking::default()
                        }));
                    }
                    // Every call is finished by now.
                    let parsed = call.parsed.take().unwrap_or_else(|| parse_args(&call.args));
                    let input = match parsed {
                        Ok(v) => v,
                        Err(error) => {
                            bad_calls.push(BadCall {
                                id: call.id.clone(),
                                name: call.name.clone(),
                                raw: call.args.clone(),
                                error,
                            });
                            Value::Object(Default::default())
                        }
                    };
                    content.push(Block::ToolUse {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input,
                    });
                }
            }
        }
        self.events.push(StreamEvent::Done { stop: stop.clone() });
        Response {
            content,
            usage: self.usage,
            stop,
            bad_calls,
        }
    }
}

/// A call's arguments: empty is `{}`; otherwise a JSON object.
fn parse_args(raw: &str) -> Result<Value, String> {
    let raw = raw.trim();
    if raw.is_empty() || raw == "null" {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => Ok(Value::Object(map)),
        Ok(other) => Err(format!("they are {}, not a JSON object", kind(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests;
