//! What every request to `/mcp` passes before rmcp sees it: the bearer token, the scope the
//! request needs (from the registry's declarations), the session's owner, the size and pace
//! of the body, and the session limit. A request refused here reaches no handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode};
use rmcp::transport::streamable_http_server::session::SessionManager;

use super::BearerAuth;
use super::direct_calls::{self, DirectCall, DirectSession};
use super::in_flight::{InFlight, InFlightGuard, held_until_sent};
use super::message::Message;
use super::revision::{self, Revision};
use super::sessions::{Owner, SessionPlace, Sessions};
use super::stateless_streams::StatelessStreams;
use super::stream_places::{StreamPlace, StreamPlaces};
use super::{priming, unreadable};
use crate::framework::access::{Access, Principal};
use crate::framework::registry::Catalog;
use crate::locks::lock;

const SESSION_HEADER: &str = "mcp-session-id";

/// The gate's state, shared by every request.
pub struct Gate {
    pub(super) registry: Arc<Catalog>,
    /// `None`: no authentication, every request the one local user's.
    pub(super) auth: Option<Arc<dyn BearerAuth>>,
    /// The RFC 9728 metadata URL, named in `WWW-Authenticate` when the authenticator names
    /// an authorization server.
    pub(super) resource_metadata: Option<String>,
    pub(super) sessions: Sessions,
    pub(super) in_flight: Arc<InFlight>,
    pub(super) draining: AtomicBool,
    /// Event streams answered with a token, ended by the sweep once it fails.
    pub(super) streams: Arc<StatelessStreams>,
    /// The places of event streams outside any session.
    pub(super) stream_places: Arc<StreamPlaces>,
}

impl Gate {
    /// Ends what has gone idle or lost its token: see [`Sessions::sweep`].
    pub(super) async fn sweep(&self) {
        self.sessions
            .sweep(self.auth.as_deref(), &self.streams)
            .await;
    }

    fn challenge(&self, error: Option<&str>, scope: Option<&str>) -> HeaderValue {
        let mut parts = Vec::new();
        if let Some(error) = error {
            parts.push(format!("error=\"{error}\""));
        }
        if let Some(scope) = scope {
            parts.push(format!("scope=\"{scope}\""));
        }
        if let Some(url) = &self.resource_metadata {
            parts.push(format!("resource_metadata=\"{url}\""));
        }
        let value = if parts.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", parts.join(", "))
        };
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    fn unauthorized(&self, token_sent: bool) -> Response {
        let challenge = self.challenge(token_sent.then_some("invalid_token"), None);
        (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, challenge)],
            "Unauthorized",
        )
            .into_response()
    }

    fn forbidden(&self, scope: &str) -> Response {
        let challenge = self.challenge(Some("insufficient_scope"), Some(scope));
        (
            StatusCode::FORBIDDEN,
            [(WWW_AUTHENTICATE, challenge)],
            "Forbidden: insufficient scope",
        )
            .into_response()
    }
}

fn shutting_down() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: shutting down",
    )
        .into_response()
}

/// A session id rmcp never issues (its ids are UUIDs).
const NEVER_ISSUED_SESSION: &str = "pkb-never-issued";

/// Who a request is from: the principal of its bearer token, and the token (kept to end what
/// the request opens once the token fails). Both `None` without authentication.
struct Caller {
    principal: Option<Principal>,
    token: Option<Arc<str>>,
}

/// The session a request names, as the gate knows it.
struct NamedSession {
    /// The id, as passed on to rmcp: another user's is replaced by one never issued.
    id: Option<String>,
    /// The session's direct answers to plain calls, when it is the caller's.
    calls: Option<DirectSession>,
}

