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
use http::header::{COOKIE, LOCATION};
use http::{HeaderMap, HeaderValue, StatusCode};
use ring::hmac;

use super::People;
use super::paths;
use crate::auth::data_file::{hex_sha256, random_secret};
use crate::auth::local::PasswordStamp;
use crate::identity::User;
use crate::locks::lock;
use crate::{Access, Scopes};

/// How long a sign-in lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 60 * 60);

/// The most signed-in sessions kept: past it, the oldest gives way. Only a correct password
/// makes one, and password checks are slow and limited, so a flood cannot reach it quickly.
const MAX_SESSIONS: usize = 10_000;

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
    /// The cookie's name: `__Host-pkb_web` over https.
    cookie: &'static str,
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
            cookie: if https { "__Host-pkb_web" } else { "pkb_web" },
            secure: https,
            signed_in: Mutex::new(HashMap::new()),
        }
    }

    /// The request's cookie, when it is one PKB could have made.
    pub fn cookie_of<'a>(&self, headers: &'a HeaderMap) -> Option<&'a str> {
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.cookie)
            .map(|(_, value)| value)
            .filter(|value| {
                value.len() == 43
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            })
    }

    /// A new cookie, and the header that sets it.
    pub fn new_cookie(&self) -> Option<(String, HeaderValue)> {
        let value = random_secret(32).ok()?;
        let header = self.cookie_header(&value, None)?;
        Some((value, header))
    }

    /// The header that ends the cookie.
    pub fn cleared_cookie(&self) -> Option<HeaderValue> {
        self.cookie_header("", Some(0))
    }

    fn cookie_header(&self, value: &str, max_age: Option<u64>) -> Option<HeaderValue> {
        let mut header = format!("{}={value}; Path=/; HttpOnly; SameSite=Strict", self.cookie);
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

    /// Signs `account` in: the new cookie its session is under, and the header that sets it.
    pub fn begin(&self, account: &str, stamp: PasswordStamp) -> Option<(String, HeaderValue)> {
        let (cookie, header) = self.new_cookie()?;
        let now = Instant::now();
        let mut sessions = lock(&self.signed_in);
        sessions.retain(|_, s| s.expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(key, _)| key.clone())
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
                    None => match self.new_cookie() {
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

/// A `303 See Other` to `location` on this server, with the pages' headers.
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, location);
    }
    super::layout::add_headers(response.headers_mut());
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
    use super::*;

    fn with_cookie(sessions: &Sessions, cookie: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let value = format!("other=1; {}={cookie}", sessions.cookie);
        headers.insert(COOKIE, HeaderValue::from_str(&value).unwrap());
        headers
    }

    #[test]
    fn a_csrf_token_fits_its_own_browser_only() {
        let sessions = Sessions::new(false);
        let (mine, _) = sessions.new_cookie().unwrap();
        let (theirs, _) = sessions.new_cookie().unwrap();
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
                .changer(&people, &with_cookie(&sessions, &mine), &form)
                .is_ok()
        );
        let refused = sessions
            .changer(&people, &with_cookie(&sessions, &theirs), &form)
            .err()
            .unwrap();
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let no_token = HashMap::new();
        assert!(
            sessions
                .changer(&people, &with_cookie(&sessions, &mine), &no_token)
                .is_err()
        );
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_host_prefixed_over_https() {
        let plain = Sessions::new(false);
        let (_, header) = plain.new_cookie().unwrap();
        let header = header.to_str().unwrap();
        assert!(header.starts_with("pkb_web="), "{header}");
        assert!(header.contains("; HttpOnly; SameSite=Strict"), "{header}");
        assert!(!header.contains("Secure"), "{header}");
        let https = Sessions::new(true);
        let (_, header) = https.new_cookie().unwrap();
        let header = header.to_str().unwrap();
        assert!(header.starts_with("__Host-pkb_web="), "{header}");
        assert!(
            header.contains("; Path=/;") && header.ends_with("; Secure"),
            "{header}"
        );
    }

    #[test]
    fn only_a_cookie_pkb_could_have_made_is_read() {
        let sessions = Sessions::new(false);
        assert!(
            sessions
                .cookie_of(&with_cookie(&sessions, "short"))
                .is_none()
        );
        let (cookie, _) = sessions.new_cookie().unwrap();
        assert_eq!(
            sessions.cookie_of(&with_cookie(&sessions, &cookie)),
            Some(cookie.as_str())
        );
    }
}
