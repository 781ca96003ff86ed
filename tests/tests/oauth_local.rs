//! `--auth local`: PKB as its own OAuth authorization server, driven over real HTTP as a
//! client and a person would (register, authorize, sign in, approve, trade the code, call
//! tools, refresh, revoke), and the hostile cases, each refused with the right OAuth error
//! and nothing issued.

#[macro_use]
mod support;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use support::local_oauth::{
    Browser, CALLBACK, DocumentServer, FlowClient, LocalServer, PASSWORD, Pkce, create_account,
    no_redirects, query_param, token_request, with_password,
};
use support::{RawHttp, http_client};

/// The claims of a JWT, unchecked.
fn claims_of(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// An initialized session with `token`, or the refusal's status.
async fn session(server: &LocalServer, token: &str) -> Result<RawHttp, u16> {
    let mut raw = RawHttp::new(server.resource(), Some(token));
    let answer = raw.initialize().await;
    if answer.status.is_success() {
        Ok(raw)
    } else {
        Err(answer.status.as_u16())
    }
}

/// Waits until `token` is refused (401, naming the resource metadata), at most one second.
async fn refused_within_a_second(server: &LocalServer, token: &str) {
    let answer = support::refused_within(server.resource(), token, Duration::from_secs(1)).await;
    let challenge = answer.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="),
        "{answer:?}"
    );
}

fn assert_oauth_error(answer: &(u16, Value), status: u16, error: &str) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"], error, "{}", answer.1);
    assert!(answer.1.get("access_token").is_none(), "nothing issued");
}

/// The JSON at `url`.
async fn get_json(url: String) -> Value {
    let answer = http_client().get(&url).send().await.unwrap();
    assert!(answer.status().is_success(), "{url}: {answer:?}");
    answer.json().await.unwrap()
}

/// `answer` is RFC 6749's `invalid_grant`, and issued nothing.
fn assert_invalid_grant(answer: &(u16, Value)) {
    assert_oauth_error(answer, 400, "invalid_grant");
}

fn assert_page_headers(page: &support::local_oauth::Page) {
    assert_eq!(
        page.header("content-security-policy"),
        Some("frame-ancestors 'none'; default-src 'self'"),
        "{page:?}"
    );
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("referrer-policy"), Some("same-origin"));
    assert_eq!(page.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn metadata_names_the_endpoints_and_the_resource() {
    let server = LocalServer::start(&[]).await;
    let origin = server.origin();
    let metadata: Value =
        get_json(format!("{origin}/.well-known/oauth-authorization-server")).await;
    assert_eq!(metadata["issuer"], origin);
    for (field, path) in [
        ("authorization_endpoint", "/oauth/authorize"),
        ("token_endpoint", "/oauth/token"),
        ("registration_endpoint", "/oauth/register"),
        ("revocation_endpoint", "/oauth/revoke"),
        ("jwks_uri", "/oauth/jwks"),
    ] {
        assert_eq!(metadata[field], format!("{origin}{path}"), "{field}");
    }
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );
    assert_eq!(
        metadata["grant_types_supported"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(metadata["response_types_supported"], json!(["code"]));
    assert_eq!(
        metadata["scopes_supported"],
        json!(["notes:read", "notes:write"])
    );
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    assert!(
        metadata["token_endpoint_auth_methods_supported"]
            .as_array()
            .unwrap()
            .contains(&json!("none"))
    );
    let resource: Value =
        get_json(format!("{origin}/.well-known/oauth-protected-resource/mcp")).await;
    assert_eq!(resource["resource"], server.resource());
    assert_eq!(resource["authorization_servers"], json!([origin]));
    let keys: Value = get_json(format!("{origin}/oauth/jwks")).await;
    assert_eq!(keys["keys"][0]["kty"], "EC");
    assert_eq!(keys["keys"][0]["crv"], "P-256");
    assert!(keys["keys"][0].get("d").is_none(), "no private part");
    let unauthorized = RawHttp::new(server.resource(), None).initialize().await;
    assert_eq!(unauthorized.status, 401);
    assert_eq!(
        unauthorized.header("www-authenticate"),
        Some(format!(
            "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
        ))
    );
}

#[tokio::test]
async fn the_whole_flow_reaches_the_notes_and_refresh_tokens_rotate() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Test <Client>").await;
    let pkce = Pkce::new();
    let mut browser = Browser::new(server.origin());
    let sign_in = browser
        .authorize(&client.query(&pkce, "notes:read notes:write"))
        .await;
    assert_eq!(sign_in.status, 200);
    assert_page_headers(&sign_in);
    assert!(
        sign_in.body.contains("Test &lt;Client&gt;"),
        "escaped once: {}",
        sign_in.body
    );
    assert!(!sign_in.body.contains("<Client>"));
    let consent = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert_page_headers(&consent);
    assert!(consent.body.contains("Test &lt;Client&gt;"));
    assert!(
        consent.body.contains(CALLBACK),
        "names where it sends: {}",
        consent.body
    );
    assert!(consent.body.contains("read and change your notes"));
    let back = browser.decide(&consent, "allow").await;
    assert_eq!(back.status, 303);
    let location = back.redirect().unwrap();
    assert!(location.as_str().starts_with(CALLBACK), "{location}");
    assert_eq!(
        query_param(&location, "state").as_deref(),
        Some("opaque state 123")
    );
    assert_eq!(
        query_param(&location, "iss").as_deref(),
        Some(server.origin())
    );
    let code = query_param(&location, "code").unwrap();

    let (status, body) = client.redeem(&code, &pkce.verifier).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_type"], "Bearer");
    assert_eq!(body["expires_in"], 3600);
    assert_eq!(body["scope"], "notes:read notes:write");
    let access = body["access_token"].as_str().unwrap().to_owned();
    let refresh = body["refresh_token"].as_str().unwrap().to_owned();
    let claims = claims_of(&access);
    assert_eq!(claims["iss"], server.origin());
    assert_eq!(claims["aud"], server.resource());
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["client_id"], client.client_id.as_str());
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );

    let raw = session(&server, &access)
        .await
        .expect("the token opens a session");
    let written = raw
        .call("write", json!({"title": "Through OAuth", "body": "hello"}))
        .await;
    assert_eq!(written.result()["structuredContent"]["id"], "through-oauth");

    let (status, rotated) = client.refresh(&refresh).await;
    assert_eq!(status, 200, "{rotated}");
    let access2 = rotated["access_token"].as_str().unwrap().to_owned();
    let refresh2 = rotated["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(refresh2, refresh, "rotated");
    let fetched = session(&server, &access2)
        .await
        .unwrap()
        .call("fetch", json!({"id": "through-oauth"}))
        .await;
    assert_eq!(
        fetched.result()["structuredContent"]["note"]["body"],
        "hello"
    );

    // The spent refresh token again: refused, and its whole family with it.
    assert_invalid_grant(&client.refresh(&refresh).await);
    refused_within_a_second(&server, &access2).await;
    refused_within_a_second(&server, &access).await;
    assert_invalid_grant(&client.refresh(&refresh2).await);
}

