//! `--auth oauth`: a local authorization server (its metadata and key set over HTTP on
//! loopback, keys made in the test by openssl) signs tokens, good and hostile. Every hostile
//! one gets 401 and reaches no handler; key rotation is picked up; scopes are enforced.

#[macro_use]
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::response::IntoResponse;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use support::{HttpServerProcess, RawHttp, http_client};

/// A signing key, made by openssl, and its public JWK.
#[derive(Clone)]
struct Key {
    kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
    jwk: Jwk,
    public_pem: Vec<u8>,
}

impl Key {
    fn generate(kid: &str, alg: Algorithm) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("key.pem");
        let public = dir.path().join("public.pem");
        let algorithm: &[&str] = match alg {
            Algorithm::RS256 => &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            Algorithm::ES256 => &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            Algorithm::EdDSA => &["-algorithm", "ED25519"],
            other => panic!("no key for {other:?}"),
        };
        let mut args = vec!["genpkey"];
        args.extend_from_slice(algorithm);
        args.extend(["-out", private.to_str().unwrap()]);
        support::openssl(&args);
        support::openssl(&[
            "pkey",
            "-in",
            private.to_str().unwrap(),
            "-pubout",
            "-out",
            public.to_str().unwrap(),
        ]);
        let pem = std::fs::read(&private).unwrap();
        let encoding = match alg {
            Algorithm::RS256 => EncodingKey::from_rsa_pem(&pem),
            Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
            _ => EncodingKey::from_ed_pem(&pem),
        }
        .unwrap();
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk,
            public_pem: std::fs::read(&public).unwrap(),
        }
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_typed(claims, "JWT")
    }

    /// Signed with `typ` in the header.
    fn sign_typed(&self, claims: &Value, typ: &str) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some(typ.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// The test's authorization server: RFC 8414 metadata and a key set that can change.
struct Issuer {
    url: String,
    keys: Arc<Mutex<JwkSet>>,
    fetches: Arc<Mutex<usize>>,
}

impl Issuer {
    async fn start(keys: &[&Key]) -> Self {
        Self::start_fresh_for(keys, None).await
    }

    /// An issuer whose key set says it is fresh for `max_age` seconds, if given.
    async fn start_fresh_for(keys: &[&Key], max_age: Option<u64>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let set = Arc::new(Mutex::new(JwkSet {
            keys: keys.iter().map(|k| k.jwk.clone()).collect(),
        }));
        let fetches = Arc::new(Mutex::new(0));
        let metadata = json!({
            "issuer": url,
            "jwks_uri": format!("{url}/jwks"),
            "authorization_endpoint": format!("{url}/authorize"),
            "token_endpoint": format!("{url}/token"),
        });
        let (served, counted) = (Arc::clone(&set), Arc::clone(&fetches));
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || {
                    let metadata = metadata.clone();
                    async move { Json(metadata) }
                }),
            )
            .route(
                "/jwks",
                get(move || {
                    *counted.lock().unwrap() += 1;
                    let set = served.lock().unwrap().clone();
                    let cache_control =
                        max_age.map_or_else(String::new, |s| format!("max-age={s}"));
                    async move {
                        let mut response = Json(set).into_response();
                        if let Ok(value) = cache_control.parse() {
                            response.headers_mut().insert("cache-control", value);
                        }
                        response
                    }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self {
            url,
            keys: set,
            fetches,
        }
    }

    fn add_key(&self, key: &Key) {
        self.keys.lock().unwrap().keys.push(key.jwk.clone());
    }

    /// Withdraws the key `kid` from the set it serves.
    fn remove_key(&self, kid: &str) {
        self.keys
            .lock()
            .unwrap()
            .keys
            .retain(|jwk| jwk.common.key_id.as_deref() != Some(kid));
    }

    fn fetches(&self) -> usize {
        *self.fetches.lock().unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Good claims for the server's resource.
fn claims(issuer: &str, resource: &str, sub: &str, scope: &str) -> Value {
    json!({
        "iss": issuer,
        "sub": sub,
        "aud": resource,
        "exp": now() + 600,
        "iat": now(),
        "scope": scope,
        "client_id": "pkb-tests",
    })
}

async fn start_pkb(issuer: &Issuer) -> HttpServerProcess {
    HttpServerProcess::start(&["--memory", "--auth", "oauth", "--oauth-issuer", &issuer.url]).await
}

#[tokio::test]
async fn protected_resource_metadata_and_challenges_name_the_resource() {
    let key = Key::generate("k1", Algorithm::ES256);
    let issuer = Issuer::start(&[&key]).await;
    let server = start_pkb(&issuer).await;
    let origin = server.origin().to_owned();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata: Value = http_client()
            .get(format!("{origin}{path}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            metadata,
            json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [issuer.url],
                "scopes_supported": ["notes:read", "notes:write"],
                "bearer_methods_supported": ["header"],
            })
        );
    }
    let missing = RawHttp::new(&server.url, None).initialize().await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate").unwrap(),
        format!("Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\"")
    );
    let forged = RawHttp::new(&server.url, Some("not.a.jwt"))
        .initialize()
        .await;
    assert_eq!(
        forged.header("www-authenticate").unwrap(),
        format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
        )
    );
}

