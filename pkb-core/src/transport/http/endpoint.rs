//! `/mcp` once the gate let a request through: the protocol's own checks of its headers, then
//! its message served by PKB's dispatcher ([`McpServer::handle`]), in the session it names,
//! in the session an `initialize` opens, or, for the stateless revision, in a session of its
//! own that ends with its answer.
//!
//! How each is answered:
//! - `initialize`: an event stream of its result, with the new session's `Mcp-Session-Id`;
//! - a plain `tools/call` (a name and arguments, nothing else): its answer as JSON, unless
//!   the handler asks its client something first; then an event stream of the requests it
//!   sends and, last, the answer;
//! - any other request of a session: an event stream of what is sent while answering it
//!   (progress, the handler's requests), then the answer;
//! - a notification or a client's answer: 202;
//! - a request of the stateless revision: an event stream of everything it sends, then the
//!   answer; or, when the answer alone says the request was wrong, that error as JSON with a
//!   status saying so;
//! - GET: the session's standalone stream; DELETE: the session ends, 204.

use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use rmcp::model::{
    ErrorCode, ErrorData, InitializeRequestParams, JsonRpcMessage, ProtocolVersion, RequestId,
    RequestMetaObject, ServerJsonRpcMessage,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{self, EventIds};
use super::headers;
use super::in_flight::held_until_sent;
use super::session::{HttpSession, Message};
use crate::McpServer;
use crate::framework::access::Principal;
use crate::framework::client_link::{ClientLink, Outbox, Outgoing, encode};
use crate::framework::incoming::{Incoming, Request, Unreadable};

/// What serves `/mcp` behind the gate.
pub(super) struct Endpoint {
    /// Every session's server is made from it.
    pub(super) template: McpServer,
    /// Cancelled when the server stops: every session and stream ends.
    pub(super) stop: CancellationToken,
}

/// The session a request names, as the gate found it.
pub(super) struct NamedSession {
    /// The `Mcp-Session-Id` sent.
    pub(super) id: Option<String>,
    /// The caller's session of that id; `None` for an unknown id, or another user's.
    pub(super) session: Option<Arc<HttpSession>>,
}

/// A POST's answer, and the session it opened, if it opened one.
pub(super) struct Posted {
    pub(super) response: Response,
    pub(super) opened: Option<(String, Arc<HttpSession>)>,
}

impl From<Response> for Posted {
    fn from(response: Response) -> Self {
        Self {
            response,
            opened: None,
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

fn session_not_found() -> Response {
    plain(StatusCode::NOT_FOUND, "Not Found: Session not found")
}

fn session_required() -> Response {
    plain(
        StatusCode::BAD_REQUEST,
        "Bad Request: Session ID is required",
    )
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static(allow));
    response
}

/// `message` as a JSON response with `status`.
fn json_answer(status: StatusCode, message: &ServerJsonRpcMessage) -> Response {
    let mut body = Vec::new();
    if encode(message, &mut body).is_err() {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error");
    }
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        Bytes::from(body),
    )
        .into_response()
}

/// An error answering the request `id`, as JSON with 400.
fn refused(id: Option<RequestId>, code: ErrorCode, message: String) -> Response {
    let error = ServerJsonRpcMessage::error(ErrorData::new(code, message, None), id);
    json_answer(StatusCode::BAD_REQUEST, &error)
}

/// The answer to JSON that is no message: the stdio answer, with 200 when it carries a
/// request's id (bad params), else 400.
pub(super) fn unreadable(unreadable: Unreadable) -> Response {
    let Some(refusal) = unreadable else {
        let answer = crate::framework::incoming::error_answer(
            Value::Null,
            -32600,
            "invalid message: not a request, notification or response this server can read",
        );
        return json_answer(StatusCode::BAD_REQUEST, &answer);
    };
    let status = if refusal.code == -32602 && !refusal.id.is_null() {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    json_answer(status, &refusal.answer())
}

/// A stream of `first` alone, ending after it.
fn finished_stream(first: Vec<Bytes>, ended: CancellationToken) -> Response {
    let (_, nothing) = mpsc::channel(1);
    events::stream(first, Some(nothing), EventIds::None, ended)
}

/// Aborts a task when dropped: a stateless request's handler stops once its client is gone.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Endpoint {
    /// Answers a POST whose body parsed as `value`, on behalf of `principal`.
    pub(super) async fn post(
        &self,
        headers: &HeaderMap,
        value: Value,
        named: &NamedSession,
        principal: Option<Principal>,
    ) -> Posted {
        if !headers::accepts(headers, "application/json")
            || !headers::accepts(headers, "text/event-stream")
        {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: Client must accept both application/json and text/event-stream",
            )
            .into();
        }
        if !headers::sent_as_json(headers) {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Unsupported Media Type: Content-Type must be application/json",
            )
            .into();
        }
        let incoming = match Incoming::read(value) {
            Ok(incoming) => incoming,
            Err(refusal) => return unreadable(refusal).into(),
        };
        // The checks take a `_meta` that cannot be read for none: the dispatcher answers it.
        let empty = RequestMetaObject::default();
        let meta = match &incoming {
            Incoming::Request(request) => Some(request.meta().unwrap_or(&empty)),
            _ => None,
        };
        let own_revision = meta.and_then(RequestMetaObject::protocol_version);
        if let Some(problem) = headers::version_problem(headers, own_revision.is_some()) {
            return (StatusCode::BAD_REQUEST, problem).into_response().into();
        }
        let header = headers::version(headers);
        if let Incoming::Request(request) = &incoming
            && let Some(meta) = meta
            && let Some(refusal) = revisions_refusal(header, request, meta)
        {
            return refusal.into();
        }
        let missing = meta
            .map(|meta| meta.missing_required_keys(&ProtocolVersion::V_2026_07_28))
            .unwrap_or_default();
        let stateless = match &incoming {
            Incoming::Request(request) if request.method == "initialize" => false,
            // A discovery is of no session, whatever it names.
            Incoming::Request(request) if request.method == "server/discover" => true,
            Incoming::Request(_) => {
                missing.is_empty()
                    || own_revision
                        .as_ref()
                        .map(ProtocolVersion::as_str)
                        .or(header)
                        .is_some_and(headers::is_stateless)
            }
            _ => header.is_some_and(headers::is_stateless),
        };
        if stateless {
            return self
                .stateless(headers, incoming, principal, !missing.is_empty())
                .await
                .into();
        }
        match (&named.id, &named.session, incoming) {
            (Some(_), None, _) => session_not_found().into(),
            (Some(_), Some(session), Incoming::Request(request)) => {
                in_session(session, header, request, principal).await.into()
            }
            (Some(_), Some(session), other) => {
                session.server.handle(other, principal).await;
                StatusCode::ACCEPTED.into_response().into()
            }
            (None, _, Incoming::Request(request)) if request.method == "initialize" => {
                self.open_session(headers, request, principal).await
            }
            (None, _, _) => session_required().into(),
        }
    }

    /// Opens a session with its `initialize`.
    async fn open_session(
        &self,
        headers: &HeaderMap,
        initialize: Request,
        principal: Option<Principal>,
    ) -> Posted {
        if headers::version(headers).is_some_and(headers::is_stateless)
            && let Err(why) = headers::check_initialize_method(headers)
        {
            return refused(Some(initialize.id), ErrorCode(-32020), why).into();
        }
        let priming = headers::primes(
            initialize
                .params
                .get("protocolVersion")
                .and_then(Value::as_str),
        );
        let session = HttpSession::open(&self.template, &self.stop);
        let answer = session
            .server
            .handle(Incoming::Request(initialize), principal)
            .await;
        match answer {
            Some(answer @ JsonRpcMessage::Response(_)) => {
                let mut first = Vec::new();
                if priming {
                    first.push(events::priming("0"));
                }
                first.push(events::event(&answer, None));
                let mut response = finished_stream(first, session.closed.clone());
                let session_id = uuid::Uuid::new_v4().to_string();
                if let Ok(value) = HeaderValue::from_str(&session_id) {
                    response.headers_mut().insert(super::SESSION_HEADER, value);
                }
                Posted {
                    response,
                    opened: Some((session_id, session)),
                }
            }
            // Refused (params it cannot read): no session is opened.
            other => {
                session.close();
                match other {
                    Some(error) => json_answer(StatusCode::OK, &error).into(),
                    None => StatusCode::ACCEPTED.into_response().into(),
                }
            }
        }
    }

    /// Serves a request of the stateless revision in a session of its own; a notification is
    /// taken (202), a client's answer refused: there is no request of the server's to answer.
    async fn stateless(
        &self,
        headers: &HeaderMap,
        incoming: Incoming,
        principal: Option<Principal>,
        meta_incomplete: bool,
    ) -> Response {
        let request = match incoming {
            Incoming::Request(request) => request,
            Incoming::Notification { .. } => return StatusCode::ACCEPTED.into_response(),
            Incoming::Response { .. } => {
                let error = json!({"jsonrpc": "2.0", "error": {"code": -32600,
                    "message": "stateless server does not accept JSON-RPC responses"}});
                return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
            }
        };
        if headers::version(headers).is_some_and(headers::is_stateless) {
            let Request {
                id, method, params, ..
            } = &request;
            let schema = (method == "tools/call")
                .then(|| params.get("name").and_then(Value::as_str))
                .flatten()
                .and_then(|name| self.template.registry().tool_description(name))
                .map(|tool| &*tool.input_schema);
            if let Err(why) = headers::check_routing_headers(headers, method, params, schema) {
                return refused(Some(id.clone()), ErrorCode(-32020), why);
            }
        }
        let (link, mut outgoing) = ClientLink::new();
        let server = self.template.session_over(link.clone());
        let request = Incoming::Request(request);
        let mut answering = Box::pin(async move { server.handle(request, principal).await });
        let first = tokio::select! {
            biased;
            answer = &mut answering => Err(answer),
            sent = outgoing.recv() => Ok(sent),
        };
        let (first, answering) = match first {
            Err(answer) if link.unwritten() == 0 => {
                let Some(answer) = answer else {
                    return finished_stream(Vec::new(), self.stop.clone());
                };
                if let Some(status) = error_status(&answer, meta_incomplete) {
                    return json_answer(status, &answer);
                }
                return finished_stream(vec![events::event(&answer, None)], self.stop.clone());
            }
            // What the handler sent is still on its way: the answer follows it.
            Err(answer) => (
                None,
                futures::future::Either::Left(std::future::ready(answer)),
            ),
            Ok(first) => (first, futures::future::Either::Right(answering)),
        };
        let (sender, messages) = mpsc::channel(16);
        let task = tokio::spawn(forward_until_answered(
            link, outgoing, first, answering, sender,
        ));
        let response = events::stream(
            Vec::new(),
            Some(messages),
            EventIds::None,
            self.stop.clone(),
        );
        held_until_sent(response, AbortOnDrop(task.abort_handle()))
    }

    /// A GET: the session's standalone stream.
    pub(super) fn get(&self, headers: &HeaderMap, named: &NamedSession) -> Response {
        if !headers::accepts(headers, "text/event-stream") {
            return plain(
                StatusCode::NOT_ACCEPTABLE,
                "Not Acceptable: Client must accept text/event-stream",
            );
        }
        if let Some(refusal) = self.refuse_sessionless(headers) {
            return refusal;
        }
        let Some(id) = &named.id else {
            return session_required();
        };
        let Some(session) = &named.session else {
            tracing::debug!(session = %id, "a GET naming no session");
            return session_not_found();
        };
        match headers
            .get("last-event-id")
            .map(|value| value.as_bytes().contains(&b'/'))
        {
            // A request's stream is not kept once answered: nothing to resume.
            Some(true) => finished_stream(Vec::new(), session.closed.clone()),
            Some(false) => session.open_standalone(false),
            None => session.open_standalone(headers::primes(headers::version(headers))),
        }
    }

    /// A DELETE: the session ends (the gate forgets its owner).
    pub(super) fn delete(&self, headers: &HeaderMap, named: &NamedSession) -> Response {
        let of_sessions = headers::version(headers).is_none_or(|v| !headers::is_stateless(v));
        if of_sessions && named.id.is_some() && named.session.is_none() {
            return session_not_found();
        }
        if let Some(refusal) = self.refuse_sessionless(headers) {
            return refusal;
        }
        if named.id.is_none() {
            return session_required();
        }
        let Some(session) = &named.session else {
            return session_not_found();
        };
        session.close();
        StatusCode::NO_CONTENT.into_response()
    }

    /// Any other method.
    pub(super) fn other(method: &Method) -> Response {
        tracing::debug!(%method, "a method /mcp does not serve");
        method_not_allowed("GET, POST, DELETE")
    }

    /// A GET or DELETE's revision header: one this server knows, of a revision with sessions.
    fn refuse_sessionless(&self, headers: &HeaderMap) -> Option<Response> {
        if let Some(problem) = headers::version_problem(headers, false) {
            return Some((StatusCode::BAD_REQUEST, problem).into_response());
        }
        headers::version(headers)
            .is_some_and(headers::is_stateless)
            .then(|| method_not_allowed("POST"))
    }
}

