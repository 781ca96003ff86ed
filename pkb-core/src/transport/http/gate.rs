//! What every request to `/mcp` passes before it is served ([`super::endpoint`]): the bearer
//! token, the scope the request needs (from the registry's declarations), the session's
//! owner, the size and pace of the body, and the limits on sessions and streams. A request
//! refused here reaches no handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use http::{HeaderValue, Method, StatusCode};

use super::BearerAuth;
use super::SESSION_HEADER;
use super::endpoint::{Endpoint, NamedSession};
use super::in_flight::{InFlight, held_until_sent};
use super::message::Message;
use super::removed_methods::refuse_removed_method;
use super::sessions::{Owner, Sessions};
use super::stateless_streams::StatelessStreams;
use super::stream_places::StreamPlaces;
use crate::framework::access::{Access, Principal};
use crate::framework::registry::Catalog;
use crate::locks::lock;

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
    /// What serves the requests let through.
    pub(super) endpoint: Endpoint,
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

/// Who a request is from: the principal of its bearer token, and the token (kept to end what
/// the request opens once the token fails). Both `None` without authentication.
struct Caller {
    principal: Option<Principal>,
    token: Option<Arc<str>>,
}

/// `/mcp`. A request meets the stages of [`Gate::pass`] in order; one that refuses it answers
/// at once, and nothing behind it (a session, a handler) runs.
pub async fn serve(State(gate): State<Arc<Gate>>, request: Request) -> Response {
    match gate.pass(request).await {
        Ok(response) | Err(response) => response,
    }
}

impl Gate {
    async fn pass(&self, request: Request) -> Result<Response, Response> {
        let draining = self.draining.load(Ordering::SeqCst);
        if draining && request.method() != Method::POST {
            return Err(shutting_down());
        }
        // A POST counts as in flight from the moment the gate sees it until its answer is
        // sent, so a shutdown waits for one whose body is still coming.
        let in_flight = (request.method() == Method::POST).then(|| self.in_flight.enter());
        let (mut parts, body) = request.into_parts();
        let caller = self.authenticate(&parts.headers).await?;
        // The token has done its work: nothing behind the gate gets to see it.
        parts.headers.remove(AUTHORIZATION);
        let headers = &parts.headers;
        let named = self.name_session(headers, &caller);
        match parts.method {
            Method::GET => {
                // The standalone stream carries note changes: reading them is reading.
                self.check_scope(&caller, Access::Read)?;
                let response = self.endpoint.get(headers, &named);
                return Ok(self.track(response, &caller));
            }
            Method::DELETE => {
                let response = self.endpoint.delete(headers, &named);
                if response.status().is_success()
                    && let Some(id) = &named.id
                {
                    lock(&self.sessions.owners).remove(id);
                }
                return Ok(response);
            }
            Method::POST => {}
            ref other => return Ok(Endpoint::other(other)),
        }
        let message = Message::read(body).await?;
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
        refuse_removed_method(&message)?;
        let reservation = match (&named.id, message.method()) {
            (None, Some("initialize")) => Some(self.sessions.reserve().ok_or_else(|| {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions",
                )
                    .into_response()
            })?),
            _ => None,
        };
        // Every `subscriptions/listen` takes a place, whatever revision its header names: a
        // request's own `_meta` can make it the stateless revision's.
        let stream_place =
            if message.is_request() && message.method() == Some("subscriptions/listen") {
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
        let posted = self
            .endpoint
            .post(
                headers,
                message.into_value(),
                &named,
                caller.principal.clone(),
            )
            .await;
        let mut response = posted.response;
        // Only an `initialize` without a session opens one, and it holds a place.
        if let (Some((id, session)), Some(place)) = (posted.opened, reservation) {
            let owner = Owner {
                user: caller.principal.as_ref().map(|p| p.user.clone()),
                token: caller.token.clone(),
                last_seen: Instant::now(),
                session,
            };
            place.open(id, owner);
        }
        response = self.track(response, &caller);
        if let Some(place) = stream_place
            && is_event_stream(&response)
        {
            response = held_until_sent(response, place);
        }
        Ok(match in_flight {
            Some(guard) => held_until_sent(response, guard),
            None => response,
        })
    }

    /// An event stream answered with a token ends once the token fails: it carries the user's
    /// note changes (a listen stream's, a session's) for as long as it is open.
    fn track(&self, response: Response, caller: &Caller) -> Response {
        match &caller.token {
            Some(token) if is_event_stream(&response) => {
                self.streams.track(response, Arc::clone(token))
            }
            _ => response,
        }
    }

    /// Authentication: the principal of the request's bearer token, or the response refusing
    /// it. The token has done its work once read: nothing behind the gate (a handler, a log
    /// line printing the request) gets to see it, or to pass it on.
    async fn authenticate(&self, headers: &http::HeaderMap) -> Result<Caller, Response> {
        let Some(auth) = &self.auth else {
            return Ok(Caller {
                principal: None,
                token: None,
            });
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
            Some(principal) => Ok(Caller {
                principal: Some(principal),
                token: Some(token.into()),
            }),
            None => Err(self.unauthorized(true)),
        }
    }

    /// The session the request names. Its owner's last request is now, with this token.
    /// Another user's session is, to this user, no session at all: the request is answered
    /// exactly as for any unknown id.
    fn name_session(&self, headers: &http::HeaderMap, caller: &Caller) -> NamedSession {
        let id = headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let user = caller.principal.as_ref().map(|p| &p.user);
        let mut session = None;
        if let Some(id) = &id
            && let Some(owner) = lock(&self.sessions.owners).get_mut(id)
            && owner.user.as_ref() == user
        {
            owner.last_seen = Instant::now();
            owner.token.clone_from(&caller.token);
            session = Some(Arc::clone(&owner.session));
        }
        NamedSession { id, session }
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
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"))
}
