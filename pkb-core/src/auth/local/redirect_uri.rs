//! Where a client may send a person back to: which redirect URIs a client may register, and
//! whether the one an authorization request names is one of them. Matched exactly, except
//! the port of a loopback redirect URI, which a native client picks when it starts (RFC 8252
//! section 7.3).

use std::net::IpAddr;

use url::{Host, Url};

/// The longest redirect URI taken.
pub const MAX_REDIRECT_URI_LEN: usize = 2000;

/// The most redirect URIs one client may have.
pub const MAX_REDIRECT_URIS: usize = 10;

/// Why a redirect URI cannot be registered: what a client is told.
pub fn refusal(uri: &str) -> Option<String> {
    if uri.len() > MAX_REDIRECT_URI_LEN {
        return Some(format!(
            "a redirect URI has at most {MAX_REDIRECT_URI_LEN} characters"
        ));
    }
    let Ok(url) = Url::parse(uri) else {
        return Some(format!("`{uri}` is not an absolute URL"));
    };
    if url.fragment().is_some() {
        return Some(format!("`{uri}` has a fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Some(format!("`{uri}` holds credentials"));
    }
    match url.scheme() {
        "https" if url.host().is_some() => None,
        "http" if is_loopback(&url) => None,
        "http" => Some(format!(
            "`{uri}`: plain http is allowed only to a loopback host (localhost, 127.0.0.1, [::1])"
        )),
        _ => Some(format!(
            "`{uri}`: a redirect URI is https, or http to a loopback host"
        )),
    }
}

/// Whether `requested` is one of `registered`: the same text, or the same loopback URI but
/// for the port.
pub fn matches(registered: &[String], requested: &str) -> bool {
    registered.iter().any(|known| {
        known == requested
            || match (Url::parse(known), Url::parse(requested)) {
                (Ok(mut known), Ok(mut requested))
                    if known.scheme() == "http" && is_loopback(&known) =>
                {
                    // Only the port may differ; the rest is compared as parsed, then as text.
                    let _ = known.set_port(None);
                    let _ = requested.set_port(None);
                    known.as_str() == requested.as_str()
                }
                _ => false,
            }
    })
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_loopback() {
        assert_eq!(
            refusal("https://chatgpt.com/connector_platform_oauth_redirect"),
            None
        );
        assert_eq!(refusal("http://127.0.0.1:3000/callback"), None);
        assert_eq!(refusal("http://localhost:3000/callback"), None);
        assert_eq!(refusal("http://[::1]/callback"), None);
        assert!(refusal("http://example.com/callback").is_some());
        assert!(refusal("javascript:alert(1)").is_some());
        assert!(refusal("https://example.com/cb#x").is_some());
        assert!(refusal("/relative").is_some());
    }

    #[test]
    fn only_a_loopback_port_may_differ() {
        let registered = vec![
            "http://127.0.0.1/callback".to_owned(),
            "https://app.example/cb".to_owned(),
        ];
        assert!(matches(&registered, "http://127.0.0.1:54321/callback"));
        assert!(matches(&registered, "https://app.example/cb"));
        assert!(!matches(&registered, "https://app.example:8443/cb"));
        assert!(!matches(&registered, "http://127.0.0.1:54321/other"));
        assert!(!matches(&registered, "https://app.example/cb?x=1"));
    }
}
