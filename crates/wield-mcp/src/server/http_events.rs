//! The events of the HTTP server's streams, kept for clients that resume a
//! stream (`GET` with `Last-Event-ID`) after losing its connection, and for
//! a session's standalone stream (`GET` without it).
//!
//! The SDK's own cache forgets a call's stream as soon as the call's result
//! is sent, also when no client was there to receive it: a client whose
//! connection broke during a call and that came back after the result got
//! an empty stream, and the result was lost. Here every event the SDK sends
//! is kept first, with an id of this store's, and a resumed stream gets the
//! events after the one named, then follows the stream as it goes on, until
//! the call's result (a call's stream) or for as long as the client stays
//! (the session's standalone stream).
//!
//! The standalone stream is served from here too ([`Events::standalone`]):
//! it starts with what was sent on it before the client opened it (the SDK
//! no longer replays that once a store is set), and a second one opened
//! while the first is read gets no events (as the SDK's "shadow" streams),
//! so no message goes out on two streams.
//!
//! Memory is bounded: a stream keeps its last [`PER_STREAM`] events; a
//! call's stream is dropped [`KEEP_FINISHED`] after its result, and a
//! stream nobody reads [`KEEP_IDLE`] after its last event; a session's
//! standalone stream goes when the session closes (the session reaper calls
//! [`Events::tidy`]); and at most [`MAX_STREAMS`] streams are kept, the
//! finished ones dropped first, then the least recently active.
//!
//! An event id is `TOKEN-INDEX`: the token is random per stream (128 bits,
//! from keyed hashes), so a client can resume only a stream whose ids it has
//! been sent. And a stream is resumed within its session only: a session's
//! standalone stream is named after it, and a call's stream is claimed for
//! the session it answers by the first event id its response carries
//! ([`Events::claim`]; the SDK keeps no session with a call's stream). A
//! session's streams go when it closes.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use rmcp::model::JsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use tokio::sync::Notify;
use tokio::sync::futures::OwnedNotified;

/// Events a stream keeps (the earlier ones are dropped).
pub const PER_STREAM: usize = 256;
/// How long a call's stream is kept after its result.
pub const KEEP_FINISHED: Duration = Duration::from_secs(10);
/// How long a stream nobody reads is kept after its last event.
pub const KEEP_IDLE: Duration = Duration::from_secs(3600);
/// Streams kept at most.
pub const MAX_STREAMS: usize = 8192;

/// `TOKEN-start`: a stream from its first kept event.
const START: &str = "start";
/// `TOKEN-shadow`: a stream that only stays open (another reads it).
const SHADOW: &str = "shadow";

#[derive(Default)]
pub struct Events {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Default)]
struct Inner {
    /// Streams by token.
    streams: HashMap<u128, Kept>,
    /// Tokens by the SDK's stream id.
    tokens: HashMap<Arc<str>, u128>,
}

struct Kept {
    stream_id: Arc<str>,
    /// The session a call's stream answers, once claimed.
    owner: Option<Arc<str>>,
    /// The index of `events[0]`.
    first: usize,
    events: VecDeque<ServerSseMessage>,
    /// When a call's result was kept: nothing follows it.
    finished: Option<Instant>,
    touched: Instant,
    /// Resumed streams reading it now.
    readers: usize,
    /// Woken at each new event, and when the stream is dropped.
    news: Arc<Notify>,
}

impl Kept {
    fn new(stream_id: Arc<str>, now: Instant) -> Self {
        Self {
            stream_id,
            owner: None,
            first: 0,
            events: VecDeque::new(),
            finished: None,
            touched: now,
            readers: 0,
            news: Arc::new(Notify::new()),
        }
    }

    /// The session whose standalone stream this is.
    fn standalone_of(&self) -> Option<&str> {
        crate::compat::standalone_session(&self.stream_id)
    }

