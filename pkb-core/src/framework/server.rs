//! The MCP server: answers the protocol from the [`Registry`] and the state its [`App`] makes
//! for the user each request acts for.

// Sampling, logging and subscriptions are deprecated by the stateless 2026-07-28 revision;
// the older revisions, served beside it, still use them.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, CompleteRequestParams,
    CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult,
    InputRequiredResult, InputResponses, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    PromptsCapability, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, RequestId, RequestMetaObject, ResourceContents,
    ResourcesCapability, ServerCapabilities, ServerNotification, SetLevelRequestParams,
    SubscribeRequestParams, SubscriptionFilter, ToolsCapability, UnsubscribeRequestParams,
};
use serde_json::{Value, json};

use super::app::{App, ServedApp};
use super::changes::{ChangeHub, ChangeKind};
use super::client_link::ClientLink;
use super::context::{
    AppState, DEFAULT_SAMPLING_TIMEOUT, resource_list_changed_notification,
    resource_updated_notification,
};
use super::input_rounds::{CallIdentity, InputRound, RoundOutcome, RoundStates, input_required};
use super::registry::Catalog;
use super::tool::ToolReply;
use crate::framework::access::Principal;
use crate::identity::User;
use crate::{CompletionTarget, Context, Registry, ResourceBody, ResourceError, Session};

/// The most entries in one page of resources/list.
pub const RESOURCES_PAGE_SIZE: usize = 100;

/// One client's MCP server: the declarations of a [`Registry`], over the state of an [`App`].
#[derive(Clone)]
pub struct McpServer {
    registry: Arc<Catalog>,
    app: Arc<dyn ServedApp>,
    /// The `logger` of handlers' log messages: the application's name.
    logger: Arc<str>,
    /// The state of the one session this server answers.
    pub(super) state: Arc<SessionState>,
    sampling_timeout: std::time::Duration,
    /// Where changes are shared with the user's other sessions and listen streams.
    pub(super) changes: Arc<ChangeHub>,
    /// Seals the state of calls waiting for the client's input (2026-07-28).
    round_states: Arc<RoundStates>,
}

/// What one session holds of its own: plain state, the same whichever transport carries it.
#[derive(Default)]
pub(super) struct SessionState {
    /// Its subscriptions, log level and closing.
    pub(super) session: Arc<Session>,
    /// What the client said of itself at `initialize`, with the revision agreed on.
    pub(super) initialized: OnceLock<InitializeRequestParams>,
    /// PKB's own link to the client, when PKB's dispatcher serves the session.
    pub(super) link: Option<ClientLink>,
    /// The requests being answered, by id, so that a cancellation finds them.
    pub(super) running: super::dispatch::Running,
    /// The session took the stateless revision's road (its first request was one).
    pub(super) stateless: OnceLock<()>,
    /// The user the session was initialized by: every later request must be theirs.
    pub(super) user: OnceLock<User>,
}

/// What the server knows of one request besides its params, whichever road it came by.
pub(crate) struct RequestFacts {
    pub(crate) id: RequestId,
    /// The request's `_meta`.
    pub(crate) meta: RequestMetaObject,
    /// Who the transport found the request acts for; `None` is the local user.
    pub(crate) principal: Option<Principal>,
    /// The way back to the client, for what handlers send it.
    pub(crate) client: Option<ClientLink>,
    /// The client's capabilities: the request's own (2026-07-28), else its session's.
    pub(crate) capabilities: Option<ClientCapabilities>,
    /// The client's name: the request's own, else what it gave at `initialize`.
    pub(crate) client_info: Option<Implementation>,
    /// The request is of the stateless revision.
    pub(crate) stateless: bool,
}

impl RequestFacts {
    /// The user the request acts for.
    pub(crate) fn user(&self) -> &User {
        self.principal.as_ref().map_or(User::local(), |p| &p.user)
    }
}

