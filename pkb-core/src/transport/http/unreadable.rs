//! Bodies rmcp cannot read, answered over HTTP as stdio answers such lines: a JSON-RPC error
//! carrying the request's id, -32602 for a known method's bad params (`tools/call` without a
//! name), -32600 for anything else, -32700 for what is not JSON, where rmcp answers 415 with
//! serde's text in plain words.
//!
//! A bad-params answer goes with 200, as every answer to a call does, so that a client
//! matches it to its request; an invalid request, or a message that gets no answer (a
//! notification, a response), gets 400.

use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;

use crate::transport::{known_params_error, unreadable_message_answer};

/// What rmcp puts before serde's reason when it cannot read a body.
const RMCP_PREFIX: &str = "fail to deserialize request body ";

/// A body that is not JSON: -32700, id null, with 400.
pub(super) fn parse_error(why: &str) -> Response {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("parse error: {why}")},
    });
    (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
}

/// The answer to `body`, a message that cannot be read, `why` saying what is wrong: a parse
/// error when it is not JSON after all (bytes that are not UTF-8 inside a string, nesting
/// past serde's limit), which a first look may pass over.
pub(super) fn answer(body: &[u8], why: &str) -> Response {
    let value = match serde_json::from_slice(body) {
        Ok(value) => value,
        Err(error) => return parse_error(&error.to_string()),
    };
    let known = known_params_error(&value);
    let why = known.as_deref().unwrap_or(why);
    let (status, id, code, kind) = match unreadable_message_answer(&value) {
        Some((id, -32602, kind)) => (StatusCode::OK, id, -32602, kind),
        Some((id, code, kind)) => (StatusCode::BAD_REQUEST, id, code, kind),
        None => (
            StatusCode::BAD_REQUEST,
            serde_json::Value::Null,
            -32600,
            "invalid message",
        ),
    };
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": format!("{kind}: {why}")},
    });
    (status, axum::Json(error)).into_response()
}

/// `response` as rmcp gave it, unless it is rmcp's refusal of `body`, sent as JSON (see
/// [`is_json`]), for not being a message it can read: then the answer stdio gives.
pub(super) async fn mend(response: Response, body: &[u8], sent_as_json: bool) -> Response {
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE || !sent_as_json {
        return response;
    }
    let Ok(text) = response.into_body().collect().await.map(|b| b.to_bytes()) else {
        return answer(body, "not a JSON-RPC message");
    };
    let text = String::from_utf8_lossy(&text);
    answer(body, text.strip_prefix(RMCP_PREFIX).unwrap_or(&text))
}

/// Whether the request says its body is JSON, as rmcp checks before reading it: its 415 then
/// means the body could not be read, not that it was of another type.
pub(super) fn is_json(request: &HeaderMap) -> bool {
    request
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        })
}