    /// The session the stream belongs to, when known.
    fn session(&self) -> Option<&str> {
        self.standalone_of().or(self.owner.as_deref())
    }
}

/// A random token, unpredictable without the process's hash keys.
fn token() -> u128 {
    static KEYS: LazyLock<(RandomState, RandomState)> = LazyLock::new(|| (RandomState::new(), RandomState::new()));
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    (u128::from(KEYS.0.hash_one(n)) << 64) | u128::from(KEYS.1.hash_one(n))
}

fn event_id(token: u128, index: usize) -> String {
    format!("{token:032x}-{index}")
}

/// Where a resumed stream starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum From {
    /// After the event at this index.
    After(usize),
    Start,
    Shadow,
}

fn parse_event_id(id: &str) -> Option<(u128, From)> {
    let (token, at) = id.trim().split_once('-')?;
    let from = match at {
        START => From::Start,
        SHADOW => From::Shadow,
        index => From::After(index.parse().ok()?),
    };
    Some((u128::from_str_radix(token, 16).ok()?, from))
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    fn drop_stream(&mut self, token: u128) {
        if let Some(kept) = self.streams.remove(&token) {
            self.tokens.remove(&kept.stream_id);
            kept.news.notify_waiters();
        }
    }

    /// The token of stream `stream_id`, kept from now on if it was not.
    fn token_of(&mut self, stream_id: &str, now: Instant) -> u128 {
        if let Some(t) = self.tokens.get(stream_id) {
            return *t;
        }
        if self.streams.len() >= MAX_STREAMS {
            // The finished streams first, then the least recently active.
            let victim = self
                .streams
                .iter()
                .min_by_key(|(_, k)| (k.finished.is_none(), k.touched))
                .map(|(t, _)| *t);
            if let Some(victim) = victim {
                self.drop_stream(victim);
            }
        }
        let stream_id: Arc<str> = stream_id.into();
        let t = token();
        self.tokens.insert(Arc::clone(&stream_id), t);
        self.streams.insert(t, Kept::new(stream_id, now));
        t
    }
}

impl Events {
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Drop what has been kept long enough, and the standalone streams of
    /// sessions that are no longer open (`open` says which are), so their
    /// readers end.
    pub fn tidy(&self, open: impl Fn(&str) -> bool) {
        let now = Instant::now();
        let mut inner = self.lock();
        let gone: Vec<u128> = inner
            .streams
            .iter()
            .filter(|(_, k)| {
                k.finished.is_some_and(|at| now.duration_since(at) >= KEEP_FINISHED)
                    || (k.readers == 0 && now.duration_since(k.touched) >= KEEP_IDLE)
                    || k.session().is_some_and(|session| !open(session))
            })
            .map(|(t, _)| *t)
            .collect();
        for t in gone {
            inner.drop_stream(t);
        }
    }

    /// The `Last-Event-ID` that serves a new standalone stream of `session`:
    /// from its first kept event, or, while another reads it, a stream that
    /// gets no events.
    pub fn standalone(&self, session: &str) -> String {
        let mut inner = self.lock();
        let t = inner.token_of(&crate::compat::standalone_stream(session), Instant::now());
        let readers = inner.streams.get(&t).map_or(0, |k| k.readers);
        format!("{t:032x}-{}", if readers == 0 { START } else { SHADOW })
    }

    /// Whether a client of `session` may resume from event `id`: not a
    /// stream of another session.
    pub fn resumable(&self, session: &str, id: &str) -> bool {
        let Some((token, _)) = parse_event_id(id) else {
            return true;
        };
        self.lock()
            .streams
            .get(&token)
            .and_then(Kept::session)
            .is_none_or(|owner| owner == session)
    }

