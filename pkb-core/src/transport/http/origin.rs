//! The DNS-rebinding defence: which `Host` and `Origin` a request may carry.
//!
//! rmcp checks `Host` against a list but leaves `Origin` unchecked by default, and its rules
//! are not the contract's, so both are checked here, before anything else sees the request.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::{HOST, ORIGIN};
use http::{HeaderValue, StatusCode};

/// The hosts and origins requests may name.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    /// Host names (no port), lowercase; IPv6 addresses in brackets.
    hosts: Vec<String>,
    /// Origins as `scheme://host:port`, lowercase, the port always written.
    origins: Vec<String>,
}

impl OriginPolicy {
    /// Allows the public URL's host and origin, the loopback names when `loopback`, and the
    /// extra hosts and origins given.
    pub fn new(
        public_url: &http::Uri,
        loopback: bool,
        extra_hosts: &[String],
        extra_origins: &[String],
    ) -> Self {
        let mut hosts: Vec<String> = Vec::new();
        if let Some(host) = public_url.host() {
            hosts.push(host.to_ascii_lowercase());
        }
        if loopback {
            hosts.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
        }
        hosts.extend(
            extra_hosts
                .iter()
                .map(|h| host_name(h).to_ascii_lowercase()),
        );
        let mut origins: Vec<String> = normalize_origin(&public_url.to_string())
            .into_iter()
            .collect();
        origins.extend(extra_origins.iter().filter_map(|o| normalize_origin(o)));
        Self { hosts, origins }
    }

    /// Whether a request with this `Host` header may be served.
    pub fn allows_host(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        self.hosts.contains(&name)
    }

    /// Whether a request with this `Origin` header may be served.
    pub fn allows_origin(&self, origin: &str) -> bool {
        normalize_origin(origin).is_some_and(|origin| self.origins.contains(&origin))
    }
}

/// The host of a `Host` header value, without its port: `[::1]:80` -> `[::1]`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _port)| name)
}

/// `scheme://host:port`, lowercase with the port always written; `None` for anything that
/// is not an http or https origin (`null` among them).
fn normalize_origin(origin: &str) -> Option<String> {
    let uri: http::Uri = origin.trim().trim_end_matches('/').parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(default_port);
    Some(format!("{scheme}://{host}:{port}"))
}

/// Refuses, with 403, a request whose `Host` or `Origin` is not allowed. Every name the
/// request gives counts: each `Host` header and the authority of an absolute request target
/// (one of them at least), and each `Origin` header, an empty one included. A client that
/// sends two of either, or a target naming another host than its `Host`, gets no say in
/// which one a layer behind this one would read.
pub async fn check_origin(
    State(policy): State<std::sync::Arc<OriginPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    match refusal(&policy, &request) {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// The 403 for a request whose `Host` or `Origin` is not allowed; `None` when both are.
fn refusal(policy: &OriginPolicy, request: &Request) -> Option<Response> {
    let headers = request.headers();
    let mut hosts = headers
        .get_all(HOST)
        .iter()
        .map(|h| h.to_str().ok())
        .chain(request.uri().authority().map(|a| Some(a.as_str())))
        .peekable();
    let named = hosts.peek().is_some();
    if !named || !hosts.all(|host| host.is_some_and(|host| policy.allows_host(host))) {
        return Some(forbidden("Forbidden: Host not allowed"));
    }
    if !headers
        .get_all(ORIGIN)
        .iter()
        .all(|origin| origin.to_str().is_ok_and(|o| policy.allows_origin(o)))
    {
        return Some(forbidden("Forbidden: Origin not allowed"));
    }
    None
}

/// A 403 saying `why`, with the strictest headers: the same endpoint serves the web page and
/// the sign-in pages, and a refusal must not be framed, sniffed, cached or run anything.
fn forbidden(why: &'static str) -> Response {
    let mut response = (StatusCode::FORBIDDEN, why).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        ),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("cache-control", "no-store"),
        ("referrer-policy", "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(public: &str, loopback: bool) -> OriginPolicy {
        OriginPolicy::new(
            &public.parse().unwrap(),
            loopback,
            &["notes.internal".into()],
            &["http://localhost:6274".into()],
        )
    }

    #[test]
    fn hosts() {
        let local = policy("http://127.0.0.1:8787", true);
        for host in [
            "127.0.0.1:8787",
            "localhost",
            "LOCALHOST:1",
            "[::1]:9",
            "notes.internal:80",
        ] {
            assert!(local.allows_host(host), "{host}");
        }
        for host in [
            "evil.example",
            "127.0.0.2:8787",
            "localhost.evil.example",
            "",
        ] {
            assert!(!local.allows_host(host), "{host}");
        }
        let public = policy("https://notes.example.com", false);
        assert!(public.allows_host("notes.example.com"));
        assert!(
            !public.allows_host("localhost:8787"),
            "no loopback names off loopback"
        );
    }

    #[test]
    fn a_refusal_carries_the_pages_strict_headers() {
        let local = policy("http://127.0.0.1:8787", true);
        let request = Request::builder()
            .uri("/")
            .header(HOST, "evil.example")
            .body(axum::body::Body::empty())
            .unwrap();
        let refused = refusal(&local, &request).expect("refused");
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        let headers = refused.headers();
        assert_eq!(
            headers["content-security-policy"],
            "default-src 'none'; frame-ancestors 'none'"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["cache-control"], "no-store");
    }

    #[test]
    fn origins() {
        let public = policy("https://notes.example.com", false);
        assert!(public.allows_origin("https://notes.example.com"));
        assert!(public.allows_origin("https://NOTES.example.com:443"));
        assert!(public.allows_origin("http://localhost:6274"));
        assert!(!public.allows_origin("http://notes.example.com"));
        assert!(!public.allows_origin("https://notes.example.com:8443"));
        assert!(!public.allows_origin("https://evil.example"));
        assert!(!public.allows_origin("null"));
        assert!(!public.allows_origin("http://localhost:6275"));
    }
}
