//! Shared test support: the built `pkb-server` binary, and an rmcp client driving it over
//! stdio or Streamable HTTP. [`both_transports!`] runs a test once over each.

#![allow(dead_code, deprecated)] // each test file uses part of this; sampling is deprecated only for 2026-07-28

pub mod local_oauth;
mod workspace_build;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientInfo, ContentBlock,
    CreateMessageRequestParams, CreateMessageResult, ErrorData, Implementation,
    ResourceUpdatedNotificationParam, SamplingCapability, SamplingMessage,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Which transport a test's clients use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// The server as a child process speaking on stdin/stdout.
    Stdio,
    /// The server listening on a loopback port (`--http 127.0.0.1:0`).
    Http,
}

tokio::task_local! {
    /// The transport of the running test; stdio outside [`both_transports!`].
    pub static TRANSPORT: Transport;
}

/// The transport [`connect`] uses in this test.
pub fn current_transport() -> Transport {
    TRANSPORT.try_with(|t| *t).unwrap_or(Transport::Stdio)
}

/// How a test's clients start: the revisions with a session, or the stateless one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revision {
    /// `initialize`, at 2025-11-25.
    Sessions,
    /// `server/discover`, then 2026-07-28 with `_meta` on every request.
    Stateless,
}

tokio::task_local! {
    /// The revision of the running test; sessions outside [`every_revision!`].
    pub static REVISION: Revision;
}

/// The revision [`connect`] uses in this test.
pub fn current_revision() -> Revision {
    REVISION.try_with(|r| *r).unwrap_or(Revision::Sessions)
}

/// Where a test's server keeps its notes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// What the test's arguments say (in memory, or a SQLite file).
    Sqlite,
    /// A database of the test's own on the PostgreSQL server of `PKB_TEST_POSTGRES`, in
    /// place of `--memory`.
    Postgres,
}

tokio::task_local! {
    /// The backend of the running test; SQLite outside [`every_revision!`].
    pub static BACKEND: Backend;
}

/// The backend [`connect_with`] uses in this test.
pub fn current_backend() -> Backend {
    BACKEND.try_with(|b| *b).unwrap_or(Backend::Sqlite)
}

/// A fresh PostgreSQL database for one test, as a `--db` URL; `None` (skip) when no test
/// server is configured.
pub async fn postgres_database() -> Option<String> {
    let admin = pkb_core::store::postgres::testing::admin_url()?;
    Some(pkb_core::store::postgres::testing::scratch_database(&admin).await)
}

/// Runs each test fn at the stateless 2026-07-28 revision only, over stdio and Streamable
/// HTTP: `<name>::stdio` and `<name>::http`.
#[macro_export]
macro_rules! stateless_revision {
    ($( $(#[$meta:meta])* async fn $name:ident() $body:block )*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                $crate::test_variant!($(#[$meta])* stdio, Stdio, Stateless, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* http, Http, Stateless, Sqlite, $body);
            }
        )*
    };
}

/// Starts `handler` on `transport` at the test's revision.
pub async fn start_client<T, E, A>(
    handler: RecordingClient,
    transport: T,
) -> RunningService<RoleClient, RecordingClient>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let started = match current_revision() {
        Revision::Sessions => handler.serve(transport).await,
        Revision::Stateless => {
            let lifecycle = rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            };
            rmcp::ClientServiceExt::serve_with_lifecycle(handler, transport, lifecycle).await
        }
    };
    started.expect("the client starts")
}

