//! Client ID Metadata Documents: a client whose `client_id` is an https URL is described by
//! the JSON document at that URL, which must name that same `client_id` and its redirect URIs.
//!
//! Fetching a URL that anyone can name is a way into the server's network (SSRF), so the
//! fetch is fenced: https only, the host's addresses resolved first and every one of them
//! public (no private, loopback or link-local address, unless `--allow-local-clients`), the
//! connection pinned to those addresses (a second lookup cannot rebind it), no redirects,
//! [`FETCH_LIMIT`] for the whole of it and [`MAX_DOCUMENT_BYTES`] read at most.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;
use url::{Host, Url};

use super::redirect_uri;

/// How long fetching a document may take, all told.
pub const FETCH_LIMIT: Duration = Duration::from_secs(5);

/// The largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// What a metadata document says of its client.
#[derive(Debug, Clone, Deserialize)]
pub struct ClientDocument {
    /// Must equal the URL it was fetched from.
    pub client_id: String,
    /// The client's name for itself.
    #[serde(default)]
    pub client_name: Option<String>,
    /// Where it may be sent back to.
    #[serde(default)]
    pub redirect_uris: Vec<String>,
}

/// Whether `client_id` is a metadata document's URL: https, with a path other than `/`.
pub fn is_document_url(client_id: &str) -> bool {
    Url::parse(client_id).is_ok_and(|url| {
        url.scheme() == "https"
            && url.host().is_some()
            && url.path() != "/"
            && !url.path().is_empty()
    })
}

/// Fetches and checks the document of `client_id`; why not, in words for the error page.
pub async fn fetch(client_id: &str, allow_local: bool) -> Result<ClientDocument, String> {
    match tokio::time::timeout(FETCH_LIMIT, fetch_unlimited(client_id, allow_local)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the client's metadata document did not arrive within {} s",
            FETCH_LIMIT.as_secs()
        )),
    }
}

async fn fetch_unlimited(client_id: &str, allow_local: bool) -> Result<ClientDocument, String> {
    let url = Url::parse(client_id).map_err(|_| "the client_id is not a URL".to_owned())?;
    if !is_document_url(client_id) || url.fragment().is_some() || !url.username().is_empty() {
        return Err("a client_id URL is https, with a path and no fragment".into());
    }
    let port = url.port_or_known_default().unwrap_or(443);
    let addresses: Vec<SocketAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|_| "the client_id's host cannot be found".to_owned())?
            .collect(),
        None => return Err("the client_id has no host".into()),
    };
    if addresses.is_empty() {
        return Err("the client_id's host cannot be found".into());
    }
    if !allow_local && addresses.iter().any(|a| !is_public(a.ip())) {
        return Err(
            "the client_id's host is a private or loopback address, from which PKB fetches no metadata document".into(),
        );
    }
    crate::crypto_provider::install();
    let mut client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(FETCH_LIMIT);
    if let Some(Host::Domain(name)) = url.host() {
        client = client.resolve_to_addrs(name, &addresses);
    }
    let client = client
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let mut response = client
        .get(url.as_str())
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|_| "the client's metadata document cannot be fetched".to_owned())?;
    if !response.status().is_success() {
        return Err(format!(
            "the client's metadata document answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let too_large = || format!("the client's metadata document is over {MAX_DOCUMENT_BYTES} bytes");
    if response
        .content_length()
        .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| "the client's metadata document was cut off".to_owned())?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    let document: ClientDocument = serde_json::from_slice(&body).map_err(|_| {
        "the client's metadata document is not a JSON client description".to_owned()
    })?;
    if document.client_id != client_id {
        return Err("the client's metadata document names another client_id than its URL".into());
    }
    if document.redirect_uris.is_empty()
        || document.redirect_uris.len() > redirect_uri::MAX_REDIRECT_URIS
    {
        return Err(format!(
            "the client's metadata document must list 1 to {} redirect_uris",
            redirect_uri::MAX_REDIRECT_URIS
        ));
    }
    if let Some(why) = document
        .redirect_uris
        .iter()
        .find_map(|u| redirect_uri::refusal(u))
    {
        return Err(format!("the client's metadata document: {why}"));
    }
    Ok(document)
}

/// Whether `ip` is an address of the public internet: not loopback, private, link-local,
/// shared (carrier NAT), documentation, multicast or otherwise reserved.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        // An IPv4 address written as IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
        // or 6to4 `2002:aabb:ccdd::`) is judged as the IPv4 address it carries.
        IpAddr::V6(ip) => match (ip.to_ipv4(), ip.segments()) {
            (Some(v4), _) => is_public_v4(v4),
            (None, [0x2002, high, low, ..]) => {
                let [a, b] = high.to_be_bytes();
                let [c, d] = low.to_be_bytes();
                is_public_v4(Ipv4Addr::new(a, b, c, d))
            }
            (None, _) => is_public_v6(ip),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || (first == 0x0100 && ip.segments()[1..4] == [0, 0, 0])
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x0064 && ip.segments()[1] == 0xff9b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_loopback_addresses_are_not_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "fec0::1",
            "100::1",
            "64:ff9b:1::a00:1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["8.8.8.8", "2606:4700::1111", "2002:808:808::1"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn a_document_url_is_https_with_a_path() {
        assert!(is_document_url("https://client.example/oauth/client.json"));
        assert!(!is_document_url("https://client.example/"));
        assert!(!is_document_url("http://client.example/client.json"));
        assert!(!is_document_url("pkbc_abc"));
    }
}
