//! The token endpoint (RFC 6749 section 3.2, for public clients) and revocation (RFC 7009).
//! A code becomes an access token and the first refresh token of a new grant; a refresh token
//! becomes the grant's next pair. Every refusal is RFC 6749's JSON error with
//! `Cache-Control: no-store`, and issues nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::{CACHE_CONTROL, PRAGMA};
use http::{HeaderValue, StatusCode};
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::accounts::AccountError;
use super::authorize::{Redemption, names_resource};
use super::grants::{GrantFile, Issued, RefreshRefusal};
use super::{ACCESS_TOKEN_LIFETIME_SECS, LocalAuthority, parameters};
use crate::auth::data_file::random_secret;

/// An RFC 6749 error answer.
struct Refusal {
    error: &'static str,
    description: &'static str,
}

impl Refusal {
    fn new(error: &'static str, description: &'static str) -> Self {
        Self { error, description }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let status = if self.error == "invalid_client" {
            StatusCode::UNAUTHORIZED
        } else if self.error == "server_error" {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::BAD_REQUEST
        };
        no_store(
            (
                status,
                Json(json!({"error": self.error, "error_description": self.description})),
            )
                .into_response(),
        )
    }
}

fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// The claims of PKB's access tokens (RFC 9068), plus the grant they belong to.
#[derive(Serialize)]
struct AccessClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    client_id: &'a str,
    scope: &'a str,
    iat: u64,
    nbf: u64,
    exp: u64,
    jti: String,
    grant: &'a str,
}

/// `POST /oauth/token`.
pub async fn token(State(authority): State<Arc<LocalAuthority>>, body: Bytes) -> Response {
    match answer(&authority, &body).await {
        Ok(response) => response,
        Err(refusal) => refusal.into_response(),
    }
}

async fn answer(authority: &Arc<LocalAuthority>, body: &[u8]) -> Result<Response, Refusal> {
    let form = parameters(body)
        .map_err(|_| Refusal::new("invalid_request", "a parameter is given more than once"))?;
    let client_id = form.get("client_id").ok_or(Refusal::new(
        "invalid_client",
        "a public client sends its client_id",
    ))?;
    let bound = authority
        .bound()
        .ok_or(Refusal::new("server_error", "the server is not ready"))?;
    if let Some(resource) = form.get("resource")
        && !names_resource(&bound.resource, resource)
    {
        return Err(Refusal::new(
            "invalid_target",
            "the resource is not this server's",
        ));
    }
    let issued = match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => redeem_code(authority, &form, client_id).await?,
        Some("refresh_token") => refresh(authority, &form, client_id).await?,
        Some(_) => {
            return Err(Refusal::new(
                "unsupported_grant_type",
                "grant_type is authorization_code or refresh_token",
            ));
        }
        None => return Err(Refusal::new("invalid_request", "grant_type is missing")),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = AccessClaims {
        iss: &bound.issuer,
        sub: &issued.account,
        aud: &bound.resource,
        client_id,
        scope: &issued.scope,
        iat: now,
        nbf: now,
        exp: now + ACCESS_TOKEN_LIFETIME_SECS,
        jti: random_secret(16).map_err(|_| Refusal::new("server_error", "no randomness"))?,
        grant: &issued.grant,
    };
    let access_token = authority.key.sign(&claims).map_err(|error| {
        tracing::error!(%error, "cannot sign an access token");
        Refusal::new("server_error", "cannot sign the access token")
    })?;
    Ok(no_store(
        Json(json!({
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_LIFETIME_SECS,
            "refresh_token": issued.refresh_token,
            "scope": issued.scope,
        }))
        .into_response(),
    ))
}