/// What the stages before rmcp leave for the stages after it.
struct Passage<'a> {
    caller: Caller,
    session: NamedSession,
    method: Method,
    /// The POST's body, should rmcp find it unreadable.
    sent: Option<Bytes>,
    /// Params rmcp would not refuse plainly (see `transport::known_params_error`): its
    /// answer, once rmcp has made its own checks (headers, session) and taken the request, is
    /// replaced with -32602 saying what is wrong.
    bad_params: Option<String>,
    sent_as_json: bool,
    predates_priming: bool,
    /// A place under the session limit, held by an `initialize` until its session is among
    /// the owners (or it opened none).
    reservation: Option<SessionPlace<'a>>,
    /// A place for the event stream a `subscriptions/listen` opens outside any session.
    stream_place: Option<StreamPlace>,
    /// A POST counts as in flight from the moment the gate sees it until its answer is
    /// sent, so a shutdown waits for one whose body is still coming.
    in_flight: Option<InFlightGuard>,
}

/// The gate in front of `/mcp`. A request meets the stages of [`Gate::pass`] in order; one
/// that refuses it answers at once, and nothing behind it (rmcp, a handler) runs.
pub async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    match gate.pass(request, next).await {
        Ok(response) | Err(response) => response,
    }
}

impl Gate {
    async fn pass(&self, request: Request, next: Next) -> Result<Response, Response> {
        let draining = self.draining.load(Ordering::SeqCst);
        if draining && request.method() != Method::POST {
            return Err(shutting_down());
        }
        let in_flight = (request.method() == Method::POST).then(|| self.in_flight.enter());
        let (mut parts, body) = request.into_parts();
        let revision = Revision::of(&parts.headers);
        let caller = self.authenticate(&mut parts.headers).await?;
        let session = self.name_session(&mut parts.headers, &caller);
        let method = parts.method.clone();
        if method != Method::POST {
            if method == Method::GET {
                // The event stream of a session carries note changes: reading them is reading.
                self.check_scope(&caller, Access::Read)?;
            }
            self.refuse_unknown_session_end(&method, &revision, &session)
                .await?;
            let passage = Passage {
                caller,
                session,
                method,
                sent: None,
                bad_params: None,
                sent_as_json: false,
                // A session's standalone stream (GET) follows the revision its header names.
                predates_priming: revision.predates_priming(None),
                reservation: None,
                stream_place: None,
                in_flight,
            };
            return Ok(self.forward(parts, body, passage, next).await);
        }
        let message = Message::read(body).await?;
        if !message.readable() && caller.principal.is_some() {
            // A body the gate cannot read is one whose scope it cannot tell: with
            // authorization on, it goes no further.
            return Err(unreadable::answer(
                message.bytes(),
                "the body is not one JSON-RPC message",
            ));
        }
        if draining && message.is_new_request() {
            return Err(shutting_down());
        }
        if let Some(rpc_method) = message.method() {
            self.check_scope(
                &caller,
                self.registry
                    .required_access(rpc_method, message.tool_name()),
            )?;
        }
        revision::refuse_removed_method(&message)?;
        let (mut parts, in_flight) = match self
            .answer_directly(parts, &caller, &session, &message, in_flight)
            .await
        {
            Ok(answer) => return Ok(answer),
            Err(unanswered) => unanswered,
        };
        let reservation = match (&session.id, message.method()) {
            (None, Some("initialize")) => Some(self.sessions.reserve().ok_or_else(|| {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions",
                )
                    .into_response()
            })?),
            _ => None,
        };
        let stream_place = if revision.is_stateless()
            && message.is_request()
            && message.method() == Some("subscriptions/listen")
        {
            let user = caller.principal.as_ref().map(|p| &p.user);
            Some(self.stream_places.take(user).ok_or_else(|| {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many open streams",
                )
                    .into_response()
            })?)
        } else {
            None
        };
        revision::name_notification(&revision, &mut parts.headers, &message);
        let requested = message
            .is_request()
            .then(|| message.requested_revision())
            .flatten()
            .filter(|_| message.method() == Some("initialize"));
        let passage = Passage {
            predates_priming: revision.predates_priming(requested),
            bad_params: bad_params(&message),
            sent_as_json: unreadable::is_json(&parts.headers),
            sent: Some(message.bytes().clone()),
            caller,
            session,
            method,
            reservation,
            stream_place,
            in_flight,
        };
        let body = Body::from(message.bytes().clone());
        Ok(self.forward(parts, body, passage, next).await)
    }

    /// Authentication: the principal of the request's bearer token, or the response refusing
    /// it. The token has done its work once read: nothing behind the gate (rmcp, a handler, a
    /// log line printing the request) gets to see it, or to pass it on.
    async fn authenticate(&self, headers: &mut http::HeaderMap) -> Result<Caller, Response> {
        let header = headers.remove(AUTHORIZATION);
        let Some(auth) = &self.auth else {
            return Ok(Caller {
                principal: None,
                token: None,
            });
        };
        let Some(header) = header else {
            return Err(self.unauthorized(false));
        };
        let token = header
            .to_str()
            .ok()
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|token| !token.is_empty());
        let Some(token) = token else {
            return Err(self.unauthorized(true));
        };
        match auth.authenticate(token).await {
            Some(principal) => Ok(Caller {
                principal: Some(principal),
                token: Some(token.into()),
            }),
            None => Err(self.unauthorized(true)),
        }
    }

    /// The session the request names. Its owner's last request is now, with this token. Another
    /// user's session is, to this user, no session at all: the request goes on naming one that
    /// was never issued, and is answered exactly as for any unknown id.
    fn name_session(&self, headers: &mut http::HeaderMap, caller: &Caller) -> NamedSession {
        let id = headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let user = caller.principal.as_ref().map(|p| &p.user);
        let mut calls = None;
        if let Some(id) = &id
            && let Some(owner) = lock(&self.sessions.owners).get_mut(id)
        {
            if owner.user.as_ref() != user {
                headers.insert(
                    SESSION_HEADER,
                    HeaderValue::from_static(NEVER_ISSUED_SESSION),
                );
                return NamedSession {
                    id: Some(NEVER_ISSUED_SESSION.to_owned()),
                    calls: None,
                };
            }
            owner.last_seen = Instant::now();
            owner.token.clone_from(&caller.token);
            calls.clone_from(&owner.calls);
        }
        NamedSession { id, calls }
    }

    /// Scope: whether the caller's token allows `access` (the declarations say what each
    /// request needs).
    #[allow(
        clippy::result_large_err,
        reason = "a refusal is the response itself, made once for the request it ends"
    )]
    fn check_scope(&self, caller: &Caller, access: Access) -> Result<(), Response> {
        if let Some(principal) = &caller.principal
            && !principal.scopes.allows(access)
            && let Some(auth) = &self.auth
            && let Some(scope) = auth.scope_names().needed_for(access)
        {
            return Err(self.forbidden(scope));
        }
        Ok(())
    }

    /// rmcp ends whatever session a DELETE names and answers 202 even when there is none; the
    /// contract answers an unknown, ended or another user's session with 404, as rmcp does for
    /// the other methods.
    #[allow(
        clippy::result_large_err,
        reason = "a refusal is the response itself, made once for the request it ends"
    )]
    async fn refuse_unknown_session_end(
        &self,
        method: &Method,
        revision: &Revision,
        session: &NamedSession,
    ) -> Result<(), Response> {
        if *method == Method::DELETE
            && revision.has_sessions()
            && let Some(id) = &session.id
            && !self
                .sessions
                .manager
                .has_session(&id.as_str().into())
                .await
                .unwrap_or(false)
        {
            return Err((StatusCode::NOT_FOUND, "Not Found: Session not found").into_response());
        }
        Ok(())
    }

    /// A plain `tools/call` in the caller's session, answered here (see [`direct_calls`]);
    /// any other request's `parts` and place in flight back.
    async fn answer_directly(
        &self,
        mut parts: Parts,
        caller: &Caller,
        session: &NamedSession,
        message: &Message,
        in_flight: Option<InFlightGuard>,
    ) -> Result<Response, (Parts, Option<InFlightGuard>)> {
        let Some(calls) = session.calls.as_ref() else {
            return Err((parts, in_flight));
        };
        if message.method() != Some("tools/call") {
            return Err((parts, in_flight));
        }
        let Some(call) = DirectCall::of(&parts, message.value(), calls) else {
            return Err((parts, in_flight));
        };
        if let Some(principal) = &caller.principal {
            parts.extensions.insert(principal.clone());
        }
        let answer = call.answer(parts, calls).await;
        Ok(match in_flight {
            Some(guard) => held_until_sent(answer, guard),
            None => answer,
        })
    }

    /// Passes the request to rmcp, then mends what rmcp answers and records what it opened.
    async fn forward(
        &self,
        parts: Parts,
        body: Body,
        mut passage: Passage<'_>,
        next: Next,
    ) -> Response {
        let mut request = Request::from_parts(parts, body);
        if let Some(principal) = &passage.caller.principal {
            request.extensions_mut().insert(principal.clone());
        }
        let guard = passage.in_flight.take();
        let (mut response, calls) = if passage.reservation.is_some() {
            direct_calls::opening(next.run(request)).await
        } else {
            (next.run(request).await, None)
        };
        if let Some(sent) = &passage.sent {
            // An `initialize` opening a session that rmcp cannot read as one (no `clientInfo`)
            // it takes for another request without a session, and answers 400 `Session ID is
            // required` once its own checks (Accept, Content-Type, headers) have passed.
            let unread_initialize =
                passage.reservation.is_some() && response.status() == StatusCode::BAD_REQUEST;
            response = match &passage.bad_params {
                Some(why) if response.status().is_success() || unread_initialize => {
                    unreadable::answer(sent, why)
                }
                _ => unreadable::mend(response, sent, passage.sent_as_json).await,
            };
        }
        if passage.predates_priming && is_event_stream(&response) {
            response = priming::without_priming(response);
        }
        // A stream outside any session (`subscriptions/listen`) carries the user's note
        // changes until its client closes it: it must end with its token, as a session does.
        // A session header does not make a request of the stateless revision part of that
        // session (rmcp does not look at it there), so every event stream is kept with its
        // token; those of a session would end with it anyway.
        if !response.headers().contains_key(SESSION_HEADER)
            && let Some(token) = &passage.caller.token
            && is_event_stream(&response)
        {
            response = self.streams.track(response, Arc::clone(token));
        }
        if let Some(place) = passage.stream_place.take()
            && is_event_stream(&response)
        {
            response = held_until_sent(response, place);
        }
        let reservation = passage.reservation.take();
        self.record_session(&response, &passage, reservation, calls);
        if passage.method == Method::DELETE
            && response.status().is_success()
            && let Some(session) = &passage.session.id
        {
            lock(&self.sessions.owners).remove(session);
            // rmcp answers 202 Accepted, but the session has ended by now; the official
            // Python SDK takes only 200 or 204 for an ended session and warns of anything
            // else.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        match guard {
            Some(guard) => held_until_sent(response, guard),
            None => response,
        }
    }

    /// Makes the session `response` opened, if it opened one, the caller's.
    fn record_session(
        &self,
        response: &Response,
        passage: &Passage<'_>,
        reservation: Option<SessionPlace<'_>>,
        calls: Option<DirectSession>,
    ) {
        let Some(issued) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|_| passage.session.id.is_none())
        else {
            return;
        };
        let owner = Owner {
            user: passage.caller.principal.as_ref().map(|p| p.user.clone()),
            token: passage.caller.token.clone(),
            last_seen: Instant::now(),
            calls,
        };
        match reservation {
            Some(place) => place.open(issued.to_owned(), owner),
            None => {
                lock(&self.sessions.owners).insert(issued.to_owned(), owner);
            }
        }
    }
}

/// What rmcp would answer plainly to a request whose params it cannot use, where it would not:
/// an `initialize` is read whole (once a session), as stdio reads every message; a page
/// request's cursor must be a string.
fn bad_params(message: &Message) -> Option<String> {
    if !message.is_request() {
        return None;
    }
    match message.method()? {
        "initialize" => crate::transport::known_params_error(message.value()),
        method => crate::framework::server::unreadable_cursor(method, message.cursor()),
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}