#[tokio::test]
async fn revocation_and_account_revoke_end_a_clients_tokens() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Revoked client").await;

    // RFC 7009 with the refresh token.
    let (access, refresh) = client.tokens_for("alice", "notes:read notes:write").await;
    session(&server, &access).await.unwrap();
    let revoked = no_redirects()
        .post(format!("{}/oauth/revoke", server.origin()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(support::local_oauth::form(&[
            ("token", &refresh),
            ("client_id", &client.client_id),
        ]))
        .send()
        .await
        .unwrap();
    assert_eq!(revoked.status(), 200);
    refused_within_a_second(&server, &access).await;
    assert_invalid_grant(&client.refresh(&refresh).await);

    // At the terminal.
    let (access, refresh) = client.tokens_for("alice", "notes:read").await;
    let (ok, listed, _) = server.command(&["account", "clients", "alice"]);
    assert!(ok);
    assert!(
        listed.contains(&client.client_id) && listed.contains("Revoked client"),
        "{listed}"
    );
    let (ok, bob_listed, _) = server.command(&["account", "clients", "bob"]);
    assert!(ok && bob_listed.is_empty(), "{bob_listed}");
    let (ok, _, stderr) = server.command(&["account", "revoke", "bob", &client.client_id]);
    assert!(!ok, "bob never authorized it: {stderr}");
    session(&server, &access)
        .await
        .expect("bob's revoke changed nothing");
    let (ok, _, stderr) = server.command(&["account", "revoke", "alice", &client.client_id]);
    assert!(ok, "{stderr}");
    refused_within_a_second(&server, &access).await;
    assert_invalid_grant(&client.refresh(&refresh).await);
    let (_, listed, _) = server.command(&["account", "clients", "alice"]);
    assert!(listed.is_empty(), "{listed}");
}

#[tokio::test]
async fn a_redirect_uri_not_registered_is_shown_on_pkbs_page() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    for redirect in [
        "https://attacker.example/callback",
        "http://127.0.0.1:9/other",
        "http://localhost.attacker.example:9/callback",
    ] {
        let mut query = client.query(&pkce, "notes:read");
        query.retain(|(name, _)| *name != "redirect_uri");
        query.push(("redirect_uri", redirect));
        let page = Browser::new(server.origin()).authorize(&query).await;
        assert_eq!(page.status, 400, "{redirect}: {page:?}");
        assert!(page.redirect().is_none(), "never redirected to");
        assert!(page.body.contains("did not register"), "{}", page.body);
        assert_page_headers(&page);
    }
    // An unknown client, or none.
    for client_id in [Some("pkbc_never-registered"), None] {
        let mut query = client.query(&pkce, "notes:read");
        query.retain(|(name, _)| *name != "client_id");
        if let Some(client_id) = client_id {
            query.push(("client_id", client_id));
        }
        let page = Browser::new(server.origin()).authorize(&query).await;
        assert_eq!(page.status, 400);
        assert!(page.redirect().is_none());
    }
    // A loopback redirect URI may change its port (RFC 8252), nothing else.
    let mut query = client.query(&pkce, "notes:read");
    query.retain(|(name, _)| *name != "redirect_uri");
    query.push(("redirect_uri", "http://127.0.0.1:54321/callback"));
    let page = Browser::new(server.origin()).authorize(&query).await;
    assert_eq!(page.status, 200, "{}", page.body);
}

