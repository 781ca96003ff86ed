//! The methods the stateless revision (2026-07-28) removed: a request of that revision
//! calling one is refused at the gate, 404, as the contract asks, before any session is
//! looked for.

use axum::response::{IntoResponse, Response};
use http::StatusCode;

use super::message::Message;

/// A request of the stateless revision calling a method that revision removed: -32601, 404.
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