/// Runs each test fn over stdio and Streamable HTTP, each at 2025-11-25 (through
/// `initialize`) and at the stateless 2026-07-28: `<name>::stdio`, `<name>::http`,
/// `<name>::stdio_2026` and `<name>::http_2026`; and on PostgreSQL over stdio at 2025-11-25
/// and over HTTP at 2026-07-28: `<name>::postgres` and `<name>::postgres_http_2026`.
#[macro_export]
macro_rules! every_revision {
    ($( $(#[$meta:meta])* async fn $name:ident() $body:block )*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                $crate::test_variant!($(#[$meta])* stdio, Stdio, Sessions, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* http, Http, Sessions, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* stdio_2026, Stdio, Stateless, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* http_2026, Http, Stateless, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* postgres, Stdio, Sessions, Postgres, $body);
                $crate::test_variant!($(#[$meta])* postgres_http_2026, Http, Stateless, Postgres, $body);
            }
        )*
    };
}

/// One variant of a test fn: its body run with the given transport, revision and backend.
/// A PostgreSQL variant without a test server (`PKB_TEST_POSTGRES`) passes at once.
#[macro_export]
macro_rules! test_variant {
    ($(#[$meta:meta])* $variant:ident, $transport:ident, $revision:ident, $backend:ident, $body:block) => {
        $(#[$meta])*
        async fn $variant() {
            let backend = $crate::support::Backend::$backend;
            if backend == $crate::support::Backend::Postgres
                && pkb_core::store::postgres::testing::admin_url().is_none()
            {
                return;
            }
            $crate::support::BACKEND
                .scope(
                    backend,
                    $crate::support::REVISION.scope(
                        $crate::support::Revision::$revision,
                        $crate::support::TRANSPORT
                            .scope($crate::support::Transport::$transport, async $body),
                    ),
                )
                .await
        }
    };
}

/// Runs each test fn once over stdio and once over Streamable HTTP, as `<name>::stdio` and
/// `<name>::http`: one suite, two transports.
#[macro_export]
macro_rules! both_transports {
    ($( $(#[$meta:meta])* async fn $name:ident() $body:block )*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;
                $crate::test_variant!($(#[$meta])* stdio, Stdio, Sessions, Sqlite, $body);
                $crate::test_variant!($(#[$meta])* http, Http, Sessions, Sqlite, $body);
            }
        )*
    };
}

/// The `pkb-server` binary of this workspace, built once per test process as `cargo test
/// --workspace` builds it (pkb-server's own tests need it).
pub fn server_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            workspace_build::build_workspace_tests();
            let exe = std::env::current_exe().expect("test binary path");
            // target/<profile>/deps/<test> -> target/<profile>/pkb-server
            let binary = exe
                .parent()
                .and_then(|p| p.parent())
                .expect("target dir")
                .join("pkb-server");
            assert!(binary.exists(), "{} missing", binary.display());
            binary
        })
        .clone()
}

/// How the test client answers the server's sampling requests.
#[derive(Clone, Debug)]
pub enum Sampling {
    /// Declares no sampling capability.
    Unsupported,
    /// Answers every request with this text.
    Reply(String),
    /// Answers every request with an error.
    Refuse,
    /// Never answers.
    Silent,
    /// Answers with this text after this long.
    After(std::time::Duration, String),
}

/// A client that records what the server sends it.
#[derive(Clone)]
pub struct RecordingClient {
    pub sampling: Sampling,
    pub updated: Arc<Mutex<Vec<String>>>,
    pub list_changed: Arc<Mutex<usize>>,
    pub sampling_requests: Arc<Mutex<Vec<CreateMessageRequestParams>>>,
    /// Sampling requests the server cancelled while this client sat on them.
    pub sampling_cancelled: Arc<Mutex<usize>>,
}

impl RecordingClient {
    pub fn new(sampling: Sampling) -> Self {
        Self {
            sampling,
            updated: Arc::default(),
            list_changed: Arc::default(),
            sampling_requests: Arc::default(),
            sampling_cancelled: Arc::default(),
        }
    }
}

impl ClientHandler for RecordingClient {
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampling_requests.lock().unwrap().push(params);
        match &self.sampling {
            Sampling::Reply(text) => Ok(CreateMessageResult::new(
                SamplingMessage::assistant_text(text.clone()),
                "test-model".into(),
            )),
            Sampling::Refuse => Err(ErrorData::invalid_request("the user declined", None)),
            Sampling::Silent => {
                // rmcp cancels the handler when the server sends notifications/cancelled.
                context.ct.cancelled().await;
                *self.sampling_cancelled.lock().unwrap() += 1;
                Err(ErrorData::invalid_request("cancelled", None))
            }
            Sampling::After(delay, text) => {
                tokio::time::sleep(*delay).await;
                Ok(CreateMessageResult::new(
                    SamplingMessage::assistant_text(text.clone()),
                    "test-model".into(),
                ))
            }
            Sampling::Unsupported => Err(ErrorData::invalid_request("no sampling", None)),
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.updated.lock().unwrap().push(params.uri);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        *self.list_changed.lock().unwrap() += 1;
    }

    fn get_info(&self) -> ClientInfo {
        let mut capabilities = ClientCapabilities::default();
        if !matches!(self.sampling, Sampling::Unsupported) {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        let mut info = Implementation::from_build_env();
        info.name = "pkb-tests".into();
        ClientInfo::new(capabilities, info)
    }
}

/// A running server and the client connected to it.
pub struct Client {
    service: RunningService<RoleClient, RecordingClient>,
    /// The HTTP server's process; a stdio server is owned by `service`.
    server: Option<HttpServerProcess>,
}

impl std::ops::Deref for Client {
    type Target = RunningService<RoleClient, RecordingClient>;

    fn deref(&self) -> &Self::Target {
        &self.service
    }
}

impl Client {
    /// Closes the connection (and stops an HTTP server).
    pub async fn cancel(self) -> Result<rmcp::service::QuitReason, tokio::task::JoinError> {
        let quit = self.service.cancel().await;
        drop(self.server);
        quit
    }

    /// The HTTP server's process, when the client is on HTTP.
    pub fn http_server(&self) -> Option<&HttpServerProcess> {
        self.server.as_ref()
    }
}

/// A `pkb-server --http` process, killed when dropped.
pub struct HttpServerProcess {
    pub child: tokio::process::Child,
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// What it wrote to stderr after the listening line.
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpServerProcess {
    /// Starts `pkb-server --http 127.0.0.1:0 ARGS` and waits for its listening line.
    pub async fn start(args: &[&str]) -> Self {
        Self::start_with_env(args, &[]).await
    }

    /// [`HttpServerProcess::start`] with environment variables.
    pub async fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = tokio::process::Command::new(server_binary());
        command
            .args(["--http", "127.0.0.1:0"])
            .args(args)
            .env_remove("PKB_DB")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn pkb-server --http");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut before = Vec::new();
        let url = loop {
            match lines.next_line().await.expect("read stderr") {
                Some(line) => match line.strip_prefix("pkb-server: listening on ") {
                    Some(url) => break url.to_owned(),
                    None => before.push(line),
                },
                None => panic!("pkb-server --http exited before listening: {before:?}"),
            }
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Self { child, url, stderr }
    }

    /// The origin, `http://127.0.0.1:PORT`.
    pub fn origin(&self) -> &str {
        self.url.trim_end_matches("/mcp")
    }
}

/// An HTTP client for tests; rustls needs its provider before any client is made.
pub fn http_client() -> reqwest::Client {
    pkb_core::transport::http::install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("an HTTP client")
}

/// Connects an rmcp client over Streamable HTTP to `url`, with a bearer token if given.
pub async fn connect_http(
    handler: RecordingClient,
    url: &str,
    token: Option<&str>,
) -> RunningService<RoleClient, RecordingClient> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    if let Some(token) = token {
        config = config.auth_header(token.to_owned());
    }
    let transport = StreamableHttpClientTransport::with_client(http_client(), config);
    start_client(handler, transport).await
}

/// Starts `pkb-server` with `args` (plus a fresh store unless the args name one) and connects.
pub async fn connect(args: &[&str], sampling: Sampling) -> Client {
    connect_with(RecordingClient::new(sampling), args).await
}

/// Starts `pkb-server` on an in-memory seeded store.
pub async fn connect_memory() -> Client {
    connect(&["--memory"], Sampling::Unsupported).await
}

/// Starts `pkb-server` with `args` over the test's transport and connects `handler`. On
/// PostgreSQL, `--memory` gives way to a database of the test's own.
pub async fn connect_with(handler: RecordingClient, args: &[&str]) -> Client {
    connect_with_handler_and_env(handler, args, &[]).await
}

/// [`connect`] with these environment variables set for the server.
pub async fn connect_with_env(args: &[&str], env: &[(&str, &str)]) -> Client {
    connect_with_handler_and_env(RecordingClient::new(Sampling::Unsupported), args, env).await
}

async fn connect_with_handler_and_env(
    handler: RecordingClient,
    args: &[&str],
    env: &[(&str, &str)],
) -> Client {
    let database = match current_backend() {
        Backend::Postgres if args.contains(&"--memory") => postgres_database().await,
        _ => None,
    };
    let args: Vec<&str> = match &database {
        Some(url) => args
            .iter()
            .flat_map(|arg| match *arg {
                "--memory" => vec!["--db", url.as_str()],
                other => vec![other],
            })
            .collect(),
        None => args.to_vec(),
    };
    let args = args.as_slice();
    match current_transport() {
        Transport::Stdio => {
            let mut command = tokio::process::Command::new(server_binary());
            command
                .args(args)
                .env_remove("PKB_DB")
                .env("RUST_LOG", "warn")
                .envs(env.iter().copied());
            let transport = TokioChildProcess::new(command).expect("spawn pkb-server");
            Client {
                service: start_client(handler, transport).await,
                server: None,
            }
        }
        Transport::Http => {
            let server = HttpServerProcess::start_with_env(args, env).await;
            let service = connect_http(handler, &server.url, None).await;
            Client {
                service,
                server: Some(server),
            }
        }
    }
}

/// Resource notifications a test asked for; they stop when it is dropped.
pub struct Watch {
    listening: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(task) = self.listening.take() {
            task.abort();
        }
    }
}

/// Asks for updates of `uris` and for list changes, as the test's revision does it:
/// `resources/subscribe` (list changes come unasked), or one `subscriptions/listen` stream
/// whose notifications are recorded in `handler` like the others.
pub async fn watch(client: &Client, handler: &RecordingClient, uris: &[&str]) -> Watch {
    match current_revision() {
        Revision::Sessions => {
            for uri in uris {
                client
                    .subscribe(rmcp::model::SubscribeRequestParams::new(*uri))
                    .await
                    .expect("subscribe");
            }
            Watch { listening: None }
        }
        Revision::Stateless => {
            let mut filter = rmcp::model::SubscriptionFilter::builder().resources_list_changed();
            for uri in uris {
                filter = filter.resource_subscription(*uri);
            }
            let mut stream = client
                .peer()
                .listen(filter.build())
                .await
                .expect("subscriptions/listen");
            let handler = handler.clone();
            let listening = tokio::spawn(async move {
                while let Ok(Some(notification)) = stream.next().await {
                    match notification {
                        rmcp::model::ServerNotification::ResourceUpdatedNotification(n) => {
                            handler.updated.lock().unwrap().push(n.params.uri);
                        }
                        rmcp::model::ServerNotification::ResourceListChangedNotification(_) => {
                            *handler.list_changed.lock().unwrap() += 1;
                        }
                        _ => {}
                    }
                }
            });
            Watch {
                listening: Some(listening),
            }
        }
    }
}

/// The code of an unknown resource: -32002, or -32602 on 2026-07-28.
pub fn resource_not_found_code() -> i32 {
    match current_revision() {
        Revision::Sessions => -32002,
        Revision::Stateless => -32602,
    }
}

/// Calls a tool with JSON arguments.
pub async fn call(
    client: &RunningService<RoleClient, RecordingClient>,
    tool: &str,
    arguments: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = match arguments {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => panic!("arguments must be an object, got {other}"),
    };
    client.call_tool(params).await.expect("tools/call answered")
}

/// The single text item of a result.
pub fn text(result: &CallToolResult) -> String {
    assert_eq!(result.content.len(), 1, "one content item: {result:?}");
    match &result.content[0] {
        ContentBlock::Text(text) => text.text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

/// Asserts an `isError` result with exactly this text and no structured content.
pub fn assert_error(result: &CallToolResult, expected: &str) {
    assert_eq!(result.is_error, Some(true), "expected an error: {result:?}");
    assert!(
        result.structured_content.is_none(),
        "errors carry no structuredContent"
    );
    assert_eq!(text(result), expected);
}

/// Asserts success and returns the structured content.
pub fn structured(result: &CallToolResult) -> Map<String, Value> {
    assert_ne!(result.is_error, Some(true), "unexpected error: {result:?}");
    match result.structured_content.clone() {
        Some(Value::Object(map)) => map,
        other => panic!("no structured object: {other:?}"),
    }
}

/// The note `id` as `fetch` answers it; `None` when there is no such note.
pub async fn fetched(client: &Client, id: &str) -> Option<Map<String, Value>> {
    let result = call(client, "fetch", serde_json::json!({"id": id})).await;
    (result.is_error != Some(true)).then(|| match structured(&result).remove("note") {
        Some(Value::Object(note)) => note,
        other => panic!("fetch answers a note: {other:?}"),
    })
}

/// Fetches `id` every 50 ms until `done` holds of it (`None`: no such note), failing after
/// `patience`: what a server takes in from a watched folder arrives a look later.
pub async fn until_note(
    client: &Client,
    id: &str,
    patience: std::time::Duration,
    done: impl Fn(Option<&Map<String, Value>>) -> bool,
) -> Option<Map<String, Value>> {
    let start = std::time::Instant::now();
    loop {
        let note = fetched(client, id).await;
        if done(note.as_ref()) {
            return note;
        }
        assert!(
            start.elapsed() < patience,
            "{id} never became as expected: {note:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A fresh store file in a temporary folder that lives as long as the returned guard.
pub fn temp_store() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("pkb.db").to_string_lossy().into_owned();
    (dir, path)
}

/// MCP over HTTP by hand, for what rmcp's client would not send: other users' sessions,
/// bad tokens, odd headers.
#[derive(Clone)]
pub struct RawHttp {
    pub client: reqwest::Client,
    pub url: String,
    pub token: Option<String>,
    pub session: Option<String>,
    pub next_id: Arc<Mutex<u64>>,
}

/// An HTTP answer: status, headers, and the JSON-RPC message it carried, if any.
#[derive(Debug)]
pub struct RawAnswer {
    pub status: reqwest::StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
    pub message: Option<Value>,
}

impl RawAnswer {
    /// A header's value, as text.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// The JSON-RPC result, panicking on anything else.
    pub fn result(&self) -> Value {
        let message = self
            .message
            .as_ref()
            .unwrap_or_else(|| panic!("no message: {self:?}"));
        message
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result: {message}"))
    }

    /// The JSON-RPC error code, panicking when there is none.
    pub fn error_code(&self) -> i64 {
        let message = self
            .message
            .as_ref()
            .unwrap_or_else(|| panic!("no message: {self:?}"));
        message["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error: {message}"))
    }
}

impl RawHttp {
    pub fn new(url: &str, token: Option<&str>) -> Self {
        Self {
            client: http_client(),
            url: url.to_owned(),
            token: token.map(str::to_owned),
            session: None,
            next_id: Arc::new(Mutex::new(1)),
        }
    }

    /// The same client with another token (and the same session id).
    pub fn with_token(&self, token: Option<&str>) -> Self {
        Self {
            token: token.map(str::to_owned),
            ..self.clone()
        }
    }

    /// Opens the session's event stream (a GET of `/mcp`) with this client's token.
    pub async fn event_stream(&self) -> reqwest::Response {
        assert!(self.session.is_some(), "a session");
        let request = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream");
        self.with_credentials(request)
            .send()
            .await
            .expect("the GET is answered")
    }

    /// Ends the session it names (DELETE); the status.
    pub async fn end_session(&self) -> reqwest::StatusCode {
        let request = self.with_credentials(self.client.delete(&self.url));
        request.send().await.unwrap().status()
    }

    /// A POST of `body` with this client's token and session.
    pub fn post_builder(&self, body: &Value) -> reqwest::RequestBuilder {
        let request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        self.with_credentials(request)
    }

    /// `request` with the token and the session, when there are.
    fn with_credentials(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request
    }

    /// Sends `request` and reads its answer (the first JSON-RPC response of an event stream).
    pub async fn send(request: reqwest::RequestBuilder) -> RawAnswer {
        let response = request.send().await.expect("HTTP request sent");
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        let message = body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .chain(std::iter::once(body.as_str()))
            .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
            .find(|m| m.get("result").is_some() || m.get("error").is_some());
        RawAnswer {
            status,
            headers,
            body,
            message,
        }
    }

    /// Sends a JSON-RPC request.
    pub async fn request(&self, method: &str, params: Value) -> RawAnswer {
        let id = {
            let mut next = self.next_id.lock().unwrap();
            *next += 1;
            *next
        };
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        Self::send(self.post_builder(&body)).await
    }

    /// Calls a tool.
    pub async fn call(&self, tool: &str, arguments: Value) -> RawAnswer {
        self.request(
            "tools/call",
            serde_json::json!({"name": tool, "arguments": arguments}),
        )
        .await
    }

    /// Initializes a session (keeping its id) and says so; the initialize answer.
    pub async fn initialize(&mut self) -> RawAnswer {
        self.initialize_declaring(serde_json::json!({})).await
    }

    /// Initializes a session for a client declaring `capabilities`.
    pub async fn initialize_declaring(&mut self, capabilities: Value) -> RawAnswer {
        let answer = self
            .request(
                "initialize",
                serde_json::json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "clientInfo": {"name": "pkb-tests", "version": "1"}
                }),
            )
            .await;
        if answer.status.is_success() {
            self.session = answer.header("mcp-session-id");
            let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let sent = Self::send(self.post_builder(&note)).await;
            assert_eq!(sent.status, 202, "initialized accepted: {sent:?}");
        }
        answer
    }
}

/// Sends `raw`'s server a body that is not JSON: 400 with a -32700 error (id null), as on
/// stdio, and the server goes on.
pub async fn refuses_a_body_that_is_not_json(raw: &mut RawHttp) {
    let garbage = raw
        .post_builder(&Value::Null)
        .body("{\"jsonrpc\": \"2.0\", oops");
    let answer = RawHttp::send(garbage).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.error_code(), -32700, "{answer:?}");
    assert_eq!(answer.message.as_ref().unwrap()["id"], Value::Null);
    assert!(raw.initialize().await.status.is_success());
}

/// Sends `raw`'s server JSON that is no message it can read, after initializing: each gets
/// the JSON-RPC error stdio gives (a known method's bad params -32602 with 200, so the client
/// matches it to its call; anything else -32600 with 400), and the server goes on.
pub async fn answers_unreadable_messages_as_on_stdio(raw: &mut RawHttp) {
    assert!(raw.initialize().await.status.is_success());
    let bad_params = [
        serde_json::json!({"arguments": {}}),
        serde_json::json!([1, 2]),
        serde_json::json!("tools"),
        // A `_meta` that cannot be read: the header checks take it for none, the dispatcher
        // answers it.
        serde_json::json!({"name": "fetch", "arguments": {"id": "todo"}, "_meta": 5}),
        serde_json::json!({"name": "fetch", "arguments": {"id": "todo"}, "_meta": [1]}),
    ];
    for (n, params) in bad_params.into_iter().enumerate() {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 30 + n, "method": "tools/call", "params": params});
        let answer = RawHttp::send(raw.post_builder(&body)).await;
        assert_eq!(answer.status, 200, "{body} -> {answer:?}");
        assert_eq!(answer.error_code(), -32602, "{body} -> {answer:?}");
        assert_eq!(answer.message.as_ref().unwrap()["id"], 30 + n, "{answer:?}");
    }
    // rmcp would read a cursor that is no string as none, and answer with the first page.
    for cursor in [serde_json::json!(123), serde_json::json!([])] {
        let answer = raw
            .request("resources/list", serde_json::json!({"cursor": cursor}))
            .await;
        assert_eq!(answer.error_code(), -32602, "{cursor} -> {answer:?}");
    }
    // An initialize that cannot be read says which of its own fields is wrong.
    let initialize = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}});
    let answer = raw.request("initialize", initialize).await;
    assert_eq!(answer.error_code(), -32602, "{answer:?}");
    assert!(
        answer.body.contains("missing field `clientInfo`"),
        "{answer:?}"
    );
    let first_page = raw
        .request("resources/list", serde_json::json!({"cursor": null}))
        .await;
    assert!(
        first_page.result()["resources"].is_array(),
        "{first_page:?}"
    );
    let no_method = serde_json::json!({"jsonrpc": "2.0", "id": 40});
    let answer = RawHttp::send(raw.post_builder(&no_method)).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.error_code(), -32600, "{answer:?}");
    assert_eq!(answer.message.as_ref().unwrap()["id"], 40, "{answer:?}");
    let fetched = raw.call("fetch", serde_json::json!({"id": "todo"})).await;
    assert_eq!(fetched.result()["structuredContent"]["note"]["id"], "todo");
}