/// `page` is the refusal `error` of an authorization request: at the client's redirect URI
/// with its state when the client is `trusted`, else on PKB's own page; nothing issued.
fn assert_refused(page: &support::local_oauth::Page, trusted: bool, error: &str) {
    if !trusted {
        assert_eq!(page.status, 400, "{page:?}");
        assert!(page.redirect().is_none(), "not redirected: {page:?}");
        assert!(page.body.contains(error), "{}", page.body);
        assert_page_headers(page);
        return;
    }
    assert_eq!(page.status, 303, "{page:?}");
    let location = page.redirect().unwrap();
    assert!(location.as_str().starts_with(CALLBACK));
    assert_eq!(query_param(&location, "error").as_deref(), Some(error));
    assert_eq!(
        query_param(&location, "state").as_deref(),
        Some("opaque state 123")
    );
    assert!(query_param(&location, "code").is_none(), "nothing issued");
}

#[tokio::test]
async fn the_pages_show_hosts_in_ascii_and_a_registered_name_as_its_claim() {
    let server = LocalServer::start(&[]).await;
    let look_alike = "https://\u{430}pple.com/callback";
    let client = FlowClient {
        origin: server.origin().to_owned(),
        client_id: support::local_oauth::register(
            server.origin(),
            "Claude (claude.ai)",
            &[look_alike],
        )
        .await,
        redirect_uri: look_alike.to_owned(),
    };
    let mut browser = Browser::new(server.origin());
    let sign_in = browser
        .authorize(&client.query(&Pkce::new(), "notes:read"))
        .await;
    assert_eq!(sign_in.status, 200, "{}", sign_in.body);
    let claim =
        "calls itself <strong>“Claude (claude.ai)”</strong> (its own claim, not verified by PKB)";
    assert!(sign_in.body.contains(claim), "{}", sign_in.body);
    let consent = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains(claim), "{}", consent.body);
    assert!(
        consent.body.contains("https://xn--pple-43d.com/callback"),
        "{}",
        consent.body
    );
    assert!(!consent.body.contains('\u{430}'), "{}", consent.body);
}

#[tokio::test]
async fn pkce_missing_or_plain_is_refused() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    // A registered client hears of its errors only once a person has approved it.
    for approved in [false, true] {
        if approved {
            client.tokens_for("alice", "notes:read").await;
        }
        let cases: [&[&str]; 3] = [
            &["code_challenge", "code_challenge_method"],
            &["code_challenge_method"],
            &[],
        ];
        for (n, removed) in cases.into_iter().enumerate() {
            let mut query = client.query(&pkce, "notes:read");
            query.retain(|(name, _)| !removed.contains(name));
            if n == 2 {
                query.retain(|(name, _)| *name != "code_challenge_method");
                query.push(("code_challenge_method", "plain"));
            }
            let page = Browser::new(server.origin()).authorize(&query).await;
            assert_refused(&page, approved, "invalid_request");
        }
        // A resource that is not PKB's, a scope it does not know, a response type it does
        // not give.
        for (name, value, error) in [
            (
                "resource",
                "https://elsewhere.example/mcp",
                "invalid_target",
            ),
            ("scope", "notes:read admin", "invalid_scope"),
            ("response_type", "token", "unsupported_response_type"),
        ] {
            let mut query = client.query(&pkce, "notes:read");
            query.retain(|(key, _)| *key != name);
            query.push((name, value));
            let page = Browser::new(server.origin()).authorize(&query).await;
            assert_refused(&page, approved, error);
        }
    }
}

#[tokio::test]
async fn a_registered_clients_errors_are_not_an_open_redirect() {
    let server = LocalServer::start(&[]).await;
    let phish = "https://attacker.example/phish";
    let client = FlowClient {
        origin: server.origin().to_owned(),
        client_id: support::local_oauth::register(server.origin(), "Innocent", &[phish]).await,
        redirect_uri: phish.to_owned(),
    };
    let pkce = Pkce::new();
    for (name, value) in [
        ("response_type", "token"),
        ("code_challenge_method", "plain"),
        ("scope", "admin"),
    ] {
        let mut query = client.query(&pkce, "notes:read");
        query.retain(|(key, _)| *key != name);
        query.push((name, value));
        let page = Browser::new(server.origin()).authorize(&query).await;
        assert_eq!(page.status, 400, "{name}: {page:?}");
        assert!(page.redirect().is_none(), "{name}: {page:?}");
        assert!(!page.body.contains("attacker"), "{}", page.body);
    }
}