/// The refusal of a request whose revisions disagree: an `initialize`'s header and params,
/// another request's header and `_meta` (which the stateless revision, and every discovery,
/// needs); `None` when they agree.
fn revisions_refusal(
    header: Option<&str>,
    request: &Request,
    meta: &RequestMetaObject,
) -> Option<Response> {
    let Request {
        id, method, params, ..
    } = request;
    if method == "initialize" {
        // One whose params cannot be read is answered saying so, by the dispatcher.
        let readable = serde_json::from_value::<InitializeRequestParams>(params.clone()).is_ok();
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|_| readable);
        if let (Some(header), Some(asked)) = (header, asked)
            && header != asked
        {
            return Some(refused(
                Some(id.clone()),
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Invalid Request: MCP-Protocol-Version header ({header}) does not match initialize params.protocolVersion ({asked})"
                ),
            ));
        }
        return None;
    }
    let Some(own) = meta.protocol_version() else {
        if method == "server/discover" || header.is_some_and(headers::is_stateless) {
            let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
            return Some(refused(
                Some(id.clone()),
                ErrorCode::INVALID_PARAMS,
                format!(
                    "Invalid params: request _meta is missing or has malformed required fields: {}",
                    missing.join(", ")
                ),
            ));
        }
        return None;
    };
    match header {
        None => Some(refused(
            Some(id.clone()),
            ErrorCode(-32020),
            "request _meta protocolVersion requires MCP-Protocol-Version header".into(),
        )),
        Some(header) if header != own.as_str() => Some(refused(
            Some(id.clone()),
            ErrorCode(-32020),
            format!(
                "MCP-Protocol-Version header ({header}) does not match request _meta protocolVersion ({own})"
            ),
        )),
        Some(_) => None,
    }
}

