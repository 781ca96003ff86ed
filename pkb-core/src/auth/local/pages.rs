//! The pages a person sees: sign-in, consent and errors, rendered on the server. Every text
//! that comes from outside (a client's name, a redirect URI, an account name) goes through
//! [`escape`] here and nowhere else; the pages load nothing but PKB's own stylesheet, run no
//! script, and may not be framed.

use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE};
use http::{HeaderMap, HeaderValue, StatusCode};

/// The stylesheet's path: the pages' one resource, so `default-src 'self'` is all they need.
pub const STYLESHEET_PATH: &str = "/oauth/style.css";

/// The form posts' paths.
pub const SIGN_IN_PATH: &str = "/oauth/sign-in";
/// See [`SIGN_IN_PATH`].
pub const CONSENT_PATH: &str = "/oauth/consent";

const STYLESHEET: &str = "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}\
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}\
input[type=text],input[type=password]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}\
button{margin:1rem .5rem 0 0;padding:.5rem 1.2rem;font-size:1rem}\
.error{color:#a00}.where{word-break:break-all;font-family:monospace}";

/// `text` with `& < > " '` written as HTML entities: safe in element text and in quoted
/// attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The value of the cookie `name`, when the request carries it once and it is one PKB could
/// have made: 43 base64url characters (256 random bits). Two cookies of the name (one planted
/// for a narrower path, or by another service on the same host, which cookies do not tell
/// apart by port) make it none, rather than letting their order choose.
pub(crate) fn secret_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut named = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(key, _)| *key == name)
        .map(|(_, value)| value);
    let value = named.next()?;
    (named.next().is_none() && value.len() == 43 && value.bytes().all(is_base64url))
        .then_some(value)
}

/// Whether `byte` is one of base64url's letters (no padding).
pub(crate) fn is_base64url(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_'
}

/// The headers every page and form answer carries: no framing (clickjacking), nothing but
/// PKB's own resources, no caching, and no Referer beyond PKB's origin. `form-action` is left
/// out on purpose: Chromium applies it to the redirect that follows the consent post, which
/// goes to the client.
pub fn add_security_headers(headers: &mut HeaderMap) {
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("frame-ancestors 'none'; default-src 'self'"),
    );
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    // `no-referrer` would make Chromium send `Origin: null` on the pages' own forms, which
    // the origin check refuses (OAUTH-NOTES.md).
    headers.insert("referrer-policy", HeaderValue::from_static("same-origin"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A page of `title` whose body is `body`, already HTML.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{title} · PKB</title><link rel=\"stylesheet\" href=\"{STYLESHEET_PATH}\"></head>\
<body><main>{body}</main></body></html>\n",
        title = escape(title),
    );
    let mut response = (status, html).into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    add_security_headers(response.headers_mut());
    response
}

/// PKB's own error page: for what must not be sent to a client (an unknown client, a
/// redirect URI not its own) and for forms that cannot be taken.
pub fn error_page(status: StatusCode, message: &str) -> Response {
    page(
        status,
        "Cannot sign in",
        &format!(
            "<h1>Cannot continue</h1><p class=\"error\">{}</p><p>Go back to the application and start again.</p>",
            escape(message)
        ),
    )
}

/// The hidden fields of a step's form.
fn step_fields(request: &str, csrf: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"request\" value=\"{}\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(request),
        escape(csrf)
    )
}

/// How the pages name a client.
#[derive(Debug, Clone, Copy)]
pub struct ClientName<'a> {
    /// The name, as the client gave it (for a metadata document, with its host).
    pub name: &'a str,
    /// Whether the name is only what the client says of itself: a dynamically registered
    /// client may call itself anything, `Claude (claude.ai)` included.
    pub claimed: bool,
}

impl ClientName<'_> {
    /// The name as HTML, marked as the client's own claim when it is one; `opening` when it
    /// starts a sentence.
    fn html(&self, opening: bool) -> String {
        if self.claimed {
            format!(
                "{} application that calls itself <strong>“{}”</strong> (its own claim, not verified by PKB)",
                if opening { "An" } else { "an" },
                escape(self.name)
            )
        } else {
            format!("<strong>{}</strong>", escape(self.name))
        }
    }
}