#[tokio::test]
async fn codes_are_bound_to_their_verifier_and_client_and_used_once() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let other = FlowClient::register(&server, "Other").await;

    // A wrong verifier.
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    assert_invalid_grant(&client.redeem(&code, &Pkce::new().verifier).await);
    assert_invalid_grant(&client.redeem(&code, &pkce.verifier).await);

    // Another redirect URI than the request's.
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    let elsewhere = FlowClient {
        redirect_uri: "http://127.0.0.1:9/elsewhere".to_owned(),
        origin: client.origin.clone(),
        client_id: client.client_id.clone(),
    };
    assert_invalid_grant(&elsewhere.redeem(&code, &pkce.verifier).await);

    // Another client's code.
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    assert_invalid_grant(&other.redeem(&code, &pkce.verifier).await);

    // A code used twice: refused, and the tokens it gave revoked.
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    let (status, body) = client.redeem(&code, &pkce.verifier).await;
    assert_eq!(status, 200, "{body}");
    let access = body["access_token"].as_str().unwrap().to_owned();
    session(&server, &access).await.unwrap();
    assert_invalid_grant(&client.redeem(&code, &pkce.verifier).await);
    refused_within_a_second(&server, &access).await;
    let refresh = body["refresh_token"].as_str().unwrap();
    assert_invalid_grant(&client.refresh(refresh).await);
}

#[tokio::test]
async fn a_code_used_twice_at_the_same_moment_ends_its_grant() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    for round in 0..5 {
        let pkce = Pkce::new();
        let code = client.code_for("alice", &pkce, "notes:read").await;
        let (first, second) = tokio::join!(
            client.redeem(&code, &pkce.verifier),
            client.redeem(&code, &pkce.verifier)
        );
        for answer in [first, second] {
            if answer.0 != 200 {
                assert_invalid_grant(&answer);
                continue;
            }
            // One use may win the race, but what it got must not outlive the other use.
            let access = answer.1["access_token"].as_str().unwrap();
            refused_within_a_second(&server, access).await;
            let refresh = answer.1["refresh_token"].as_str().unwrap();
            assert_invalid_grant(&client.refresh(refresh).await);
            eprintln!("round {round}: one use was answered, and its grant ended");
        }
    }
}

#[tokio::test]
async fn a_new_password_ends_every_grant_of_the_account() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let (access, refresh) = client.tokens_for("alice", "notes:read notes:write").await;
    let (bob, _) = client.tokens_for("bob", "notes:read").await;
    session(&server, &access).await.unwrap();
    // A code the old password gave, redeemed after the change.
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    let new_password = "another long password";
    let changed = with_password(
        &server.data_dir,
        &["account", "password", "alice"],
        new_password,
    );
    assert!(
        changed.status.success(),
        "{}",
        String::from_utf8_lossy(&changed.stderr)
    );
    refused_within_a_second(&server, &access).await;
    assert_invalid_grant(&client.refresh(&refresh).await);
    assert_invalid_grant(&client.redeem(&code, &pkce.verifier).await);
    let (_, listed, _) = server.command(&["account", "clients", "alice"]);
    assert!(listed.is_empty(), "{listed}");
    session(&server, &bob).await.expect("bob's grant stands");
    // The old password no longer signs in; the new one does.
    let mut browser = Browser::new(server.origin());
    let sign_in = browser
        .authorize(&client.query(&Pkce::new(), "notes:read"))
        .await;
    assert_eq!(
        browser.sign_in(&sign_in, "alice", PASSWORD).await.status,
        401
    );
    let consent = browser.sign_in(&sign_in, "alice", new_password).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    let code = client.code_for("alice", &pkce, "notes:read").await;
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_invalid_grant(&client.redeem(&code, &pkce.verifier).await);
}