/// The status a stateless request's error answer goes with, when not 200: the request was
/// wrong as HTTP sees it (headers, revision, missing `_meta`), or names no method.
fn error_status(answer: &ServerJsonRpcMessage, meta_incomplete: bool) -> Option<StatusCode> {
    let JsonRpcMessage::Error(error) = answer else {
        return None;
    };
    match error.error.code.0 {
        -32022..=-32020 => Some(StatusCode::BAD_REQUEST),
        -32602 if meta_incomplete => Some(StatusCode::BAD_REQUEST),
        -32601 => Some(StatusCode::NOT_FOUND),
        _ => None,
    }
}

/// Serves the request `id` of `session`.
async fn in_session(
    session: &Arc<HttpSession>,
    header: Option<&str>,
    request: Request,
    principal: Option<Principal>,
) -> Response {
    let direct = request.method == "tools/call"
        && request
            .params
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "arguments"))
        && header.is_none_or(|header| {
            session
                .server
                .agreed_revision()
                .is_some_and(|agreed| agreed.as_str() == header)
        });
    let id = request.id.clone();
    let Some((number, mut stream)) = session.open_request_stream(&id) else {
        let error = ErrorData::invalid_request(
            format!("invalid request: a request with the id {id} is being answered"),
            None,
        );
        return json_answer(
            StatusCode::BAD_REQUEST,
            &ServerJsonRpcMessage::error(error, Some(id)),
        );
    };
    let server = session.server.clone();
    let request = Incoming::Request(request);
    let mut answering = Box::pin(async move { server.handle(request, principal).await });
    if direct {
        // Answered here, where the request was read: should its client go away meanwhile,
        // the request's stream goes with it.
        let mut open = OpenStream {
            session,
            id: &id,
            number,
            handed_on: false,
        };
        tokio::select! {
            biased;
            answer = &mut answering => {
                if session.link().unwritten() == 0 && stream.is_empty() {
                    return match answer {
                        Some(answer) => json_answer(StatusCode::OK, &answer),
                        None => finished_stream(Vec::new(), session.closed.clone()),
                    };
                }
                open.handed_on = true;
                // What the handler sent is still on its way: the answer follows it.
                match answer {
                    Some(answer) => {
                        let _ = session.link().send(answer, Some(id.clone())).await;
                    }
                    None => session.close_request_stream(&id, number),
                }
            }
            first = stream.recv() => {
                open.handed_on = true;
                let first = first.map(|message| events::event(&message.message, None));
                tokio::spawn(answer_later(answering, Arc::clone(session), id.clone(), number));
                return events::stream(
                    first.into_iter().collect(),
                    Some(stream),
                    EventIds::None,
                    session.closed.clone(),
                );
            }
        }
        return events::stream(
            Vec::new(),
            Some(stream),
            EventIds::None,
            session.closed.clone(),
        );
    }
    tokio::spawn(answer_later(answering, Arc::clone(session), id, number));
    let first = if headers::primes(header) {
        vec![events::priming(&format!("0/{number}"))]
    } else {
        Vec::new()
    };
    events::stream(
        first,
        Some(stream),
        EventIds::OfRequest(number),
        session.closed.clone(),
    )
}

