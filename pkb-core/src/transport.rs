//! Newline-delimited JSON-RPC over a byte stream, answering what rmcp's own stdio transport
//! drops: lines that are not JSON (-32700), JSON that is not a message (-32600), and lines
//! longer than [`MAX_MESSAGE_BYTES`] (refused without being buffered).
//!
//! `tools/call`, the request that carries the load, is decoded directly when it has the plain
//! shape (see `plain_call_tool`): rmcp's generic decoder tries each of its 22 request types
//! in turn and spent about 45% of the server's instructions on an `echo` call. With
//! [`InlineToolCalls`] such a call is also answered here rather than in rmcp's service loop.

#[cfg(feature = "http")]
pub mod http;
mod in_flight;
mod inline_tool_calls;

use std::sync::Arc;

use in_flight::InFlight;
pub use in_flight::MAX_IN_FLIGHT;
pub use inline_tool_calls::InlineToolCalls;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ClientNotification, ClientRequest, JsonRpcMessage, NumberOrString,
    ProtocolVersion, Request, RequestId, RequestMetaObject,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, OwnedSemaphorePermit};

/// The longest message accepted, in bytes. A longer line is answered with a parse error and
/// skipped, so memory stays bounded whatever a client sends.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// A line-delimited JSON-RPC transport for the server side.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
    line: Vec<u8>,
    /// The line being read is longer than the limit: its bytes are being skipped.
    overflow: bool,
    /// `line` holds a line already handed out; clear it before reading the next.
    delivered: bool,
    /// The input has ended (or failed): nothing more is read.
    ended: bool,
    direct: Option<Arc<InlineToolCalls>>,
    in_flight: InFlight,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading requests from `reader` and writing answers to `writer`.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(writer)),
            line: Vec::with_capacity(4096),
            overflow: false,
            delivered: false,
            ended: false,
            direct: None,
            in_flight: InFlight::new(),
        }
    }

    /// The same transport, answering plain tool calls itself through `direct` once the client
    /// has initialized.
    pub fn with_inline_tool_calls(mut self, direct: Arc<InlineToolCalls>) -> Self {
        self.direct = Some(direct);
        self
    }

    /// Reads one line into `self.line`, keeping at most `MAX_MESSAGE_BYTES`. Returns `None`
    /// at end of input, `Some(false)` for a line that was too long (its rest is discarded).
    async fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        // rmcp polls `receive` inside a `select!` and may drop it at any await: all progress
        // lives in `self`, so a dropped read resumes where it stopped instead of losing the
        // start of a line.
        if self.delivered {
            self.line.clear();
            self.overflow = false;
            self.delivered = false;
        }
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                if self.line.is_empty() && !self.overflow {
                    return Ok(None);
                }
                self.delivered = true;
                return Ok(Some(!self.overflow));
            }
            let (chunk, found) = match buffer.iter().position(|&b| b == b'\n') {
                Some(end) => (&buffer[..end], Some(end + 1)),
                None => (buffer, None),
            };
            if !self.overflow {
                if self.line.len() + chunk.len() > MAX_MESSAGE_BYTES {
                    self.overflow = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let consumed = found.unwrap_or(buffer.len());
            self.reader.consume(consumed);
            if found.is_some() {
                self.delivered = true;
                return Ok(Some(!self.overflow));
            }
        }
    }
}

/// Lets calls answered by `direct` finish while rmcp's loop still runs, then ends the input.
async fn end_of_input(direct: Option<&InlineToolCalls>) -> Option<RxJsonRpcMessage<RoleServer>> {
    if let Some(direct) = direct {
        direct
            .wait_for_running(inline_tool_calls::END_OF_INPUT_WAIT)
            .await;
        // rmcp's loop stops on the `None`: what still waits on the client gives up.
        direct.stopping();
    }
    None
}

