//! RFC 7591 dynamic registration: any client may register itself as a public client (no
//! secret; PKCE protects its codes) with the redirect URIs it will use. A registration grants
//! nothing: a person still signs in and approves on PKB's pages.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::CACHE_CONTROL;
use serde_json::{Value, json};

use super::grants::RegisteredClient;
use super::{LocalAuthority, redirect_uri};

/// The longest client name kept.
pub const MAX_CLIENT_NAME_CHARS: usize = 100;

/// The largest registration request read.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// `POST /oauth/register`.
pub async fn register(State(authority): State<Arc<LocalAuthority>>, body: Bytes) -> Response {
    let client = match read_request(&body) {
        Ok(client) => client,
        Err((error, description)) => return refusal(error, &description),
    };
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