#[tokio::test]
async fn rs256_es256_and_eddsa_tokens_are_accepted_and_scopes_enforced() {
    let rsa = Key::generate("rsa", Algorithm::RS256);
    let ec = Key::generate("ec", Algorithm::ES256);
    let ed = Key::generate("ed", Algorithm::EdDSA);
    let issuer = Issuer::start(&[&rsa, &ec, &ed]).await;
    let server = start_pkb(&issuer).await;
    let resource = server.url.clone();
    for key in [&rsa, &ec, &ed] {
        let token = key.sign(&claims(
            &issuer.url,
            &resource,
            "carol",
            "notes:read notes:write",
        ));
        let mut raw = RawHttp::new(&server.url, Some(&token));
        assert!(raw.initialize().await.status.is_success(), "{:?}", key.alg);
        let title = format!("Written with {:?}", key.alg);
        let saved = raw.call("write", json!({"title": title, "body": ""})).await;
        assert_eq!(saved.result()["isError"], false, "{saved:?}");
    }
    // The same (iss, sub) is one user, whatever key signed the token.
    let token = ed.sign(&claims(&issuer.url, &resource, "carol", "notes:read"));
    let mut reader = RawHttp::new(&server.url, Some(&token));
    reader.initialize().await;
    let found = reader
        .call("fetch", json!({"id": "written-with-rs256"}))
        .await;
    assert_eq!(found.result()["isError"], false, "{found:?}");
    let refused = reader
        .call("write", json!({"title": "Nope", "body": ""}))
        .await;
    assert_eq!(refused.status, 403);
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"notes:write\", resource_metadata=\""
        ),
        "{challenge}"
    );
    // `scp` as a list (Okta) or a string (Azure AD) works as `scope` does, and so does a
    // `scope` written as a list.
    for (claim, names) in [
        ("scp", json!(["notes:read", "notes:write"])),
        ("scp", json!("notes:read notes:write")),
        ("scope", json!(["notes:read", "notes:write"])),
    ] {
        let mut scp = claims(&issuer.url, &resource, "carol", "");
        scp.as_object_mut().unwrap().remove("scope");
        scp[claim] = names.clone();
        let mut writer = RawHttp::new(&server.url, Some(&rsa.sign(&scp)));
        writer.initialize().await;
        let saved = writer
            .call(
                "write",
                json!({"title": "Via scp", "body": "", "overwrite": true}),
            )
            .await;
        assert_eq!(
            saved.result()["isError"],
            false,
            "{claim} {names}: {saved:?}"
        );
    }
    // No scope at all: reads are refused too.
    let mut none = claims(&issuer.url, &resource, "carol", "");
    none.as_object_mut().unwrap().remove("scope");
    let mut nothing = RawHttp::new(&server.url, Some(&ec.sign(&none)));
    nothing.initialize().await;
    let answer = nothing.call("fetch", json!({"id": "via-scp"})).await;
    assert_eq!(answer.status, 403);
    assert!(
        answer
            .header("www-authenticate")
            .unwrap()
            .contains("scope=\"notes:read\"")
    );
    // Nor may it listen to the session's stream of changes.
    assert_eq!(nothing.event_stream().await.status(), 403);
}

