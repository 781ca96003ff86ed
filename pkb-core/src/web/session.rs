//! Who is looking: one cookie per browser, and what it stands for.
//!
//! The cookie holds 256 random bits, HttpOnly, SameSite=Strict, `__Host-`-prefixed and Secure
//! over https. Every form carries a CSRF token, the HMAC of the cookie under a key of this
//! process: a page of another site (or of another loopback port, which is the same site) can
//! neither read it nor make it, and another browser's cookie does not fit it. Under `--auth
//! local` the cookie of a signed-in person maps to their account here, in memory, as long as
//! the account keeps the password they signed in with; the cookie is made anew at sign-in,
//! so that one planted before it is worth nothing.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::{HOST, LOCATION};
use http::{HeaderMap, HeaderValue, StatusCode};
use ring::hmac;

use super::People;
use super::paths;
use crate::auth::data_file::{hex_sha256, random_secret};
use crate::auth::local::{PasswordStamp, secret_cookie};
use crate::identity::User;
use crate::locks::lock;
use crate::{Access, Scopes};

/// How long a sign-in lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// The most signed-in sessions kept: past it, the oldest gives way. Only a correct password
/// makes one, and password checks are slow and limited, so a flood cannot reach it quickly.
const MAX_SESSIONS: usize = 10_000;

/// The most signed-in sessions of one account: past it, that account's oldest gives way.
/// Sign-ins that succeed are not limited, so without it one account signing in again and
/// again would push every other person's session out of [`MAX_SESSIONS`].
const MAX_SESSIONS_PER_ACCOUNT: usize = 32;

/// The person a request is from, and what they may do.
pub struct Viewer {
    /// Whose notes they see.
    pub user: User,
    /// Their account, under `--auth local`.
    pub account: Option<String>,
    /// What they may do.
    pub scopes: Scopes,
    /// The CSRF token their forms carry.
    pub csrf: String,
    /// A cookie to set with the answer: the browser had none yet.
    pub set_cookie: Option<HeaderValue>,
}

impl Viewer {
    /// Who a change made from the page is recorded as made by: `web page`, and the account
    /// under `--auth local`.
    pub fn changes_by(&self) -> String {
        match &self.account {
            Some(account) => format!("web page ({account})"),
            None => "web page".to_owned(),
        }
    }

    /// Whether they may change notes.
    pub fn may_change(&self) -> bool {
        self.scopes.allows(Access::Write)
    }
}

struct SignedIn {
    account: String,
    stamp: PasswordStamp,
    expires: Instant,
}

/// The cookies handed out and the sessions signed in, of this process.
pub struct Sessions {
    /// Signs the CSRF tokens.
    key: hmac::Key,
    secure: bool,
    /// Signed-in sessions by the SHA-256 of their cookie.
    signed_in: Mutex<HashMap<String, SignedIn>>,
}

impl Sessions {
    /// No session yet, and a new key for the CSRF tokens.
    pub fn new(https: bool) -> Self {
        Self {
            // Without the system's randomness no key here could be secret: no page at all.
            key: hmac::Key::generate(hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
                .expect("the system gives no randomness for the web page's CSRF key"),
            secure: https,
            signed_in: Mutex::new(HashMap::new()),
        }
    }

    /// The cookie's name for a request: `pkb_web_PORT`, with the port the request was sent to
    /// (`__Host-pkb_web_PORT` over https). Cookies ignore ports, so that with one name two PKB
    /// pages on one host (`pkb-server web` and an `--http` server) would overwrite each
    /// other's cookie, signing the person out of one by visiting the other.
    fn cookie_name(&self, headers: &HeaderMap) -> String {
        let prefix = if self.secure {
            "__Host-pkb_web"
        } else {
            "pkb_web"
        };
        let port = headers
            .get(HOST)
            .and_then(|host| host.to_str().ok())
            .and_then(|host| host.rsplit_once(':'))
            .and_then(|(_, port)| port.parse::<u16>().ok());
        match port {
            Some(port) => format!("{prefix}_{port}"),
            None => prefix.to_owned(),
        }
    }

    /// The request's cookie, when it is one PKB could have made and the request carries it
    /// once.
    pub fn cookie_of<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        secret_cookie(headers, &self.cookie_name(headers))
    }

    /// A new cookie for the request's browser, and the header that sets it.
    pub fn new_cookie(&self, headers: &HeaderMap) -> Option<(String, HeaderValue)> {
        let value = random_secret(32).ok()?;
        let header = self.cookie_header(headers, &value, None)?;
        Some((value, header))
    }

    /// The header that ends the request's cookie.
    pub fn cleared_cookie(&self, headers: &HeaderMap) -> Option<HeaderValue> {
        self.cookie_header(headers, "", Some(0))
    }

    fn cookie_header(
        &self,
        headers: &HeaderMap,
        value: &str,
        max_age: Option<u64>,
    ) -> Option<HeaderValue> {
        let name = self.cookie_name(headers);
        let mut header = format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict");
        if self.secure {
            header.push_str("; Secure");
        }
        if let Some(age) = max_age {
            header.push_str(&format!("; Max-Age={age}"));
        }
        HeaderValue::from_str(&header).ok()
    }

