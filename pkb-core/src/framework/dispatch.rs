//! PKB's dispatcher: each message a session's client sends, read once by its transport, is
//! handed to [`McpServer::handle`], which answers it from the session's state and the
//! registry. The session's lifecycle (an `initialize` handshake, or the stateless revision's
//! requests that carry their own `_meta`) and what each revision allows are decided here.

// Sampling, logging and subscriptions are deprecated by the stateless 2026-07-28 revision;
// the older revisions, served beside it, still use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, ClientResult, CompleteRequestParams, DiscoverResult, ErrorCode,
    ErrorData, GetMeta, GetPromptRequestParams, InitializeRequestParams, InitializeResult,
    NotificationMetaObject, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerNotification, ServerResult,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams,
    SubscriptionsListenResult, UnsubscribeRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::incoming::{Incoming, Request};
use super::server::{
    McpServer, RequestFacts, invalid_params, method_not_found, removed_by_stateless_revision,
    unreadable_cursor,
};
use crate::framework::access::Principal;
use crate::identity::User;
use crate::locks::lock;

/// The requests of one session being answered, so that a `notifications/cancelled` finds them.
#[derive(Default)]
pub(crate) struct Running {
    /// By id, each with the ticket of the request that registered it, in case a client reuses
    /// an id while the first request runs.
    requests: Mutex<HashMap<RequestId, (u64, CancellationToken)>>,
    next_ticket: AtomicU64,
}

/// A request being answered: forgotten when dropped, whether answered or not (over HTTP a
/// request whose client went away is dropped half-way).
struct RunningRequest<'a> {
    running: &'a Running,
    id: RequestId,
    ticket: u64,
}

impl Drop for RunningRequest<'_> {
    fn drop(&mut self) {
        self.running.finish(&self.id, self.ticket);
    }
}

impl Running {
    fn start(&self, id: &RequestId) -> (RunningRequest<'_>, CancellationToken) {
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        let cancelled = CancellationToken::new();
        lock(&self.requests).insert(id.clone(), (ticket, cancelled.clone()));
        let request = RunningRequest {
            running: self,
            id: id.clone(),
            ticket,
        };
        (request, cancelled)
    }

    /// Forgets a request whose answer is ready, before it is sent: once the client sees the
    /// answer it may reuse the id.
    fn finish(&self, id: &RequestId, ticket: u64) {
        let mut requests = lock(&self.requests);
        if requests.get(id).is_some_and(|(held, _)| *held == ticket) {
            requests.remove(id);
        }
    }

    /// Drops the answer of the request `id`, if it is still being answered: its handler runs
    /// to its end, its answer is not sent.
    fn cancel(&self, id: &RequestId) {
        if let Some((_, cancelled)) = lock(&self.requests).remove(id) {
            tracing::info!(%id, "cancelled");
            cancelled.cancel();
        }
    }
}

/// The error of a request before its lifecycle began that lacks what the stateless revision
/// requires of every request, in rmcp's words.
fn missing_request_metadata(missing: &[&str]) -> ErrorData {
    invalid_params(format!(
        "request _meta is missing or has malformed required fields: {}",
        missing.join(", ")
    ))
}

/// `params` read as `T`, or -32602 saying why not.
fn params_as<T: DeserializeOwned>(params: Value) -> Result<T, ErrorData> {
    serde_json::from_value(params)
        .map_err(|error| invalid_params(format!("invalid params: {error}")))
}

/// Optional params: absent or null is `None`.
fn optional_params<T: DeserializeOwned>(params: Value) -> Result<Option<T>, ErrorData> {
    match params {
        Value::Null => Ok(None),
        params => params_as(params).map(Some),
    }
}

