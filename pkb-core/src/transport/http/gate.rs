//! What every request to `/mcp` passes before rmcp sees it: the bearer token, the scope the
//! request needs (from the registry's declarations), the session's owner, the size and pace
//! of the body, and the session limit. A request refused here reaches no handler.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde::Deserialize;
use tokio::sync::Notify;

use super::BearerAuth;
use super::direct_calls::{self, DirectCall};
use super::stateless_streams::StatelessStreams;
use super::{priming, unreadable};
use crate::framework::access::{Access, Principal};
use crate::framework::registry::Catalog;
use crate::identity::User;
use crate::locks::lock;
use crate::transport::{InlineToolCalls, MAX_MESSAGE_BYTES};

/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

const SESSION_HEADER: &str = "mcp-session-id";

/// The gate's state, shared by every request.
pub struct Gate {
    pub(super) registry: Arc<Catalog>,
    /// `None`: no authentication, every request the one local user's.
    pub(super) auth: Option<Arc<dyn BearerAuth>>,
    /// The RFC 9728 metadata URL, named in `WWW-Authenticate` when the authenticator names
    /// an authorization server.
    pub(super) resource_metadata: Option<String>,
    pub(super) sessions: Arc<LocalSessionManager>,
    pub(super) max_sessions: usize,
    /// `initialize` requests let through and not yet answered: each holds a place under
    /// `max_sessions` until its session is among the owners, so concurrent ones cannot all
    /// take the last. Changed only under the owners' lock.
    pub(super) opening: AtomicUsize,
    /// Who opened each session, and when its client last sent a request in it.
    pub(super) owners: Mutex<HashMap<String, Owner>>,
    /// Sessions whose client sent nothing for this long are ended.
    pub(super) idle_timeout: Duration,
    pub(super) in_flight: Arc<InFlight>,
    pub(super) draining: AtomicBool,
    /// Event streams answered with a token, ended by the sweep once it fails.
    pub(super) streams: Arc<StatelessStreams>,
}

/// The user of a session, and when its client last spoke.
pub struct Owner {
    user: Option<User>,
    /// The bearer token of the session's latest request: once it is revoked or expires, the
    /// session ends, and with it any event stream still carrying the user's note changes.
    token: Option<Arc<str>>,
    last_seen: Instant,
    /// The session's server, answering its plain tool calls without rmcp (see
    /// [`direct_calls`]).
    calls: Option<Arc<InlineToolCalls>>,
}

/// The POST requests whose answer is not yet sent, so a shutdown can wait for them.
#[derive(Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(Arc::clone(self))
    }

    /// Waits until no request is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The little of a JSON-RPC message the gate reads: which method, which tool. Strings are
/// owned, so that escapes (`"writ\u0065"`) decode here exactly as rmcp decodes them. Fields
/// the gate only looks into are any JSON: a message whose `params.name` is no string (which
/// rmcp's `initialize` ignores) must still be seen as the `initialize` it is.
#[derive(Deserialize)]
struct Peek {
    method: Option<String>,
    id: Option<serde_json::Value>,
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    name: Option<serde_json::Value>,
    cursor: Option<serde_json::Value>,
    /// The revision an `initialize` asks for.
    #[serde(rename = "protocolVersion")]
    protocol_version: Option<serde_json::Value>,
    #[serde(rename = "_meta")]
    meta: Option<serde_json::Value>,
}

impl PeekParams {
    /// The tool named, for `tools/call`.
    fn name(&self) -> Option<&str> {
        self.name.as_ref()?.as_str()
    }

    /// The revision a request of the stateless revision names in its `_meta`.
    fn protocol_version(&self) -> Option<&str> {
        self.meta
            .as_ref()?
            .get("io.modelcontextprotocol/protocolVersion")?
            .as_str()
    }
}

impl Peek {
    /// The method, when this is a request of the stateless revision for a method it removed:
    /// rmcp would take an `initialize` for the older handshake and open a session, and would
    /// read the others' params before finding the method gone.
    fn removed_by_stateless_revision(&self) -> Option<&str> {
        let method = self.method.as_deref()?;
        let version = self.params.as_ref().and_then(PeekParams::protocol_version);
        crate::framework::server::removed_by_stateless_revision(method, version).then_some(method)
    }
}

