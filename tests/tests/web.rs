//! The web page for the person, over real HTTP: what it serves under each `--auth`, its
//! headers, its escaping, and that a restore needs the page's own CSRF token and changes
//! only the signed-in person's notes. The browser's whole story is in `web_browser.rs`.

#[macro_use]
mod support;

use serde_json::{Value, json};
use support::local_oauth::{LocalServer, PASSWORD};
use support::{
    HttpServerProcess, RecordingClient, Sampling, call, connect_http, http_client, structured,
};

/// A browser by hand: one cookie jar, no redirects followed.
struct Browser {
    client: reqwest::Client,
    origin: String,
    cookie: Option<String>,
}

/// What a page answered.
struct Page {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The value of the first hidden field `name`.
    fn field(&self, name: &str) -> Option<String> {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.body.find(&marker)? + marker.len();
        let end = self.body[start..].find('"')? + start;
        Some(self.body[start..end].to_owned())
    }
}

impl Browser {
    fn new(origin: &str) -> Self {
        pkb_core::transport::http::install_crypto_provider();
        Self {
            client: reqwest::Client::builder()
                .no_proxy()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            origin: origin.to_owned(),
            cookie: None,
        }
    }

    fn keep_cookie(&mut self, headers: &reqwest::header::HeaderMap) {
        if let Some(set) = headers.get("set-cookie").and_then(|v| v.to_str().ok()) {
            let pair = set.split(';').next().unwrap_or_default();
            self.cookie = pair
                .split_once('=')
                .filter(|(_, value)| !value.is_empty())
                .map(|_| pair.to_owned());
        }
    }

    async fn answer(&mut self, request: reqwest::RequestBuilder) -> Page {
        let request = match &self.cookie {
            Some(cookie) => request.header("cookie", cookie),
            None => request,
        };
        let response = request.send().await.expect("the page answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        self.keep_cookie(&headers);
        let body = response.text().await.unwrap();
        Page {
            status,
            headers,
            body,
        }
    }

    async fn get(&mut self, path: &str) -> Page {
        let request = self.client.get(format!("{}{path}", self.origin));
        self.answer(request).await
    }

    async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let request = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.answer(request).await
    }

    async fn sign_in(&mut self, account: &str) {
        let form = self.get("/sign-in").await;
        assert_eq!(form.status, 200, "{}", form.body);
        let csrf = form.field("csrf").expect("the form's CSRF token");
        let signed_in = self
            .post(
                "/sign-in",
                &[
                    ("csrf", &csrf),
                    ("account", account),
                    ("password", PASSWORD),
                ],
            )
            .await;
        assert_eq!(signed_in.status, 303, "{}", signed_in.body);
        assert_eq!(signed_in.header("location"), "/");
    }
}

/// Writes a note (or overwrites it) through MCP as the client `test-model 1.0`.
async fn write(mcp_url: &str, token: Option<&str>, title: &str, body: &str) -> Value {
    let client = connect_http(RecordingClient::new(Sampling::Unsupported), mcp_url, token).await;
    let written = call(
        &client,
        "write",
        json!({"title": title, "body": body, "overwrite": true}),
    )
    .await;
    let _ = client.cancel().await;
    Value::Object(structured(&written))
}

async fn history(mcp_url: &str, id: &str) -> Vec<Value> {
    let client = connect_http(RecordingClient::new(Sampling::Unsupported), mcp_url, None).await;
    let answer = structured(&call(&client, "history", json!({"id": id})).await);
    let _ = client.cancel().await;
    answer["versions"].as_array().unwrap().clone()
}