impl McpServer {
    /// A server answering from `registry`, its handlers reaching the state `app` gives them:
    /// the registry's state type is the application's, or the server does not compile.
    pub fn new<A: App>(registry: Registry<A::State>, app: A) -> Self {
        Self {
            registry: Arc::clone(registry.catalog()),
            logger: Arc::from(app.implementation().name),
            app: Arc::new(app),
            state: Arc::default(),
            sampling_timeout: DEFAULT_SAMPLING_TIMEOUT,
            changes: Arc::default(),
            round_states: Arc::new(RoundStates::random()),
        }
    }

    /// A server for one more session beside this one, answering through PKB's dispatcher
    /// ([`McpServer::handle`]) and sending its client what it sends through `link`.
    pub fn session_over(&self, link: ClientLink) -> Self {
        let state = SessionState {
            link: Some(link),
            ..SessionState::default()
        };
        Self {
            state: Arc::new(state),
            ..self.clone()
        }
    }

    /// The same server, sharing the changes a session makes with the other sessions of the
    /// same user through `hub`.
    pub fn with_change_hub(mut self, hub: Arc<ChangeHub>) -> Self {
        self.changes = hub;
        self
    }

    /// The same server, sealing the state of multi-round calls with `states` (by default a
    /// key made at start, which only this process accepts).
    pub fn with_round_states(mut self, states: RoundStates) -> Self {
        self.round_states = Arc::new(states);
        self
    }

