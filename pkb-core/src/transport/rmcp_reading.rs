//! What Streamable HTTP's gate reads of a message before rmcp's service does: a `tools/call`
//! of the plain shape, which the gate answers itself (rmcp's generic decoder tries each of its
//! 22 request types in turn), and what rmcp would not refuse plainly.

use rmcp::model::{CallToolRequestParams, ProtocolVersion, RequestId, RequestMetaObject};
use serde_json::{Map, Value};

use crate::framework::incoming::{self, request_id};

/// A `tools/call` request of the plain shape (`jsonrpc`, `id`, `method` and `params` holding a
/// `name` and optional `arguments`, nothing else): its id and params, as rmcp's own decoder
/// makes them. With `stateless_meta`, the params may also hold the `_meta` of a 2026-07-28
/// request (see [`stateless_meta`]), returned for the handler's context. Anything else,
/// including every malformed call, is handed back for the generic path, so errors and rarer
/// fields behave exactly as before.
pub(crate) fn plain_call_tool(
    value: Value,
    stateless_meta: bool,
) -> Result<(RequestId, CallToolRequestParams, Option<RequestMetaObject>), Value> {
    let Value::Object(mut object) = value else {
        return Err(value);
    };
    let Some(id) = plain_call_tool_id(&object, stateless_meta) else {
        return Err(Value::Object(object));
    };
    let mut params = match object.remove("params") {
        Some(Value::Object(params)) => params,
        _ => Map::new(),
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        _ => String::new(),
    };
    let mut call = CallToolRequestParams::new(name);
    if let Some(Value::Object(arguments)) = params.remove("arguments") {
        call = call.with_arguments(arguments);
    }
    let meta = match params.remove("_meta") {
        Some(Value::Object(meta)) => Some(RequestMetaObject::from(meta)),
        _ => None,
    };
    Ok((id, call, meta))
}

/// Whether `meta` is the complete `_meta` of a request of the stateless revision this server
/// serves: the direct path may answer it, rmcp's handler checks it the same way there. Any
/// other `_meta` (a progress token alone, an unknown revision) takes the generic path.
fn stateless_meta(meta: &Value) -> bool {
    // The shape only: rmcp's handler decodes and checks the capabilities on either path.
    meta.get("io.modelcontextprotocol/protocolVersion")
        .and_then(Value::as_str)
        == Some(ProtocolVersion::V_2026_07_28.as_str())
        && meta
            .get("io.modelcontextprotocol/clientCapabilities")
            .is_some_and(Value::is_object)
}

/// The id of a plain `tools/call` request (see [`plain_call_tool`]); `None` for any other
/// message.
fn plain_call_tool_id(
    object: &Map<String, Value>,
    stateless_meta_allowed: bool,
) -> Option<RequestId> {
    let params = object.get("params")?.as_object()?;
    let plain = object
        .keys()
        .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "method" | "params"))
        && object.get("jsonrpc")?.as_str()? == "2.0"
        && object.get("method")?.as_str()? == "tools/call"
        && params
            .keys()
            .all(|k| matches!(k.as_str(), "name" | "arguments" | "_meta"))
        && params
            .get("_meta")
            .is_none_or(|meta| stateless_meta_allowed && stateless_meta(meta))
        && params.get("name")?.is_string()
        && params
            .get("arguments")
            .is_none_or(|a| a.is_object() || a.is_null());
    if !plain {
        return None;
    }
    request_id(object.get("id")?)
}

/// How a message rmcp cannot read is answered, on either transport: `(id, code, kind)`, the
/// error's message being `kind: why`; `None` for a notification or a response, which get no
/// answer. Only a well-formed request can have bad params (-32602); a bad envelope, even
/// around a known method, is an invalid request (-32600).
pub(crate) fn unreadable_message_answer(value: &Value) -> Option<(Value, i64, &'static str)> {
    let id = invalid_answer_id(value)?;
    let known_method = valid_envelope(value)
        && value
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(|m| crate::framework::server::KNOWN_METHODS.contains(&m));
    Some(if known_method {
        (id, -32602, "invalid params")
    } else {
        (id, -32600, "invalid request")
    })
}

