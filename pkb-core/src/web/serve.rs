//! `pkb-server web`: the pages alone, on a loopback address, for a person whose clients use
//! stdio. The HTTP transport's own DNS-rebinding check guards them ([`check_origin`]): a page
//! of another site that renames itself 127.0.0.1 gets 403.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;

use super::{WebSettings, router};
use crate::transport::http::{OriginPolicy, check_origin};

/// The pages bound to a loopback port, not yet serving.
pub struct WebServer {
    listener: tokio::net::TcpListener,
    router: Router,
    url: String,
}

impl WebServer {
    /// Binds `bind`, which must be a loopback address (port 0 picks a free one).
    pub async fn bind(settings: WebSettings, bind: SocketAddr) -> Result<Self, String> {
        if !bind.ip().is_loopback() {
            return Err(format!(
                "the web page is served on a loopback address only (127.0.0.1, ::1), not {bind}"
            ));
        }
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|error| format!("cannot listen on {bind}: {error}"))?;
        let local = listener
            .local_addr()
            .map_err(|error| format!("cannot listen on {bind}: {error}"))?;
        let url = format!("http://{local}/");
        let public: http::Uri = format!("http://{local}")
            .parse()
            .map_err(|error| format!("{local}: {error}"))?;
        // The page's own forms post from whichever loopback name the person typed.
        let port = local.port();
        let origins = [
            format!("http://localhost:{port}"),
            format!("http://127.0.0.1:{port}"),
            format!("http://[::1]:{port}"),
        ];
        let policy = Arc::new(OriginPolicy::new(&public, true, &[], &origins));
        let router = router(settings)
            .layer(axum::middleware::from_fn_with_state(policy, check_origin))
            // The refusals of the check carry the pages' headers too.
            .layer(axum::middleware::map_response(super::layout::with_headers));
        Ok(Self {
            listener,
            router,
            url,
        })
    }

    /// The pages' URL: `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Serves until `shutdown` completes, then lets the requests in flight finish.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        if let Err(error) = axum::serve(self.listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await
        {
            tracing::error!(%error, "the web page's server stopped");
        }
    }
}

/// The pages alone on `bind`: [`WebServer::bind`].
pub async fn serve_alone(settings: WebSettings, bind: SocketAddr) -> Result<WebServer, String> {
    WebServer::bind(settings, bind).await
}