#[tokio::test]
async fn every_page_carries_the_policy_and_note_text_is_escaped_once() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    write(
        &server.url,
        None,
        "<script>alert('t')</script> & co",
        "Hello <img src=x onerror=alert(1)> & [[Nowhere]]\n\n<div>block</div>",
    )
    .await;
    let id = "script-alert-t-script-co";
    let mut browser = Browser::new(server.origin());
    for path in [
        "/".to_owned(),
        format!("/notes/{id}"),
        format!("/notes/{id}/versions/1"),
        "/deleted".to_owned(),
        "/search?q=hello".to_owned(),
        "/notes/no-such-note".to_owned(),
    ] {
        let page = browser.get(&path).await;
        let csp = page.header("content-security-policy");
        for part in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(part), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(page.header("x-frame-options"), "DENY", "{path}");
        assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
        assert!(!page.body.contains("<script>"), "{path}: {}", page.body);
        assert!(!page.body.contains("<img"), "{path}: {}", page.body);
        // Every script the page loads is PKB's own file; none is inline.
        for (n, _) in page.body.match_indices("<script") {
            assert!(
                page.body[n..].starts_with("<script src=\"/web/time.js\""),
                "{path}"
            );
        }
    }
    let note = browser.get(&format!("/notes/{id}")).await;
    assert_eq!(note.status, 200);
    assert!(
        note.body
            .contains("&lt;script&gt;alert('t')&lt;/script&gt; &amp; co"),
        "the title, escaped once: {}",
        note.body
    );
    assert!(
        note.body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "raw HTML shown as text: {}",
        note.body
    );
    assert!(
        note.body.contains("&lt;div&gt;block&lt;/div&gt;"),
        "{}",
        note.body
    );
    assert!(
        !note.body.contains("&amp;lt;"),
        "escaped twice: {}",
        note.body
    );
    let missing = browser.get("/notes/no-such-note").await;
    assert_eq!(missing.status, 404);
}

#[tokio::test]
async fn the_cookie_is_http_only_and_same_site_strict() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let mut browser = Browser::new(server.origin());
    let page = browser.get("/").await;
    assert_eq!(page.status, 200);
    let cookie = page.header("set-cookie");
    // Named for the port: cookies ignore ports, and two PKB pages on one host keep theirs.
    let port = server.origin().rsplit(':').next().unwrap();
    assert!(cookie.starts_with(&format!("pkb_web_{port}=")), "{cookie}");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    assert!(cookie.contains("Path=/"), "{cookie}");
}

#[tokio::test]
async fn a_restore_needs_the_pages_own_csrf_token_and_is_made_by_the_web_page() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    write(&server.url, None, "Plan", "first body").await;
    write(&server.url, None, "Plan", "second body").await;
    let restore = "/notes/plan/versions/1/restore";

    // A post from elsewhere: no cookie, no token.
    let mut stranger = Browser::new(server.origin());
    let forged = stranger.post(restore, &[]).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(
        forged.body.contains("nothing was changed"),
        "{}",
        forged.body
    );

    // A browser's own cookie with a token it was not given.
    let mut browser = Browser::new(server.origin());
    let confirm = browser.get(restore).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    let csrf = confirm
        .field("csrf")
        .expect("the confirmation's CSRF token");
    let wrong = browser.post(restore, &[("csrf", "AAAA")]).await;
    assert_eq!(wrong.status, 403);
    // Another browser's token.
    stranger.get("/").await;
    let theirs = stranger.post(restore, &[("csrf", &csrf)]).await;
    assert_eq!(theirs.status, 403);
    assert_eq!(
        history(&server.url, "plan").await.len(),
        2,
        "nothing changed"
    );

    let restored = browser.post(restore, &[("csrf", &csrf)]).await;
    assert_eq!(restored.status, 303, "{}", restored.body);
    assert_eq!(restored.header("location"), "/notes/plan?restored=1");
    let versions = history(&server.url, "plan").await;
    assert_eq!(versions.len(), 3);
    assert_eq!(versions[0]["change"], "restored");
    assert_eq!(versions[0]["by"], "web page");
    let note = browser.get("/notes/plan?restored=1").await;
    assert!(note.body.contains("first body"), "{}", note.body);
}

