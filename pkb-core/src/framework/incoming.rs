//! A message from a client, read once from the JSON its transport parsed: a request, a
//! notification, or a response to a request of the server's; or, for JSON that is none of
//! these, the error it is answered with. Every transport reads messages so, and the
//! dispatcher ([`McpServer::handle`](crate::McpServer::handle)) takes them from here: a
//! request's `_meta` is read here, once, and its params as the method's own type there, once.

use rmcp::model::{ErrorData, NumberOrString, RequestId, RequestMetaObject, ServerJsonRpcMessage};
use serde_json::{Map, Value, json};

use super::server::{KNOWN_METHODS, invalid_params};

/// One message of a client.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered.
    Request(Request),
    /// A notification: nothing answers it.
    Notification {
        /// What it notifies.
        method: String,
        /// Its params as sent; `null` when it had none.
        params: Value,
    },
    /// The client's answer to a request the server sent it.
    Response {
        /// The id of the server's request.
        id: RequestId,
        /// Its `result`, or its `error`.
        outcome: Result<Value, ErrorData>,
    },
}

/// A client's request.
#[derive(Debug)]
pub struct Request {
    /// Its id, echoed in the answer.
    pub id: RequestId,
    /// The method it calls.
    pub method: String,
    /// Its params as sent; `null` when it had none.
    pub params: Value,
    /// Its params' `_meta`, read once for the transport's checks and the dispatcher alike.
    pub(crate) meta: Result<RequestMetaObject, ErrorData>,
}

impl Request {
    /// The request `id` calling `method` with `params`.
    pub fn new(id: RequestId, method: String, params: Value) -> Self {
        let meta = match params.get("_meta") {
            Some(meta) => serde_json::from_value(meta.clone())
                .map_err(|error| invalid_params(format!("invalid params: {error}"))),
            None => Ok(RequestMetaObject::default()),
        };
        Self {
            id,
            method,
            params,
            meta,
        }
    }

    /// Its `_meta` (empty when it had none), or the error a `_meta` that cannot be read is
    /// answered with.
    pub fn meta(&self) -> Result<&RequestMetaObject, &ErrorData> {
        self.meta.as_ref()
    }
}

/// The error JSON that is no message is answered with.
#[derive(Debug)]
pub struct Refusal {
    /// The id to answer with: the message's own, or null when it had none that can be echoed.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i64,
    /// What is wrong.
    pub message: String,
}

impl Refusal {
    /// The refusal as the error message that answers it.
    pub fn answer(self) -> ServerJsonRpcMessage {
        error_answer(self.id, self.code, &self.message)
    }
}

/// What JSON that is no message gets: a refusal, or nothing (a broken notification or
/// response gets no answer, as JSON-RPC says).
pub type Unreadable = Option<Refusal>;

impl Incoming {
    /// Reads `value` as a message. A request with a bad envelope is an invalid request
    /// (-32600); params that are no object, of a method this server knows, are invalid
    /// params (-32602).
    pub fn read(value: Value) -> Result<Self, Unreadable> {
        let Value::Object(mut object) = value else {
            return Err(Some(Refusal {
                id: Value::Null,
                code: -32600,
                message: "invalid request: not a JSON-RPC message".into(),
            }));
        };
        let answer_id = invalid_answer_id(&object);
        let refuse = |code: i64, why: &str| {
            Err(answer_id.clone().map(|id| Refusal {
                id,
                code,
                message: why.into(),
            }))
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return refuse(-32600, "invalid request: jsonrpc must be \"2.0\"");
        }
        let id = match object.get("id") {
            None => None,
            Some(id) => match request_id(id) {
                Some(id) => Some(id),
                None => {
                    return refuse(-32600, "invalid request: id must be a string or an integer");
                }
            },
        };
        let Some(method) = object.remove("method") else {
            let (Some(id), Some(outcome)) = (id, response_outcome(&mut object)) else {
                return refuse(-32600, "invalid request: no method, result or error");
            };
            return Ok(Self::Response { id, outcome });
        };
        let Value::String(method) = method else {
            return refuse(-32600, "invalid request: method must be a string");
        };
        if object.contains_key("result") || object.contains_key("error") {
            return refuse(-32600, "invalid request: a request has no result or error");
        }
        let params = object.remove("params").unwrap_or(Value::Null);
        if !matches!(params, Value::Object(_) | Value::Null) {
            return if KNOWN_METHODS.contains(&method.as_str()) {
                refuse(-32602, "invalid params: params must be an object")
            } else {
                refuse(-32600, "invalid request: params must be an object")
            };
        }
        Ok(match id {
            Some(id) => Self::Request(Request::new(id, method, params)),
            None => Self::Notification { method, params },
        })
    }
}