/// Answers a line that never became a message. The write runs as its own task, so the
/// answer is not lost if rmcp drops the `receive` future that found the bad line; it holds
/// the line's `permit` until written.
fn answer_error<W: AsyncWrite + Unpin + Send + 'static>(
    writer: &Arc<Mutex<W>>,
    id: Value,
    code: i64,
    message: String,
    permit: Option<OwnedSemaphorePermit>,
) {
    let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let writer = writer.clone();
    tokio::spawn(async move {
        if let Err(error) = write_line(&writer, &line).await {
            tracing::warn!(%error, "could not write an error answer");
        }
        drop(permit);
    });
}

async fn write_line<W: AsyncWrite + Unpin, T: serde::Serialize>(
    writer: &Mutex<W>,
    message: &T,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let id = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let permit = id.and_then(|id| self.in_flight.answered(id));
        async move {
            let written = write_line(&writer, &item).await;
            drop(permit);
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // rmcp may drop this future while it waits at the end of input, and call again:
            // the end is remembered rather than read a second time (a terminal would block).
            if self.ended {
                return end_of_input(self.direct.as_deref()).await;
            }
            self.in_flight.reserve().await;
            let complete = match self.read_line().await {
                Ok(Some(complete)) => complete,
                Ok(None) => {
                    self.ended = true;
                    continue;
                }
                Err(error) => {
                    tracing::info!(%error, "stdin closed");
                    self.ended = true;
                    continue;
                }
            };
            if !complete {
                answer_error(
                    &self.writer,
                    Value::Null,
                    -32700,
                    format!("parse error: message longer than {MAX_MESSAGE_BYTES} bytes"),
                    self.in_flight.take(),
                );
                continue;
            }
            let line = trim_ascii(&self.line);
            if line.is_empty() {
                continue;
            }
            let value: Value = match serde_json::from_slice(line) {
                Ok(value) => value,
                Err(error) => {
                    answer_error(
                        &self.writer,
                        Value::Null,
                        -32700,
                        format!("parse error: {error}"),
                        self.in_flight.take(),
                    );
                    continue;
                }
            };
            if let Some((id, method)) = removed_by_stateless_revision(&value) {
                answer_error(
                    &self.writer,
                    id,
                    -32601,
                    format!("method not found: {method} (2026-07-28 has no such method)"),
                    self.in_flight.take(),
                );
                continue;
            }
            let direct_peer = self.direct.as_ref().and_then(|direct| direct.peer());
            let value = match plain_call_tool(value, direct_peer.is_some()) {
                Ok((id, call, meta)) => {
                    if let Some(direct) = &self.direct
                        && let Some(peer) = direct.peer()
                    {
                        let permit = self.in_flight.take();
                        direct
                            .answer(peer, id, call, meta, &self.writer, permit)
                            .await;
                        continue;
                    }
                    self.in_flight.hold_for(id.clone());
                    return Some(call_tool_message(id, call));
                }
                Err(value) => value,
            };
            let unreadable = unreadable_message_answer(&value);
            let message = match known_params_error(&value) {
                Some(error) => Err(error),
                None => serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value)
                    .map_err(|error| error.to_string()),
            };
            match message {
                Ok(message) => {
                    if let JsonRpcMessage::Request(request) = &message {
                        self.in_flight.hold_for(request.id.clone());
                    }
                    // The request a cancellation names, read as rmcp reads it (`5.0` is 5),
                    // so that the two agree on which call gets no answer.
                    if let Some(id) = cancelled_request_id(&message) {
                        if let Some(direct) = &self.direct {
                            direct.cancel(&id);
                        }
                        self.in_flight.cancelled(&id);
                    }
                    return Some(message);
                }
                Err(error) => match unreadable {
                    Some((id, code, kind)) => {
                        let message = format!("{kind}: {error}");
                        answer_error(&self.writer, id, code, message, self.in_flight.take());
                    }
                    None => tracing::debug!(%error, "ignored an invalid message without an id"),
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(direct) = &self.direct {
            direct.stopping();
            direct.wait_for_running(inline_tool_calls::CLOSE_WAIT).await;
        }
        // An answer stuck writing to a client that no longer reads holds the writer: exit
        // rather than wait for it.
        match tokio::time::timeout(inline_tool_calls::CLOSE_WAIT, self.writer.lock()).await {
            Ok(mut writer) => writer.flush().await,
            Err(_) => {
                tracing::warn!("output still blocked when closing; exiting without flushing");
                Ok(())
            }
        }
    }
}

/// A `tools/call` request of the plain shape (`jsonrpc`, `id`, `method` and `params` holding a
/// `name` and optional `arguments`, nothing else): its id and params, as rmcp's own decoder
/// makes them. With `stateless_meta`, the params may also hold the `_meta` of a 2026-07-28
/// request (see [`stateless_meta`]), returned for the handler's context. Anything else,
/// including every malformed call, is handed back for the generic path, so errors and rarer
/// fields behave exactly as before.
fn plain_call_tool(
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

/// The message rmcp's decoder makes of a plain call: the same `CallToolRequest`, with empty
/// extensions since there is no `_meta`.
fn call_tool_message(id: RequestId, call: CallToolRequestParams) -> RxJsonRpcMessage<RoleServer> {
    JsonRpcMessage::request(ClientRequest::CallToolRequest(Request::new(call)), id)
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

/// The id and method of a request of the stateless revision (its `_meta` names 2026-07-28 or
/// later) for a method that revision removed. rmcp answers such a ping before a session
/// exists, takes such an initialize for the older handshake, and reads the others' params
/// first; the revision says -32601 whatever the params.
fn removed_by_stateless_revision(value: &Value) -> Option<(Value, &str)> {
    let method = value.get("method")?.as_str()?;
    let version = value
        .get("params")?
        .get("_meta")?
        .get("io.modelcontextprotocol/protocolVersion")?
        .as_str();
    if !crate::framework::server::removed_by_stateless_revision(method, version) {
        return None;
    }
    Some((answerable_id(value.get("id")?)?, method))
}

/// A JSON-RPC id as rmcp holds it: an integer or a string.
fn request_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        _ => None,
    }
}

/// The request a `notifications/cancelled` names, if `message` is one.
fn cancelled_request_id(message: &RxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    match message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            ClientNotification::CancelledNotification(cancelled) => {
                cancelled.params.request_id.clone()
            }
            _ => None,
        },
        _ => None,
    }
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
/// any, that rmcp can hold (see [`answerable_id`]).
fn valid_envelope(value: &Value) -> bool {
    value.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && value.get("id").is_none_or(|id| answerable_id(id).is_some())
}