    /// Claim for `session` the stream whose event id `frame` (a piece of
    /// an SSE response to one of its POSTs) carries first, unless another
    /// session has. Whether an id of this store was found (the rest of the
    /// response needs no look then).
    pub fn claim(&self, session: &str, frame: &[u8]) -> bool {
        let Some(token) = frame
            .split(|&b| b == b'\n')
            .filter_map(|line| line.strip_prefix(b"id:"))
            .filter_map(|id| std::str::from_utf8(id).ok())
            .find_map(|id| parse_event_id(id).map(|(token, _)| token))
        else {
            return false;
        };
        if let Some(kept) = self.lock().streams.get_mut(&token)
            && kept.owner.is_none()
            && kept.standalone_of().is_none()
        {
            kept.owner = Some(session.into());
        }
        true
    }

    /// Keep `event` of stream `stream_id`; its id.
    fn keep(&self, stream_id: &str, event: &ServerSseMessage) -> String {
        let now = Instant::now();
        let mut inner = self.lock();
        let token = inner.token_of(stream_id, now);
        let Some(kept) = inner.streams.get_mut(&token) else {
            return String::new();
        };
        let id = event_id(token, kept.first + kept.events.len());
        let mut event = event.clone();
        event.event_id = Some(id.clone());
        let result = matches!(
            event.message.as_deref(),
            Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
        );
        if result && kept.standalone_of().is_none() {
            kept.finished = Some(now);
        }
        kept.events.push_back(event);
        if kept.events.len() > PER_STREAM {
            kept.events.pop_front();
            kept.first += 1;
        }
        kept.touched = now;
        kept.news.notify_waiters();
        id
    }
}

/// The event of stream `token` at `index` or later (the earliest kept);
/// else whether more may come, and what wakes the caller when they do.
fn next(inner: &Mutex<Inner>, token: u128, index: usize, shadow: bool) -> Next {
    let inner = lock(inner);
    let Some(kept) = inner.streams.get(&token) else {
        return Next::End;
    };
    let at = index.max(kept.first);
    match kept.events.get(at - kept.first) {
        Some(event) if !shadow => Next::Event(at, event.clone()),
        _ if kept.finished.is_some() => Next::End,
        _ => Next::Wait(Arc::clone(&kept.news)),
    }
}

enum Next {
    Event(usize, ServerSseMessage),
    Wait(Arc<Notify>),
    End,
}