    /// The same server with another limit on how long a sampling request may take.
    pub fn with_sampling_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.sampling_timeout = timeout;
        self
    }

    /// Whether it declares any resource or template (and so the resources capability).
    fn has_resources(&self) -> bool {
        self.registry.static_resources().next().is_some()
            || self.registry.resource_templates().next().is_some()
    }

    /// What it serves.
    pub fn registry(&self) -> &Catalog {
        &self.registry
    }

    /// What it serves, shared.
    pub fn shared_registry(&self) -> Arc<Catalog> {
        Arc::clone(&self.registry)
    }

    /// The revision the session's `initialize` agreed on, once it has.
    #[cfg(feature = "http")]
    pub(crate) fn agreed_revision(&self) -> Option<&ProtocolVersion> {
        self.state.initialized.get().map(|i| &i.protocol_version)
    }

    /// Marks the session as closing (see [`Session::close`]): call it once the service is
    /// cancelled, so that calls waiting to notify the client or to sample its model answer at
    /// once.
    pub fn close_session(&self) {
        self.state.session.close();
    }

    /// The user `request` acts for. A session answers its own user only: a request of
    /// another user in it (which the HTTP transport already answers 404) is refused as if
    /// the session did not exist.
    fn user_of<'a>(&'a self, request: &'a RequestFacts) -> Result<&'a User, ErrorData> {
        let user = request.user();
        match self.state.user.get() {
            Some(bound) if bound != user => {
                Err(ErrorData::invalid_request("session not found", None))
            }
            _ => Ok(user),
        }
    }

    /// The application's state for the user `request` acts for.
    async fn state_of(&self, request: &RequestFacts) -> Result<AppState, ErrorData> {
        let user = self.user_of(request)?;
        self.app
            .state_for(user)
            .await
            .map_err(|e| ErrorData::internal_error(e, None))
    }

    async fn context(&self, request: &RequestFacts) -> Result<Context, ErrorData> {
        let state = self.state_of(request).await?;
        let capabilities = request.capabilities.as_ref();
        let sampling = capabilities.and_then(|caps| caps.sampling.as_ref());
        let sampling_tools = sampling.is_some_and(|sampling| sampling.tools.is_some());
        let elicitation = capabilities.is_some_and(|caps| caps.elicitation.is_some());
        let roots = capabilities.is_some_and(|caps| caps.roots.is_some());
        let mut context = Context::new(
            state,
            self.state.session.clone(),
            request.client.clone(),
            sampling.is_some(),
        )
        .with_sampling_tools(sampling_tools)
        .with_sampling_timeout(self.sampling_timeout)
        .with_log_level(request.meta.log_level())
        .with_progress_token(request.meta.get_progress_token())
        .with_elicitation(elicitation)
        .with_roots(roots)
        .with_logger(Arc::clone(&self.logger))
        .with_client_info(request.client_info.clone())
        .with_request_id(request.id.clone());
        let user = self.user_of(request)?;
        context = context.with_changes(Arc::clone(&self.changes), Arc::clone(user.storage_key()));
        if request.stateless {
            context = context.stateless();
        }
        Ok(context)
    }

    /// Runs one round of a call on the stateless revision (`method` of `target` with
    /// `arguments`): `run` answers with the handler's result, unless the handler asked the
    /// client for input it has not given yet, which is asked for with an
    /// `InputRequiredResult`. Answers count from the client's `inputResponses`, and from a
    /// `requestState` only when this server sealed it for this call and user.
    async fn in_rounds<T, Run>(
        &self,
        context: &RequestFacts,
        call: CallOf<'_>,
        run: impl FnOnce(Context) -> Run,
    ) -> Result<Rounded<T>, ErrorData>
    where
        Run: Future<Output = Result<T, ErrorData>>,
    {
        let user_key = self.user_of(context)?.storage_key();
        // Hashed only when a state is read or made, which a plain call never needs.
        let identity = || CallIdentity::new(&call.target(), call.arguments);
        let mut answers = match call.request_state {
            Some(state) => self
                .round_states
                .open(state, &identity(), user_key)
                .ok_or_else(|| {
                    invalid_params(
                        "invalid requestState: it was altered, has expired, or belongs to another call or user",
                    )
                })?,
            None => InputResponses::default(),
        };
        // What earlier rounds used stays as it was.
        for (key, answer) in call.input_responses.into_iter().flatten() {
            answers.entry(key.clone()).or_insert_with(|| answer.clone());
        }
        let round = Arc::new(InputRound::new(answers));
        let ctx = self
            .context(context)
            .await?
            .with_input_round(Arc::clone(&round));
        let result = run(ctx).await;
        match round.outcome(identity) {
            RoundOutcome::Complete => result.map(Rounded::Complete),
            RoundOutcome::Unreadable(problem) => Err(invalid_params(problem)),
            RoundOutcome::NeedsInput { asked, state } => {
                let state = self
                    .round_states
                    .seal(&state, user_key, self.sampling_timeout)
                    .map_err(|e| ErrorData::internal_error(e, None))?;
                Ok(Rounded::InputRequired(input_required(asked, state)))
            }
        }
    }

    async fn run_tool(&self, ctx: Context, name: &str, arguments: Option<JsonObject>) -> ToolReply {
        self.registry
            .call_tool(ctx, name, arguments)
            .await
            .unwrap_or_else(|| Err(invalid_params(format!("unknown tool: {name}"))))
    }

    async fn run_prompt(
        &self,
        ctx: Context,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<GetPromptResult, ErrorData> {
        match self.registry.get_prompt(ctx, name, arguments).await {
            None => Err(invalid_params(format!("unknown prompt: {name}"))),
            Some(Err(error)) => Err(invalid_params(error.0)),
            Some(Ok(messages)) => {
                let mut result = GetPromptResult::new(messages);
                result.description = self
                    .registry
                    .prompt(name)
                    .map(|p| p.description.to_string());
                Ok(result)
            }
        }
    }
}

/// A call that may take rounds: what it names, and what the client brought back.
struct CallOf<'a> {
    method: &'static str,
    name: &'a str,
    arguments: Option<&'a JsonObject>,
    request_state: Option<&'a str>,
    input_responses: Option<&'a InputResponses>,
}

impl CallOf<'_> {
    /// What a sealed state names as the call's target: `tools/call summarize`.
    fn target(&self) -> String {
        format!("{} {}", self.method, self.name)
    }
}

