//! Plain `tools/call` requests in a session, answered by the gate rather than through rmcp's
//! session worker: as one JSON response when the handler sends its client nothing, as an event
//! stream from the moment it does.
//!
//! rmcp carries each request of a session through three tasks (the session's worker, its
//! service loop, a handler task) and answers it as an event stream written in several pieces:
//! over loopback, about 12 system calls and 7 thread switches a call, against 3 and 1 for a
//! plain HTTP server (docs/performance.md). Here the handler the loop would run is called
//! where the request was read ([`InlineToolCalls::answer_message`]) and its answer is the
//! response's body, as `application/json`, which the protocol allows for any request.
//!
//! A handler may send its client a request during the call (sampling, elicitation, roots),
//! which belongs on the call's own stream: the response then becomes an event stream, with
//! that request as its first event ([`super::call_streams`]), the call's answer as its last.
//! The client answers such a request as any other, through rmcp. What a handler sends
//! otherwise (log messages, resource notifications) goes through the session's peer to its
//! standalone stream, as rmcp sends it for its own calls. A call asking for progress, or of
//! any other shape, or that rmcp would check further (another protocol version in the
//! header), goes to rmcp, so its errors stay rmcp's. Such a call never waits on its client
//! unless it asked the client something, so a `notifications/cancelled` naming it (which goes
//! on to rmcp) has nothing to free: the answer is sent, and the client that cancelled ignores
//! it, as the protocol expects.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::SinkExt;
use http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use http::request::Parts;
use rmcp::model::{CallToolRequestParams, RequestId, ServerJsonRpcMessage};
use rmcp::service::RequestContext;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_MCP_PROTOCOL_VERSION, JSON_MIME_TYPE,
};
use rmcp::{Peer, RoleServer};

use super::call_streams::{CallStream, CallStreams};
use super::unreadable::is_json;
use crate::McpServer;
use crate::transport::{InlineToolCalls, plain_call_tool};

/// What the `initialize` the gate is passing to rmcp learns of the session it opens.
#[derive(Default)]
struct Opening {
    server: OnceLock<McpServer>,
    streams: OnceLock<Arc<CallStreams>>,
}

tokio::task_local! {
    static OPENING: Arc<Opening>;
}

/// The server of a new session, made from `template` when rmcp opens one; the gate's
/// `initialize` that opens it gets it too (see [`opening`]).
pub(super) fn new_session_server(template: &McpServer) -> McpServer {
    let server = template.new_session();
    let _ = OPENING.try_with(|opened| opened.server.set(server.clone()));
    server
}

/// The call streams of a new session, made when rmcp opens one (see [`opening`]).
pub(super) fn opened_streams(streams: &Arc<CallStreams>) {
    let _ = OPENING.try_with(|opened| opened.streams.set(Arc::clone(streams)));
}

/// What the gate needs to answer a session's plain calls itself.
#[derive(Clone)]
pub(super) struct DirectSession {
    calls: Arc<InlineToolCalls>,
    streams: Arc<CallStreams>,
}

/// Runs `initialize` (rmcp's handling of one) and gives the direct answers for the session it
/// opened, if it opened one.
pub(super) async fn opening<F: Future>(initialize: F) -> (F::Output, Option<DirectSession>) {
    let opened = Arc::new(Opening::default());
    let output = OPENING.scope(Arc::clone(&opened), initialize).await;
    let session = match (opened.server.get(), opened.streams.get()) {
        (Some(server), Some(streams)) => Some(DirectSession {
            calls: InlineToolCalls::new(server.clone()),
            streams: Arc::clone(streams),
        }),
        _ => None,
    };
    (output, session)
}

/// A call the gate may answer itself: the session's peer, the call, and its stream.
pub(super) struct DirectCall {
    peer: Peer<RoleServer>,
    id: RequestId,
    call: CallToolRequestParams,
    stream: CallStream,
}

impl DirectCall {
    /// The call in `body`, if it is a plain one that `session` may answer without rmcp.
    pub(super) fn of(
        parts: &Parts,
        message: &serde_json::Value,
        session: &DirectSession,
    ) -> Option<Self> {
        let peer = session.calls.peer()?;
        if peer.is_transport_closed() {
            return None;
        }
        let client = peer.peer_info()?;
        let headers = &parts.headers;
        let version_matches = headers
            .get(HEADER_MCP_PROTOCOL_VERSION)
            .is_none_or(|v| v.as_bytes() == client.protocol_version.as_str().as_bytes());
        if !version_matches || !accepts_json_and_events(headers) || !is_json(headers) {
            return None;
        }
        // The gate parsed the message once; the call takes its own copy of what it holds.
        let (id, call, None) = plain_call_tool(message.clone(), false).ok()? else {
            return None;
        };
        let stream = session.streams.open(&id)?;
        Some(Self {
            peer: peer.clone(),
            id,
            call,
            stream,
        })
    }

