//! TLS to the database, when the URL asks for it (`sslmode=require`): rustls, verifying the
//! server's certificate and name against the system's trust store, or the certificates in
//! `SSL_CERT_FILE` / `SSL_CERT_DIR`, as libpq's `verify-full` does.
//!
//! `sslmode=prefer`, tokio-postgres' default, connects in the clear: libpq's `prefer` does
//! not verify the server either, and a verifying `prefer` would refuse the self-signed
//! certificates many servers are installed with.

use std::sync::Arc;

use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::store::StoreError;

/// The TLS connector for `config`; `None` to connect in the clear.
pub(super) fn connector(
    config: &tokio_postgres::Config,
    location: &str,
) -> Result<Option<MakeRustlsConnect>, StoreError> {
    if config.get_ssl_mode() != SslMode::Require {
        return Ok(None);
    }
    let failed = |reason: String| StoreError::Open {
        path: location.into(),
        source: reason.into(),
    };
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(failed(format!(
            "sslmode=require, but no trusted certificate was found to verify the server with (set SSL_CERT_FILE to the server's CA certificate){}",
            if errors.is_empty() {
                String::new()
            } else {
                format!(": {}", errors.join("; "))
            }
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| failed(format!("cannot set up TLS: {error}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(tls)))
}
