//! Driving `--auth local` as a client and a person would, over real HTTP: register, open the
//! authorization URL, sign in and approve on PKB's pages (carrying the browser's cookie and
//! the forms' hidden fields), trade the code at the token endpoint, refresh and revoke.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{HttpServerProcess, run_command};

/// A password every test account has.
pub const PASSWORD: &str = "correct horse battery staple";

/// The callback the tests' clients register.
pub const CALLBACK: &str = "http://127.0.0.1:9/callback";

/// A `--auth local` server on a data directory with the accounts `alice` and `bob`.
pub struct LocalServer {
    pub server: HttpServerProcess,
    pub data_dir: String,
    _dir: tempfile::TempDir,
}

impl LocalServer {
    /// Starts the server with `args` besides `--auth local --data-dir DIR`.
    pub async fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[]).await
    }

    /// [`LocalServer::start`] with environment variables.
    pub async fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_str().unwrap().to_owned();
        for name in ["alice", "bob"] {
            create_account(&data_dir, name, PASSWORD);
        }
        let mut all = vec!["--auth", "local", "--data-dir", &data_dir];
        all.extend_from_slice(args);
        let server = HttpServerProcess::start_with_env(&all, env).await;
        Self {
            server,
            data_dir,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT`, the issuer.
    pub fn origin(&self) -> &str {
        self.server.origin()
    }

    /// The MCP endpoint, the resource.
    pub fn resource(&self) -> &str {
        &self.server.url
    }

    /// A token of `pkb-server token create NAME`: the same user as the account NAME.
    pub fn token(&self, name: &str) -> String {
        let (made, token, why) = self.command(&["token", "create", name]);
        assert!(made, "{why}");
        token.trim().to_owned()
    }

    /// `pkb-server --data-dir DIR ARGS`; (success, stdout, stderr).
    pub fn command(&self, args: &[&str]) -> (bool, String, String) {
        let mut all = vec!["--data-dir", &self.data_dir];
        all.extend_from_slice(args);
        let (status, stdout, stderr) = run_command(&all);
        (status.success(), stdout, stderr)
    }
}

/// Makes the account `name` in `data_dir` with `password`, given on stdin.
pub fn create_account(data_dir: &str, name: &str, password: &str) {
    let output = with_password(data_dir, &["account", "create", name], password);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs `pkb-server --data-dir DATA_DIR ARGS --password-stdin` with `password` on stdin.
pub fn with_password(data_dir: &str, args: &[&str], password: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new(super::server_binary())
        .args(["--data-dir", data_dir])
        .args(args)
        .arg("--password-stdin")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{password}").unwrap();
    child.wait_with_output().unwrap()
}

/// A PKCE verifier and its S256 challenge.
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// A fresh pair.
    pub fn new() -> Self {
        let mut bytes = [0u8; 32];
        for byte in &mut bytes {
            *byte = rand_byte();
        }
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

/// Enough randomness for a test's verifier: the clock and a counter, hashed.
fn rand_byte() -> u8 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    Sha256::digest(format!("{n}:{now}").as_bytes())[0]
}

/// Form encoding of `pairs`.
pub fn form(pairs: &[(&str, &str)]) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    serializer.finish()
}

/// An HTTP client that follows no redirects, so the tests see where PKB sends the browser.
pub fn no_redirects() -> reqwest::Client {
    pkb_core::transport::http::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Registers a client (RFC 7591) named `name` with `redirect_uris`; its `client_id`.
pub async fn register(origin: &str, name: &str, redirect_uris: &[&str]) -> String {
    let answer = no_redirects()
        .post(format!("{origin}/oauth/register"))
        .json(&json!({
            "client_name": name,
            "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 201);
    let body: Value = answer.json().await.unwrap();
    body["client_id"].as_str().unwrap().to_owned()
}

/// A page PKB answered with.
#[derive(Debug)]
pub struct Page {
    pub status: reqwest::StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    async fn read(response: reqwest::Response) -> Self {
        Self {
            status: response.status(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap_or_default(),
        }
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of the form's hidden field `name`.
    pub fn field(&self, name: &str) -> Option<String> {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.body.find(&marker)? + marker.len();
        let end = self.body[start..].find('"')?;
        Some(self.body[start..start + end].to_owned())
    }

    /// Where it redirects, parsed: `None` when it does not.
    pub fn redirect(&self) -> Option<url::Url> {
        self.header("location").map(|l| url::Url::parse(l).unwrap())
    }
}

/// A query parameter of `url`.
pub fn query_param(url: &url::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
}

/// A person's browser: it keeps PKB's cookie and follows no redirect.
pub struct Browser {
    client: reqwest::Client,
    origin: String,
    cookie: Option<String>,
}

impl Browser {
    /// A browser that has not seen PKB yet.
    pub fn new(origin: &str) -> Self {
        Self {
            client: no_redirects(),
            origin: origin.to_owned(),
            cookie: None,
        }
    }

    /// Opens the authorization URL with `query`.
    pub async fn authorize(&mut self, query: &[(&str, &str)]) -> Page {
        let url = format!("{}/oauth/authorize?{}", self.origin, form(query));
        let mut request = self.client.get(url);
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        let response = request.send().await.unwrap();
        if let Some(set) = response.headers().get("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap().to_owned();
            self.cookie = Some(pair);
        }
        Page::read(response).await
    }

    /// Posts `fields` to PKB's `path`, as the page's form would.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut request = self
            .client
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", &self.origin)
            .body(form(fields));
        if let Some(cookie) = &self.cookie {
            request = request.header("cookie", cookie);
        }
        Page::read(request.send().await.unwrap()).await
    }

    /// Signs in on `page` (the sign-in page) as `account`.
    pub async fn sign_in(&self, page: &Page, account: &str, password: &str) -> Page {
        let request = page.field("request").expect("a request field");
        let csrf = page.field("csrf").expect("a csrf field");
        self.post(
            "/oauth/sign-in",
            &[
                ("request", &request),
                ("csrf", &csrf),
                ("account", account),
                ("password", password),
            ],
        )
        .await
    }

    /// Answers the consent `page` with `decision` (`allow` or `deny`).
    pub async fn decide(&self, page: &Page, decision: &str) -> Page {
        let request = page.field("request").expect("a request field");
        let csrf = page.field("csrf").expect("a csrf field");
        self.post(
            "/oauth/consent",
            &[
                ("request", &request),
                ("csrf", &csrf),
                ("decision", decision),
            ],
        )
        .await
    }
}

/// A registered client and its way through the flow.
pub struct FlowClient {
    pub origin: String,
    pub client_id: String,
    pub redirect_uri: String,
}

impl FlowClient {
    /// Registers a client named `name` with the test callback.
    pub async fn register(server: &LocalServer, name: &str) -> Self {
        let client_id = register(server.origin(), name, &[CALLBACK]).await;
        Self {
            origin: server.origin().to_owned(),
            client_id,
            redirect_uri: CALLBACK.to_owned(),
        }
    }

    /// The authorization request's parameters with `pkce` and `scope`.
    pub fn query<'a>(&'a self, pkce: &'a Pkce, scope: &'a str) -> Vec<(&'a str, &'a str)> {
        vec![
            ("response_type", "code"),
            ("client_id", &self.client_id),
            ("redirect_uri", &self.redirect_uri),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", "opaque state 123"),
            ("scope", scope),
        ]
    }

    /// Everything up to the code: authorize, sign in as `account`, allow. The code.
    pub async fn code_for(&self, account: &str, pkce: &Pkce, scope: &str) -> String {
        let mut browser = Browser::new(&self.origin);
        let page = browser.authorize(&self.query(pkce, scope)).await;
        assert_eq!(page.status, 200, "{}", page.body);
        let consent = browser.sign_in(&page, account, PASSWORD).await;
        assert_eq!(consent.status, 200, "{}", consent.body);
        let back = browser.decide(&consent, "allow").await;
        assert_eq!(back.status, 303, "{back:?}");
        let location = back.redirect().expect("a redirect");
        assert_eq!(
            query_param(&location, "state").as_deref(),
            Some("opaque state 123")
        );
        query_param(&location, "code").expect("a code")
    }

    /// Trades `code` with `verifier`: the token endpoint's status and JSON.
    pub async fn redeem(&self, code: &str, verifier: &str) -> (u16, Value) {
        token_request(
            &self.origin,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", &self.redirect_uri),
                ("client_id", &self.client_id),
                ("code_verifier", verifier),
            ],
        )
        .await
    }

    /// Refreshes with `refresh_token`.
    pub async fn refresh(&self, refresh_token: &str) -> (u16, Value) {
        token_request(
            &self.origin,
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", &self.client_id),
            ],
        )
        .await
    }

    /// The whole flow for `account`: (access token, refresh token).
    pub async fn tokens_for(&self, account: &str, scope: &str) -> (String, String) {
        let pkce = Pkce::new();
        let code = self.code_for(account, &pkce, scope).await;
        let (status, body) = self.redeem(&code, &pkce.verifier).await;
        assert_eq!(status, 200, "{body}");
        (
            body["access_token"].as_str().unwrap().to_owned(),
            body["refresh_token"].as_str().unwrap().to_owned(),
        )
    }
}

/// A token endpoint request of `pairs`: its status and JSON, after checking that it may not
/// be cached.
pub async fn token_request(origin: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let response = no_redirects()
        .post(format!("{origin}/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// An HTTPS server on 127.0.0.1 serving client metadata documents, counting requests.
pub struct DocumentServer {
    /// `https://127.0.0.1:PORT`.
    pub origin: String,
    /// How many requests it was sent.
    pub requests: Arc<AtomicUsize>,
}

impl DocumentServer {
    /// Serves `documents(origin)`: by path, a delay and a body.
    pub async fn start(
        certificates: &super::TestCertificates,
        documents: impl FnOnce(&str) -> HashMap<String, (Duration, Vec<u8>)>,
    ) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        pkb_core::transport::http::install_crypto_provider();
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&certificates.cert)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(&certificates.key).unwrap();
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        let documents = Arc::new(documents(&origin));
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&requests);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, documents, counted) = (
                    acceptor.clone(),
                    Arc::clone(&documents),
                    Arc::clone(&counted),
                );
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut head = Vec::new();
                    let mut buffer = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buffer[..n]),
                        }
                    }
                    counted.fetch_add(1, Ordering::SeqCst);
                    let head = String::from_utf8_lossy(&head);
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let (delay, body) = documents
                        .get(&path)
                        .cloned()
                        .unwrap_or((Duration::ZERO, b"{}".to_vec()));
                    tokio::time::sleep(delay).await;
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.write_all(&body).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        Self { origin, requests }
    }
}