/// The headers every answer of the pages carries, whatever answered it.
fn assert_the_pages_headers(page: &Page, what: &str) {
    let csp = page.header("content-security-policy");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
    assert_eq!(page.header("x-frame-options"), "DENY", "{what}");
    assert_eq!(page.header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(page.header("cache-control"), "no-store", "{what}");
    assert_eq!(
        page.header("cross-origin-resource-policy"),
        "same-origin",
        "{what}"
    );
    assert_eq!(
        page.header("cross-origin-opener-policy"),
        "same-origin",
        "{what}"
    );
}

#[tokio::test]
async fn a_page_another_site_asks_for_is_refused_unless_a_link_was_followed() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    write(&server.url, None, "Plan", "first body").await;
    let mut browser = Browser::new(server.origin());
    let (client, note) = (
        browser.client.clone(),
        format!("{}/notes/plan", server.origin()),
    );
    let fetched = |site: &str, mode: &str, dest: &str| {
        client
            .get(&note)
            .header("sec-fetch-site", site)
            .header("sec-fetch-mode", mode)
            .header("sec-fetch-dest", dest)
    };
    // An <img> or a no-cors fetch of another site, or of another loopback port.
    for (site, mode, dest) in [
        ("cross-site", "no-cors", "image"),
        ("cross-site", "cors", "empty"),
        ("same-site", "no-cors", "script"),
        ("cross-site", "navigate", "iframe"),
    ] {
        let refused = browser.answer(fetched(site, mode, dest)).await;
        assert_eq!(
            refused.status, 403,
            "{site} {mode} {dest}: {}",
            refused.body
        );
        assert!(!refused.body.contains("first body"));
        assert_the_pages_headers(&refused, "the refusal");
    }
    // A link followed from elsewhere, the pages' own requests, and a browser without Fetch
    // Metadata are answered.
    for (site, mode, dest) in [
        ("cross-site", "navigate", "document"),
        ("same-origin", "no-cors", "script"),
        ("none", "navigate", "document"),
    ] {
        let answered = browser.answer(fetched(site, mode, dest)).await;
        assert_eq!(answered.status, 200, "{site} {mode} {dest}");
    }
    assert_eq!(browser.get("/notes/plan").await.status, 200);
    // A form of another site posted to the pages is a navigation, and still refused.
    let confirm = browser.get("/notes/plan/versions/1/restore").await;
    let csrf = confirm.field("csrf").unwrap();
    let posted = browser
        .client
        .post(format!("{}/notes/plan/versions/1/restore", server.origin()))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "navigate")
        .header("sec-fetch-dest", "document")
        .body(format!("csrf={csrf}"));
    let posted = browser.answer(posted).await;
    assert_eq!(posted.status, 403, "{}", posted.body);
}

#[tokio::test]
async fn under_http_on_loopback_the_pages_forms_post_from_every_loopback_name() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    write(&server.url, None, "Plan", "first body").await;
    write(&server.url, None, "Plan", "second body").await;
    let port = server.origin().rsplit(':').next().unwrap().to_owned();
    let restore = "/notes/plan/versions/1/restore";
    let mut browser = Browser::new(server.origin());
    let csrf = browser.get(restore).await.field("csrf").unwrap();
    let other = browser
        .client
        .post(format!("{}{restore}", server.origin()))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "http://evil.example")
        .body(format!("csrf={csrf}"));
    assert_eq!(browser.answer(other).await.status, 403);
    // The person opened http://localhost:PORT/: the browser says so in Host and Origin.
    let posted = browser
        .client
        .post(format!("{}{restore}", server.origin()))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("host", format!("localhost:{port}"))
        .header("origin", format!("http://localhost:{port}"))
        .body(format!("csrf={csrf}"));
    let posted = browser.answer(posted).await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    assert_eq!(history(&server.url, "plan").await.len(), 3);
}

#[tokio::test]
async fn every_answer_carries_the_pages_headers_and_no_version_number_fails_the_store() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    write(&server.url, None, "Plan", "first body").await;
    let mut browser = Browser::new(server.origin());
    let missing = browser.get("/notes/plan/versions/1/no/such/page").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("Not found"), "{}", missing.body);
    assert_the_pages_headers(&missing, "an unknown path");
    let not_allowed = browser.post("/", &[]).await;
    assert_eq!(not_allowed.status, 405);
    assert_the_pages_headers(&not_allowed, "a method the page does not take");
    assert_the_pages_headers(&browser.get("/").await, "the Changes page");
    // Past what a store counts versions in: no such version, not a store's failure.
    for number in ["9223372036854775808", "18446744073709551615"] {
        for path in [
            format!("/notes/plan/versions/{number}"),
            format!("/notes/plan/versions/{number}/restore"),
        ] {
            let page = browser.get(&path).await;
            assert_eq!(page.status, 404, "{path}: {}", page.body);
        }
    }
    let largest = browser
        .get("/notes/plan/versions/9223372036854775807")
        .await;
    assert_eq!(largest.status, 404);
}