/// Waits until a request to `url` with `token` is refused with 401, asserting that this
/// happens within `limit` (a revocation reaching a running server); the refusal.
pub async fn refused_within(url: &str, token: &str, limit: std::time::Duration) -> RawAnswer {
    let start = std::time::Instant::now();
    loop {
        let answer = RawHttp::new(url, Some(token))
            .request("tools/list", serde_json::json!({}))
            .await;
        if answer.status == 401 {
            return answer;
        }
        assert!(
            start.elapsed() < limit,
            "still served {:?} later: {answer:?}",
            start.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Sends a POST's head alone to `address` (`host:port`), with `headers` (each ending in
/// CRLF), and reads the refusal a server answers before the body comes; its status line. The
/// body and a second request then go on the same connection: a server may close it, but must
/// then say `Connection: close`, since a client reuses a connection it was not told is ending
/// (as the official Python SDK's httpx does) and would lose its next request.
pub async fn refused_before_its_body(address: &str, headers: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let refusal = read_answer(&mut stream).await;
    let status = refusal.lines().next().unwrap_or_default().to_owned();
    let closing = refusal
        .lines()
        .take_while(|line| !line.is_empty())
        .any(|line| line.eq_ignore_ascii_case("connection: close"));
    if closing {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            stream.read_to_end(&mut rest),
        )
        .await;
        assert!(
            matches!(read, Ok(Ok(_))),
            "a connection said to close stays open"
        );
        return status;
    }
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    let sent = async {
        stream.write_all(body).await?;
        stream.write_all(health.as_bytes()).await
    };
    if let Err(error) = sent.await {
        panic!("{status} without Connection: close, but its connection was closed: {error}");
    }
    let next = read_answer(&mut stream).await;
    assert!(
        next.starts_with("HTTP/1.1 200"),
        "{status} without Connection: close, but the next request on its connection got {next:?}"
    );
    status
}

/// Sends a whole POST of a body that is not JSON to `address`, which the server reads and
/// answers with a parse error, then a second request on the same connection: an answered
/// request keeps its connection (the refusals of [`refused_before_its_body`] alone end it).
pub async fn a_read_request_keeps_its_connection(address: &str) {
    use tokio::io::AsyncWriteExt;
    let body = b"not json";
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let answer = read_answer(&mut stream).await;
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    assert!(
        !head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {address}\r\n\r\n");
    stream.write_all(health.as_bytes()).await.unwrap();
    let next = read_answer(&mut stream).await;
    assert!(next.starts_with("HTTP/1.1 200"), "{next:?}");
}

/// One HTTP answer with a `Content-Length` read from `stream`, as text (empty at the end of
/// the stream).
async fn read_answer(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&answer).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if answer.len() >= end + 4 + length {
                return text;
            }
        }
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buffer))
                .await
                .expect("an answer within 10 s")
                .unwrap_or(0);
        if read == 0 {
            return String::from_utf8_lossy(&answer).into_owned();
        }
        answer.extend_from_slice(&buffer[..read]);
    }
}

