//! The process's TLS provider, chosen once: rustls and the HTTP client find it there.

use std::sync::Once;

/// Makes ring the process's TLS provider, once.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