#[tokio::test]
async fn under_tokens_the_page_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let server =
        HttpServerProcess::start(&["--memory", "--auth", "tokens", "--data-dir", data_dir]).await;
    let client = http_client();
    for path in [
        "/",
        "/notes/welcome",
        "/deleted",
        "/search?q=x",
        "/sign-in",
        "/web/style.css",
    ] {
        let answer = client
            .get(format!("{}{path}", server.origin()))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 404, "{path}");
    }
}

#[tokio::test]
async fn under_auth_local_each_person_sees_only_their_notes_and_no_forgery_passes() {
    let server = LocalServer::start(&["--no-seed"]).await;
    // A token's name and an account's are one user.
    let (alice_token, bob_token) = (server.token("alice"), server.token("bob"));
    write(
        server.resource(),
        Some(&alice_token),
        "Alice plan",
        "alice one",
    )
    .await;
    write(
        server.resource(),
        Some(&alice_token),
        "Alice plan",
        "alice two",
    )
    .await;
    write(
        server.resource(),
        Some(&bob_token),
        "Bob secret",
        "bob only",
    )
    .await;

    // Signed out: every page leads to the sign-in.
    let mut nobody = Browser::new(server.origin());
    for path in ["/", "/notes/bob-secret", "/deleted", "/search?q=bob"] {
        let page = nobody.get(path).await;
        assert_eq!(
            (page.status, page.header("location")),
            (303, "/sign-in"),
            "{path}"
        );
    }
    let wrong = nobody.get("/sign-in").await;
    let csrf = wrong.field("csrf").unwrap();
    let refused = nobody
        .post(
            "/sign-in",
            &[
                ("csrf", &csrf),
                ("account", "alice"),
                ("password", "not it at all"),
            ],
        )
        .await;
    let unknown = nobody
        .post(
            "/sign-in",
            &[
                ("csrf", &csrf),
                ("account", "nobody"),
                ("password", "not it at all"),
            ],
        )
        .await;
    assert_eq!((refused.status, unknown.status), (401, 401));
    assert!(
        refused
            .body
            .contains("The account name or the password is wrong.")
    );
    assert!(
        unknown
            .body
            .contains("The account name or the password is wrong.")
    );

    let mut alice = Browser::new(server.origin());
    alice.sign_in("alice").await;
    let mut bob = Browser::new(server.origin());
    bob.sign_in("bob").await;

    let changes = alice.get("/").await;
    assert_eq!(changes.status, 200, "{}", changes.body);
    assert!(changes.body.contains("Alice plan"), "{}", changes.body);
    assert!(!changes.body.contains("Bob secret"), "{}", changes.body);
    assert!(changes.body.contains("Signed in as <strong>alice</strong>"));
    let search = alice.get("/search?q=bob").await;
    assert!(!search.body.contains("bob-secret"), "{}", search.body);
    // Another person's note reads exactly as a note that does not exist.
    let foreign = alice.get("/notes/bob-secret").await;
    let missing = alice.get("/notes/no-such-note").await;
    assert_eq!((foreign.status, missing.status), (404, 404));
    assert_eq!(foreign.body, missing.body);
    let foreign_version = alice.get("/notes/bob-secret/versions/1").await;
    assert_eq!(foreign_version.status, 404);

    // Alice's token with Bob's session, and Bob's restore of Alice's note: nothing changes.
    let restore = "/notes/alice-plan/versions/1/restore";
    let alice_csrf = alice.get(restore).await.field("csrf").unwrap();
    let forged = bob.post(restore, &[("csrf", &alice_csrf)]).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let bob_csrf = bob.get("/").await.body;
    let bob_csrf = Page {
        status: 200,
        headers: Default::default(),
        body: bob_csrf,
    }
    .field("csrf")
    .unwrap();
    let not_bobs = bob.post(restore, &[("csrf", &bob_csrf)]).await;
    assert_eq!(
        not_bobs.status, 404,
        "Bob has no such note: {}",
        not_bobs.body
    );
    let no_token = alice.post(restore, &[]).await;
    assert_eq!(no_token.status, 403);

    let restored = alice.post(restore, &[("csrf", &alice_csrf)]).await;
    assert_eq!(restored.status, 303, "{}", restored.body);
    let client = connect_http(
        RecordingClient::new(Sampling::Unsupported),
        server.resource(),
        Some(&alice_token),
    )
    .await;
    let fetched = structured(&call(&client, "fetch", json!({"id": "alice-plan"})).await);
    assert_eq!(fetched["note"]["body"], "alice one");
    let versions = structured(&call(&client, "history", json!({"id": "alice-plan"})).await);
    assert_eq!(versions["versions"][0]["by"], "web page (alice)");
    let _ = client.cancel().await;

    // Signing out ends the session.
    let out_csrf = alice.get("/").await;
    let out_csrf = out_csrf.field("csrf").unwrap();
    let cookie_before = alice.cookie.clone();
    let out = alice.post("/sign-out", &[("csrf", &out_csrf)]).await;
    assert_eq!(out.status, 303);
    alice.cookie = cookie_before;
    assert_eq!(
        alice.get("/").await.status,
        303,
        "the old cookie is worth nothing"
    );
}