/// What is wrong with the params of the request in `value` where rmcp would not say it
/// plainly, on either transport: a page request's cursor that is no string (rmcp reads it as
/// none), or an `initialize` it cannot read (rmcp takes it for a 2026-07-28 request and speaks
/// of `_meta` fields that an older client, the only kind that sends `initialize`, never sends).
pub(crate) fn known_params_error(value: &Value) -> Option<String> {
    let method = value.get("method")?.as_str()?;
    let params = value.get("params");
    if method == "initialize" {
        let params = params.cloned().unwrap_or(Value::Null);
        return serde_json::from_value::<rmcp::model::InitializeRequestParams>(params)
            .err()
            .map(|error| error.to_string());
    }
    let cursor = params.and_then(|p| p.get("cursor"));
    crate::framework::server::unreadable_cursor(method, cursor)
}

/// Whether `value` has JSON-RPC 2.0's request envelope: `"jsonrpc": "2.0"`, and an id, if
/// any, that can be echoed back exactly.
fn valid_envelope(value: &Value) -> bool {
    value.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && value.get("id").is_none_or(|id| request_id(id).is_some())
}

/// The id to answer an invalid message with (see [`incoming::invalid_answer_id`]).
fn invalid_answer_id(value: &Value) -> Option<Value> {
    value
        .as_object()
        .map_or(Some(Value::Null), incoming::invalid_answer_id)
}

#[cfg(test)]
mod tests {
    use rmcp::RoleServer;
    use rmcp::model::{ClientRequest, JsonRpcMessage, Request};
    use rmcp::service::RxJsonRpcMessage;
    use serde_json::json;

    use super::*;

    /// The message rmcp's decoder makes of a plain call: the same `CallToolRequest`, with empty
    /// extensions since there is no `_meta`.
    fn call_tool_message(
        id: RequestId,
        call: CallToolRequestParams,
    ) -> RxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::request(ClientRequest::CallToolRequest(Request::new(call)), id)
    }

    /// rmcp's own decoding of a message, for comparison.
    fn generic(value: &Value) -> Option<RxJsonRpcMessage<RoleServer>> {
        serde_json::from_value(value.clone()).ok()
    }

    #[test]
    fn plain_tool_calls_decode_as_rmcp_decodes_them() {
        let calls = [
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "hi", "n": [1, {"a": null}]}}}),
            json!({"jsonrpc": "2.0", "id": "abc", "method": "tools/call",
                   "params": {"name": "fetch"}}),
            json!({"jsonrpc": "2.0", "id": -3, "method": "tools/call",
                   "params": {"name": "fetch", "arguments": null}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "", "arguments": {}}}),
        ];
        for call in calls {
            let (id, params, meta) =
                plain_call_tool(call.clone(), true).expect("a plain call takes the fast path");
            assert!(meta.is_none());
            let fast = call_tool_message(id, params);
            let slow = generic(&call).expect("rmcp decodes it");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{call}");
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&slow).unwrap()
            );
        }
    }

    #[test]
    fn everything_else_takes_the_generic_path_unchanged() {
        let others = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "arguments": [1]}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "_meta": {"progressToken": 5}}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "requestState": "x"}}),
            json!({"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
                   "params": {"name": "echo"}}),
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call",
                   "params": {"name": "echo"}}),
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo"}, "result": {}}),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "echo"}}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1]}),
            json!([1, 2]),
        ];
        for other in others {
            assert_eq!(
                plain_call_tool(other.clone(), true).expect_err("not a plain call"),
                other
            );
        }
    }

    #[test]
    fn a_stateless_calls_meta_goes_to_the_direct_path_once_it_may() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/logLevel": "info",
        });
        let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                          "params": {"name": "echo", "_meta": meta}});
        // Before the session has started, rmcp's loop must see it.
        assert_eq!(plain_call_tool(call.clone(), false).unwrap_err(), call);
        let (_, params, found) = plain_call_tool(call, true).expect("the direct path");
        assert_eq!(params.name, "echo");
        let found = found.expect("the _meta");
        assert_eq!(found.protocol_version().unwrap().as_str(), "2026-07-28");
        assert!(found.client_capabilities().unwrap().sampling.is_some());
        for incomplete in [
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
            json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25",
                   "io.modelcontextprotocol/clientCapabilities": {}}),
            json!({"io.modelcontextprotocol/protocolVersion": "2027-01-01",
                   "io.modelcontextprotocol/clientCapabilities": {}}),
            json!("not an object"),
        ] {
            let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                              "params": {"name": "echo", "_meta": incomplete}});
            assert_eq!(plain_call_tool(call.clone(), true).unwrap_err(), call);
        }
    }
}
