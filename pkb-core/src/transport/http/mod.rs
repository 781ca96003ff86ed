//! MCP over Streamable HTTP: `/mcp` inside axum, behind the DNS-rebinding checks
//! ([`origin`]) and the authorization gate ([`gate`]), served by PKB's dispatcher
//! ([`endpoint`]), by hyper with the contract's limits on slow clients, with or without TLS.
//!
//! Every session gets its own [`McpServer`] from one template, so tools, resources and
//! prompts are the same as on stdio: no handler learns which transport it is on.

mod bearer;
mod endpoint;
mod events;
mod gate;
mod headers;
mod in_flight;
mod listener;
mod message;
mod origin;
mod removed_methods;
mod session;
mod sessions;
mod stateless_streams;
mod stream_places;
mod unread_body;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::{any, get};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use bearer::BearerAuth;
pub use listener::{HEADER_TIMEOUT, Tls};
pub use message::BODY_TIMEOUT;
pub use origin::{OriginPolicy, check_origin};
pub use stream_places::STREAMS_PER_USER;

use crate::McpServer;
pub use crate::crypto_provider::install as install_crypto_provider;

/// The header naming a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long a shutdown waits for the requests in flight.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The endpoint's path.
pub const MCP_PATH: &str = "/mcp";

/// RFC 9728's metadata path for the resource at [`MCP_PATH`].
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// How often open sessions' tokens are checked again when authorization is on: the token
/// file is read every 250 ms, so a revoked token's sessions (and their event streams) end
/// within about three quarters of a second.
const TOKEN_RECHECK: Duration = Duration::from_millis(500);

/// How an HTTP server is set up.
pub struct HttpSettings {
    /// The address to listen on; port 0 picks a free one.
    pub bind: SocketAddr,
    /// The origin clients reach the server at; `None` is `http(s)://<bound address>`.
    pub public_url: Option<String>,
    /// More `Host` names to accept.
    pub allowed_hosts: Vec<String>,
    /// More `Origin`s to accept.
    pub allowed_origins: Vec<String>,
    /// Serve HTTPS with this certificate and key.
    pub tls: Option<Tls>,
    /// Sessions idle this long end.
    pub session_idle_timeout: Duration,
    /// At most this many sessions at once, and as many event streams outside any session
    /// (the 2026-07-28 revision's `subscriptions/listen`), [`STREAMS_PER_USER`] of them for one
    /// user.
    pub max_sessions: usize,
    /// How requests are authenticated; `None` serves everyone as one user, which is
    /// allowed on a loopback address only.
    pub auth: Option<Arc<dyn BearerAuth>>,
    /// More routes to serve beside `/mcp`, behind the same Host and Origin checks: the web
    /// page for the person, at `/`.
    pub pages: Option<Router>,
}

impl HttpSettings {
    /// Plain HTTP at `bind` without authorization (so on a loopback address only), with the
    /// defaults PKB's server uses: sessions idle for 30 minutes end, at most 10,000.
    pub fn loopback(bind: SocketAddr) -> Self {
        Self {
            bind,
            public_url: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            tls: None,
            session_idle_timeout: Duration::from_secs(1800),
            max_sessions: 10_000,
            auth: None,
            pages: None,
        }
    }
}

/// Why the HTTP server did not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// No authentication, off a loopback address.
    #[error(
        "serving without authentication to everyone who can reach {0} is allowed only on a loopback address (127.0.0.1, ::1): authenticate requests, or bind to 127.0.0.1"
    )]
    OpenToTheNetwork(SocketAddr),
    /// The public URL is not an http(s) URL.
    #[error("the public URL {0}: {1}")]
    PublicUrl(String, String),
    /// The address cannot be bound.
    #[error("cannot listen on {0}: {1}")]
    Bind(SocketAddr, std::io::Error),
    /// The certificate or key cannot be used.
    #[error("{0}")]
    Tls(String),
}

/// A bound HTTP server, not yet serving.
pub struct HttpServer {
    listener: listener::Listener,
    router: Router,
    gate: Arc<gate::Gate>,
    cancel: CancellationToken,
    url: String,
}