/// What one round of a call came to.
enum Rounded<T> {
    /// The handler's result.
    Complete(T),
    /// What the handler still needs from the client.
    InputRequired(InputRequiredResult),
}

/// What a resources/list cursor holds: where the application's next page starts. Sealed with
/// the server's state key and bound to its user, so a cursor made up by a client, or issued
/// to another user, is refused, and servers sharing a state key accept each other's.
#[derive(serde::Serialize, serde::Deserialize)]
struct ResourcesCursor {
    after: String,
}

fn encode_cursor(states: &RoundStates, user: &User, after: &str) -> Option<String> {
    let cursor = ResourcesCursor {
        after: after.to_owned(),
    };
    states.seal_token(&cursor, user.storage_key()).ok()
}

/// Where a cursor continues, or `None` for a cursor this server never issued to `user`.
fn decode_cursor(states: &RoundStates, user: &User, cursor: &str) -> Option<String> {
    let cursor: ResourcesCursor = states.open_token(cursor, user.storage_key())?;
    Some(cursor.after)
}

/// -32601 for a method of a capability the server does not declare, as the revisions ask.
fn offered(present: bool, method: &str) -> Result<(), ErrorData> {
    if present {
        Ok(())
    } else {
        Err(method_not_found(method))
    }
}

pub(super) fn invalid_params(message: impl Into<Cow<'static, str>>) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

pub(super) fn method_not_found(method: &str) -> ErrorData {
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        None,
    )
}

/// The methods 2026-07-28 removed. Sent as requests of that revision they get -32601 (over
/// HTTP with 404) whatever their params, before anything reads those params.
pub(crate) const REMOVED_BY_STATELESS_REVISION: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether a request of `method` whose `_meta` names `version` is one of the stateless
/// revision's removed methods.
pub(crate) fn removed_by_stateless_revision(method: &str, version: Option<&str>) -> bool {
    // Revisions are dates, so text order is their order.
    REMOVED_BY_STATELESS_REVISION.contains(&method)
        && version.is_some_and(|v| v >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str())
}