#[tokio::test]
async fn the_token_endpoint_answers_rfc_6749_errors() {
    let server = LocalServer::start(&[]).await;
    let origin = server.origin();
    let refresh = [
        ("grant_type", "refresh_token"),
        ("client_id", "x"),
        ("refresh_token", "pkbr.a.b"),
    ];
    /// A token request's parameters, and the status and error it gets.
    type Case<'a> = (&'a [(&'a str, &'a str)], u16, &'a str);
    let cases: [Case; 5] = [
        (
            &[("grant_type", "password"), ("client_id", "x")],
            400,
            "unsupported_grant_type",
        ),
        (
            &[("grant_type", "authorization_code"), ("code", "x")],
            401,
            "invalid_client",
        ),
        (&[("client_id", "x")], 400, "invalid_request"),
        (&refresh, 400, "invalid_grant"),
        (
            &[
                refresh[0],
                refresh[1],
                refresh[2],
                ("resource", "https://elsewhere.example/mcp"),
            ],
            400,
            "invalid_target",
        ),
    ];
    for (pairs, status, error) in cases {
        assert_oauth_error(&token_request(origin, pairs).await, status, error);
    }
    // Registration refuses redirect URIs that are neither https nor loopback.
    for body in [
        json!({"redirect_uris": ["http://example.com/callback"]}),
        json!({"redirect_uris": []}),
        json!({"client_name": "no redirect"}),
    ] {
        let answer = http_client()
            .post(format!("{origin}/oauth/register"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400);
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["error"], "invalid_redirect_uri", "{body}");
    }
}

#[tokio::test]
async fn forms_need_their_csrf_token_and_their_browser() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    let mut browser = Browser::new(server.origin());
    let sign_in = browser.authorize(&client.query(&pkce, "notes:read")).await;
    let request = sign_in.field("request").unwrap();
    let csrf = sign_in.field("csrf").unwrap();
    for fields in [
        vec![
            ("request", request.as_str()),
            ("account", "alice"),
            ("password", PASSWORD),
        ],
        vec![
            ("request", request.as_str()),
            ("csrf", "forged"),
            ("account", "alice"),
            ("password", PASSWORD),
        ],
    ] {
        let page = browser.post("/oauth/sign-in", &fields).await;
        assert_eq!(page.status, 403, "{page:?}");
        assert!(!page.body.contains("Allow"));
    }
    // The right fields from another browser (no cookie).
    let stranger = Browser::new(server.origin());
    let page = stranger
        .post(
            "/oauth/sign-in",
            &[
                ("request", &request),
                ("csrf", &csrf),
                ("account", "alice"),
                ("password", PASSWORD),
            ],
        )
        .await;
    assert_eq!(page.status, 403);

    let consent = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    assert_eq!(consent.status, 200);
    let request = consent.field("request").unwrap();
    let consent_csrf = consent.field("csrf").unwrap();
    assert_ne!(consent_csrf, csrf, "each form has its own token");
    for fields in [
        vec![("request", request.as_str()), ("decision", "allow")],
        vec![
            ("request", request.as_str()),
            ("csrf", csrf.as_str()),
            ("decision", "allow"),
        ],
    ] {
        let page = browser.post("/oauth/consent", &fields).await;
        assert_eq!(page.status, 403, "{page:?}");
        assert!(page.redirect().is_none(), "no code without the token");
        assert_page_headers(&page);
    }
    let page = stranger
        .post(
            "/oauth/consent",
            &[
                ("request", &request),
                ("csrf", &consent_csrf),
                ("decision", "allow"),
            ],
        )
        .await;
    assert_eq!(page.status, 403);
    let back = browser.decide(&consent, "allow").await;
    assert_eq!(back.status, 303);
    assert!(query_param(&back.redirect().unwrap(), "code").is_some());
    // Denied: the client hears access_denied, with its state.
    let mut browser = Browser::new(server.origin());
    let sign_in = browser.authorize(&client.query(&pkce, "notes:read")).await;
    let consent = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    let back = browser.decide(&consent, "deny").await;
    let location = back.redirect().unwrap();
    assert_eq!(
        query_param(&location, "error").as_deref(),
        Some("access_denied")
    );
    assert!(query_param(&location, "code").is_none());
}

#[tokio::test]
async fn a_flood_of_authorization_links_locks_nobody_out() {
    use futures::StreamExt;
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    let url = format!(
        "{}/oauth/authorize?{}",
        server.origin(),
        support::local_oauth::form(&client.query(&pkce, "notes:read"))
    );
    // More than the 10,000 requests that once filled the server's list of sign-ins under way.
    let anonymous = no_redirects();
    let statuses: Vec<u16> = futures::stream::iter(0..10_050)
        .map(|_| {
            let (anonymous, url) = (anonymous.clone(), url.clone());
            async move { anonymous.get(url).send().await.unwrap().status().as_u16() }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200), "every link is answered");
    let (access, _) = client.tokens_for("alice", "notes:read").await;
    session(&server, &access)
        .await
        .expect("a person still signs in");
}