/// The authorization_code grant.
async fn redeem_code(
    authority: &Arc<LocalAuthority>,
    form: &HashMap<String, String>,
    client_id: &str,
) -> Result<Issued, Refusal> {
    let code = form
        .get("code")
        .ok_or(Refusal::new("invalid_request", "code is missing"))?;
    let bad_code = Refusal::new("invalid_grant", "the code is invalid, expired or used");
    let issued = match authority.flows.redeem(code) {
        Redemption::Fresh(issued) => issued,
        Redemption::Unknown => return Err(bad_code),
        Redemption::Spent(grant) => {
            if let Some(grant) = grant {
                // RFC 6749 section 4.1.2: a code used twice ends what it gave.
                tracing::warn!(
                    client_id,
                    "a code was used twice; ending the grant it opened"
                );
                let file = authority.grant_file.clone();
                let _ = tokio::task::spawn_blocking(move || file.end(&grant)).await;
            }
            return Err(bad_code);
        }
    };
    if issued.client_id != client_id {
        return Err(bad_code);
    }
    let redirect_ok = match form.get("redirect_uri") {
        Some(uri) => *uri == issued.redirect_uri,
        None => !issued.redirect_uri_given,
    };
    if !redirect_ok {
        return Err(Refusal::new(
            "invalid_grant",
            "redirect_uri is not the one of the authorization request",
        ));
    }
    let verifier = form
        .get("code_verifier")
        .ok_or(Refusal::new("invalid_request", "code_verifier is missing"))?;
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if !well_formed || !bool::from(computed.as_bytes().ct_eq(issued.challenge.as_bytes())) {
        return Err(Refusal::new(
            "invalid_grant",
            "the code_verifier does not match the challenge",
        ));
    }
    let (account, name, scope) = (issued.account, issued.client_name, issued.scope);
    let (client, checker) = (client_id.to_owned(), Arc::clone(authority));
    let opened = on_grant_file(authority, move |file| {
        // Deleted or given a new password since it signed in: no grant may outlive the
        // password, nor wait for a new account of the same name.
        let signed_in = || checker.accounts.still_has(&account, &issued.password);
        file.open(&account, &client, &name, &scope, signed_in)
    })
    .await?
    .ok_or(Refusal::new(
        "invalid_grant",
        "the account no longer exists",
    ))?;
    if !authority.flows.opened(code, &opened.grant) {
        tracing::warn!(
            client_id,
            "a code was used twice at once; ending the grant it opened"
        );
        let grant = opened.grant.clone();
        on_grant_file(authority, move |file| file.end(&grant)).await?;
        return Err(bad_code);
    }
    Ok(opened)
}

/// Runs `change` on the grants file off the async threads (it waits for the file's lock and
/// syncs to disk); a failure is the client's `server_error`, logged here.
async fn on_grant_file<T: Send + 'static>(
    authority: &LocalAuthority,
    change: impl FnOnce(&GrantFile) -> Result<T, AccountError> + Send + 'static,
) -> Result<T, Refusal> {
    let file = authority.grant_file.clone();
    let kept = Refusal::new("server_error", "the grant could not be kept");
    match tokio::task::spawn_blocking(move || change(&file)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => {
            tracing::error!(%error, "cannot keep a grant");
            Err(kept)
        }
        Err(_) => Err(kept),
    }
}

/// The refresh_token grant: single use, rotated, a second use ending the grant.
async fn refresh(
    authority: &Arc<LocalAuthority>,
    form: &HashMap<String, String>,
    client_id: &str,
) -> Result<Issued, Refusal> {
    let token = form
        .get("refresh_token")
        .ok_or(Refusal::new("invalid_request", "refresh_token is missing"))?
        .clone();
    let client = client_id.to_owned();
    let rotated = on_grant_file(authority, move |file| file.rotate(&token, &client)).await?;
    let issued = match rotated {
        Ok(issued) => issued,
        Err(RefreshRefusal::Invalid) => {
            return Err(Refusal::new(
                "invalid_grant",
                "the refresh token is invalid or expired",
            ));
        }
        Err(RefreshRefusal::Reused) => {
            return Err(Refusal::new(
                "invalid_grant",
                "the refresh token was used before; every token of its grant is revoked",
            ));
        }
    };
    if !authority.accounts.exists(&issued.account) {
        return Err(Refusal::new(
            "invalid_grant",
            "the refresh token is invalid or expired",
        ));
    }
    // A `scope` asked for is not read: the new tokens carry the grant's scope, which a
    // refresh never widens (RFC 6749 section 3.3 lets the server issue other than asked, and
    // the answer names the scope). Refusing here would come after the rotation had spent the
    // token, and its client, retrying with it, would lose the whole grant.
    Ok(issued)
}

/// `POST /oauth/revoke` (RFC 7009): ends the grant of a refresh token or of one of PKB's
/// access tokens. Answers 200 whatever the token was, as the RFC says.
pub async fn revoke(State(authority): State<Arc<LocalAuthority>>, body: Bytes) -> Response {
    let Ok(form) = parameters(&body) else {
        return Refusal::new("invalid_request", "a parameter is given more than once")
            .into_response();
    };
    let Some(token) = form.get("token").cloned() else {
        return Refusal::new("invalid_request", "token is missing").into_response();
    };
    let file = authority.grant_file.clone();
    if token.starts_with("pkbr.") {
        let _ = tokio::task::spawn_blocking(move || file.end_by_refresh_token(&token)).await;
    } else if let Some(bound) = authority.bound()
        && let Some(verified) = bound.verifier.verify_claims(&token).await
        && let Some(grant) = verified.grant
    {
        let _ = tokio::task::spawn_blocking(move || file.end(&grant)).await;
    }
    no_store(StatusCode::OK.into_response())
}
