//! The authorization endpoint and the person's two steps: sign in, then approve. The request
//! is checked before anything is shown: a client or redirect URI that cannot be trusted is
//! shown on PKB's own error page (never redirected to); any other fault goes back to the
//! client's redirect URI as RFC 6749 says. PKCE with S256 is required.
//!
//! Until someone signs in, a request costs the server no memory: the sign-in form carries it
//! as a [`Ticket`] signed with a key of this process, bound to a secret in a cookie of the
//! browser that opened it, so that a flood of authorization links fills nothing that a
//! person's sign-in would then find full. Once signed in, it waits in memory for the
//! approval under an id that the consent form carries with a CSRF token of its own: a form
//! posted from another page, or another browser, is refused. The code an approval gives is
//! single use, lives [`CODE_LIFETIME`], and is bound to the client, the redirect URI and the
//! challenge.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::{LOCATION, SET_COOKIE};
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use ring::hmac;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::accounts::PasswordStamp;
use super::pages::{self, ConsentView};
use super::registration::MAX_CLIENT_NAME_CHARS;
use super::{LocalAuthority, SignIn, client_metadata, parameters, redirect_uri};
use crate::auth::data_file::{hex_sha256, random_secret, valid_user_name};
use crate::locks::lock;

/// How long a code may wait to be redeemed.
pub const CODE_LIFETIME: Duration = Duration::from_secs(60);

/// How long a person has to sign in and approve.
pub const REQUEST_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The most signed-in requests waiting for an approval at once.
const MAX_WAITING: usize = 10_000;

/// The most signed-in requests one account may have waiting: past it, its oldest gives way.
pub const MAX_WAITING_PER_ACCOUNT: usize = 16;

/// The largest sealed [`Ticket`]: the sign-in form must post it back under the body limit.
const MAX_TICKET_BYTES: usize = 16 * 1024;

/// How long a redeemed code is remembered, so that its second use ends what it gave.
const REDEEMED_REMEMBERED: Duration = Duration::from_secs(10 * 60);

const BROWSER_COOKIE: &str = "pkb_oauth_browser";

/// The client of a request, as checked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckedClient {
    /// Its id.
    pub client_id: String,
    /// Its name as the pages show it.
    pub client_name: String,
    /// The redirect URI the request uses.
    pub redirect_uri: String,
    /// Whether the request named it (the token request must then name it too).
    pub redirect_uri_given: bool,
    /// Whether it is described by a metadata document at its `client_id` URL; if not, it
    /// registered itself, and its name and redirect URIs are only its own word.
    pub document: bool,
}

impl CheckedClient {
    /// How the pages name it.
    fn shown(&self) -> pages::ClientName<'_> {
        pages::ClientName {
            name: &self.client_name,
            claimed: !self.document,
        }
    }
}

/// A checked authorization request on its way to a sign-in, carried by the sign-in form.
#[derive(Serialize, Deserialize)]
struct Ticket {
    client: CheckedClient,
    state: Option<String>,
    challenge: String,
    scope: String,
    write: bool,
    /// The sign-in form's CSRF token.
    csrf: String,
    /// SHA-256 of the browser cookie of the browser that opened the request.
    browser: String,
    /// Seconds since the epoch.
    expires: u64,
}