/// `id` if it can be echoed back exactly: a string, or an integer rmcp holds as one. A
/// fraction or an integer past 64 bits would come back changed, which no client could match.
fn answerable_id(id: &Value) -> Option<Value> {
    request_id(id).map(|_| id.clone())
}

/// The id to answer an invalid message with, or `None` when it must not be answered: a
/// notification (no id) or a response (`result`/`error`) gets no reply, as JSON-RPC says.
fn invalid_answer_id(value: &Value) -> Option<Value> {
    let Some(object) = value.as_object() else {
        return Some(Value::Null);
    };
    let id = || {
        object
            .get("id")
            .and_then(answerable_id)
            .unwrap_or(Value::Null)
    };
    if object.contains_key("method") {
        object.contains_key("id").then(id)
    } else if object.contains_key("result") || object.contains_key("error") {
        None
    } else {
        Some(id())
    }
}

fn trim_ascii(bytes: &[u8]) -> &[u8] {
    bytes.trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_cancellation_names_the_request_it_cancels() {
        let named = |value: Value| generic(&value).and_then(|m| cancelled_request_id(&m));
        assert_eq!(
            named(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 5, "reason": "gone"}})
            ),
            Some(NumberOrString::Number(5))
        );
        assert_eq!(
            named(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": "a"}})
            ),
            Some(NumberOrString::String("a".into()))
        );
        // As rmcp reads it: an integral float is the integer.
        assert_eq!(
            named(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 5.0}})
            ),
            Some(NumberOrString::Number(5))
        );
        for other in [
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"requestId": 5}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 1.5}}),
        ] {
            assert_eq!(named(other.clone()), None, "{other}");
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