/// A request's stream while its request is answered where it was read: closed when that
/// ends without handing it on (answered as JSON, or dropped with its client).
struct OpenStream<'a> {
    session: &'a HttpSession,
    id: &'a RequestId,
    number: u64,
    handed_on: bool,
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        if !self.handed_on {
            self.session.close_request_stream(self.id, self.number);
        }
    }
}

/// Sends the answer `answering` makes on its request's stream; a cancelled request's stream
/// ends without one.
async fn answer_later(
    answering: impl Future<Output = Option<ServerJsonRpcMessage>>,
    session: Arc<HttpSession>,
    id: RequestId,
    number: u64,
) {
    match answering.await {
        Some(answer) => {
            let _ = session.link().send(answer, Some(id)).await;
        }
        None => session.close_request_stream(&id, number),
    }
}

/// Carries a stateless request's messages to its response: `first` (already taken from
/// `outgoing`), then what its handler sends, in order, until it answers; then what is still on
/// its way, and the answer last.
async fn forward_until_answered(
    link: ClientLink,
    mut outgoing: Outbox,
    first: Option<Message>,
    answering: impl Future<Output = Option<ServerJsonRpcMessage>>,
    sender: mpsc::Sender<Message>,
) {
    let mut answering = std::pin::pin!(answering);
    let mut sent = first;
    let answer = loop {
        if let Some(next) = sent.take() {
            link.written();
            if sender.send(next).await.is_err() {
                return;
            }
        }
        sent = tokio::select! {
            biased;
            next = outgoing.recv() => match next {
                Some(next) => Some(next),
                None => break None,
            },
            answer = &mut answering => break answer,
        };
    };
    while let Ok(next) = outgoing.try_recv() {
        link.written();
        if sender.send(next).await.is_err() {
            return;
        }
    }
    if let Some(answer) = answer {
        let answer = Outgoing {
            message: answer,
            during: None,
        };
        let _ = sender.send(Box::new(answer)).await;
    }
}