#[tokio::test]
async fn registrations_are_bounded_per_source_and_kept_apart_from_grants() {
    let server = LocalServer::start(&[]).await;
    let approved = FlowClient::register(&server, "Approved").await;
    let (access, _) = approved.tokens_for("alice", "notes:read").await;
    let mut answers = Vec::new();
    for n in 0..25 {
        let answer = no_redirects()
            .post(format!("{}/oauth/register", server.origin()))
            .json(&json!({"client_name": format!("Flood {n}"), "redirect_uris": [CALLBACK]}))
            .send()
            .await
            .unwrap();
        let retry_after = answer.headers().get("retry-after").cloned();
        answers.push((answer.status().as_u16(), retry_after));
    }
    // Twenty a source an hour, the approved client's registration among them.
    let accepted = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(accepted, 19, "{answers:?}");
    for (status, retry_after) in &answers[19..] {
        assert_eq!(*status, 429);
        assert!(retry_after.is_some());
    }
    let grants = std::fs::read_to_string(format!("{}/oauth-grants.json", server.data_dir)).unwrap();
    assert!(!grants.contains("Flood"), "{grants}");
    let clients =
        std::fs::read_to_string(format!("{}/oauth-clients.json", server.data_dir)).unwrap();
    assert!(clients.contains("Flood 0"), "{clients}");
    session(&server, &access).await.unwrap();
    let page = Browser::new(server.origin())
        .authorize(&approved.query(&Pkce::new(), "notes:read"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
}

/// The most memory the server process has held (`VmHWM`), in MiB.
#[cfg(target_os = "linux")]
fn peak_memory_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        / 1024
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn sign_ins_naming_no_account_keep_memory_bounded() {
    use futures::StreamExt;
    let server = LocalServer::start(&[]).await;
    let pid = server.server.child.id().unwrap();
    let client = FlowClient::register(&server, "Client").await;
    let mut browser = Browser::new(server.origin());
    let sign_in = browser
        .authorize(&client.query(&Pkce::new(), "notes:read"))
        .await;
    let browser = &browser;
    let sign_in = &sign_in;
    // Posts until 200 passwords have been checked (401); the others find every check place
    // taken (503), as a flood does. Before each check thread kept its memory, 20 checks took
    // the server past 400 MiB.
    let mut checked = 0;
    let mut posts = futures::stream::iter(0..)
        .map(|n| async move {
            let name = format!("nobody{n}");
            browser
                .sign_in(sign_in, &name, "wrong password here")
                .await
                .status
        })
        .buffer_unordered(32);
    while checked < 200 {
        let status = posts.next().await.unwrap();
        assert!(status == 401 || status == 503, "{status}");
        checked += usize::from(status == 401);
    }
    drop(posts);
    let peak = peak_memory_mib(pid);
    eprintln!("peak memory after {checked} checks: {peak} MiB");
    assert!(peak < 300, "{peak} MiB");
}

#[tokio::test]
async fn eleven_wrong_passwords_lock_the_account() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let pkce = Pkce::new();
    let mut browser = Browser::new(server.origin());
    let sign_in = browser.authorize(&client.query(&pkce, "notes:read")).await;
    for name in ["alice", "nobody"] {
        for attempt in 1..=11 {
            let page = browser.sign_in(&sign_in, name, "wrong password here").await;
            assert_eq!(page.status, 401, "{name} {attempt}");
            let locked = page.body.contains("Too many failed sign-ins");
            assert_eq!(locked, attempt >= 10, "{name} {attempt}: {}", page.body);
            assert!(page.field("request").is_some(), "the form is shown again");
        }
    }
    // A name no account can have is refused alike, and a body over 64 KiB is not read.
    let page = browser.sign_in(&sign_in, "<alice>", PASSWORD).await;
    assert_eq!(page.status, 401);
    assert!(!page.body.contains("<alice>") && !page.body.contains("&lt;alice&gt;"));
    let page = browser.sign_in(&sign_in, "bob", &"x".repeat(100_000)).await;
    assert_eq!(page.status, 413);
    // Locked: even the right password fails, and the same way for a name without an account.
    let page = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    assert!(
        page.body.contains("Too many failed sign-ins"),
        "{}",
        page.body
    );
    // Another account is not locked.
    let consent = browser.sign_in(&sign_in, "bob", PASSWORD).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    assert!(consent.body.contains("Allow"));
}

#[tokio::test]
async fn a_deleted_accounts_tokens_stop_working() {
    let server = LocalServer::start(&[]).await;
    let client = FlowClient::register(&server, "Client").await;
    let (access, refresh) = client.tokens_for("alice", "notes:read notes:write").await;
    session(&server, &access).await.unwrap();
    let (ok, _, stderr) = server.command(&["account", "delete", "alice"]);
    assert!(ok, "{stderr}");
    refused_within_a_second(&server, &access).await;
    assert_invalid_grant(&client.refresh(&refresh).await);
    let mut browser = Browser::new(server.origin());
    let sign_in = browser
        .authorize(&client.query(&Pkce::new(), "notes:read"))
        .await;
    let page = browser.sign_in(&sign_in, "alice", PASSWORD).await;
    assert_eq!(page.status, 401, "a deleted account cannot sign in");
}

#[tokio::test]
async fn accounts_are_isolated_and_a_token_of_the_same_name_is_the_same_user() {
    let server = LocalServer::start(&["--no-seed"]).await;
    let client = FlowClient::register(&server, "Client").await;
    let (alice, _) = client.tokens_for("alice", "notes:read notes:write").await;
    let (bob, _) = client.tokens_for("bob", "notes:read notes:write").await;
    let (reader, _) = client.tokens_for("bob", "notes:read").await;
    let alice_session = session(&server, &alice).await.unwrap();
    let written = alice_session
        .call("write", json!({"title": "Alice secret", "body": "mine"}))
        .await;
    assert_eq!(written.result()["structuredContent"]["id"], "alice-secret");
    let bob_session = session(&server, &bob).await.unwrap();
    let fetched = bob_session
        .call("fetch", json!({"id": "alice-secret"}))
        .await;
    assert_eq!(
        fetched.result()["content"][0]["text"],
        "No note found with ID: alice-secret"
    );
    let found = bob_session
        .call("search", json!({"query": "secret", "mode": "words"}))
        .await;
    assert_eq!(found.result()["structuredContent"]["results"], json!([]));
    let listed = bob_session.request("resources/list", json!({})).await;
    assert!(!listed.body.contains("alice-secret"), "{listed:?}");
    let read = bob_session
        .request("resources/read", json!({"uri": "pkb://notes/alice-secret"}))
        .await;
    assert!(
        read.message.unwrap()["error"].is_object(),
        "not Bob's to read"
    );
    let completed = bob_session
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "pkb://notes/{id}"},
                   "argument": {"name": "id", "value": "alice"}}),
        )
        .await;
    assert_eq!(completed.result()["completion"]["values"], json!([]));
    // Bob's token on Alice's session: a session he does not have.
    let hijack = alice_session
        .with_token(Some(&bob))
        .call("fetch", json!({"id": "alice-secret"}))
        .await;
    assert_eq!(hijack.status, 404, "{hijack:?}");
    // A read-only grant cannot write.
    let read_only = session(&server, &reader).await.unwrap();
    let refused = read_only
        .call("write", json!({"title": "x", "body": "y"}))
        .await;
    assert_eq!(refused.status, 403);
    let challenge = refused.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"notes:write\"")
            && challenge.contains("resource_metadata="),
        "{challenge}"
    );
    // A token of `token create alice` is Alice, with her notes.
    let (ok, token, stderr) = server.command(&["token", "create", "alice"]);
    assert!(ok, "{stderr}");
    let by_token = session(&server, token.trim()).await.unwrap();
    let fetched = by_token.call("fetch", json!({"id": "alice-secret"})).await;
    assert_eq!(
        fetched.result()["structuredContent"]["note"]["body"],
        "mine"
    );
}