    /// Runs the call with `parts` (and what the gate put in them) in its context, as rmcp's
    /// loop would: its answer is the response, unless the handler sends its client something
    /// on the call's stream first, which makes the response that stream.
    pub(super) async fn answer(self, parts: Parts, session: &DirectSession) -> Response {
        let mut context = RequestContext::new(self.id, self.peer);
        context.extensions.insert(parts);
        let calls = Arc::clone(&session.calls);
        let call = self.call;
        let mut answering = Box::pin(async move { calls.answer_message(context, call).await });
        let mut stream = self.stream;
        tokio::select! {
            biased;
            answer = &mut answering => match serde_json::to_vec(&answer) {
                Ok(body) => ([(CONTENT_TYPE, JSON_MIME_TYPE)], body).into_response(),
                Err(error) => not_encoded(&error),
            },
            Some(first) = stream.messages.recv() => event_stream(first, stream, answering),
        }
    }
}

/// The response of a call whose handler sent `first` on its stream: an event stream of what
/// it sends, then its answer. The handler runs on in its own task whatever the client does;
/// once the client is gone, its requests take rmcp's way.
fn event_stream(
    first: ServerJsonRpcMessage,
    mut stream: CallStream,
    mut answering: Pin<Box<dyn Future<Output = ServerJsonRpcMessage> + Send>>,
) -> Response {
    let (mut events, body) = futures::channel::mpsc::channel::<Result<Bytes, Infallible>>(8);
    tokio::spawn(async move {
        let mut next = Some(first);
        loop {
            if let Some(message) = next.take()
                && events.send(Ok(event(&message))).await.is_err()
            {
                return;
            }
            tokio::select! {
                biased;
                Some(message) = stream.messages.recv() => next = Some(message),
                answer = &mut answering => {
                    drop(stream);
                    let _ = events.send(Ok(event(&answer))).await;
                    return;
                }
            }
        }
    });
    (
        [
            (CONTENT_TYPE, EVENT_STREAM_MIME_TYPE),
            (CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// `message` as one server-sent event.
fn event(message: &ServerJsonRpcMessage) -> Bytes {
    match serde_json::to_string(message) {
        Ok(json) => Bytes::from(format!("data: {json}\n\n")),
        Err(error) => {
            tracing::error!(%error, "a message on a call's stream could not be encoded");
            Bytes::new()
        }
    }
}

fn not_encoded(error: &serde_json::Error) -> Response {
    tracing::error!(%error, "a tool call's answer could not be encoded");
    (
        http::StatusCode::INTERNAL_SERVER_ERROR,
        "Internal Server Error: the answer could not be encoded",
    )
        .into_response()
}

/// Whether the request accepts both answers the protocol allows, as rmcp requires of every
/// POST (it refuses others with 406).
fn accepts_json_and_events(headers: &http::HeaderMap) -> bool {
    let mut json = false;
    let mut events = false;
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for media in value.split(',') {
            let essence = media.split(';').next().unwrap_or("").trim();
            json |= essence.eq_ignore_ascii_case(JSON_MIME_TYPE);
            events |= essence.eq_ignore_ascii_case(EVENT_STREAM_MIME_TYPE);
        }
    }
    json && events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, http::HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn only_requests_accepting_both_answers_and_sending_json_qualify() {
        let both = headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json; charset=utf-8"),
        ]);
        assert!(accepts_json_and_events(&both) && is_json(&both));
        let split = headers(&[
            ("accept", "text/event-stream;q=0.9"),
            ("accept", "Application/JSON"),
        ]);
        assert!(accepts_json_and_events(&split));
        assert!(!accepts_json_and_events(&headers(&[(
            "accept",
            "application/json"
        )])));
        assert!(!accepts_json_and_events(&headers(&[("accept", "*/*")])));
        assert!(!is_json(&headers(&[("content-type", "text/plain")])));
        assert!(!is_json(&headers(&[])));
    }
}