#[tokio::test]
async fn hostile_tokens_get_401_and_reach_no_handler() {
    let key = Key::generate("good", Algorithm::RS256);
    let outsider = Key::generate("good", Algorithm::RS256);
    let stranger = Key::generate("stranger", Algorithm::RS256);
    let issuer = Issuer::start(&[&key]).await;
    let server = start_pkb(&issuer).await;
    let resource = server.url.clone();
    let good = claims(&issuer.url, &resource, "dave", "notes:read notes:write");
    let with = |change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut claims = good.clone();
        change(claims.as_object_mut().unwrap());
        key.sign(&claims)
    };
    let valid = key.sign(&good);
    let tampered = {
        let parts: Vec<&str> = valid.split('.').collect();
        let mut payload: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        payload["scope"] = json!("notes:read notes:write admin");
        payload["sub"] = json!("mallory");
        let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let alg_none = {
        let header = URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT","kid":"good"}"#);
        let payload = URL_SAFE_NO_PAD.encode(good.to_string());
        format!("{header}.{payload}.")
    };
    let hmac_with_public_key = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("good".into());
        let secret = EncodingKey::from_secret(&key.public_pem).unwrap();
        jsonwebtoken::encode(&header, &good, &secret).unwrap()
    };
    let hostile: Vec<(&str, String)> = vec![
        (
            "expired",
            with(&|c| {
                c.insert("exp".into(), json!(now() - 120));
            }),
        ),
        (
            "not yet valid",
            with(&|c| {
                c.insert("nbf".into(), json!(now() + 120));
            }),
        ),
        (
            "issued in the future",
            with(&|c| {
                c.insert("iat".into(), json!(now() + 300));
            }),
        ),
        // RFC 7519's NumericDate may have a fraction: such dates are read, and checked, too.
        (
            "expired, with a fraction",
            with(&|c| {
                c.insert("exp".into(), json!(now() as f64 - 120.5));
            }),
        ),
        (
            "not yet valid, with a fraction",
            with(&|c| {
                c.insert("nbf".into(), json!(now() as f64 + 120.5));
            }),
        ),
        (
            "issued in the future, with a fraction",
            with(&|c| {
                c.insert("iat".into(), json!(now() as f64 + 300.5));
            }),
        ),
        (
            "exp as a string",
            with(&|c| {
                c.insert("exp".into(), json!((now() + 600).to_string()));
            }),
        ),
        (
            "wrong issuer",
            with(&|c| {
                c.insert("iss".into(), json!("https://evil.example"));
            }),
        ),
        (
            "issuer with a slash",
            with(&|c| {
                c.insert("iss".into(), json!(format!("{}/", issuer.url)));
            }),
        ),
        (
            "wrong audience",
            with(&|c| {
                c.insert("aud".into(), json!("https://other.example/mcp"));
            }),
        ),
        (
            "audience list without the resource",
            with(&|c| {
                c.insert("aud".into(), json!(["https://other.example/mcp", "pkb"]));
            }),
        ),
        (
            "no audience",
            with(&|c| {
                c.remove("aud");
            }),
        ),
        (
            "missing sub",
            with(&|c| {
                c.remove("sub");
            }),
        ),
        (
            "empty sub",
            with(&|c| {
                c.insert("sub".into(), json!(""));
            }),
        ),
        (
            "no exp",
            with(&|c| {
                c.remove("exp");
            }),
        ),
        ("a logout token", key.sign_typed(&good, "logout+jwt")),
        ("a DPoP proof", key.sign_typed(&good, "dpop+jwt")),
        ("alg none", alg_none),
        ("HS256 with the public key as secret", hmac_with_public_key),
        ("tampered payload", tampered),
        ("unknown kid", stranger.sign(&good)),
        ("a key outside the set", outsider.sign(&good)),
        ("garbage", "a.b.c".into()),
    ];
    // Dates with a fraction are as good as whole ones, `exp`, `nbf` and `iat` alike.
    let fractional = with(&|c| {
        c.insert("exp".into(), json!(now() as f64 + 600.5));
        c.insert("nbf".into(), json!(now() as f64 - 10.25));
        c.insert("iat".into(), json!(now() as f64 - 0.75));
    });
    let answer = RawHttp::new(&server.url, Some(&fractional))
        .initialize()
        .await;
    assert!(answer.status.is_success(), "fractional dates: {answer:?}");
    // RFC 9068's own type is as good as the plain one.
    for typ in ["at+jwt", "application/at+jwt"] {
        let typed = key.sign_typed(&good, typ);
        let answer = RawHttp::new(&server.url, Some(&typed)).initialize().await;
        assert!(answer.status.is_success(), "{typ}: {answer:?}");
    }
    // A real session, so a hostile request would reach a handler if the gate let it by.
    let mut honest = RawHttp::new(&server.url, Some(&valid));
    assert!(honest.initialize().await.status.is_success());
    for (what, token) in &hostile {
        let answer = RawHttp::new(&server.url, Some(token)).initialize().await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
        assert!(
            answer
                .header("www-authenticate")
                .unwrap()
                .contains("error=\"invalid_token\""),
            "{what}"
        );
        let in_session = honest.with_token(Some(token));
        let title = format!("Hostile {what}");
        let answer = in_session
            .call("write", json!({"title": title, "body": ""}))
            .await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
    }
    let query = RawHttp::new(&format!("{}?access_token={valid}", server.url), None)
        .initialize()
        .await;
    assert_eq!(query.status, 401, "a token in the query string");
    let listed = honest.request("resources/list", json!({})).await.result();
    let listed = listed.to_string();
    assert!(
        !listed.contains("hostile"),
        "no hostile write reached a handler: {listed}"
    );
    // The unknown kids made one refetch at most, whatever their number.
    assert!(issuer.fetches() <= 2, "{} fetches", issuer.fetches());
}

