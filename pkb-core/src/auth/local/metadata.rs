//! What the authorization server says of itself: RFC 8414 metadata at
//! `/.well-known/oauth-authorization-server`, and the key set its tokens are signed with.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::json;

use super::{LocalAuthority, paths};

/// RFC 8414 metadata, the issuer being the public URL.
pub async fn authorization_server(State(authority): State<Arc<LocalAuthority>>) -> Response {
    let Some(bound) = authority.bound() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let issuer = &bound.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{}", paths::AUTHORIZE),
        "token_endpoint": format!("{issuer}{}", paths::TOKEN),
        "registration_endpoint": format!("{issuer}{}", paths::REGISTER),
        "revocation_endpoint": format!("{issuer}{}", paths::REVOKE),
        "jwks_uri": format!("{issuer}{}", paths::JWKS),
        "scopes_supported": authority.scope_names().all(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    }))
    .into_response()
}

/// The public key set (JWKS).
pub async fn key_set(State(authority): State<Arc<LocalAuthority>>) -> Response {
    Json(authority.key.key_set()).into_response()
}
