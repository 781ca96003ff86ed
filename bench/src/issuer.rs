//! An OAuth authorization server for `pkb-http-bench`'s `--auth oauth` run: an ES256 key made
//! by openssl, its key set served over HTTP on loopback, and one access token it signed.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

/// The audience the bench's token names, passed to the server as `--oauth-audience`.
pub const AUDIENCE: &str = "pkb-bench";

/// A running issuer and a token of its, good for an hour.
pub struct Issuer {
    /// The issuer's URL (`--oauth-issuer`); its key set is at `<url>/jwks`.
    pub url: String,
    /// An access token for [`AUDIENCE`] with both scopes.
    pub token: String,
}

impl Issuer {
    /// Makes the key and starts serving its set on the current runtime.
    pub async fn start() -> Result<Self, String> {
        let (encoding, jwk) = es256_key()?;
        let set = serde_json::to_vec(&JwkSet { keys: vec![jwk] }).map_err(|e| e.to_string())?;
        let set = Bytes::from(set);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        tokio::spawn(serve_key_set(listener, set));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|e| e.to_string())?
            .as_secs();
        let claims = json!({
            "iss": url, "sub": "bench-user", "aud": AUDIENCE, "iat": now, "exp": now + 3600,
            "scope": "notes:read notes:write",
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("bench".to_owned());
        let token = jsonwebtoken::encode(&header, &claims, &encoding).map_err(|e| e.to_string())?;
        Ok(Self { url, token })
    }
}

/// A new P-256 key (made by openssl, as the tests make theirs) and its public JWK.
fn es256_key() -> Result<(EncodingKey, Jwk), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let private = dir.path().join("key.pem");
    let status = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .arg("-out")
        .arg(&private)
        .status()
        .map_err(|e| format!("openssl: {e}"))?;
    if !status.success() {
        return Err("openssl could not make a key".into());
    }
    let pem = std::fs::read(&private).map_err(|e| e.to_string())?;
    let encoding = EncodingKey::from_ec_pem(&pem).map_err(|e| e.to_string())?;
    let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).map_err(|e| e.to_string())?;
    jwk.common.key_id = Some("bench".to_owned());
    Ok((encoding, jwk))
}

/// Answers every request on `listener` with the key set.
async fn serve_key_set(listener: tokio::net::TcpListener, set: Bytes) {
    let set = Arc::new(set);
    while let Ok((tcp, _)) = listener.accept().await {
        let set = Arc::clone(&set);
        let service = hyper::service::service_fn(move |_: http::Request<hyper::body::Incoming>| {
            let body = Full::new((*set).clone());
            let response = http::Response::builder()
                .header("content-type", "application/json")
                .body(body);
            async move { response }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}
