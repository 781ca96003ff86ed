//! Server-sent events: how `/mcp` writes messages on an event stream. Each message is one
//! event (`data:` its JSON, then its `id:` where the stream numbers them), a priming event
//! (empty `data:`, with an id and a reconnection delay) opens the streams of the revisions
//! that expect one, and a comment keeps a quiet stream from being taken for a dead one.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::session::Message;
use crate::framework::client_link::encode;

/// A quiet stream gets a comment this often, so that proxies and clients keep it open.
pub(super) const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// How long a client waits before it reconnects a stream that broke, as the priming event
/// tells it.
const RETRY_MS: u64 = 3000;

/// How a stream names its events.
#[derive(Clone, Copy)]
pub(super) enum EventIds {
    /// No ids (the stateless revision's streams, and a call's stream answered directly).
    None,
    /// `0`, `1`, `2`… (a session's standalone stream).
    Counted,
    /// `1/n`, `2/n`… on the `n`th request stream of a session.
    OfRequest(u64),
}

impl EventIds {
    fn name(self, index: u64) -> Option<String> {
        match self {
            Self::None => None,
            Self::Counted => Some(index.to_string()),
            Self::OfRequest(stream) => Some(format!("{index}/{stream}")),
        }
    }
}

/// One event carrying `message`.
pub(super) fn event(message: &ServerJsonRpcMessage, id: Option<&str>) -> Bytes {
    let mut out = b"data: ".to_vec();
    if encode(message, &mut out).is_err() {
        // rmcp's messages are plain data: encoding one cannot fail.
        tracing::error!("a message could not be encoded");
        return Bytes::new();
    }
    out.push(b'\n');
    if let Some(id) = id {
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(id.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out.into()
}

/// The priming event: no message, an id a client may resume from, the reconnection delay.
pub(super) fn priming(id: &str) -> Bytes {
    Bytes::from(format!("data: \nid: {id}\nretry: {RETRY_MS}\n\n"))
}

/// An event stream's response: `first` (already encoded), then each message `messages`
/// carries, until it closes or `ended` is cancelled.
pub(super) fn stream(
    first: Vec<Bytes>,
    messages: Option<mpsc::Receiver<Message>>,
    ids: EventIds,
    ended: CancellationToken,
) -> Response {
    struct State {
        first: VecDeque<Bytes>,
        messages: Option<mpsc::Receiver<Message>>,
        ids: EventIds,
        next_id: u64,
        ended: CancellationToken,
    }
    let state = State {
        first: first.into(),
        messages,
        ids,
        next_id: match ids {
            EventIds::OfRequest(_) => 1,
            _ => 0,
        },
        ended,
    };
    let events = futures::stream::unfold(state, |mut state| async move {
        if let Some(event) = state.first.pop_front() {
            return Some((Ok::<_, Infallible>(event), state));
        }
        let ended = state.ended.clone();
        let event = tokio::select! {
            biased;
            () = ended.cancelled() => return None,
            next = next(state.messages.as_mut()) => match next? {
                Some(message) => {
                    let id = state.ids.name(state.next_id);
                    state.next_id += 1;
                    event(&message.message, id.as_deref())
                }
                None => Bytes::from_static(b":\n\n"),
            },
        };
        Some((Ok(event), state))
    });
    event_stream_response(Body::from_stream(events))
}

/// The next message (`Some(Some(_))`), a quiet [`KEEP_ALIVE`] (`Some(None)`), or the end of
/// the messages (`None`). A stream without messages only keeps alive until it is ended.
async fn next(messages: Option<&mut mpsc::Receiver<Message>>) -> Option<Option<Message>> {
    let quiet = tokio::time::sleep(KEEP_ALIVE);
    match messages {
        Some(receiver) => tokio::select! {
            message = receiver.recv() => message.map(Some),
            () = quiet => Some(None),
        },
        None => {
            quiet.await;
            Some(None)
        }
    }
}

/// A response carrying `body` as an event stream.
pub(super) fn event_stream_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    response
}