#[async_trait::async_trait]
impl EventStore for Events {
    async fn store_event(&self, stream_id: &str, event: &ServerSseMessage) -> Result<EventId, EventStoreError> {
        Ok(self.keep(stream_id, event))
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, EventStoreError> {
        let (token, from) =
            parse_event_id(last_event_id).ok_or_else(|| format!("not an event id of this server: {last_event_id}"))?;
        let shadow = from == From::Shadow;
        {
            let mut inner = self.lock();
            let kept = inner
                .streams
                .get_mut(&token)
                .ok_or_else(|| format!("no stream has event {last_event_id} (any more)"))?;
            if !shadow {
                kept.readers += 1;
            }
        }
        Ok(Box::pin(Tail {
            inner: Arc::clone(&self.inner),
            token,
            next: match from {
                From::After(index) => index.saturating_add(1),
                From::Start | From::Shadow => 0,
            },
            shadow,
            wait: None,
        }))
    }
}

/// A resumed stream: the events kept after the one named, then each new
/// one as it comes, until the stream finishes or is dropped. A shadow gets
/// no events; it ends with the stream.
struct Tail {
    inner: Arc<Mutex<Inner>>,
    token: u128,
    next: usize,
    shadow: bool,
    /// Armed before looking for the next event, so one kept in between
    /// still wakes this stream.
    wait: Option<Pin<Box<OwnedNotified>>>,
}

impl Drop for Tail {
    fn drop(&mut self) {
        if !self.shadow
            && let Some(kept) = lock(&self.inner).streams.get_mut(&self.token)
        {
            kept.readers = kept.readers.saturating_sub(1);
        }
    }
}

impl Stream for Tail {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        let this = &mut *self;
        loop {
            if let Some(wait) = this.wait.as_mut()
                && wait.as_mut().poll(cx).is_pending()
            {
                // Woken at the next event; but one may have come before
                // the waiter was armed.
                return match next(&this.inner, this.token, this.next, this.shadow) {
                    Next::Event(at, event) => {
                        this.wait = None;
                        this.next = at + 1;
                        Poll::Ready(Some(event))
                    }
                    Next::End => Poll::Ready(None),
                    Next::Wait(_) => Poll::Pending,
                };
            }
            match next(&this.inner, this.token, this.next, this.shadow) {
                Next::Event(at, event) => {
                    this.wait = None;
                    this.next = at + 1;
                    return Poll::Ready(Some(event));
                }
                Next::End => return Poll::Ready(None),
                Next::Wait(news) => {
                    let mut wait = Box::pin(news.notified_owned());
                    wait.as_mut().enable();
                    this.wait = Some(wait);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use rmcp::model::ServerJsonRpcMessage;

    use super::*;

    fn message(v: serde_json::Value) -> ServerSseMessage {
        ServerSseMessage::from_message(serde_json::from_value::<ServerJsonRpcMessage>(v).unwrap())
    }

    fn progress(n: u32) -> ServerSseMessage {
        message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": n}}))
    }

    fn result() -> ServerSseMessage {
        message(serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
    }

    fn progress_of(event: &ServerSseMessage) -> Option<u64> {
        serde_json::to_value(event.message.as_deref()?).ok()?["params"]["progress"]
            .as_f64()
            .map(|p| p as u64)
    }

    #[tokio::test]
    async fn a_finished_call_is_replayed_after_the_event_named() {
        let events = Events::new();
        let priming = events
            .store_event("call-1", &ServerSseMessage::retry(Duration::from_secs(1)))
            .await
            .unwrap();
        let first = events.store_event("call-1", &progress(1)).await.unwrap();
        events.store_event("call-1", &progress(2)).await.unwrap();
        let last = events.store_event("call-1", &result()).await.unwrap();
        // Another stream's ids are its own.
        let other = events.store_event("call-2", &progress(9)).await.unwrap();
        assert_ne!(priming.split('-').next(), other.split('-').next());
        let replayed: Vec<ServerSseMessage> = events.replay_events_after(&first).await.unwrap().collect().await;
        assert_eq!(replayed.len(), 2);
        assert_eq!(progress_of(&replayed[0]), Some(2));
        assert_eq!(replayed[1].event_id.as_deref(), Some(last.as_str()));
        assert!(matches!(
            replayed[1].message.as_deref(),
            Some(JsonRpcMessage::Response(_))
        ));
        // After the result: nothing more, and the stream ends.
        let after: Vec<ServerSseMessage> = events.replay_events_after(&last).await.unwrap().collect().await;
        assert!(after.is_empty());
        for unknown in ["0/0", "junk", &format!("{:032x}-0", 7u8)] {
            assert!(events.replay_events_after(unknown).await.is_err(), "{unknown}");
        }
    }

    #[tokio::test]
    async fn a_resumed_stream_follows_new_events() {
        let events = Events::new();
        let first = events.store_event("s:common", &progress(1)).await.unwrap();
        let mut tail = events.replay_events_after(&first).await.unwrap();
        let waiting = tokio::time::timeout(Duration::from_millis(50), tail.next()).await;
        assert!(waiting.is_err(), "nothing new yet");
        let store = Arc::clone(&events);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            store.store_event("s:common", &progress(2)).await.unwrap();
        });
        let next = tokio::time::timeout(Duration::from_secs(5), tail.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(progress_of(&next), Some(2));
        // A result on the standalone stream does not end it.
        events.store_event("s:common", &result()).await.unwrap();
        assert!(tail.next().await.is_some());
        assert!(
            tokio::time::timeout(Duration::from_millis(50), tail.next())
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_closed_sessions_standalone_stream_ends() {
        let events = Events::new();
        let first = events.store_event("gone:common", &progress(1)).await.unwrap();
        let kept = events.store_event("open:common", &progress(1)).await.unwrap();
        let mut tail = events.replay_events_after(&first).await.unwrap();
        events.tidy(|session| session == "open");
        let ended = tokio::time::timeout(Duration::from_secs(5), tail.next()).await.unwrap();
        assert!(ended.is_none());
        assert!(events.replay_events_after(&first).await.is_err());
        assert!(events.replay_events_after(&kept).await.is_ok());
    }

    #[tokio::test]
    async fn a_standalone_stream_starts_with_what_was_sent_and_is_read_once() {
        let events = Events::new();
        // Sent before the client opened the stream.
        events.store_event("s1:common", &progress(1)).await.unwrap();
        let mut first = events.replay_events_after(&events.standalone("s1")).await.unwrap();
        assert_eq!(progress_of(&first.next().await.unwrap()), Some(1));
        // A second one while the first is read: no events, so none goes
        // out twice.
        let mut second = events.replay_events_after(&events.standalone("s1")).await.unwrap();
        events.store_event("s1:common", &progress(2)).await.unwrap();
        assert_eq!(progress_of(&first.next().await.unwrap()), Some(2));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), second.next())
                .await
                .is_err()
        );
        // Once the first is gone, a new one is read again (from the start).
        drop(first);
        let mut third = events.replay_events_after(&events.standalone("s1")).await.unwrap();
        assert_eq!(progress_of(&third.next().await.unwrap()), Some(1));
        // Another session's client cannot resume it; its own can.
        let id = events.store_event("s1:common", &progress(3)).await.unwrap();
        assert!(!events.resumable("s2", &id));
        assert!(events.resumable("s1", &id));
        // The session closes: its streams end.
        events.tidy(|_| false);
        assert!(second.next().await.is_none());
        assert!(third.next().await.is_none());
    }

    #[tokio::test]
    async fn a_calls_stream_is_claimed_by_the_session_it_answers() {
        let events = Events::new();
        let first = events.store_event("call-a", &progress(1)).await.unwrap();
        // Unclaimed, the token alone lets a client resume it.
        assert!(events.resumable("s2", &first));
        // The first frame of the response that carries an id of this
        // store claims the stream; a frame without one does not.
        assert!(!events.claim("s1", b": ping\n\n"));
        assert!(!events.claim("s1", b"id: 0\ndata: {}\n\n"));
        let frame = format!("data: {{}}\nid: {first}\n\n");
        assert!(events.claim("s1", frame.as_bytes()));
        assert!(events.resumable("s1", &first));
        assert!(!events.resumable("s2", &first));
        // Once claimed, it stays its first session's.
        events.claim("s2", frame.as_bytes());
        assert!(!events.resumable("s2", &first));
        // A standalone stream is never claimed by another session.
        let common = events.store_event("s3:common", &progress(1)).await.unwrap();
        events.claim("s1", format!("id:{common}\r\n").as_bytes());
        assert!(!events.resumable("s1", &common));
        assert!(events.resumable("s3", &common));
        // The session closes: its call's streams go with it.
        events.tidy(|session| session != "s1");
        assert!(events.replay_events_after(&first).await.is_err());
    }

    #[tokio::test]
    async fn a_stream_keeps_its_last_events() {
        let events = Events::new();
        let first = events.store_event("call", &progress(0)).await.unwrap();
        for n in 1..(PER_STREAM as u32 + 10) {
            events.store_event("call", &progress(n)).await.unwrap();
        }
        events.store_event("call", &result()).await.unwrap();
        let replayed: Vec<ServerSseMessage> = events.replay_events_after(&first).await.unwrap().collect().await;
        assert_eq!(replayed.len(), PER_STREAM);
        assert_eq!(progress_of(&replayed[0]), Some(11));
    }
}