#[tokio::test]
async fn a_new_key_with_a_new_kid_is_picked_up() {
    let old = Key::generate("2026-11", Algorithm::ES256);
    let issuer = Issuer::start(&[&old]).await;
    let server = start_pkb(&issuer).await;
    let resource = server.url.clone();
    let new = Key::generate("2026-12", Algorithm::EdDSA);
    issuer.add_key(&new);
    let token = new.sign(&claims(&issuer.url, &resource, "erin", "notes:read"));
    let mut raw = RawHttp::new(&server.url, Some(&token));
    assert!(raw.initialize().await.status.is_success());
    assert_eq!(issuer.fetches(), 2);
    let answer = raw.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(answer.result()["isError"], false);
}

/// A key the issuer withdraws (a leaked one) stops being trusted once the set goes stale, as
/// its `Cache-Control` says, though tokens signed with it name a `kid` the server knows.
#[tokio::test]
async fn a_withdrawn_key_stops_working_once_the_set_goes_stale() {
    let leaked = Key::generate("leaked", Algorithm::ES256);
    let kept = Key::generate("kept", Algorithm::ES256);
    let issuer = Issuer::start_fresh_for(&[&leaked, &kept], Some(1)).await;
    let server = start_pkb(&issuer).await;
    let resource = server.url.clone();
    let forged = leaked.sign(&claims(&issuer.url, &resource, "anyone", "notes:read"));
    let honest = kept.sign(&claims(&issuer.url, &resource, "erin", "notes:read"));
    assert!(
        RawHttp::new(&server.url, Some(&forged))
            .initialize()
            .await
            .status
            .is_success()
    );
    issuer.remove_key("leaked");
    support::refused_within(&server.url, &forged, Duration::from_secs(10)).await;
    assert!(
        RawHttp::new(&server.url, Some(&honest))
            .initialize()
            .await
            .status
            .is_success(),
        "the key still in the set still works"
    );
}

#[tokio::test]
async fn an_issuer_without_reachable_keys_is_refused_at_start() {
    let (status, _, stderr) = support::run_command(&[
        "--memory",
        "--http",
        "127.0.0.1:0",
        "--auth",
        "oauth",
        "--oauth-issuer",
        "http://127.0.0.1:9",
    ]);
    assert!(!status.success());
    assert!(stderr.contains("--oauth-jwks-url"), "{stderr}");
}

#[tokio::test]
async fn the_web_page_is_not_served_to_oauth_users() {
    let key = Key::generate("k1", Algorithm::ES256);
    let issuer = Issuer::start(&[&key]).await;
    let server = start_pkb(&issuer).await;
    for path in [
        "/",
        "/notes/welcome",
        "/deleted",
        "/sign-in",
        "/web/style.css",
    ] {
        let answer = http_client()
            .get(format!("{}{path}", server.origin()))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 404, "{path}");
    }
}
