//! RFC 7591 dynamic registration: any client may register itself as a public client (no
//! secret; PKCE protects its codes) with the redirect URIs it will use. A registration grants
//! nothing: a person still signs in and approves on PKB's pages. Since anyone may register,
//! each source address has a share ([`RegistrationLimits`]), and the registered clients are
//! kept apart from the grants (see [`super::grants`]).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, RETRY_AFTER};
use http::{Extensions, StatusCode};
use serde_json::{Value, json};

use super::grants::RegisteredClient;
use super::{LocalAuthority, redirect_uri};
use crate::locks::lock;

/// The longest client name kept.
pub const MAX_CLIENT_NAME_CHARS: usize = 100;

/// The largest registration request read.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// Registrations one source may make within [`REGISTRATION_WINDOW`]: a person's clients
/// register once each; a flood from one address cannot push out the clients of others.
pub const MAX_REGISTRATIONS_PER_SOURCE: usize = 20;

/// See [`MAX_REGISTRATIONS_PER_SOURCE`].
pub const REGISTRATION_WINDOW: Duration = Duration::from_secs(60 * 60);

/// The most sources counted at once; past it, new sources wait for old windows to end.
const MAX_SOURCES: usize = 10_000;

/// Registrations by source: an IPv4 address, or an IPv6 /64 (what one host is commonly given).
#[derive(Default)]
pub struct RegistrationLimits {
    sources: Mutex<HashMap<IpAddr, (Instant, usize)>>,
}

impl RegistrationLimits {
    /// Counts a registration from `peer`; when its share is spent, how long until it may
    /// register again.
    pub fn admit(&self, peer: IpAddr) -> Result<(), Duration> {
        let source = source_of(peer);
        let now = Instant::now();
        let mut sources = lock(&self.sources);
        if sources.len() >= MAX_SOURCES && !sources.contains_key(&source) {
            sources.retain(|_, (since, _)| now.duration_since(*since) < REGISTRATION_WINDOW);
            if sources.len() >= MAX_SOURCES {
                return Err(REGISTRATION_WINDOW);
            }
        }
        let (since, count) = sources.entry(source).or_insert((now, 0));
        if now.duration_since(*since) >= REGISTRATION_WINDOW {
            (*since, *count) = (now, 0);
        }
        if *count >= MAX_REGISTRATIONS_PER_SOURCE {
            return Err(REGISTRATION_WINDOW.saturating_sub(now.duration_since(*since)));
        }
        *count += 1;
        Ok(())
    }
}

fn source_of(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64))),
        v4 => v4,
    }
}

/// `POST /oauth/register`.
pub async fn register(
    State(authority): State<Arc<LocalAuthority>>,
    extensions: Extensions,
    body: Bytes,
) -> Response {
    let client = match read_request(&body) {
        Ok(client) => client,
        Err((error, description)) => return refusal(error, &description),
    };
    // Served without the listener (as in unit tests), every request is one source.
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
    if let Err(wait) = authority.registrations.admit(peer) {
        tracing::warn!(%peer, "too many registrations from one source; refused");
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            Json(json!({
                "error": "temporarily_unavailable",
                "error_description": "too many registrations from this address; try again later",
            })),
        )
            .into_response();
        let headers = response.headers_mut();
        headers.insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
        headers.insert(RETRY_AFTER, http::HeaderValue::from(wait.as_secs().max(1)));
        return response;
    }
    let answer = json!({
        "client_id": client.client_id,
        "client_id_issued_at": time::OffsetDateTime::now_utc().unix_timestamp(),
        "client_name": client.client_name,
        "redirect_uris": client.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let file = authority.grant_file.clone();
    match tokio::task::spawn_blocking(move || file.register(client)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::error!(%error, "cannot register a client");
            return server_error();
        }
        Err(_) => return server_error(),
    }
    let mut response = (StatusCode::CREATED, Json(answer)).into_response();
    response
        .headers_mut()
        .insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

/// The client a registration request describes, or its RFC 7591 error.
fn read_request(body: &[u8]) -> Result<RegisteredClient, (&'static str, String)> {
    let invalid = |why: &str| ("invalid_client_metadata", why.to_owned());
    if body.len() > MAX_REQUEST_BYTES {
        return Err(invalid("the registration request is too large"));
    }
    let request: Value =
        serde_json::from_slice(body).map_err(|_| invalid("the body is not a JSON object"))?;
    let request = request
        .as_object()
        .ok_or_else(|| invalid("the body is not a JSON object"))?;
    let redirect_uris: Vec<String> = request
        .get("redirect_uris")
        .and_then(Value::as_array)
        .map(|uris| uris.iter().map(|u| u.as_str().map(str::to_owned)).collect())
        .unwrap_or(None)
        .ok_or_else(|| {
            (
                "invalid_redirect_uri",
                "redirect_uris must be a list of URLs".to_owned(),
            )
        })?;
    if redirect_uris.is_empty() || redirect_uris.len() > redirect_uri::MAX_REDIRECT_URIS {
        return Err((
            "invalid_redirect_uri",
            format!(
                "give 1 to {} redirect_uris",
                redirect_uri::MAX_REDIRECT_URIS
            ),
        ));
    }
    if let Some(why) = redirect_uris.iter().find_map(|u| redirect_uri::refusal(u)) {
        return Err(("invalid_redirect_uri", why));
    }
    let listed = |field: &str, allowed: &[&str]| -> Result<(), (&'static str, String)> {
        match request.get(field) {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Array(values))
                if values
                    .iter()
                    .all(|v| v.as_str().is_some_and(|v| allowed.contains(&v))) =>
            {
                Ok(())
            }
            Some(_) => Err(invalid(&format!(
                "{field} may hold only {}",
                allowed.join(" and ")
            ))),
        }
    };
    listed("grant_types", &["authorization_code", "refresh_token"])?;
    listed("response_types", &["code"])?;
    let client_name = match request.get("client_name") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => Some(name.chars().take(MAX_CLIENT_NAME_CHARS).collect()),
        Some(_) => return Err(invalid("client_name must be a string")),
    };
    let client_id = crate::auth::data_file::random_secret(16)
        .map(|secret| format!("pkbc_{secret}"))
        .map_err(|_| ("server_error", "no randomness".to_owned()))?;
    Ok(RegisteredClient {
        client_id,
        client_name,
        redirect_uris,
        registered_at: crate::timestamp::now_rfc3339(),
    })
}

fn refusal(error: &str, description: &str) -> Response {
    let mut response = (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": error, "error_description": description})),
    )
        .into_response();
    response
        .headers_mut()
        .insert(CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

fn server_error() -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_has_its_share_and_an_ipv6_host_is_its_64() {
        let limits = RegistrationLimits::default();
        let one: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..MAX_REGISTRATIONS_PER_SOURCE {
            assert!(limits.admit(one).is_ok());
        }
        let wait = limits.admit(one).unwrap_err();
        assert!(wait > Duration::ZERO && wait <= REGISTRATION_WINDOW);
        assert!(limits.admit("192.0.2.2".parse().unwrap()).is_ok());
        assert!(
            limits.admit("::ffff:192.0.2.1".parse().unwrap()).is_err(),
            "the same address, mapped"
        );
        for n in 0..MAX_REGISTRATIONS_PER_SOURCE {
            assert!(
                limits
                    .admit(format!("2001:db8::{n:x}").parse().unwrap())
                    .is_ok()
            );
        }
        assert!(
            limits.admit("2001:db8::ffff".parse().unwrap()).is_err(),
            "one /64"
        );
        assert!(limits.admit("2001:db8:0:1::1".parse().unwrap()).is_ok());
    }
}
