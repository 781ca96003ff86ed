//! Signing in and out under `--auth local`, with the account and password of `pkb-server
//! account create`, checked as the OAuth sign-in page checks them (lockouts included). The
//! answer never says whether an account exists.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::Response;
use http::header::SET_COOKIE;
use http::{HeaderMap, StatusCode};
use maud::html;

use super::layout::{self, Section};
use super::session::see_other;
use super::{People, Web, parameters, paths};
use crate::auth::local::SignIn;

const WRONG: &str = "The account name or the password is wrong.";
const LOCKED: &str = "Too many failed sign-ins for this account: try again in 15 minutes.";
const BUSY: &str = "Too many sign-ins at once: try again in a moment.";

/// `GET /sign-in`.
pub async fn page(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    if matches!(web.people, People::One) || web.viewer(&headers).is_ok() {
        return see_other(paths::CHANGES);
    }
    form(&web, &headers, StatusCode::OK, "", None)
}

/// The sign-in form, with the CSRF token of the browser's cookie (set now if it had none).
fn form(
    web: &Web,
    headers: &HeaderMap,
    status: StatusCode,
    account: &str,
    problem: Option<&str>,
) -> Response {
    let (cookie, set_cookie) = match web.sessions.cookie_of(headers) {
        Some(cookie) => (cookie.to_owned(), None),
        None => match web.sessions.new_cookie(headers) {
            Some((cookie, header)) => (cookie, Some(header)),
            None => {
                return layout::refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
            }
        },
    };
    let main = html! {
        div.sign-in {
            h1 { "Sign in to PKB" }
            p { "Sign in with your PKB account to see what changed in your notes." }
            @if let Some(problem) = problem {
                p.error role="alert" { (problem) }
            }
            form method="post" action=(paths::SIGN_IN) {
                input type="hidden" name="csrf" value=(web.sessions.csrf_for(&cookie));
                label for="account" { "Account" }
                input #account type="text" name="account" value=(account) autocomplete="username" autocapitalize="none" required autofocus;
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
            }
        }
    };
    let mut response = layout::page(None, status, Section::SignIn, "Sign in", main);
    if let Some(header) = set_cookie {
        response.headers_mut().insert(SET_COOKIE, header);
    }
    response
}

/// `POST /sign-in`: on success a new cookie, signed in, and the Changes page.
pub async fn sign_in(State(web): State<Arc<Web>>, headers: HeaderMap, body: Bytes) -> Response {
    let People::Accounts(authority) = &web.people else {
        return see_other(paths::CHANGES);
    };
    let form_fields = parameters(&body);
    let Some(cookie) = web.sessions.cookie_of(&headers) else {
        return form(&web, &headers, StatusCode::FORBIDDEN, "", Some(STALE));
    };
    let fits = form_fields
        .get("csrf")
        .is_some_and(|token| web.sessions.csrf_fits(cookie, token));
    if !fits {
        return form(&web, &headers, StatusCode::FORBIDDEN, "", Some(STALE));
    }
    let account = form_fields
        .get("account")
        .map(|a| a.trim().to_owned())
        .unwrap_or_default();
    let password = form_fields.get("password").cloned().unwrap_or_default();
    let stamp = match authority.check_sign_in(&account, password).await {
        SignIn::Accepted(stamp) => stamp,
        SignIn::Wrong => {
            return form(
                &web,
                &headers,
                StatusCode::UNAUTHORIZED,
                &account,
                Some(WRONG),
            );
        }
        SignIn::Locked => {
            return form(
                &web,
                &headers,
                StatusCode::UNAUTHORIZED,
                &account,
                Some(LOCKED),
            );
        }
        SignIn::Busy => return layout::refused(StatusCode::SERVICE_UNAVAILABLE, BUSY),
    };
    // A cookie of before the sign-in (perhaps planted) is worth nothing after it.
    web.sessions.end(cookie);
    let Some((_, header)) = web.sessions.begin(&headers, &account, stamp) else {
        return layout::refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let mut response = see_other(paths::CHANGES);
    response.headers_mut().insert(SET_COOKIE, header);
    response
}

const STALE: &str = "This form is out of date: sign in again.";

/// `POST /sign-out`, with the page's CSRF token.
pub async fn sign_out(State(web): State<Arc<Web>>, headers: HeaderMap, body: Bytes) -> Response {
    let form = parameters(&body);
    if let Err(response) = web.sessions.changer(&web.people, &headers, &form) {
        return response;
    }
    if let Some(cookie) = web.sessions.cookie_of(&headers) {
        web.sessions.end(cookie);
    }
    let mut response = see_other(paths::SIGN_IN);
    if let Some(header) = web.sessions.cleared_cookie(&headers) {
        response.headers_mut().insert(SET_COOKIE, header);
    }
    response
}