/// The methods whose params are a page request (`cursor`).
const PAGED_METHODS: &[&str] = &[
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// What is wrong with a page request's `cursor`, when it is neither a string nor null. rmcp
/// reads these params as an optional flattened struct, where a cursor of another type makes
/// them read as absent (a first page) instead of failing; both transports ask this first.
pub(crate) fn unreadable_cursor(method: &str, cursor: Option<&Value>) -> Option<String> {
    let kind = match cursor? {
        Value::String(_) | Value::Null => return None,
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    PAGED_METHODS
        .contains(&method)
        .then(|| format!("cursor: expected a string, found {kind}"))
}

/// The MCP methods this server answers. A known method whose params fail to parse gets
/// -32602 (invalid params), not -32601 (method not found).
pub(crate) const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
];

impl McpServer {
    /// What the server offers, as `initialize` answers it.
    pub(crate) fn info(&self) -> InitializeResult {
        // What the registry holds is what the server offers; handlers may always log.
        let registry = &self.registry;
        let has_resources = self.has_resources();
        let has_prompts = registry.prompts().next().is_some();
        let mut capabilities = ServerCapabilities::default();
        if registry.has_tools() {
            capabilities.tools = Some(ToolsCapability::default());
        }
        if has_resources {
            let mut resources = ResourcesCapability::default();
            resources.subscribe = Some(true);
            resources.list_changed = Some(true);
            capabilities.resources = Some(resources);
        }
        if has_prompts {
            capabilities.prompts = Some(PromptsCapability::default());
        }
        if has_prompts || registry.resource_templates().next().is_some() {
            capabilities.completions = Some(JsonObject::new());
        }
        capabilities.logging = Some(JsonObject::new());
        let mut info = InitializeResult::new(capabilities);
        info.instructions = self.app.instructions();
        info.server_info = self.app.implementation();
        info
    }

    /// Every revision through initialize, and the stateless 2026-07-28.
    pub(crate) fn revisions() -> &'static [ProtocolVersion] {
        ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28)
    }

    pub(crate) fn tools_list(&self) -> Result<ListToolsResult, ErrorData> {
        offered(self.registry.has_tools(), "tools/list")?;
        Ok(ListToolsResult::with_all_items(
            self.registry.tools().cloned().collect(),
        ))
    }

    pub(crate) async fn tool_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestFacts,
    ) -> Result<CallToolResponse, ErrorData> {
        if !context.stateless {
            let ctx = self.context(context).await?;
            return self
                .run_tool(ctx, &request.name, request.arguments)
                .await
                .map(Into::into);
        }
        let call = CallOf {
            method: "tools/call",
            name: &request.name,
            arguments: request.arguments.as_ref(),
            request_state: request.request_state.as_deref(),
            input_responses: request.input_responses.as_ref(),
        };
        let run = |ctx| self.run_tool(ctx, &request.name, request.arguments.clone());
        Ok(match self.in_rounds(context, call, run).await? {
            Rounded::Complete(result) => result.into(),
            Rounded::InputRequired(asked) => asked.into(),
        })
    }

    pub(crate) async fn resources_list(
        &self,
        request: Option<PaginatedRequestParams>,
        context: &RequestFacts,
    ) -> Result<ListResourcesResult, ErrorData> {
        offered(self.has_resources(), "resources/list")?;
        let state = self.state_of(context).await?;
        let user = self.user_of(context)?;
        let cursor = request.and_then(|r| r.cursor);
        // The first page starts with the fixed resources, then the application's; a cursor
        // names where the application's next page starts.
        let (mut resources, after) = match cursor {
            None => (self.registry.static_resources().collect::<Vec<_>>(), None),
            Some(cursor) => {
                let after = decode_cursor(&self.round_states, user, &cursor).ok_or_else(|| {
                    invalid_params("invalid cursor: pass a nextCursor this server returned")
                })?;
                (Vec::new(), Some(after))
            }
        };
        let room = RESOURCES_PAGE_SIZE.saturating_sub(resources.len());
        let page = self
            .app
            .list_resources(&state, after.as_deref(), room)
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?;
        resources.extend(page.resources);
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page
            .next_after
            .and_then(|after| encode_cursor(&self.round_states, user, &after));
        Ok(result)
    }

    pub(crate) fn resource_templates_list(&self) -> Result<ListResourceTemplatesResult, ErrorData> {
        offered(self.has_resources(), "resources/templates/list")?;
        Ok(ListResourceTemplatesResult::with_all_items(
            self.registry.resource_templates().collect(),
        ))
    }

    pub(crate) async fn resource_read(
        &self,
        request: ReadResourceRequestParams,
        context: &RequestFacts,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        match self
            .registry
            .read_resource(self.context(context).await?, &uri)
            .await
        {
            Ok((mime_type, body)) => {
                let mut contents = match body {
                    ResourceBody::Text(text) => ResourceContents::text(text, uri.clone()),
                    ResourceBody::Blob(bytes) => {
                        use base64::Engine as _;
                        let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
                        ResourceContents::blob(blob, uri.clone())
                    }
                };
                if let Some(mime_type) = mime_type {
                    contents = contents.with_mime_type(mime_type);
                }
                Ok(ReadResourceResult::new(vec![contents]).into())
            }
            Err(ResourceError::NotFound) => Err(ErrorData::resource_not_found(
                format!("resource not found: {uri}"),
                Some(json!({ "uri": uri })),
            )),
            Err(ResourceError::Failed(message)) => Err(ErrorData::internal_error(message, None)),
        }
    }

    pub(crate) fn resource_subscribe(
        &self,
        request: SubscribeRequestParams,
        context: &RequestFacts,
    ) -> Result<(), ErrorData> {
        self.user_of(context)?;
        if self.registry.resolve_resource(&request.uri).is_none() {
            return Err(ErrorData::resource_not_found(
                format!("resource not found: {}", request.uri),
                Some(json!({ "uri": request.uri })),
            ));
        }
        self.state.session.subscribe(&request.uri);
        Ok(())
    }

    pub(crate) fn resource_unsubscribe(&self, request: UnsubscribeRequestParams) {
        self.state.session.unsubscribe(&request.uri);
    }

    pub(crate) fn prompts_list(&self) -> Result<ListPromptsResult, ErrorData> {
        offered(self.registry.prompts().next().is_some(), "prompts/list")?;
        Ok(ListPromptsResult::with_all_items(
            self.registry.prompts().collect(),
        ))
    }

    pub(crate) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
        context: &RequestFacts,
    ) -> Result<GetPromptResponse, ErrorData> {
        if !context.stateless {
            let ctx = self.context(context).await?;
            return self
                .run_prompt(ctx, &request.name, request.arguments)
                .await
                .map(Into::into);
        }
        let call = CallOf {
            method: "prompts/get",
            name: &request.name,
            arguments: request.arguments.as_ref(),
            request_state: request.request_state.as_deref(),
            input_responses: request.input_responses.as_ref(),
        };
        let run = |ctx| self.run_prompt(ctx, &request.name, request.arguments.clone());
        Ok(match self.in_rounds(context, call, run).await? {
            Rounded::Complete(result) => result.into(),
            Rounded::InputRequired(asked) => asked.into(),
        })
    }

    pub(crate) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: &RequestFacts,
    ) -> Result<CompleteResult, ErrorData> {
        let target = match &request.r#ref {
            Reference::Prompt(prompt) => {
                if self.registry.prompt(&prompt.name).is_none() {
                    return Err(invalid_params(format!("unknown prompt: {}", prompt.name)));
                }
                CompletionTarget::Prompt(&prompt.name)
            }
            Reference::Resource(template) => {
                if !self
                    .registry
                    .resource_templates()
                    .any(|known| known.uri_template == template.uri)
                {
                    return Err(invalid_params(format!(
                        "unknown resource template: {}",
                        template.uri
                    )));
                }
                CompletionTarget::ResourceTemplate(&template.uri)
            }
            _ => return Err(invalid_params("unsupported completion reference")),
        };
        let completion = self
            .registry
            .complete(
                self.context(context).await?,
                target,
                &request.argument.name,
                request.argument.value.clone(),
            )
            .await;
        let mut info = CompletionInfo::default();
        // The total is known only when every value is answered.
        info.total = (!completion.has_more).then_some(completion.values.len() as u32);
        info.has_more = Some(completion.has_more);
        info.values = completion.values;
        Ok(CompleteResult::new(info))
    }

    pub(crate) fn log_level_set(
        &self,
        request: SetLevelRequestParams,
        context: &RequestFacts,
    ) -> Result<(), ErrorData> {
        // 2026-07-28 carries the level in each request instead.
        if context.stateless {
            return Err(method_not_found("logging/setLevel"));
        }
        self.state.session.set_log_level(request.level);
        Ok(())
    }

    /// What a `subscriptions/listen` stream gets of what it asked for: the resources list's
    /// changes, and updates of resources that exist as names (a note's URI, whether or not
    /// the note does yet, or the index). Anything else would never be notified.
    pub(crate) fn listen_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| self.registry.resolve_resource(uri).is_some())
                .cloned()
                .collect()
        });
        accepted
    }

    /// Sends a `subscriptions/listen` stream the changes of `user` that `accepted` lets
    /// through, from `position` on (see [`ChangeHub::position`]), until `stopped` or a send
    /// fails. Everything the stream holds is dropped when it ends.
    pub(crate) async fn stream_changes<Send, Sent>(
        &self,
        user: &User,
        position: u64,
        accepted: &SubscriptionFilter,
        stopped: impl Future<Output = ()>,
        mut send: Send,
    ) where
        Send: FnMut(ServerNotification) -> Sent,
        Sent: Future<Output = Result<(), String>>,
    {
        let (missed, mut changes) = self.changes.subscribe_since(user.storage_key(), position);
        let mut missed = missed.into_iter();
        let wants = |uri: &str| {
            accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri))
        };
        let mut stopped = std::pin::pin!(stopped);
        loop {
            let change = match missed.next() {
                Some(change) => Ok(change),
                None => tokio::select! {
                    () = &mut stopped => return,
                    change = changes.recv() => change,
                },
            };
            let notification = match change {
                Ok(change) => match change.kind {
                    ChangeKind::Updated(uri) if wants(&uri) => resource_updated_notification(&uri),
                    ChangeKind::ListChanged if accepted.resources_list_changed == Some(true) => {
                        resource_list_changed_notification()
                    }
                    _ => continue,
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "a listen stream fell behind its user's changes");
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            if send(notification).await.is_err() {
                return;
            }
        }
    }

    /// Begins the session of `user` with `client`: the changes of the user's other sessions
    /// reach it from now on.
    pub(crate) fn begin_session(&self, user: User, client: ClientLink) {
        self.state
            .session
            .forward_changes(self.changes.subscribe(user.storage_key()), client);
        let _ = self.state.user.set(user);
    }
}

