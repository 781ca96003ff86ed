//! What the gate does by a request's revision, in one place: the revision its
//! `MCP-Protocol-Version` header names (read once), which revisions predate SSE priming
//! events, and the 2026-07-28 rules that rmcp does not keep as the contract does: methods that
//! revision removed, `Mcp-Method` on notifications, and no sessions to `DELETE`.

use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderValue, StatusCode};
use rmcp::model::ProtocolVersion;

use super::message::Message;

/// The header that names a request's method on the 2026-07-28 revision (SEP-2243).
const MCP_METHOD_HEADER: &str = "mcp-method";

/// The revision a request's headers name, read once: what the gate asks of it.
pub(super) struct Revision {
    /// The header names the stateless revision (2026-07-28) or a later one.
    stateless: bool,
    /// The header names a revision from before SSE priming events, or is absent.
    predates_priming: bool,
}

/// The revisions that have no SSE priming events.
const BEFORE_PRIMING: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
];

fn predates_priming(version: &str) -> bool {
    BEFORE_PRIMING.iter().any(|v| v.as_str() == version)
}

impl Revision {
    /// The revision `headers` name.
    pub(super) fn of(headers: &HeaderMap) -> Self {
        let value = headers.get("mcp-protocol-version");
        let text = value.and_then(|v| v.to_str().ok());
        Self {
            // Revisions are dates, so text order is their order.
            stateless: text.is_some_and(|v| v >= ProtocolVersion::V_2026_07_28.as_str()),
            // 2025-03-26 and older send no such header; every later client does after
            // `initialize`.
            predates_priming: match value {
                None => true,
                Some(_) => text.is_some_and(predates_priming),
            },
        }
    }

    /// Whether the request speaks the stateless revision (2026-07-28) or a later one.
    pub(super) fn is_stateless(&self) -> bool {
        self.stateless
    }

    /// Whether the request speaks a revision from before SSE priming events (see `priming`):
    /// one its header names, or, for an `initialize`, the one it asks for (`requested`).
    pub(super) fn predates_priming(&self, requested: Option<&str>) -> bool {
        match requested {
            // rmcp answers an unknown revision with its newest, which has priming events.
            Some(requested) => predates_priming(requested),
            None => self.predates_priming,
        }
    }

    /// Whether a `DELETE` can name a session: not on the stateless revision, which has none
    /// (rmcp answers 405 there).
    pub(super) fn has_sessions(&self) -> bool {
        !self.stateless
    }
}

/// A request of the stateless revision for a method it removed, answered -32601 (HTTP 404):
/// rmcp would take an `initialize` for the older handshake and open a session, and would read
/// the others' params before finding the method gone.
#[allow(
    clippy::result_large_err,
    reason = "a refusal is the response itself, made once for the request it ends"
)]
pub(super) fn refuse_removed_method(message: &Message) -> Result<(), Response> {
    let Some(method) = message.method() else {
        return Ok(());
    };
    let id = match message.id() {
        Some(id) => id,
        None => return Ok(()),
    };
    if !crate::framework::server::removed_by_stateless_revision(method, message.meta_revision()) {
        return Ok(());
    }
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32601, "message": format!("method not found: {method} (2026-07-28 has no such method)")},
    });
    Err((StatusCode::NOT_FOUND, axum::Json(error)).into_response())
}

/// Gives a notification of the stateless revision its method's `Mcp-Method` header when it
/// came without: the revision asks for the header on requests and leaves notifications open;
/// rmcp asks for it on both, and the official client sends `notifications/cancelled` without
/// it (the official TypeScript server exempts notifications too).
pub(super) fn name_notification(revision: &Revision, headers: &mut HeaderMap, message: &Message) {
    if revision.is_stateless()
        && message.id().is_none()
        && let Some(method) = message.method()
        && !headers.contains_key(MCP_METHOD_HEADER)
        && let Ok(value) = HeaderValue::from_str(method)
    {
        headers.insert(MCP_METHOD_HEADER, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revisions_before_2025_11_25_lose_it() {
        let mut headers = HeaderMap::new();
        assert!(
            Revision::of(&headers).predates_priming(None),
            "no header: 2025-03-26"
        );
        assert!(Revision::of(&headers).predates_priming(Some("2025-06-18")));
        assert!(!Revision::of(&headers).predates_priming(Some("2025-11-25")));
        assert!(!Revision::of(&headers).predates_priming(Some("2030-01-01")));
        headers.insert("mcp-protocol-version", "2025-06-18".parse().unwrap());
        assert!(Revision::of(&headers).predates_priming(None));
        headers.insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
        assert!(!Revision::of(&headers).predates_priming(None));
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        assert!(!Revision::of(&headers).predates_priming(None));
    }

    #[test]
    fn the_stateless_revision_is_that_date_or_later() {
        let mut headers = HeaderMap::new();
        assert!(!Revision::of(&headers).is_stateless());
        headers.insert("mcp-protocol-version", "2025-11-25".parse().unwrap());
        assert!(!Revision::of(&headers).is_stateless());
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        assert!(Revision::of(&headers).is_stateless());
        assert!(!Revision::of(&headers).has_sessions());
    }
}
