//! Accepting connections: TCP with `TCP_NODELAY` (without it every event-stream answer waits
//! for the client's delayed ACK, about 40 ms), optional TLS, HTTP/1.1 by hyper with a limit
//! on how slowly headers may come, and a graceful stop.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's headers, or to finish a TLS handshake.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// A certificate chain and its private key, as PEM files.
#[derive(Debug, Clone)]
pub struct Tls {
    pub(super) cert: PathBuf,
    pub(super) key: PathBuf,
}

impl Tls {
    pub(super) fn acceptor(&self) -> Result<TlsAcceptor, String> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.cert)
            .and_then(|certs| certs.collect())
            .map_err(|e| format!("the TLS certificate {}: {e}", self.cert.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "the TLS certificate {}: no certificate in the file",
                self.cert.display()
            ));
        }
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| format!("the TLS key {}: {e}", self.key.display()))?;
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| format!("the TLS certificate and key do not make a usable pair: {e}"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// A bound socket, and the TLS to speak on it.
pub(super) struct Listener {
    tcp: TcpListener,
    tls: Option<TlsAcceptor>,
}

impl Listener {
    pub(super) fn new(tcp: TcpListener, tls: Option<TlsAcceptor>) -> Self {
        Self { tcp, tls }
    }

    /// Accepts and serves connections until `stop` is cancelled; the open connections are
    /// handed back to be stopped gracefully.
    pub(super) async fn serve(self, router: Router, stop: CancellationToken) -> GracefulShutdown {
        let graceful = GracefulShutdown::new();
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors, mostly: wait rather than spin.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = stop.cancelled() => break,
            };
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
            let service = TowerToHyperService::new(WithPeer {
                router: router.clone(),
                peer,
            });
            let builder = {
                let mut builder = http1::Builder::new();
                builder
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .keep_alive(true);
                builder
            };
            match &self.tls {
                None => {
                    let connection = builder.serve_connection(TokioIo::new(tcp), service);
                    let connection = graceful.watch(connection);
                    tokio::spawn(async move {
                        if let Err(error) = connection.await {
                            tracing::debug!(%error, %peer, "connection ended with an error");
                        }
                    });
                }
                Some(acceptor) => {
                    let acceptor = acceptor.clone();
                    let watcher = graceful.watcher();
                    tokio::spawn(async move {
                        let stream = match tokio::time::timeout(
                            HEADER_TIMEOUT,
                            acceptor.accept(tcp),
                        )
                        .await
                        {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(error)) => {
                                tracing::debug!(%error, %peer, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake too slow");
                                return;
                            }
                        };
                        let connection = builder.serve_connection(TokioIo::new(stream), service);
                        if let Err(error) = watcher.watch(connection).await {
                            tracing::debug!(%error, %peer, "connection ended with an error");
                        }
                    });
                }
            }
        }
        graceful
    }
}

/// The router, each request told the address it came from (axum's `ConnectInfo`): what the
/// authorization server counts its open registrations by.
#[derive(Clone)]
struct WithPeer {
    router: Router,
    peer: std::net::SocketAddr,
}

impl<B> tower_service::Service<http::Request<B>> for WithPeer
where
    Router: tower_service::Service<http::Request<B>>,
{
    type Response = <Router as tower_service::Service<http::Request<B>>>::Response;
    type Error = <Router as tower_service::Service<http::Request<B>>>::Error;
    type Future = <Router as tower_service::Service<http::Request<B>>>::Future;

    fn poll_ready(
        &mut self,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower_service::Service::<http::Request<B>>::poll_ready(&mut self.router, context)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        self.router.call(request)
    }
}