impl Gate {
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

    /// The principal of the request's bearer token, or the response refusing it.
    async fn authenticate(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Option<(Principal, Arc<str>)>, Response> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        let Some(header) = headers.get(AUTHORIZATION) else {
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
            Some(principal) => Ok(Some((principal, token.into()))),
            None => Err(self.unauthorized(true)),
        }
    }
}

fn shutting_down() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: shutting down",
    )
        .into_response()
}

/// The header that names a request's method on the 2026-07-28 revision (SEP-2243).
const MCP_METHOD_HEADER: &str = "mcp-method";

/// A session id rmcp never issues (its ids are UUIDs).
const NEVER_ISSUED_SESSION: &str = "pkb-never-issued";

/// The gate in front of `/mcp`.
pub async fn gate(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let draining = gate.draining.load(Ordering::SeqCst);
    if draining && request.method() != Method::POST {
        return shutting_down();
    }
    let (mut parts, body) = request.into_parts();
    let (principal, token) = match gate.authenticate(&parts.headers).await {
        Ok(Some((principal, token))) => (Some(principal), Some(token)),
        Ok(None) => (None, None),
        Err(refused) => return refused,
    };
    // The token has done its work: nothing behind the gate (rmcp, a handler, a log line
    // printing the request) gets to see it, or to pass it on.
    parts.headers.remove(AUTHORIZATION);
    let user = principal.as_ref().map(|p| p.user.clone());
    let mut session = parts
        .headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut session_calls = None;
    let mut foreign = false;
    if let Some(session) = &session
        && let Some(owner) = lock(&gate.owners).get_mut(session)
    {
        if owner.user == user {
            owner.last_seen = Instant::now();
            owner.token.clone_from(&token);
            session_calls.clone_from(&owner.calls);
        } else {
            foreign = true;
        }
    }
    if foreign {
        // Another user's session is, to this user, no session at all: the request goes on
        // naming one that was never issued, and is answered exactly as for any unknown id.
        parts.headers.insert(
            SESSION_HEADER,
            HeaderValue::from_static(NEVER_ISSUED_SESSION),
        );
        session = Some(NEVER_ISSUED_SESSION.to_owned());
    }
    let method = parts.method.clone();
    let sent_as_json = unreadable::is_json(&parts.headers);
    // What a POST sent, should rmcp find it unreadable.
    let mut sent = None;
    // Params rmcp would not refuse plainly (see `transport::known_params_error`): its answer,
    // once rmcp has made its own checks (headers, session) and taken the request, is replaced
    // with -32602 saying what is wrong.
    let mut bad_params = None;
    // Whether the request's revision predates SSE priming events (see `priming`); an
    // `initialize` names its revision in its body, read below.
    let mut predates_priming = priming::predates_priming(&parts.headers, None);
    let stateless_revision = parts
        .headers
        .get("mcp-protocol-version")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str());
    // Held until the session it opens is among the owners (or it opened none).
    let mut reservation = None;
    let mut request = if method == Method::POST {
        let bytes = match read_body(body).await {
            Ok(bytes) => bytes,
            Err(refused) => return refused,
        };
        let peek = match serde_json::from_slice::<Peek>(&bytes) {
            Ok(peek) => Some(peek),
            // Read again only when the peek failed on JSON's meaning, not its syntax: a body
            // is parsed once on the way to rmcp.
            Err(error)
                if error.is_syntax()
                    || error.is_eof()
                    || serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_err() =>
            {
                return unreadable::parse_error("the body is not JSON");
            }
            // A body the gate cannot read is one whose scope it cannot tell: with
            // authorization on, it goes no further.
            Err(_) if principal.is_some() => {
                return unreadable::answer(&bytes, "the body is not one JSON-RPC message");
            }
            Err(_) => None,
        };
        let rpc_method = peek.as_ref().and_then(|p| p.method.as_deref());
        // While draining, the answers and notifications that calls in flight wait for (a
        // sampling response, a cancellation) still come in; new requests do not.
        let new_request = peek
            .as_ref()
            .is_none_or(|p| p.method.is_some() && p.id.is_some());
        if draining && new_request {
            return shutting_down();
        }
        if let Some(principal) = &principal
            && let Some(rpc_method) = rpc_method
        {
            let name = peek
                .as_ref()
                .and_then(|p| p.params.as_ref())
                .and_then(PeekParams::name);
            let params = name.map(|name| serde_json::json!({ "name": name }));
            let access: Access = gate.registry.required_access(rpc_method, params.as_ref());
            if !principal.scopes.allows(access)
                && let Some(auth) = &gate.auth
                && let Some(scope) = auth.scope_names().needed_for(access)
            {
                return gate.forbidden(scope);
            }
        }
        if let Some(peek) = &peek
            && peek.id.is_some()
            && let Some(removed) = peek.removed_by_stateless_revision()
        {
            let error = serde_json::json!({
                "jsonrpc": "2.0",
                "id": peek.id,
                "error": {"code": -32601, "message": format!("method not found: {removed} (2026-07-28 has no such method)")},
            });
            return (StatusCode::NOT_FOUND, axum::Json(error)).into_response();
        }
        if let Some(peek) = &peek
            && peek.id.is_some()
            && let Some(rpc_method) = rpc_method
        {
            if rpc_method == "initialize" {
                let requested = peek
                    .params
                    .as_ref()
                    .and_then(|p| p.protocol_version.as_ref());
                let requested = requested.and_then(serde_json::Value::as_str);
                predates_priming = priming::predates_priming(&parts.headers, requested);
            }
            bad_params = if rpc_method == "initialize" {
                // Once a session: read whole, as stdio reads every message.
                serde_json::from_slice(&bytes)
                    .ok()
                    .and_then(|value| crate::transport::known_params_error(&value))
            } else {
                let cursor = peek.params.as_ref().and_then(|p| p.cursor.as_ref());
                crate::framework::server::unreadable_cursor(rpc_method, cursor)
            };
        }
        if let Some(calls) = &session_calls
            && rpc_method == Some("tools/call")
            && let Some(call) = DirectCall::of(&parts, &bytes, calls)
        {
            if let Some(principal) = principal {
                parts.extensions.insert(principal);
            }
            let guard = gate.in_flight.enter();
            return tracked(call.answer(parts, calls).await, guard);
        }
        if session.is_none() && rpc_method == Some("initialize") {
            match gate.reserve_session() {
                Some(place) => reservation = Some(place),
                None => {
                    return (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Service Unavailable: too many sessions",
                    )
                        .into_response();
                }
            }
        }
        // The 2026-07-28 revision asks for `Mcp-Method` on requests and leaves notifications
        // open; rmcp asks for it on both, and the official client sends
        // `notifications/cancelled` without it. A notification is given its method's header
        // (as the official TypeScript server exempts them).
        if stateless_revision
            && let Some(peek) = &peek
            && peek.id.is_none()
            && let Some(rpc_method) = rpc_method
            && !parts.headers.contains_key(MCP_METHOD_HEADER)
            && let Ok(value) = HeaderValue::from_str(rpc_method)
        {
            parts.headers.insert(MCP_METHOD_HEADER, value);
        }
        sent = Some(bytes.clone());
        Request::from_parts(parts, Body::from(bytes))
    } else {
        // The event stream of a session carries note changes: reading them is reading.
        if method == Method::GET
            && let Some(principal) = &principal
            && !principal.scopes.allows(Access::Read)
            && let Some(auth) = &gate.auth
            && let Some(scope) = auth.scope_names().needed_for(Access::Read)
        {
            return gate.forbidden(scope);
        }
        Request::from_parts(parts, body)
    };
    if let Some(principal) = principal {
        request.extensions_mut().insert(principal);
    }
    // rmcp ends whatever session a DELETE names and answers 202 even when there is none;
    // the contract answers an unknown, ended or another user's session with 404, as rmcp
    // does for the other methods. (On 2026-07-28 there are no sessions: rmcp answers 405.)
    if method == Method::DELETE
        && !stateless_revision
        && let Some(id) = &session
        && !gate
            .sessions
            .has_session(&id.as_str().into())
            .await
            .unwrap_or(false)
    {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let guard = (method == Method::POST).then(|| gate.in_flight.enter());
    let (mut response, calls) = if reservation.is_some() {
        direct_calls::opening(next.run(request)).await
    } else {
        (next.run(request).await, None)
    };
    if let Some(sent) = &sent {
        response = match &bad_params {
            Some(why) if response.status().is_success() => unreadable::answer(sent, why),
            _ => unreadable::mend(response, sent, sent_as_json).await,
        };
    }
    if predates_priming && is_event_stream(&response) {
        response = priming::without_priming(response);
    }
    // A stream outside any session (`subscriptions/listen`) carries the user's note changes
    // until its client closes it: it must end with its token, as a session does. A session
    // header does not make a request of the stateless revision part of that session (rmcp
    // does not look at it there), so every event stream is kept with its token; those of a
    // session would end with it anyway.
    if !response.headers().contains_key(SESSION_HEADER)
        && let Some(token) = &token
        && is_event_stream(&response)
    {
        response = gate.streams.track(response, Arc::clone(token));
    }
    if let Some(issued) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        && session.is_none()
    {
        let owner = Owner {
            user,
            token,
            last_seen: Instant::now(),
            calls,
        };
        match reservation {
            Some(place) => place.open(issued.to_owned(), owner),
            None => {
                lock(&gate.owners).insert(issued.to_owned(), owner);
            }
        }
    } else {
        drop(reservation);
    }
    if method == Method::DELETE
        && response.status().is_success()
        && let Some(session) = &session
    {
        lock(&gate.owners).remove(session);
        // rmcp answers 202 Accepted, but the session has ended by now; the official Python
        // SDK takes only 200 or 204 for an ended session and warns of anything else.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    match guard {
        Some(guard) => tracked(response, guard),
        None => response,
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}

/// `response`, counted as in flight until its body is sent or dropped.
fn tracked(response: Response, guard: InFlightGuard) -> Response {
    // The body holds the guard: it is dropped with the body, sent or not.
    response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            let _held = &guard;
            frame
        }))
    })
}