#[cfg(test)]
mod tests {
    use super::{McpServer, decode_cursor, encode_cursor};
    use crate::framework::input_rounds::RoundStates;
    use crate::identity::User;
    use crate::{Registry, Stateless};

    #[test]
    fn capabilities_follow_what_the_registry_holds() {
        let app = || Stateless::new("test", "1");
        let empty = Registry::new(crate::Declarations::new()).unwrap();
        let info = McpServer::new(empty, app()).info();
        let caps = info.capabilities;
        assert!(caps.tools.is_none() && caps.resources.is_none() && caps.prompts.is_none());
        assert!(caps.completions.is_none());
        assert!(caps.logging.is_some(), "handlers may always log");

        #[cfg(feature = "notes")]
        {
            let registry = Registry::new(crate::notes_declarations()).unwrap();
            let store = crate::store::sqlite::open_in_memory(false).unwrap();
            let pkb = McpServer::new(registry, crate::NotesApp::Shared(store)).info();
            let caps = pkb.capabilities;
            assert!(caps.tools.is_some() && caps.prompts.is_some() && caps.completions.is_some());
            let resources = caps.resources.unwrap();
            assert_eq!(
                (resources.subscribe, resources.list_changed),
                (Some(true), Some(true))
            );
            assert_eq!(pkb.server_info.name, "pkb");
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_forgeries() {
        let states = RoundStates::with_key(&[3; 32]).unwrap();
        let alice = User::token_user("alice");
        let issued = encode_cursor(&states, &alice, "todo").unwrap();
        assert_eq!(
            decode_cursor(&states, &alice, &issued).as_deref(),
            Some("todo")
        );
        for forged in ["garbage!", "", "rs1.e30.AAAA", "notes-after:todo"] {
            assert_eq!(decode_cursor(&states, &alice, forged), None, "{forged}");
        }
        // Issued, but to another user, or by a server with another key.
        let bob = User::token_user("bob");
        assert_eq!(decode_cursor(&states, &bob, &issued), None);
        let other = RoundStates::with_key(&[4; 32]).unwrap();
        assert_eq!(decode_cursor(&other, &alice, &issued), None);
        // A server sharing the key accepts it.
        let twin = RoundStates::with_key(&[3; 32]).unwrap();
        assert_eq!(
            decode_cursor(&twin, &alice, &issued).as_deref(),
            Some("todo")
        );
    }
}