impl HttpServer {
    /// Binds the address and builds the service; serving starts with [`HttpServer::run`].
    pub async fn bind(settings: HttpSettings, template: McpServer) -> Result<Self, HttpError> {
        if settings.auth.is_none() && !settings.bind.ip().is_loopback() {
            return Err(HttpError::OpenToTheNetwork(settings.bind));
        }
        install_crypto_provider();
        let tls = match &settings.tls {
            Some(tls) => Some(tls.acceptor().map_err(HttpError::Tls)?),
            None => None,
        };
        let tcp = tokio::net::TcpListener::bind(settings.bind)
            .await
            .map_err(|e| HttpError::Bind(settings.bind, e))?;
        let local = tcp
            .local_addr()
            .map_err(|e| HttpError::Bind(settings.bind, e))?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        if settings.public_url.is_none()
            && local.ip().is_unspecified()
            && settings.allowed_hosts.is_empty()
        {
            tracing::warn!(
                "listening on {local} without a public URL: only requests whose Host is {local} \
                 pass the DNS-rebinding check; give the address clients use as the public URL"
            );
        }
        let public_url = settings
            .public_url
            .clone()
            .unwrap_or_else(|| format!("{scheme}://{local}"));
        let public_url = public_url.trim_end_matches('/').to_owned();
        let public_uri: http::Uri = public_url.parse().map_err(|e: http::uri::InvalidUri| {
            HttpError::PublicUrl(public_url.clone(), e.to_string())
        })?;
        if !matches!(public_uri.scheme_str(), Some("http" | "https")) || public_uri.host().is_none()
        {
            return Err(HttpError::PublicUrl(
                public_url,
                "expected an http:// or https:// URL with a host".into(),
            ));
        }
        let mut origins = settings.allowed_origins.clone();
        if settings.public_url.is_none() && local.ip().is_loopback() {
            // The web page's forms post from whichever loopback name the person typed.
            let port = local.port();
            origins.extend(
                ["localhost", "127.0.0.1", "[::1]"].map(|host| format!("{scheme}://{host}:{port}")),
            );
        }
        let policy = Arc::new(OriginPolicy::new(
            &public_uri,
            local.ip().is_loopback(),
            &settings.allowed_hosts,
            &origins,
        ));

        let cancel = CancellationToken::new();
        let registry = template.shared_registry();
        let endpoint = endpoint::Endpoint {
            template,
            stop: cancel.clone(),
        };

        let resource = format!("{public_url}{MCP_PATH}");
        let issuer = settings
            .auth
            .as_ref()
            .and_then(|auth| auth.authorization_server(&resource));
        let gate = Arc::new(gate::Gate {
            registry,
            auth: settings.auth.clone(),
            resource_metadata: issuer
                .as_ref()
                .map(|_| format!("{public_url}{RESOURCE_METADATA_PATH}")),
            stream_places: Arc::new(stream_places::StreamPlaces::new(settings.max_sessions)),
            sessions: sessions::Sessions::new(settings.max_sessions, settings.session_idle_timeout),
            in_flight: Arc::default(),
            draining: AtomicBool::new(false),
            streams: Arc::default(),
            endpoint,
        });

        let mcp = Router::new()
            .route(MCP_PATH, any(gate::serve))
            .with_state(Arc::clone(&gate));
        let mut router = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .merge(mcp);
        if let (Some(issuer), Some(auth)) = (issuer, &settings.auth) {
            let metadata = json!({
                "resource": resource,
                "authorization_servers": [issuer],
                "scopes_supported": auth.scope_names().all(),
                "bearer_methods_supported": ["header"],
            });
            let answer = move || {
                let metadata = metadata.clone();
                async move { axum::Json(metadata).into_response() }
            };
            router = router
                .route(RESOURCE_METADATA_PATH, get(answer.clone()))
                .route("/.well-known/oauth-protected-resource", get(answer));
        }
        if let Some(routes) = settings.auth.as_ref().and_then(|auth| auth.routes()) {
            router = router.merge(routes);
        }
        if let Some(pages) = settings.pages {
            router = router.merge(pages);
        }
        let router = router
            .layer(axum::middleware::from_fn_with_state(
                policy,
                origin::check_origin,
            ))
            .layer(axum::middleware::from_fn(unread_body::close_if_unread));
        let url = format!("{scheme}://{local}{MCP_PATH}");
        Ok(Self {
            listener: listener::Listener::new(tcp, tls),
            router,
            gate,
            cancel,
            url,
        })
    }

    /// The endpoint's URL on the bound address, as the listening line shows it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until `shutdown` completes; then takes no new request (503), answers those in
    /// flight for up to [`SHUTDOWN_GRACE`], stops accepting connections, ends the sessions
    /// and returns.
    ///
    /// Connections are still accepted while the requests in flight finish: a call waiting
    /// for the client's sampling answer gets it on a new connection when the client's others
    /// are busy with event streams.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let stop = CancellationToken::new();
        let serving = tokio::spawn(self.listener.serve(self.router, stop.clone()));
        let gate = Arc::clone(&self.gate);
        let mut sweep_every = (gate.sessions.idle_timeout / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(30));
        if gate.auth.is_some() {
            // A revoked token's sessions end within a second, as its requests are refused.
            sweep_every = sweep_every.min(TOKEN_RECHECK);
        }
        let sweeping = tokio::spawn(async move {
            let mut tick = tokio::time::interval(sweep_every);
            loop {
                tick.tick().await;
                gate.sweep().await;
            }
        });
        shutdown.await;
        sweeping.abort();
        self.gate.draining.store(true, Ordering::SeqCst);
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, self.gate.in_flight.idle()).await;
        if drained.is_err() {
            tracing::warn!("requests still in flight after {SHUTDOWN_GRACE:?}; stopping anyway");
        }
        stop.cancel();
        // Ends every session and its event streams, so the connections can close.
        self.cancel.cancel();
        self.gate.sessions.close_all();
        let Ok(connections) = serving.await else {
            return;
        };
        if tokio::time::timeout(Duration::from_secs(1), connections.shutdown())
            .await
            .is_err()
        {
            tracing::debug!("connections still open at exit");
        }
    }
}

/// Turns a TLS setting into files.
impl Tls {
    /// The certificate chain and key files, in PEM.
    pub fn from_files(cert: PathBuf, key: PathBuf) -> Self {
        Tls { cert, key }
    }
}