/// A place under `--max-sessions` held for an `initialize` on its way. The count of places
/// changes only under the owners' lock, so a place becomes an owner in one step.
pub(super) struct SessionPlace<'a> {
    gate: &'a Gate,
    taken: bool,
}

impl SessionPlace<'_> {
    /// Turns the place into the session `id`, owned by `owner`.
    fn open(mut self, id: String, owner: Owner) {
        let mut owners = lock(&self.gate.owners);
        owners.insert(id, owner);
        self.gate.opening.fetch_sub(1, Ordering::SeqCst);
        self.taken = true;
    }
}

impl Drop for SessionPlace<'_> {
    fn drop(&mut self) {
        if !self.taken {
            let _owners = lock(&self.gate.owners);
            self.gate.opening.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Gate {
    /// A place for one more session, if the sessions open and those being opened leave one.
    /// Counted under the owners' lock, so two requests racing for the last place cannot both
    /// get it.
    fn reserve_session(&self) -> Option<SessionPlace<'_>> {
        let owners = lock(&self.owners);
        if owners.len() + self.opening.load(Ordering::SeqCst) >= self.max_sessions {
            return None;
        }
        self.opening.fetch_add(1, Ordering::SeqCst);
        Some(SessionPlace {
            gate: self,
            taken: false,
        })
    }

    /// Ends the sessions whose client sent nothing for the idle timeout or whose latest token
    /// is no longer valid, and forgets the owners of sessions that ended. rmcp's own idle timer is reset by what the server
    /// sends too, so a session that only receives notifications would never end by it.
    pub(super) async fn end_idle_sessions(&self) {
        let auth = self.auth.as_deref();
        let mut ending: Vec<String> = Vec::new();
        let mut tokens: Vec<(String, Arc<str>)> = Vec::new();
        for (id, owner) in lock(&self.owners).iter() {
            if owner.last_seen.elapsed() >= self.idle_timeout {
                tracing::debug!(session = %id, "ending an idle session");
                ending.push(id.clone());
            } else if let Some(token) = &owner.token {
                tokens.push((id.clone(), Arc::clone(token)));
            }
        }
        for (id, token) in tokens {
            if let Some(auth) = auth
                && auth.authenticate(&token).await.is_none()
            {
                tracing::debug!(session = %id, "ending a session whose token was revoked or expired");
                ending.push(id);
            }
        }
        for (stream, token) in self.streams.tokens() {
            if let Some(auth) = auth
                && auth.authenticate(&token).await.is_none()
            {
                tracing::debug!(stream, "ending a stream whose token was revoked or expired");
                self.streams.end(stream);
            }
        }
        for id in ending {
            let _ = self.sessions.close_session(&id.as_str().into()).await;
            lock(&self.owners).remove(&id);
        }
        for id in self.sessions_without_owner().await {
            tracing::debug!(session = %id, "ending a session whose initialize never came back");
            let _ = self.sessions.close_session(&id.as_str().into()).await;
        }
        let open = self.sessions.sessions.read().await;
        lock(&self.owners).retain(|id, _| open.contains_key(id.as_str()));
    }

    /// The sessions rmcp opened that no owner holds and none will: their `initialize` was
    /// dropped on its way back through the gate (its client went away), so no request will
    /// ever reach them, and only this sweep can end them. rmcp's map is read first, then the
    /// owners: a session whose `initialize` is still on its way holds a place under
    /// `max_sessions` ([`SessionPlace`]) until it is among the owners, so while any place is
    /// held, nothing is taken for an orphan.
    async fn sessions_without_owner(&self) -> Vec<String> {
        let open: Vec<String> = self
            .sessions
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        let owners = lock(&self.owners);
        if self.opening.load(Ordering::SeqCst) > 0 {
            return Vec::new();
        }
        open.into_iter()
            .filter(|id| !owners.contains_key(id))
            .collect()
    }
}

/// Reads a request body of at most [`MAX_MESSAGE_BYTES`] within [`BODY_TIMEOUT`]: a larger
/// body is refused (413) as soon as it passes the limit, never held whole.
async fn read_body(body: Body) -> Result<bytes::Bytes, Response> {
    let limited = Limited::new(body, MAX_MESSAGE_BYTES);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "Request Timeout: the body came too slowly",
        )
            .into_response()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large: the limit is 4 MiB",
        )
            .into_response()),
        Ok(Err(_)) => Err((
            StatusCode::BAD_REQUEST,
            "Bad Request: the body could not be read",
        )
            .into_response()),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            registry: Arc::clone(crate::Registry::<()>::collect().unwrap().catalog()),
            auth: None,
            resource_metadata: None,
            sessions: Arc::new(LocalSessionManager::default()),
            max_sessions: 10,
            opening: AtomicUsize::new(0),
            owners: Mutex::default(),
            idle_timeout: Duration::from_secs(60),
            in_flight: Arc::default(),
            draining: AtomicBool::new(false),
            streams: Arc::default(),
        }
    }

    #[tokio::test]
    async fn a_session_whose_initialize_never_came_back_is_ended_once_no_place_is_held() {
        let gate = gate();
        // What rmcp leaves when the gate's `initialize` is dropped after rmcp opened the
        // session and before the gate made it an owner's.
        let (orphan, transport) = gate.sessions.create_session().await.unwrap();
        let on_its_way = gate.reserve_session().unwrap();
        gate.end_idle_sessions().await;
        assert!(
            gate.sessions.has_session(&orphan).await.unwrap(),
            "kept while an initialize on its way may still own it"
        );
        drop(on_its_way);
        gate.end_idle_sessions().await;
        assert!(!gate.sessions.has_session(&orphan).await.unwrap());
        drop(transport);
    }
}