/// The revision an `initialize` agrees to: the client's, when the server has it and it has
/// a handshake, else the server's newest that does.
fn negotiate(requested: &ProtocolVersion, supported: &[ProtocolVersion]) -> ProtocolVersion {
    if requested.has_initialize() && supported.contains(requested) {
        return requested.clone();
    }
    supported
        .iter()
        .filter(|version| version.has_initialize())
        .max_by(|a, b| a.as_str().cmp(b.as_str()))
        .cloned()
        .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

impl McpServer {
    /// Answers one message of the session's client, sent on behalf of `principal` (`None`:
    /// the local user). A request gets its answer, unless the client cancelled it meanwhile;
    /// a notification or a response to the server's own request gets none.
    pub async fn handle(
        &self,
        message: Incoming,
        principal: Option<Principal>,
    ) -> Option<ServerJsonRpcMessage> {
        match message {
            Incoming::Request(Request {
                id,
                method,
                params,
                meta,
            }) => {
                // A request after `initialize` means its answer reached the client.
                if method != "initialize" && self.state.initialized.get().is_some() {
                    self.state.session.mark_ready();
                }
                let (running, cancelled) = self.state.running.start(&id);
                // Handlers' panics are caught by the registry; this catches one around them.
                let answering = self.answer(&id, &method, params, meta, principal, &cancelled);
                let outcome = AssertUnwindSafe(answering).catch_unwind().await;
                drop(running);
                if cancelled.is_cancelled() {
                    tracing::debug!(%id, "dropping the answer to a cancelled request");
                    return None;
                }
                Some(match outcome {
                    Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
                    Ok(Err(error)) => {
                        // The client's mistake, answered to it: see pkb-server's log filter.
                        tracing::debug!(%id, ?error, "response error");
                        ServerJsonRpcMessage::error(error, Some(id))
                    }
                    Err(_) => {
                        tracing::error!(%id, %method, "a request panicked outside its handler");
                        let error = ErrorData::internal_error("internal error", None);
                        ServerJsonRpcMessage::error(error, Some(id))
                    }
                })
            }
            Incoming::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(id) = params
                        .get("requestId")
                        .and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok())
                {
                    self.state.running.cancel(&id);
                }
                if method == "notifications/initialized" {
                    self.state.session.mark_ready();
                    self.shared_registry().prepare_in_background();
                }
                None
            }
            Incoming::Response { id, outcome } => {
                if let Some(link) = &self.state.link {
                    let outcome = outcome.and_then(|result| {
                        serde_json::from_value::<ClientResult>(result)
                            .map_err(|e| invalid_params(e.to_string()))
                    });
                    link.answered(&id, outcome);
                }
                None
            }
        }
    }

    /// The result of one request, or the error it is answered with.
    async fn answer(
        &self,
        id: &RequestId,
        method: &str,
        params: Value,
        meta: Result<RequestMetaObject, ErrorData>,
        principal: Option<Principal>,
        cancelled: &CancellationToken,
    ) -> Result<ServerResult, ErrorData> {
        let meta = meta?;
        let requested = meta.protocol_version();
        if removed_by_stateless_revision(method, requested.as_ref().map(ProtocolVersion::as_str)) {
            return Err(method_not_found(&format!(
                "{method} (2026-07-28 has no such method)"
            )));
        }
        if method == "initialize" {
            let user = principal.as_ref().map_or(User::local(), |p| &p.user);
            return self
                .initialize_session(params, user.clone())
                .map(ServerResult::InitializeResult);
        }
        let supported = Self::revisions();
        let missing = meta.missing_required_keys(&ProtocolVersion::V_2026_07_28);
        let initialized = self.state.initialized.get();
        if initialized.is_none() && self.state.stateless.get().is_none() {
            // Before a lifecycle: a ping, a discovery, or the first stateless request.
            if method == "ping" {
                return Ok(ServerResult::empty(()));
            }
            let Some(version) = requested.as_ref().filter(|_| missing.is_empty()) else {
                return Err(missing_request_metadata(&missing));
            };
            if method != "server/discover" {
                if !supported.contains(version) {
                    return Err(ErrorData::unsupported_protocol_version(
                        version.clone(),
                        supported,
                    ));
                }
                let _ = self.state.stateless.set(());
            }
        }
        if let Some(version) = &requested
            && !supported.contains(version)
        {
            return Err(ErrorData::unsupported_protocol_version(
                version.clone(),
                supported,
            ));
        }
        let stateless_session = self.state.stateless.get().is_some();
        let requires_meta = method == "server/discover"
            || stateless_session
            || requested
                .as_ref()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if requires_meta && !missing.is_empty() {
            return Err(missing_request_metadata(&missing));
        }
        let version = requested
            .clone()
            .or_else(|| initialized.map(|i| i.protocol_version.clone()));
        let latest = version
            .as_ref()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let legacy = !requires_meta && version.as_ref().is_none_or(ProtocolVersion::has_initialize);
        let session_client = initialized.filter(|_| !stateless_session);
        let facts = RequestFacts {
            id: id.clone(),
            capabilities: meta
                .client_capabilities()
                .or_else(|| session_client.map(|c| c.capabilities.clone())),
            client_info: meta
                .client_info()
                .or_else(|| session_client.map(|c| c.client_info.clone())),
            stateless: version.as_ref().is_some_and(|v| !v.has_initialize()),
            meta,
            principal,
            client: self.state.link.clone(),
        };
        let result = self
            .answer_method(method, params, &facts, legacy, cancelled)
            .await;
        match result {
            Ok(ServerResult::InputRequiredResult(_)) if !latest => Err(ErrorData::invalid_request(
                "InputRequiredResult requires negotiated protocol version 2026-07-28 or newer",
                None,
            )),
            Ok(mut result) => {
                // 2026-07-28 asks for caching hints; older clients get the older shape.
                if latest {
                    result.fill_missing_cache_hints();
                } else {
                    result.strip_result_type_for_legacy_peer();
                    result.strip_non_object_output_for_legacy_peer();
                }
                Ok(result)
            }
            // 2026-07-28 answers a missing resource with the standard code.
            Err(mut error) if latest && error.code == ErrorCode::RESOURCE_NOT_FOUND => {
                error.code = ErrorCode::INVALID_PARAMS;
                Err(error)
            }
            Err(error) => Err(error),
        }
    }

    /// The result of a request of `method`, once its lifecycle allowed it. `legacy`: the
    /// request belongs to a session begun with `initialize`.
    async fn answer_method(
        &self,
        method: &str,
        params: Value,
        facts: &RequestFacts,
        legacy: bool,
        cancelled: &CancellationToken,
    ) -> Result<ServerResult, ErrorData> {
        if let Some(problem) = unreadable_cursor(method, params.get("cursor")) {
            return Err(invalid_params(format!("invalid params: {problem}")));
        }
        Ok(match method {
            "ping" if legacy => ServerResult::empty(()),
            "server/discover" => ServerResult::DiscoverResult(DiscoverResult::from_server_info(
                Self::revisions().to_vec(),
                self.info(),
            )),
            "tools/list" => {
                optional_params::<PaginatedRequestParams>(params)?;
                ServerResult::ListToolsResult(self.tools_list()?)
            }
            "tools/call" => {
                let call: CallToolRequestParams = params_as(params)?;
                self.tool_call(call, facts).await?.into()
            }
            "resources/list" => {
                let page = optional_params::<PaginatedRequestParams>(params)?;
                ServerResult::ListResourcesResult(self.resources_list(page, facts).await?)
            }
            "resources/templates/list" => {
                optional_params::<PaginatedRequestParams>(params)?;
                ServerResult::ListResourceTemplatesResult(self.resource_templates_list()?)
            }
            "resources/read" => {
                let read: ReadResourceRequestParams = params_as(params)?;
                self.resource_read(read, facts).await?.into()
            }
            "resources/subscribe" if legacy => {
                self.resource_subscribe(params_as::<SubscribeRequestParams>(params)?, facts)?;
                ServerResult::empty(())
            }
            "resources/unsubscribe" if legacy => {
                self.resource_unsubscribe(params_as::<UnsubscribeRequestParams>(params)?);
                ServerResult::empty(())
            }
            "prompts/list" => {
                optional_params::<PaginatedRequestParams>(params)?;
                ServerResult::ListPromptsResult(self.prompts_list()?)
            }
            "prompts/get" => {
                let get: GetPromptRequestParams = params_as(params)?;
                self.prompt_get(get, facts).await?.into()
            }
            "completion/complete" => {
                let complete: CompleteRequestParams = params_as(params)?;
                ServerResult::CompleteResult(self.completion(complete, facts).await?)
            }
            "logging/setLevel" => {
                self.log_level_set(params_as::<SetLevelRequestParams>(params)?, facts)?;
                ServerResult::empty(())
            }
            "subscriptions/listen" if !legacy => {
                let listen: SubscriptionsListenRequestParams = params_as(params)?;
                self.listen_stream(listen, facts, cancelled).await?
            }
            // Unknown, or not of this request's revision.
            other => return Err(method_not_found(other)),
        })
    }

    /// A `subscriptions/listen` stream: acknowledged, then the changes it accepted, each
    /// marked with the stream's id, until the client cancels it, its input ends or the server
    /// stops.
    async fn listen_stream(
        &self,
        listen: SubscriptionsListenRequestParams,
        facts: &RequestFacts,
        cancelled: &CancellationToken,
    ) -> Result<ServerResult, ErrorData> {
        let user = facts.user().clone();
        let Some(link) = &facts.client else {
            return Err(method_not_found("subscriptions/listen"));
        };
        let requested = listen.notifications;
        let info = self.info();
        let accepted = requested
            .intersection(&self.listen_filter(&requested))
            .intersection(&requested.supported_by(&info.capabilities));
        // The changes from here on are the stream's, or a write the client makes as soon as
        // it is acknowledged could be missed.
        let position = self.changes.position();
        let stream = facts.id.clone();
        let mut acknowledged = SubscriptionsAcknowledgedNotification::new(
            SubscriptionsAcknowledgedNotificationParams::new(accepted.clone()),
        );
        let mut meta = NotificationMetaObject::new();
        meta.set_subscription_id(stream.clone());
        acknowledged.extensions.insert(meta);
        let acknowledged = ServerNotification::SubscriptionsAcknowledgedNotification(acknowledged);
        link.notify(acknowledged, Some(stream.clone()))
            .await
            .map_err(|error| {
                ErrorData::internal_error(
                    format!("failed to acknowledge subscription: {error}"),
                    None,
                )
            })?;
        let send = |mut notification: ServerNotification| {
            notification
                .get_meta_mut()
                .set_subscription_id(stream.clone());
            let link = link.clone();
            let during = Some(stream.clone());
            async move {
                link.notify(notification, during)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        let stopped = async {
            tokio::select! {
                () = cancelled.cancelled() => {}
                () = self.state.session.closed() => {}
                // No one can cancel it any more.
                () = link.input_ended() => {}
            }
        };
        self.stream_changes(&user, position, &accepted, stopped, send)
            .await;
        let mut result = SubscriptionsListenResult::complete(stream);
        result.meta.set_server_info(info.server_info);
        Ok(ServerResult::SubscriptionsListenResult(result))
    }

    /// Begins the session with the client's `initialize` (its params unread yet), for `user`.
    fn initialize_session(&self, params: Value, user: User) -> Result<InitializeResult, ErrorData> {
        // A stateless session has no handshake.
        if self.state.stateless.get().is_some() {
            return Err(method_not_found("initialize"));
        }
        // Unreadable params are said so first, naming the field (`clientInfo`, say).
        let mut request: InitializeRequestParams = params_as(params)?;
        // A session is initialized once: a second `initialize` would renegotiate the version
        // under calls already answered in the first.
        if self.state.initialized.get().is_some() {
            return Err(ErrorData::invalid_request(
                "the session is already initialized",
                None,
            ));
        }
        let mut result = self.info();
        result.protocol_version = negotiate(&request.protocol_version, Self::revisions());
        request.protocol_version = result.protocol_version.clone();
        if self.state.initialized.set(request).is_err() {
            return Err(ErrorData::invalid_request(
                "the session is already initialized",
                None,
            ));
        }
        if let Some(link) = &self.state.link {
            self.begin_session(user, link.clone());
        }
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ProtocolVersion;

    use super::negotiate;

    #[test]
    fn initialize_agrees_to_the_clients_revision_or_the_newest_with_a_handshake() {
        let supported = ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28);
        assert_eq!(
            negotiate(&ProtocolVersion::V_2025_06_18, supported),
            ProtocolVersion::V_2025_06_18
        );
        // The stateless revision has no handshake: the newest that has one.
        assert_eq!(
            negotiate(&ProtocolVersion::V_2026_07_28, supported),
            ProtocolVersion::V_2025_11_25
        );
    }
}
