//! Plain `tools/call` requests in a session, answered by the gate as one JSON response rather
//! than through rmcp's session worker.
//!
//! rmcp carries each request of a session through three tasks (the session's worker, its
//! service loop, a handler task) and answers it as an event stream written in several pieces:
//! over loopback, about 12 system calls and 7 thread switches a call, against 3 and 1 for a
//! plain HTTP server (docs/performance.md). Here the handler the loop would run is called
//! where the request was read ([`InlineToolCalls::answer_message`]) and its answer is the
//! response's body, as `application/json`, which the protocol allows for any request.
//!
//! Only calls that cannot need the response's event stream come this way: a call asking for
//! progress, or in a session whose client declared sampling, elicitation or roots (through
//! which a handler sends the client requests that must ride that stream), goes to rmcp. What a
//! handler sends otherwise (log messages, resource notifications) goes through the session's
//! peer to its standalone stream, as rmcp sends it for its own calls. Anything that is not the
//! plain shape, or that rmcp would check further (another protocol version in the header), goes
//! to rmcp too, so its errors stay rmcp's. Such a call never waits on its client, so a
//! `notifications/cancelled` naming it (which goes on to rmcp) has nothing to free: the
//! answer is sent, and the client that cancelled ignores it, as the protocol expects.

use std::sync::{Arc, OnceLock};

use axum::response::{IntoResponse, Response};
use http::header::{ACCEPT, CONTENT_TYPE};
use http::request::Parts;
use rmcp::model::{CallToolRequestParams, RequestId};
use rmcp::service::RequestContext;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_MCP_PROTOCOL_VERSION, JSON_MIME_TYPE,
};
use rmcp::{Peer, RoleServer};

use super::unreadable::is_json;
use crate::McpServer;
use crate::transport::{InlineToolCalls, plain_call_tool};

tokio::task_local! {
    /// Where the `initialize` the gate is passing to rmcp learns the server of its session.
    static OPENING: Arc<OnceLock<McpServer>>;
}

/// The server of a new session, made from `template` when rmcp opens one; the gate's
/// `initialize` that opens it gets it too (see [`opening`]).
pub(super) fn new_session_server(template: &McpServer) -> McpServer {
    let server = template.new_session();
    let _ = OPENING.try_with(|opened| opened.set(server.clone()));
    server
}

/// Runs `initialize` (rmcp's handling of one) and gives the direct answers for the session it
/// opened, if it opened one.
pub(super) async fn opening<F: Future>(initialize: F) -> (F::Output, Option<Arc<InlineToolCalls>>) {
    let opened = Arc::new(OnceLock::new());
    let output = OPENING.scope(Arc::clone(&opened), initialize).await;
    let calls = opened.get().cloned().map(InlineToolCalls::new);
    (output, calls)
}

/// A call the gate may answer itself: the session's peer, and the call.
pub(super) struct DirectCall {
    peer: Peer<RoleServer>,
    id: RequestId,
    call: CallToolRequestParams,
}

impl DirectCall {
    /// The call in `body`, if it is a plain one that `calls` (the session's) may answer
    /// without rmcp.
    pub(super) fn of(
        parts: &Parts,
        message: &serde_json::Value,
        calls: &InlineToolCalls,
    ) -> Option<Self> {
        let peer = calls.peer()?;
        if peer.is_transport_closed() {
            return None;
        }
        let client = peer.peer_info()?;
        let capabilities = &client.capabilities;
        if capabilities.sampling.is_some()
            || capabilities.elicitation.is_some()
            || capabilities.roots.is_some()
        {
            return None;
        }
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
        Some(Self {
            peer: peer.clone(),
            id,
            call,
        })
    }

    /// Runs the call with `parts` (and what the gate put in them) in its context, as rmcp's
    /// loop would, and makes its answer the response.
    pub(super) async fn answer(self, parts: Parts, calls: &Arc<InlineToolCalls>) -> Response {
        let mut context = RequestContext::new(self.id, self.peer);
        context.extensions.insert(parts);
        let answer = calls.answer_message(context, self.call).await;
        match serde_json::to_vec(&answer) {
            Ok(body) => ([(CONTENT_TYPE, JSON_MIME_TYPE)], body).into_response(),
            Err(error) => {
                tracing::error!(%error, "a tool call's answer could not be encoded");
                (
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal Server Error: the answer could not be encoded",
                )
                    .into_response()
            }
        }
    }
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