    /// The CSRF token of the browser with `cookie`.
    pub fn csrf_for(&self, cookie: &str) -> String {
        URL_SAFE_NO_PAD.encode(hmac::sign(&self.key, cookie.as_bytes()).as_ref())
    }

    /// Whether `token` is the CSRF token of the browser with `cookie` (in constant time).
    pub fn csrf_fits(&self, cookie: &str, token: &str) -> bool {
        URL_SAFE_NO_PAD
            .decode(token)
            .is_ok_and(|tag| hmac::verify(&self.key, cookie.as_bytes(), &tag).is_ok())
    }

    /// Signs `account` in from the request with `headers`: the new cookie its session is
    /// under, and the header that sets it.
    pub fn begin(
        &self,
        headers: &HeaderMap,
        account: &str,
        stamp: PasswordStamp,
    ) -> Option<(String, HeaderValue)> {
        let (cookie, header) = self.new_cookie(headers)?;
        let now = Instant::now();
        let mut sessions = lock(&self.signed_in);
        sessions.retain(|_, s| s.expires > now);
        let oldest_of = |sessions: &HashMap<String, SignedIn>, account: Option<&str>| {
            sessions
                .iter()
                .filter(|(_, s)| account.is_none_or(|a| s.account == a))
                .min_by_key(|(_, s)| s.expires)
                .map(|(key, _)| key.clone())
        };
        let of_account = sessions.values().filter(|s| s.account == account).count();
        if of_account >= MAX_SESSIONS_PER_ACCOUNT
            && let Some(oldest) = oldest_of(&sessions, Some(account))
        {
            sessions.remove(&oldest);
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = oldest_of(&sessions, None)
        {
            sessions.remove(&oldest);
        }
        sessions.insert(
            hex_sha256(&cookie),
            SignedIn {
                account: account.to_owned(),
                stamp,
                expires: now + SESSION_LIFETIME,
            },
        );
        Some((cookie, header))
    }

    /// Ends the session under `cookie`, if any.
    pub fn end(&self, cookie: &str) {
        lock(&self.signed_in).remove(&hex_sha256(cookie));
    }

    /// The account signed in under `cookie`, and the stamp of its password.
    fn signed_in(&self, cookie: &str) -> Option<(String, PasswordStamp)> {
        let key = hex_sha256(cookie);
        let mut sessions = lock(&self.signed_in);
        match sessions.get(&key) {
            Some(s) if s.expires > Instant::now() => Some((s.account.clone(), s.stamp.clone())),
            Some(_) => {
                sessions.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Who asks; under `--auth local` without a live session, the way to the sign-in page.
    pub fn viewer(&self, people: &People, headers: &HeaderMap) -> Result<Viewer, Response> {
        let cookie = self.cookie_of(headers);
        match people {
            People::One => {
                let (cookie, set_cookie) = match cookie {
                    Some(cookie) => (cookie.to_owned(), None),
                    None => match self.new_cookie(headers) {
                        Some((cookie, header)) => (cookie, Some(header)),
                        None => return Err(no_randomness()),
                    },
                };
                Ok(Viewer {
                    user: User::local().clone(),
                    account: None,
                    scopes: Scopes::ALL,
                    csrf: self.csrf_for(&cookie),
                    set_cookie,
                })
            }
            People::Accounts(authority) => {
                let Some(cookie) = cookie else {
                    return Err(to_sign_in());
                };
                let Some((account, stamp)) = self.signed_in(cookie) else {
                    return Err(to_sign_in());
                };
                // A new password, or the account's deletion, ends its sessions at once.
                if !authority.still_signed_in(&account, &stamp) {
                    self.end(cookie);
                    return Err(to_sign_in());
                }
                Ok(Viewer {
                    // An account and a token of the same name are one user, with one store.
                    user: User::token_user(&account),
                    account: Some(account),
                    // The person whose account it is may do anything with their notes.
                    scopes: Scopes::ALL,
                    csrf: self.csrf_for(cookie),
                    set_cookie: None,
                })
            }
        }
    }

    /// Who asks to change something: [`Sessions::viewer`], whose form carried the CSRF token
    /// of the request's own cookie. Anything else is refused, and nothing changes.
    pub fn changer(
        &self,
        people: &People,
        headers: &HeaderMap,
        form: &HashMap<String, String>,
    ) -> Result<Viewer, Response> {
        let fits = match (self.cookie_of(headers), form.get("csrf")) {
            (Some(cookie), Some(token)) => self.csrf_fits(cookie, token),
            _ => false,
        };
        if !fits {
            return Err(super::layout::refused(
                StatusCode::FORBIDDEN,
                "This form is out of date or did not come from this page: nothing was changed. Open the page again and retry.",
            ));
        }
        let viewer = self.viewer(people, headers)?;
        if !viewer.may_change() {
            return Err(super::layout::refused(
                StatusCode::FORBIDDEN,
                "This sign-in may read notes but not change them: nothing was changed.",
            ));
        }
        Ok(viewer)
    }
}

/// A redirect to the sign-in page.
pub fn to_sign_in() -> Response {
    see_other(paths::SIGN_IN)
}

/// A `303 See Other` to `location` on this server.
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, location);
    }
    response
}

fn no_randomness() -> Response {
    super::layout::refused(
        StatusCode::INTERNAL_SERVER_ERROR,
        "The system gave no randomness for a cookie: try again.",
    )
}

#[cfg(test)]
mod tests {
    use http::header::COOKIE;