/// A response's `result`, or its `error` read as an error; `None` when it has neither. An
/// error that cannot be read is still the client's refusal: the request waiting on it fails
/// now, rather than at its timeout.
fn response_outcome(object: &mut Map<String, Value>) -> Option<Result<Value, ErrorData>> {
    if let Some(result) = object.remove("result") {
        return Some(Ok(result));
    }
    let error = object.remove("error")?;
    Some(Err(serde_json::from_value::<ErrorData>(error)
        .unwrap_or_else(|_| {
            ErrorData::internal_error(
                "the client answered with an error that cannot be read",
                None,
            )
        })))
}

/// The error answer to a message that is not one this server can read.
pub fn error_answer(id: Value, code: i64, message: &str) -> ServerJsonRpcMessage {
    let line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    // An error with a null id is not among rmcp's messages; built from JSON, it is.
    serde_json::from_value(line).expect("an error answer is a message")
}

/// A JSON-RPC id as rmcp holds it: an integer or a string. A fraction or an integer past 64
/// bits would come back changed, which no client could match.
pub(crate) fn request_id(id: &Value) -> Option<RequestId> {
    match id {
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        _ => None,
    }
}

/// The id to answer an invalid message with, or `None` when it must not be answered: a
/// notification (no id) or a response (`result`/`error`) gets no reply. An id that cannot be
/// echoed back exactly is answered as null.
pub(crate) fn invalid_answer_id(object: &Map<String, Value>) -> Option<Value> {
    let id = || {
        object
            .get("id")
            .filter(|id| request_id(id).is_some())
            .cloned()
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

#[cfg(test)]
mod tests {
    use rmcp::model::JsonRpcMessage;

    use super::*;

    fn refused(value: Value) -> (Value, Value) {
        let answer = Incoming::read(value)
            .expect_err("not a message")
            .expect("answered")
            .answer();
        let answer = serde_json::to_value(answer).unwrap();
        (answer["id"].clone(), answer["error"]["code"].clone())
    }

    #[test]
    fn messages_read_as_their_kind() {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                             "params": {"name": "echo"}});
        assert!(matches!(
            Incoming::read(request),
            Ok(Incoming::Request(Request { id: NumberOrString::Number(7), ref method, .. })) if method == "tools/call"
        ));
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(
            Incoming::read(notification),
            Ok(Incoming::Notification {
                params: Value::Null,
                ..
            })
        ));
        let response = json!({"jsonrpc": "2.0", "id": "s-1", "result": {}});
        assert!(matches!(
            Incoming::read(response),
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        let failed = json!({"jsonrpc": "2.0", "id": "s-1",
                            "error": {"code": -1, "message": "no"}});
        assert!(matches!(
            Incoming::read(failed),
            Ok(Incoming::Response {
                outcome: Err(_),
                ..
            })
        ));
        // An error that is none is still a refusal of that request, not a message ignored.
        let garbled = json!({"jsonrpc": "2.0", "id": 0, "error": {"code": "x"}});
        assert!(matches!(
            Incoming::read(garbled),
            Ok(Incoming::Response {
                id: NumberOrString::Number(0),
                outcome: Err(_),
            })
        ));
    }

    #[test]
    fn what_is_no_message_gets_the_error_it_deserves() {
        assert_eq!(refused(json!([1, 2])), (Value::Null, json!(-32600)));
        assert_eq!(
            refused(json!({"jsonrpc": "1.0", "id": 52, "method": "ping"})),
            (json!(52), json!(-32600))
        );
        assert_eq!(
            refused(json!({"id": 53, "method": "ping"})),
            (json!(53), json!(-32600))
        );
        for id in [json!({"a": 1}), json!(1.5), json!(u64::MAX), Value::Null] {
            assert_eq!(
                refused(json!({"jsonrpc": "2.0", "id": id, "method": "ping"})),
                (Value::Null, json!(-32600))
            );
        }
        assert_eq!(
            refused(json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": [1, 2]})),
            (json!(51), json!(-32602))
        );
        assert_eq!(
            refused(json!({"jsonrpc": "2.0", "id": 6})),
            (json!(6), json!(-32600))
        );
        assert_eq!(
            refused(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "echo"}, "result": {}})),
            (json!(1), json!(-32600))
        );
        // Broken notifications and responses get no answer.
        for silent in [
            json!({"jsonrpc": "1.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1.5, "result": {}}),
        ] {
            assert!(matches!(Incoming::read(silent), Err(None)));
        }
    }

    #[test]
    fn an_error_answer_is_a_message_even_with_a_null_id() {
        let answer = error_answer(Value::Null, -32700, "parse error");
        assert!(matches!(answer, JsonRpcMessage::Error(_)));
        let value = serde_json::to_value(answer).unwrap();
        assert_eq!(value["id"], Value::Null);
    }
}