#[tokio::test]
async fn pkb_server_web_serves_the_page_alone_on_loopback() {
    let (_dir, path) = support::temp_store();
    let mut command = tokio::process::Command::new(support::server_binary());
    command
        .args(["--db", &path, "web"])
        .env_remove("BROWSER")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("the URL line");
        if let Some(url) = line.strip_prefix("pkb-server: web page at ") {
            break url.to_owned();
        }
    };
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
        "{url}"
    );
    let origin = url.trim_end_matches('/');
    let mut browser = Browser::new(origin);
    let changes = browser.get("/").await;
    assert_eq!(changes.status, 200);
    assert!(changes.body.contains("Welcome to PKB") || changes.body.contains("Changes"));
    let mcp = browser.get("/mcp").await;
    assert_eq!(mcp.status, 404, "only the page is served");
    let client = http_client();
    let rebound = client
        .get(format!("{origin}/"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403, "DNS rebinding is refused");
    let csp = rebound.headers().get("content-security-policy");
    assert!(csp.is_some(), "the refusal carries the pages' headers");
    let cross = client
        .post(format!("{origin}/notes/welcome/versions/1/restore"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);
}

#[tokio::test]
async fn a_vaults_file_edit_shows_as_by_file_and_is_undone_from_the_page() {
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(vault.path().join("inbox.md"), "# Groceries\n\nmilk\n").unwrap();
    let server = HttpServerProcess::start(&["--vault", vault.path().to_str().unwrap()]).await;
    // Another program changes the file while the server runs.
    let temporary = vault.path().join("inbox.md.tmp");
    std::fs::write(&temporary, "# Groceries\n\nbread\n").unwrap();
    std::fs::rename(&temporary, vault.path().join("inbox.md")).unwrap();
    let mut browser = Browser::new(server.origin());
    let start = std::time::Instant::now();
    loop {
        let changes = browser.get("/?client=file").await;
        if changes.body.contains("/notes/groceries/versions/2") {
            break;
        }
        assert!(
            start.elapsed().as_secs() < 10,
            "no change by file: {}",
            changes.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let diff = browser.get("/notes/groceries/versions/2").await;
    assert!(
        diff.body.contains("<del>milk</del>") || diff.body.contains("milk"),
        "{}",
        diff.body
    );
    let restore = "/notes/groceries/versions/1/restore";
    let csrf = browser.get(restore).await.field("csrf").unwrap();
    let restored = browser.post(restore, &[("csrf", &csrf)]).await;
    assert_eq!(restored.status, 303, "{}", restored.body);
    let file = std::fs::read_to_string(vault.path().join("inbox.md")).unwrap();
    assert!(file.contains("milk") && !file.contains("bread"), "{file}");
}