/// Runs `pkb-server ARGS` to the end; (status, stdout, stderr).
pub fn run_command(args: &[&str]) -> (std::process::ExitStatus, String, String) {
    let output = std::process::Command::new(server_binary())
        .args(args)
        .env_remove("PKB_DB")
        .env("RUST_LOG", "warn")
        .output()
        .expect("pkb-server runs");
    (
        output.status,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A test CA and a certificate it signed for `localhost` and `127.0.0.1` (P-256, one day).
pub struct TestCertificates {
    /// The CA's certificate (PEM).
    pub ca: String,
    /// The server's certificate (PEM).
    pub cert: String,
    /// The server's private key (PEM).
    pub key: String,
}

/// Makes [`TestCertificates`] in `dir` with openssl.
pub fn test_certificates(dir: &std::path::Path) -> TestCertificates {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (ca, ca_key, cert, key) = (
        path("ca.pem"),
        path("ca.key"),
        path("cert.pem"),
        path("key.pem"),
    );
    std::fs::write(
        path("leaf.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-days",
                "1",
                "-subj",
                "/CN=pkb test CA",
                "-keyout",
                &ca_key,
                "-out",
                &ca,
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"],
            &ec[..],
            &[
                "-subj",
                "/CN=localhost",
                "-keyout",
                &key,
                "-out",
                &path("leaf.csr"),
            ],
        ]
        .concat(),
    );
    openssl(&[
        "x509",
        "-req",
        "-in",
        &path("leaf.csr"),
        "-CA",
        &ca,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-days",
        "1",
        "-extfile",
        &path("leaf.cnf"),
        "-out",
        &cert,
    ]);
    TestCertificates { ca, cert, key }
}

/// Runs `openssl ARGS` (keys and certificates for the tests are made with it), asserting
/// that it succeeds.
pub fn openssl(args: &[&str]) {
    let status = std::process::Command::new("openssl")
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl runs");
    assert!(status.success(), "openssl {args:?}");
}

/// The Python with Playwright (and the MCP SDK) that `.ci/install-oauth-client` makes, from
/// `PKB_TEST_OAUTH_PYTHON`, for the tests that drive Chromium; `None` to skip them, unless
/// `PKB_REQUIRE_OAUTH_PYTHON` is set.
pub fn browser_python() -> Option<String> {
    match std::env::var("PKB_TEST_OAUTH_PYTHON") {
        Ok(python) if !python.is_empty() => Some(python),
        _ => {
            assert!(
                std::env::var_os("PKB_REQUIRE_OAUTH_PYTHON").is_none(),
                "PKB_REQUIRE_OAUTH_PYTHON is set but PKB_TEST_OAUTH_PYTHON is not"
            );
            eprintln!("skipped: set PKB_TEST_OAUTH_PYTHON to a Python with mcp and playwright");
            None
        }
    }
}