impl Ticket {
    /// The ticket as the form carries it: its JSON and its HMAC-SHA256 under `key`, base64url.
    fn seal(&self, key: &hmac::Key) -> Option<String> {
        let json = serde_json::to_vec(self).ok()?;
        let tag = hmac::sign(key, &json);
        let sealed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&json),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        );
        (sealed.len() <= MAX_TICKET_BYTES).then_some(sealed)
    }

    /// The ticket `sealed` carries, when `key` made it and it has not expired.
    fn open(sealed: &str, key: &hmac::Key) -> Option<Self> {
        let (json, tag) = sealed.split_once('.')?;
        let json = URL_SAFE_NO_PAD.decode(json).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        hmac::verify(key, &json, &tag).ok()?;
        let ticket: Self = serde_json::from_slice(&json).ok()?;
        (ticket.expires > unix_now()).then_some(ticket)
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A signed-in request waiting for the person's approval.
struct Waiting {
    client: CheckedClient,
    state: Option<String>,
    challenge: String,
    scope: String,
    csrf: String,
    /// SHA-256 of the browser cookie.
    browser: String,
    /// The account signed in, and the password it signed in with.
    account: String,
    password: PasswordStamp,
    expires: Instant,
}

/// A code an approval gave.
pub struct IssuedCode {
    /// The client it was issued to.
    pub client_id: String,
    /// That client's name, kept with the grant.
    pub client_name: String,
    /// Where it was sent.
    pub redirect_uri: String,
    /// Whether the authorization request named `redirect_uri`.
    pub redirect_uri_given: bool,
    /// The PKCE challenge (S256).
    pub challenge: String,
    /// The account that approved.
    pub account: String,
    /// The password it signed in with: the code is good only while the account keeps it.
    pub password: PasswordStamp,
    /// The scope approved, space-separated.
    pub scope: String,
    expires: Instant,
    spending: Spending,
}

/// How far a code has been spent.
#[derive(Clone)]
enum Spending {
    Unspent,
    /// Taken for redemption, its grant not yet opened; `again` once it was presented again
    /// meanwhile, so that the grant it is about to open is ended as soon as it is.
    Redeeming {
        again: bool,
    },
    /// Redeemed: the grant it opened, if any.
    Redeemed(Option<String>),
}

/// What became of a code presented at the token endpoint.
pub enum Redemption {
    /// Good to redeem: it is now spent.
    Fresh(IssuedCode),
    /// Spent already: the grant it opened, to be ended.
    Spent(Option<String>),
    /// Unknown or expired.
    Unknown,
}

/// The requests waiting and the codes issued, of this process.
pub struct Flows {
    /// Signs the tickets of this process's sign-in forms.
    tickets: hmac::Key,
    waiting: Mutex<HashMap<String, Waiting>>,
    codes: Mutex<HashMap<String, IssuedCode>>,
}

impl Flows {
    /// No request and no code yet, and a new key for the tickets.
    pub fn new() -> Result<Self, String> {
        let tickets = hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
            .map_err(|_| "cannot make the sign-in forms' key: no randomness".to_owned())?;
        Ok(Self {
            tickets,
            waiting: Mutex::default(),
            codes: Mutex::default(),
        })
    }

    /// Takes the code `code` for redemption, spending it whatever follows.
    pub fn redeem(&self, code: &str) -> Redemption {
        let now = Instant::now();
        let mut codes = lock(&self.codes);
        codes.retain(|_, c| now < c.expires + REDEEMED_REMEMBERED);
        let Some(issued) = codes.get_mut(&hex_sha256(code)) else {
            return Redemption::Unknown;
        };
        match &mut issued.spending {
            Spending::Unspent => issued.spending = Spending::Redeeming { again: false },
            Spending::Redeeming { again } => {
                *again = true;
                return Redemption::Spent(None);
            }
            Spending::Redeemed(grant) => return Redemption::Spent(grant.clone()),
        }
        if now >= issued.expires {
            return Redemption::Unknown;
        }
        Redemption::Fresh(IssuedCode {
            client_id: issued.client_id.clone(),
            client_name: issued.client_name.clone(),
            redirect_uri: issued.redirect_uri.clone(),
            redirect_uri_given: issued.redirect_uri_given,
            challenge: issued.challenge.clone(),
            account: issued.account.clone(),
            password: issued.password.clone(),
            scope: issued.scope.clone(),
            expires: issued.expires,
            spending: Spending::Unspent,
        })
    }

    /// Records the grant that redeeming `code` opened; whether it may stand. It may not when
    /// the code was presented again while the grant was being opened: two uses at the same
    /// moment end what the code gave, as two uses one after the other do (RFC 6749 section
    /// 4.1.2).
    #[must_use = "a grant that may not stand must be ended"]
    pub fn opened(&self, code: &str, grant: &str) -> bool {
        let mut codes = lock(&self.codes);
        let Some(issued) = codes.get_mut(&hex_sha256(code)) else {
            return false;
        };
        let again = matches!(issued.spending, Spending::Redeeming { again: true });
        issued.spending = Spending::Redeemed(Some(grant.to_owned()));
        !again
    }
}

/// `GET /oauth/authorize`.
pub async fn start(
    State(authority): State<Arc<LocalAuthority>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let query = uri.query().unwrap_or_default();
    let parameters = match parameters(query.as_bytes()) {
        Ok(parameters) => parameters,
        Err(why) => return pages::error_page(StatusCode::BAD_REQUEST, &why),
    };
    let client = match check_client(&authority, &parameters).await {
        Ok(client) => client,
        Err(why) => return pages::error_page(StatusCode::BAD_REQUEST, &why),
    };
    let state = parameters.get("state").cloned();
    // Anyone may register a client with any redirect URI: sending errors there would make
    // PKB an open redirector (RFC 9700 section 4.11.2), a link on PKB's host that lands on
    // the attacker's. Only a client whose redirect URIs its own host published, or one a
    // person has approved, hears of its errors at its redirect URI.
    let trusted = client.document || authority.grants.approved(&client.client_id);
    let back = |error: &str, description: &str| {
        if !trusted {
            return pages::error_page(
                StatusCode::BAD_REQUEST,
                &format!("The application's request cannot be taken ({error}): {description}."),
            );
        }
        redirect(
            &authority,
            &client.redirect_uri,
            &[("error", error), ("error_description", description)],
            state.as_deref(),
        )
    };
    if parameters.get("response_type").map(String::as_str) != Some("code") {
        return back(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    let Some(challenge) = parameters.get("code_challenge") else {
        return back(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        );
    };
    if parameters.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return back("invalid_request", "code_challenge_method must be S256");
    }
    if challenge.len() != 43 || !challenge.bytes().all(pages::is_base64url) {
        return back(
            "invalid_request",
            "code_challenge is not a base64url SHA-256",
        );
    }
    if let Some(resource) = parameters.get("resource")
        && !authority
            .bound()
            .is_some_and(|b| names_resource(&b.resource, resource))
    {
        return back("invalid_target", "the resource is not this server's");
    }
    let scopes = authority.scope_names();
    let (scope, write) = match parameters
        .get("scope")
        .map(|s| s.split_whitespace().collect::<Vec<_>>())
    {
        None => (scopes.names_of(crate::Scopes::ALL), true),
        Some(names) if names.is_empty() => (scopes.names_of(crate::Scopes::ALL), true),
        Some(names) if names.iter().all(|n| scopes.all().contains(n)) => {
            let granted = scopes.scopes_of(names);
            (
                scopes.names_of(granted),
                granted.allows(crate::Access::Write),
            )
        }
        Some(_) => return back("invalid_scope", "unknown scope"),
    };
    let browser = pages::secret_cookie(&headers, BROWSER_COOKIE).map(str::to_owned);
    let (Ok(csrf), Ok(new_browser)) = (random_secret(32), random_secret(32)) else {
        return pages::error_page(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let set_cookie = browser.is_none();
    let browser = browser.unwrap_or(new_browser);
    let ticket = Ticket {
        client,
        state,
        challenge: challenge.clone(),
        scope,
        write,
        csrf,
        browser: hex_sha256(&browser),
        expires: unix_now() + REQUEST_LIFETIME.as_secs(),
    };
    let Some(sealed) = ticket.seal(&authority.flows.tickets) else {
        return pages::error_page(
            StatusCode::BAD_REQUEST,
            "The application's request is too long.",
        );
    };
    let mut response = pages::sign_in(ticket.client.shown(), &sealed, &ticket.csrf, "", None);
    if set_cookie {
        let secure = authority
            .bound()
            .is_some_and(|b| b.issuer.starts_with("https://"));
        let value = format!(
            "{BROWSER_COOKIE}={browser}; Path=/oauth; HttpOnly; SameSite=Lax{}",
            if secure { "; Secure" } else { "" }
        );
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(SET_COOKIE, value);
        }
    }
    response
}

/// `POST /oauth/sign-in`.
pub async fn sign_in(
    State(authority): State<Arc<LocalAuthority>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match parameters(&body) {
        Ok(form) => form,
        Err(why) => return pages::error_page(StatusCode::BAD_REQUEST, &why),
    };
    let Some((id, ticket)) = ticket_of(&authority, &form, &headers) else {
        return refused();
    };
    let csrf = ticket.csrf.clone();
    let client_name = ticket.client.shown();
    let account = form
        .get("account")
        .map(|a| a.trim().to_owned())
        .unwrap_or_default();
    let password = form.get("password").cloned().unwrap_or_default();
    let stamp = match authority.check_sign_in(&account, password).await {
        SignIn::Accepted(stamp) => stamp,
        // No account has such a name; nor is it worth remembering, or showing back.
        SignIn::Wrong if !valid_user_name(&account) => {
            return pages::sign_in(client_name, &id, &csrf, "", Some(WRONG));
        }
        SignIn::Wrong => return pages::sign_in(client_name, &id, &csrf, &account, Some(WRONG)),
        SignIn::Locked => return pages::sign_in(client_name, &id, &csrf, &account, Some(LOCKED)),
        SignIn::Busy => return pages::error_page(StatusCode::SERVICE_UNAVAILABLE, BUSY),
    };
    let (Ok(waiting_id), Ok(next_csrf)) = (random_secret(32), random_secret(32)) else {
        return pages::error_page(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    let view = ConsentView {
        client: ticket.client.shown(),
        client_id: &ticket.client.client_id,
        redirect_uri: &ticket.client.redirect_uri,
        write: ticket.write,
        account: &account,
    };
    let page = pages::consent(&view, &waiting_id, &next_csrf);
    let now = Instant::now();
    let mut waiting = lock(&authority.flows.waiting);
    waiting.retain(|_, w| w.expires > now);
    // Only a correct password gets here, so a flood can only be an account's own: it pushes
    // out that account's oldest requests, and nobody else's.
    let mine: Vec<(Instant, String)> = waiting
        .iter()
        .filter(|(_, w)| w.account == account)
        .map(|(id, w)| (w.expires, id.clone()))
        .collect();
    if mine.len() >= MAX_WAITING_PER_ACCOUNT
        && let Some((_, oldest)) = mine.iter().min()
    {
        waiting.remove(oldest);
    }
    if waiting.len() >= MAX_WAITING {
        return pages::error_page(StatusCode::SERVICE_UNAVAILABLE, BUSY);
    }
    waiting.insert(
        waiting_id,
        Waiting {
            client: ticket.client,
            state: ticket.state,
            challenge: ticket.challenge,
            scope: ticket.scope,
            csrf: next_csrf,
            browser: ticket.browser,
            account,
            password: stamp,
            expires: now + REQUEST_LIFETIME,
        },
    );
    page
}

const WRONG: &str = "The account name or the password is wrong.";
const LOCKED: &str = "Too many failed sign-ins for this account: try again in 15 minutes.";
const BUSY: &str = "Too many sign-ins at once: try again in a moment.";

/// `POST /oauth/consent`.
pub async fn consent(
    State(authority): State<Arc<LocalAuthority>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = match parameters(&body) {
        Ok(form) => form,
        Err(why) => return pages::error_page(StatusCode::BAD_REQUEST, &why),
    };
    let Some(request) = waiting_of(&authority, &form, &headers) else {
        return refused();
    };
    let (account, password) = (request.account, request.password);
    let state = request.state.as_deref();
    if form.get("decision").map(String::as_str) != Some("allow") {
        return redirect(
            &authority,
            &request.client.redirect_uri,
            &[
                ("error", "access_denied"),
                ("error_description", "the person did not allow access"),
            ],
            state,
        );
    }
    let Ok(code) = random_secret(32) else {
        return pages::error_page(StatusCode::INTERNAL_SERVER_ERROR, "no randomness");
    };
    lock(&authority.flows.codes).insert(
        hex_sha256(&code),
        IssuedCode {
            client_id: request.client.client_id.clone(),
            client_name: request.client.client_name.clone(),
            redirect_uri: request.client.redirect_uri.clone(),
            redirect_uri_given: request.client.redirect_uri_given,
            challenge: request.challenge,
            account,
            password,
            scope: request.scope,
            expires: Instant::now() + CODE_LIFETIME,
            spending: Spending::Unspent,
        },
    );
    redirect(
        &authority,
        &request.client.redirect_uri,
        &[("code", &code)],
        state,
    )
}

/// The refusal of a form that is not the one PKB showed this browser.
fn refused() -> Response {
    pages::error_page(
        StatusCode::FORBIDDEN,
        "This form cannot be taken: it is not the one PKB showed this browser, or it has expired. Start again from the application.",
    )
}

/// The ticket a sign-in `form` carries (and the form's `request` field), when this process
/// signed it, it has not expired, and its CSRF token and browser cookie match.
fn ticket_of(
    authority: &LocalAuthority,
    form: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Option<(String, Ticket)> {
    let sealed = form.get("request")?;
    let csrf = form.get("csrf")?;
    let browser = hex_sha256(pages::secret_cookie(headers, BROWSER_COOKIE)?);
    let ticket = Ticket::open(sealed, &authority.flows.tickets)?;
    let fits = bool::from(ticket.csrf.as_bytes().ct_eq(csrf.as_bytes()))
        && bool::from(ticket.browser.as_bytes().ct_eq(browser.as_bytes()));
    fits.then(|| (sealed.clone(), ticket))
}

/// The signed-in request a consent `form` continues, taken out of the waiting ones, when its
/// id, CSRF token and browser cookie match and it has not expired.
fn waiting_of(
    authority: &LocalAuthority,
    form: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Option<Waiting> {
    let id = form.get("request")?;
    let csrf = form.get("csrf")?;
    let browser = hex_sha256(pages::secret_cookie(headers, BROWSER_COOKIE)?);
    let mut waiting = lock(&authority.flows.waiting);
    let request = waiting.get(id.as_str())?;
    let fits = bool::from(request.csrf.as_bytes().ct_eq(csrf.as_bytes()))
        && bool::from(request.browser.as_bytes().ct_eq(browser.as_bytes()))
        && request.expires > Instant::now();
    // Taken only when it fits: a forged post must not end the person's request.
    fits.then(|| waiting.remove(id.as_str()))?
}

/// The client and redirect URI of a request, checked; why not, for PKB's error page.
async fn check_client(
    authority: &LocalAuthority,
    parameters: &HashMap<String, String>,
) -> Result<CheckedClient, String> {
    let client_id = parameters
        .get("client_id")
        .ok_or("The application sent no client_id.")?;
    let document = client_metadata::is_document_url(client_id);
    let (client_name, redirect_uris) = if document {
        let document =
            client_metadata::fetch(client_id, authority.settings.allow_local_clients).await?;
        let host = url::Url::parse(client_id)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        let name = match document.client_name {
            Some(name) if shows_as_written(&name) => {
                let name: String = name.trim().chars().take(MAX_CLIENT_NAME_CHARS).collect();
                format!("{name} ({host})")
            }
            _ => host,
        };
        (name, document.redirect_uris)
    } else {
        let client = authority
            .grants
            .client(client_id)
            .ok_or("The application is not registered with this server.")?;
        let name = client
            .client_name
            .filter(|n| shows_as_written(n))
            .map_or_else(
                || "An unnamed application".to_owned(),
                |n| n.trim().to_owned(),
            );
        (name, client.redirect_uris)
    };
    let (redirect_uri, given) = match parameters.get("redirect_uri") {
        Some(uri) if redirect_uri::matches(&redirect_uris, uri) => (uri.clone(), true),
        Some(_) => return Err("The application asked to send you to an address it did not register; PKB does not send you there.".into()),
        None if redirect_uris.len() == 1 => (redirect_uris[0].clone(), false),
        None => return Err("The application sent no redirect_uri.".into()),
    };
    Ok(CheckedClient {
        client_id: client_id.clone(),
        client_name,
        redirect_uri,
        redirect_uri_given: given,
        document,
    })
}

/// Whether a client's name, as a page or the terminal shows it, reads as it is written: one
/// visible line, with no control characters and no bidirectional overrides (which would let
/// a name reorder what follows it, the host beside it included).
fn shows_as_written(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty() && crate::text::single_line_problem(name).is_none()
}

/// Whether `named`, a `resource` parameter, names the server's `resource`.
pub fn names_resource(resource: &str, named: &str) -> bool {
    named == resource || named.strip_suffix('/') == Some(resource)
}

/// A 303 to the client's `redirect_uri` with `pairs`, the `state` as sent and the issuer
/// (RFC 9207).
fn redirect(
    authority: &LocalAuthority,
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    state: Option<&str>,
) -> Response {
    let Ok(mut url) = url::Url::parse(redirect_uri) else {
        return pages::error_page(StatusCode::BAD_REQUEST, "The redirect URI is not a URL.");
    };
    {
        let mut query = url.query_pairs_mut();
        for (name, value) in pairs {
            query.append_pair(name, value);
        }
        if let Some(state) = state {
            query.append_pair("state", state);
        }
        if let Some(bound) = authority.bound() {
            query.append_pair("iss", &bound.issuer);
        }
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(url.as_str()) {
        response.headers_mut().insert(LOCATION, location);
    }
    pages::add_security_headers(response.headers_mut());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(flows: &Flows, code: &str) {
        lock(&flows.codes).insert(
            hex_sha256(code),
            IssuedCode {
                client_id: "client".into(),
                client_name: "Client".into(),
                redirect_uri: "http://127.0.0.1/cb".into(),
                redirect_uri_given: true,
                challenge: String::new(),
                account: "alice".into(),
                password: PasswordStamp(String::new()),
                scope: "notes:read".into(),
                expires: Instant::now() + CODE_LIFETIME,
                spending: Spending::Unspent,
            },
        );
    }

    #[test]
    fn a_code_presented_again_while_its_grant_opens_ends_that_grant() {
        let flows = Flows::new().unwrap();
        issue(&flows, "raced");
        assert!(matches!(flows.redeem("raced"), Redemption::Fresh(_)));
        assert!(
            matches!(flows.redeem("raced"), Redemption::Spent(None)),
            "the second use, before the first has opened its grant"
        );
        assert!(!flows.opened("raced", "g1"), "the grant may not stand");
        assert!(matches!(flows.redeem("raced"), Redemption::Spent(Some(g)) if g == "g1"));

        issue(&flows, "once");
        assert!(matches!(flows.redeem("once"), Redemption::Fresh(_)));
        assert!(flows.opened("once", "g2"), "used once: it stands");
        assert!(matches!(flows.redeem("once"), Redemption::Spent(Some(g)) if g == "g2"));
    }

    #[test]
    fn a_client_name_that_would_not_read_as_written_is_not_shown() {
        assert!(shows_as_written("Claude"));
        assert!(shows_as_written("Notes (مرحبا)"));
        for name in [
            "Evil\u{202e}moc.elgoog",
            "two\nlines",
            "tab\there",
            "\u{200b}",
            "   ",
        ] {
            assert!(!shows_as_written(name), "{name:?}");
        }
    }
}