    use super::*;

    /// A request to port 8787 with `cookies`.
    fn request(cookies: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:8787"));
        headers.insert(COOKIE, HeaderValue::from_str(cookies).unwrap());
        headers
    }

    fn with_cookie(cookie: &str) -> HeaderMap {
        request(&format!("other=1; pkb_web_8787={cookie}"))
    }

    #[test]
    fn a_csrf_token_fits_its_own_browser_only() {
        let sessions = Sessions::new(false);
        let (mine, _) = sessions.new_cookie(&request("")).unwrap();
        let (theirs, _) = sessions.new_cookie(&request("")).unwrap();
        let token = sessions.csrf_for(&mine);
        assert!(sessions.csrf_fits(&mine, &token));
        assert!(!sessions.csrf_fits(&theirs, &token));
        assert!(!sessions.csrf_fits(&mine, ""));
        let other_process = Sessions::new(false);
        assert!(!other_process.csrf_fits(&mine, &token));
        let form = HashMap::from([("csrf".to_owned(), token)]);
        let people = People::One;
        assert!(
            sessions
                .changer(&people, &with_cookie(&mine), &form)
                .is_ok()
        );
        let refused = sessions
            .changer(&people, &with_cookie(&theirs), &form)
            .err()
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let no_token = HashMap::new();
        assert!(
            sessions
                .changer(&people, &with_cookie(&mine), &no_token)
                .is_err()
        );
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_host_prefixed_over_https() {
        let plain = Sessions::new(false);
        let (_, header) = plain.new_cookie(&request("")).unwrap();
        let header = header.to_str().unwrap();
        assert!(header.starts_with("pkb_web_8787="), "{header}");
        assert!(header.contains("; HttpOnly; SameSite=Strict"), "{header}");
        assert!(!header.contains("Secure"), "{header}");
        let https = Sessions::new(true);
        let (_, header) = https.new_cookie(&request("")).unwrap();
        let header = header.to_str().unwrap();
        assert!(header.starts_with("__Host-pkb_web_8787="), "{header}");
        assert!(
            header.contains("; Path=/;") && header.ends_with("; Secure"),
            "{header}"
        );
    }

    #[test]
    fn only_a_cookie_pkb_could_have_made_is_read() {
        let sessions = Sessions::new(false);
        assert!(sessions.cookie_of(&with_cookie("short")).is_none());
        let (cookie, _) = sessions.new_cookie(&request("")).unwrap();
        assert_eq!(
            sessions.cookie_of(&with_cookie(&cookie)),
            Some(cookie.as_str())
        );
    }

    /// Cookies ignore ports: each port's page has a cookie of its own name, and a second
    /// cookie of the name (planted by another service on the host) makes it none.
    #[test]
    fn each_port_has_its_own_cookie_and_a_planted_second_one_is_refused() {
        let sessions = Sessions::new(false);
        let (cookie, _) = sessions.new_cookie(&request("")).unwrap();
        let (planted, _) = sessions.new_cookie(&request("")).unwrap();
        let mut other_port = with_cookie(&cookie);
        other_port.insert(HOST, HeaderValue::from_static("127.0.0.1:9000"));
        assert_eq!(sessions.cookie_of(&other_port), None);
        let mut there = request(&format!("pkb_web_9000={cookie}"));
        there.insert(HOST, HeaderValue::from_static("localhost:9000"));
        assert_eq!(sessions.cookie_of(&there), Some(cookie.as_str()));
        let two = request(&format!("pkb_web_8787={planted}; pkb_web_8787={cookie}"));
        assert_eq!(sessions.cookie_of(&two), None);
    }

    /// One account signing in again and again pushes out only its own oldest sessions.
    #[test]
    fn an_accounts_sessions_are_capped_without_touching_anothers() {
        let sessions = Sessions::new(false);
        let stamp = PasswordStamp::for_tests("stamp");
        let (bobs, _) = sessions.begin(&request(""), "bob", stamp.clone()).unwrap();
        let alices: Vec<String> = (0..MAX_SESSIONS_PER_ACCOUNT + 5)
            .map(|_| {
                sessions
                    .begin(&request(""), "alice", stamp.clone())
                    .unwrap()
                    .0
            })
            .collect();
        assert_eq!(
            lock(&sessions.signed_in).len(),
            MAX_SESSIONS_PER_ACCOUNT + 1
        );
        assert!(
            sessions.signed_in(&bobs).is_some(),
            "bob is still signed in"
        );
        assert!(
            sessions.signed_in(&alices[0]).is_none(),
            "alice's oldest gave way"
        );
        assert!(sessions.signed_in(alices.last().unwrap()).is_some());
    }
}