/// `uri` as the pages show it: parsed and written out again, so that a host is shown in ASCII
/// (punycode: `xn--pple-43d.com`, not a look-alike `аpple.com` in Cyrillic letters).
pub fn shown_url(uri: &str) -> String {
    url::Url::parse(uri).map_or_else(|_| uri.to_owned(), String::from)
}

/// The sign-in page of an authorization request; `problem` says why the last try failed.
pub fn sign_in(
    client: ClientName<'_>,
    request: &str,
    csrf: &str,
    account: &str,
    problem: Option<&str>,
) -> Response {
    let problem = problem
        .map(|p| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(p)))
        .unwrap_or_default();
    let status = if problem.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNAUTHORIZED
    };
    page(
        status,
        "Sign in",
        &format!(
            "<h1>Sign in to PKB</h1><p>{client} asks to use your notes. Sign in first.</p>{problem}\
<form method=\"post\" action=\"{SIGN_IN_PATH}\">{fields}\
<label for=\"account\">Account</label><input type=\"text\" id=\"account\" name=\"account\" value=\"{account}\" autocomplete=\"username\" autocapitalize=\"none\" required autofocus>\
<label for=\"password\">Password</label><input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
<button type=\"submit\">Sign in</button></form>",
            client = client.html(true),
            fields = step_fields(request, csrf),
            account = escape(account),
        ),
    )
}

/// What the consent page shows of a client.
pub struct ConsentView<'a> {
    /// Its name.
    pub client: ClientName<'a>,
    /// Its id (for a metadata document, the URL it is described at).
    pub client_id: &'a str,
    /// Where it will send the person.
    pub redirect_uri: &'a str,
    /// Whether it asks to change notes, not just read them.
    pub write: bool,
    /// The account signed in.
    pub account: &'a str,
}

/// The consent page: who asks, for what, and where the person goes next.
pub fn consent(view: &ConsentView<'_>, request: &str, csrf: &str) -> Response {
    let access = if view.write {
        "read and change your notes"
    } else {
        "read your notes"
    };
    page(
        StatusCode::OK,
        "Allow access",
        &format!(
            "<h1>Allow {title} to {access}?</h1>\
<p>Signed in as <strong>{account}</strong>.</p>\
<p>{client} (client <span class=\"where\">{client_id}</span>) will be able to {access} until you revoke it with <code>pkb-server account revoke</code>.</p>\
<p>Then you will be sent to <span class=\"where\">{redirect}</span>.</p>\
<form method=\"post\" action=\"{CONSENT_PATH}\">{fields}\
<button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>",
            title = view.client.html(false),
            client = view.client.html(true),
            client_id = escape(&shown_url(view.client_id)),
            account = escape(view.account),
            redirect = escape(&shown_url(view.redirect_uri)),
            fields = step_fields(request, csrf),
        ),
    )
}

/// The pages' stylesheet.
pub async fn stylesheet() -> Response {
    let mut response = STYLESHEET.into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/css; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_shown_in_ascii_and_a_registered_name_as_a_claim() {
        let view = ConsentView {
            client: ClientName {
                name: "Claude (claude.ai)",
                claimed: true,
            },
            client_id: "pkbc_x",
            redirect_uri: "https://\u{430}pple.com/callback",
            write: false,
            account: "alice",
        };
        let page = consent(&view, "r", "c");
        let body =
            futures::executor::block_on(axum::body::to_bytes(page.into_body(), 1 << 20)).unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(body.contains("https://xn--pple-43d.com/callback"), "{body}");
        assert!(!body.contains('\u{430}'), "{body}");
        assert!(
            body.contains("calls itself <strong>“Claude (claude.ai)”</strong> (its own claim, not verified by PKB)"),
            "{body}"
        );
    }

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}