#[test]
fn account_commands_keep_hashes_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    create_account(path, "alice", PASSWORD);
    let run = |args: &[&str]| {
        let mut all = vec!["--data-dir", path];
        all.extend_from_slice(args);
        support::run_command(&all)
    };
    let (status, stdout, _) = run(&["account", "list"]);
    assert!(status.success());
    assert!(stdout.starts_with("alice\t"), "{stdout}");
    let stored = std::fs::read_to_string(dir.path().join("accounts.json")).unwrap();
    assert!(stored.contains("$argon2id$"));
    assert!(!stored.contains(PASSWORD));
    // Too short, taken, unknown: refused, saying why.
    let short = with_password(path, &["account", "create", "bob"], "short");
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("at least 12 characters"));
    let taken = with_password(path, &["account", "create", "alice"], PASSWORD);
    assert!(!taken.status.success());
    assert!(String::from_utf8_lossy(&taken.stderr).contains("exists"));
    let (status, _, stderr) = run(&["account", "delete", "bob"]);
    assert!(
        !status.success() && stderr.contains("no account named `bob`"),
        "{stderr}"
    );
    let changed = with_password(
        path,
        &["account", "password", "alice"],
        "another long password",
    );
    assert!(changed.status.success());
    assert_ne!(
        std::fs::read_to_string(dir.path().join("accounts.json")).unwrap(),
        stored,
        "a new hash"
    );
    let unknown = with_password(
        path,
        &["account", "password", "bob"],
        "another long password",
    );
    assert!(!unknown.status.success());
    let (status, _, stderr) = run(&["account", "delete", "alice"]);
    assert!(status.success(), "{stderr}");
    let (_, stdout, _) = run(&["account", "list"]);
    assert!(stdout.is_empty(), "{stdout}");
}

fn client_document(client_id: &str, name: &str) -> Vec<u8> {
    json!({"client_id": client_id, "client_name": name, "redirect_uris": [CALLBACK]})
        .to_string()
        .into_bytes()
}

