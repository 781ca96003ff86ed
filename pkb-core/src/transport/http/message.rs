//! A POST's body as the gate reads it: at most [`MAX_MESSAGE_BYTES`] within [`BODY_TIMEOUT`],
//! parsed once, and what the gate's stages ask of it (the method, the id, the tool, the
//! revision a request names). Once past the gate, the parsed message is what is served.

use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::Value;

use crate::transport::MAX_MESSAGE_BYTES;

/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// One POST's body, read and parsed.
pub(super) struct Message {
    value: Value,
    /// See [`Message::readable`].
    readable: bool,
}

impl Message {
    /// Reads and parses `body`; refuses one too large (413), too slow (408), unreadable (400)
    /// or not JSON (-32700 with 400), never holding more than the limit.
    pub(super) async fn read(body: Body) -> Result<Self, Response> {
        let bytes = read_body(body).await?;
        let value =
            serde_json::from_slice(&bytes).map_err(|_| parse_error("the body is not JSON"))?;
        Ok(Self::parsed(value))
    }

    fn parsed(value: Value) -> Self {
        let readable = match &value {
            Value::Object(object) => {
                matches!(
                    object.get("method"),
                    None | Some(Value::Null | Value::String(_))
                ) && matches!(
                    object.get("params"),
                    None | Some(Value::Null | Value::Object(_))
                )
            }
            _ => false,
        };
        Self { value, readable }
    }

    /// The parsed message, to be served.
    pub(super) fn into_value(self) -> Value {
        self.value
    }

    /// Whether the gate can tell what the message is: an object whose `method` (if any) is a
    /// string and whose `params` (if any) an object. One it cannot is one whose scope it
    /// cannot tell either.
    pub(super) fn readable(&self) -> bool {
        self.readable
    }

    /// The JSON-RPC method, if the message is readable and has one.
    pub(super) fn method(&self) -> Option<&str> {
        if !self.readable() {
            return None;
        }
        self.value.get("method")?.as_str()
    }

    /// The id, when there is one other than `null`.
    pub(super) fn id(&self) -> Option<&Value> {
        self.value.get("id").filter(|id| !id.is_null())
    }

    /// Whether this is a new request, which a server shutting down refuses. The answers and
    /// notifications that calls in flight wait for (a sampling response, a cancellation) are
    /// not; a message the gate cannot read counts as one.
    pub(super) fn is_new_request(&self) -> bool {
        !self.readable() || (self.method().is_some() && self.id().is_some())
    }

    /// Whether this is a request (a method and an id).
    pub(super) fn is_request(&self) -> bool {
        self.method().is_some() && self.id().is_some()
    }

    /// A param other than `null`, if the message is readable.
    fn param(&self, name: &str) -> Option<&Value> {
        if !self.readable() {
            return None;
        }
        self.value
            .get("params")?
            .get(name)
            .filter(|value| !value.is_null())
    }

    /// The tool a `tools/call` names.
    pub(super) fn tool_name(&self) -> Option<&str> {
        self.param("name")?.as_str()
    }

    /// The revision a request of the stateless revision names in its `_meta`.
    pub(super) fn meta_revision(&self) -> Option<&str> {
        self.param("_meta")?
            .get("io.modelcontextprotocol/protocolVersion")?
            .as_str()
    }
}

/// A body that is not JSON: -32700, id null, with 400.
fn parse_error(why: &str) -> Response {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("parse error: {why}")},
    });
    (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
}

/// Reads a request body of at most [`MAX_MESSAGE_BYTES`] within [`BODY_TIMEOUT`]: a larger
/// body is refused (413) as soon as it passes the limit, never held whole.
async fn read_body(body: Body) -> Result<Bytes, Response> {
    let limited = Limited::new(body, MAX_MESSAGE_BYTES);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            "Request Timeout: the body came too slowly",
        )
            .into_response()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload Too Large: the limit is 4 MiB",
        )
            .into_response()),
        Ok(Err(_)) => Err((
            StatusCode::BAD_REQUEST,
            "Bad Request: the body could not be read",
        )
            .into_response()),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> Message {
        Message::parsed(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn reads_what_the_stages_ask_and_nothing_of_a_shape_it_cannot_tell() {
        let call = message(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"writ\u0065"}}"#,
        );
        assert!(call.readable() && call.is_request() && call.is_new_request());
        assert_eq!(call.method(), Some("tools/call"));
        assert_eq!(
            call.tool_name(),
            Some("write"),
            "escapes decoded as rmcp decodes them"
        );
        let notification =
            message(r#"{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled"}"#);
        assert!(!notification.is_request() && !notification.is_new_request());
        let response = message(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        assert!(!response.is_new_request());
        for unreadable in [
            r#"[1]"#,
            r#"{"method":5}"#,
            r#"{"method":"x","params":"y"}"#,
        ] {
            let message = message(unreadable);
            assert!(
                !message.readable() && message.is_new_request(),
                "{unreadable}"
            );
            assert_eq!(message.method(), None);
        }
        // `params.name` of any kind leaves the message readable (rmcp's `initialize` ignores it).
        let initialize = message(
            r#"{"id":1,"method":"initialize","params":{"name":7,"protocolVersion":"2025-06-18"}}"#,
        );
        assert!(initialize.readable());
        assert_eq!(initialize.tool_name(), None);
    }
}