#[tokio::test]
async fn client_metadata_documents_are_fetched_with_limits() {
    let dir = tempfile::tempdir().unwrap();
    let certificates = support::test_certificates(dir.path());
    let documents = DocumentServer::start(&certificates, |origin| {
        let mut documents = HashMap::new();
        let good = format!("{origin}/good.json");
        documents.insert(
            "/good.json".into(),
            (Duration::ZERO, client_document(&good, "Doc Client")),
        );
        documents.insert(
            "/liar.json".into(),
            (
                Duration::ZERO,
                client_document(&format!("{origin}/other.json"), "Liar"),
            ),
        );
        let mut large: Value =
            serde_json::from_slice(&client_document(&format!("{origin}/large.json"), "Large"))
                .unwrap();
        large["padding"] = json!("x".repeat(70 * 1024));
        documents.insert(
            "/large.json".into(),
            (Duration::ZERO, large.to_string().into_bytes()),
        );
        documents.insert(
            "/slow.json".into(),
            (
                Duration::from_secs(7),
                client_document(&format!("{origin}/slow.json"), "Slow"),
            ),
        );
        documents
    })
    .await;
    let server = LocalServer::start_with_env(
        &["--allow-local-clients"],
        &[("SSL_CERT_FILE", certificates.ca.as_str())],
    )
    .await;

    // A good document: the whole flow, with the URL as the client id.
    let client = FlowClient {
        origin: server.origin().to_owned(),
        client_id: format!("{}/good.json", documents.origin),
        redirect_uri: CALLBACK.to_owned(),
    };
    let pkce = Pkce::new();
    let mut browser = Browser::new(server.origin());
    let sign_in = browser.authorize(&client.query(&pkce, "notes:read")).await;
    assert_eq!(sign_in.status, 200, "{}", sign_in.body);
    assert!(
        sign_in.body.contains("Doc Client (127.0.0.1)"),
        "{}",
        sign_in.body
    );
    // Its redirect URIs are its host's word: its errors go back to it.
    let mut query = client.query(&pkce, "notes:read");
    query.retain(|(key, _)| *key != "response_type");
    query.push(("response_type", "token"));
    let page = Browser::new(server.origin()).authorize(&query).await;
    assert_refused(&page, true, "unsupported_response_type");
    let (access, _) = client.tokens_for("alice", "notes:read").await;
    session(&server, &access).await.unwrap();
    let (_, listed, _) = server.command(&["account", "clients", "alice"]);
    assert!(listed.contains(&client.client_id), "{listed}");

    // Documents that lie, are too large or too slow: PKB's page, no redirect.
    for (path, words) in [
        ("/liar.json", "another client_id"),
        ("/large.json", "over 65536 bytes"),
        ("/slow.json", "within 5 s"),
    ] {
        let liar = FlowClient {
            client_id: format!("{}{path}", documents.origin),
            ..FlowClient::register(&server, "unused").await
        };
        let started = Instant::now();
        let page = Browser::new(server.origin())
            .authorize(&liar.query(&Pkce::new(), "notes:read"))
            .await;
        assert_eq!(page.status, 400, "{path}: {}", page.body);
        assert!(page.redirect().is_none());
        assert!(page.body.contains(words), "{path}: {}", page.body);
        assert!(started.elapsed() < Duration::from_secs(6), "{path}");
    }

    // Without --allow-local-clients, a loopback address is never fetched from.
    let strict =
        LocalServer::start_with_env(&[], &[("SSL_CERT_FILE", certificates.ca.as_str())]).await;
    let before = documents.requests.load(Ordering::SeqCst);
    let port = documents.origin.rsplit(':').next().unwrap();
    for client_id in [
        format!("{}/good.json", documents.origin),
        format!("https://localhost:{port}/good.json"),
    ] {
        let page = Browser::new(strict.origin())
            .authorize(&[
                ("response_type", "code"),
                ("client_id", &client_id),
                ("redirect_uri", CALLBACK),
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
            ])
            .await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(page.body.contains("private or loopback"), "{}", page.body);
    }
    assert_eq!(
        documents.requests.load(Ordering::SeqCst),
        before,
        "nothing fetched"
    );
}

#[tokio::test]
async fn a_vault_under_local_auth_is_one_persons_notes() {
    let vault = tempfile::tempdir().unwrap();
    let server = LocalServer::start(&["--vault", vault.path().to_str().unwrap()]).await;
    let client = FlowClient::register(&server, "Client").await;
    let (alice, _) = client.tokens_for("alice", "notes:read notes:write").await;
    let written = session(&server, &alice)
        .await
        .unwrap()
        .call("write", json!({"title": "In the vault", "body": "on disk"}))
        .await;
    assert_eq!(written.result()["structuredContent"]["id"], "in-the-vault");
    let file = std::fs::read_to_string(vault.path().join("in-the-vault.md")).unwrap();
    assert!(file.contains("on disk"), "{file}");
    // Refused without a token, as ever.
    let refused = RawHttp::new(server.resource(), None).initialize().await;
    assert_eq!(refused.status, 401);
}
