//! The context a handler receives: the application's state, and the connection to the client
//! that called.

// Sampling, logging and subscriptions are deprecated by the stateless 2026-07-28 revision;
// they are how the older revisions, still served, do these things.
#![allow(deprecated)]

use std::any::Any;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationSchema, Implementation,
    InputRequest, ListRootsRequest, ListRootsResult, LoggingLevel, LoggingMessageNotification,
    LoggingMessageNotificationParam, ProgressNotification, ProgressNotificationParam,
    ProgressToken, RequestId, ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParam, ServerNotification, ServerRequest,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::changes::{Change, ChangeHub, ChangeKind};
use super::client_link::{AskError, ClientLink};
use super::input_rounds::{InputRound, RoundAnswer};
use crate::locks::lock;

/// The application's state for one request, as its [`App`](super::app::App) made it for the
/// user the request acts for; handlers reach it with [`Context::state`].
pub type AppState = Arc<dyn Any + Send + Sync>;

/// How long a sampling request may take by default before it is given up.
pub const DEFAULT_SAMPLING_TIMEOUT: Duration = Duration::from_secs(60);

/// How much longer than a sampling request's own timeout its caller waits: long enough for
/// the link to give the request up first and tell the client so.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// What one handler call can reach. Taken as `ctx: &Context` by any tool, resource, prompt or
/// completion fn; the macros recognise it by type.
#[derive(Clone)]
pub struct Context {
    state: AppState,
    session: Arc<Session>,
    client: Option<ClientLink>,
    sampling: bool,
    /// The client declared sampling with tools.
    sampling_tools: bool,
    /// The client declared the elicitation capability.
    elicitation: bool,
    /// The client declared the roots capability.
    roots: bool,
    sampling_timeout: Duration,
    /// Where the changes this request makes are told to the user's other sessions.
    changes: Option<(Arc<ChangeHub>, Arc<str>)>,
    /// On the stateless revision: the answers this call brought, and what it asks for.
    round: Option<Arc<InputRound>>,
    /// What the handler named the requests it makes of the client through this context.
    input_name: Option<Arc<str>>,
    /// The log level the request itself named (2026-07-28), over the session's.
    log_level: Option<LoggingLevel>,
    /// The request is of the stateless revision: resource notifications reach the client
    /// only through its `subscriptions/listen` streams, never unasked.
    stateless: bool,
    /// The token the request asked progress notifications under, if it did.
    progress_token: Option<ProgressToken>,
    /// The `logger` of the log messages handlers send: the server's name.
    logger: Arc<str>,
    /// The client the request itself named (`_meta`, as 2026-07-28 carries it), over the
    /// one its session's `initialize` named.
    request_client: Option<Implementation>,
    /// The id of the request being answered: what the handler asks the client rides that
    /// request's own response stream over HTTP.
    request_id: Option<RequestId>,
}

/// Per-connection state shared by every request of one client: its resource subscriptions and
/// the logging level it asked for.
#[derive(Debug)]
pub struct Session {
    id: u64,
    subscriptions: Mutex<HashSet<String>>,
    log_level: Mutex<Option<LoggingLevel>>,
    /// Cancelled once the session's message loop has stopped (SIGTERM): nothing sent to the
    /// client can be delivered any more, so nothing waits for it.
    closing: CancellationToken,
    /// Cancelled when the session is dropped, which ends what forwards changes to it.
    dropped: CancellationToken,
    /// Cancelled once the client has its `initialize` answer (see [`Session::mark_ready`]):
    /// the changes forwarded to it wait for that, so none comes before that answer.
    ready: CancellationToken,
}

impl Default for Session {
    fn default() -> Self {
        // 0 is no session's: `Change::ELSEWHERE`.
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            subscriptions: Mutex::default(),
            log_level: Mutex::default(),
            closing: CancellationToken::new(),
            dropped: CancellationToken::new(),
            ready: CancellationToken::new(),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}

impl Session {
    /// A number no other session of this process has.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The client has its `initialize` answer: it said `notifications/initialized`, or sent
    /// another request after it. The changes made since `initialize` are forwarded from now.
    pub(crate) fn mark_ready(&self) {
        self.ready.cancel();
    }

    /// Forwards to `client` the changes other sessions of the same user make, from when the
    /// client has its `initialize` answer ([`Session::mark_ready`]; the changes meanwhile wait)
    /// until this session is dropped or closes: updates of the URIs it subscribed to, and
    /// every change of the list.
    pub fn forward_changes(
        self: &Arc<Self>,
        mut changes: tokio::sync::broadcast::Receiver<Change>,
        client: ClientLink,
    ) {
        let session: Weak<Session> = Arc::downgrade(self);
        let dropped = self.dropped.clone();
        let closing = self.closing.clone();
        let ready = self.ready.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = ready.cancelled() => {}
                () = dropped.cancelled() => return,
                () = closing.cancelled() => return,
            }
            loop {
                let change = tokio::select! {
                    change = changes.recv() => change,
                    () = dropped.cancelled() => return,
                    () = closing.cancelled() => return,
                };
                let change = match change {
                    Ok(change) => change,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, "a session fell behind the changes of its user");
                        continue;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                };
                let Some(session) = session.upgrade() else {
                    return;
                };
                if change.origin == session.id {
                    continue;
                }
                let notification = match &change.kind {
                    ChangeKind::Updated(uri) if session.is_subscribed(uri) => {
                        resource_updated_notification(uri)
                    }
                    ChangeKind::Updated(_) => continue,
                    ChangeKind::ListChanged => resource_list_changed_notification(),
                };
                drop(session);
                let sent = client.notify(notification, None).await;
                if sent.is_err() {
                    return;
                }
            }
        });
    }

    /// Marks the session as closing: notifications and sampling requests still waiting give
    /// up, so the calls behind them can answer and the server exit.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Waits until the session is marked as closing.
    pub(crate) async fn closed(&self) {
        self.closing.cancelled().await;
    }

    /// Subscribes the client to updates of `uri`.
    pub fn subscribe(&self, uri: &str) {
        lock(&self.subscriptions).insert(uri.to_string());
    }

    /// Ends the client's subscription to `uri`.
    pub fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    /// Whether the client subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains(uri)
    }

    /// Records the least severe level the client wants log messages for.
    pub fn set_log_level(&self, level: LoggingLevel) {
        *lock(&self.log_level) = Some(level);
    }

    fn wants_log(&self, level: LoggingLevel) -> bool {
        lock(&self.log_level).is_some_and(|min| severity(level) >= severity(min))
    }
}

/// `notifications/resources/updated` for `uri`.
pub(crate) fn resource_updated_notification(uri: &str) -> ServerNotification {
    ServerNotification::ResourceUpdatedNotification(ResourceUpdatedNotification::new(
        ResourceUpdatedNotificationParam::new(uri),
    ))
}

/// `notifications/resources/list_changed`.
pub(crate) fn resource_list_changed_notification() -> ServerNotification {
    ServerNotification::ResourceListChangedNotification(ResourceListChangedNotification::default())
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Why a request to the client (sampling, elicitation) produced no answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientRequestError {
    /// The client did not declare the capability (`sampling`, `elicitation`), or there is no
    /// client.
    #[error("the client does not support {0}")]
    Unsupported(&'static str),
    /// The client did not answer in time.
    #[error("the client did not answer within {0:?}")]
    TimedOut(Duration),
    /// The client answered with an error, or the connection failed.
    #[error("{0}")]
    Failed(String),
    /// The client's answer comes with its next request (2026-07-28): the framework answers
    /// this call with an `InputRequiredResult`, whatever the handler returns now.
    #[error("the client has not answered yet")]
    InputRequired,
}

impl Context {
    /// A context for a request from a connected client.
    pub fn new(
        state: AppState,
        session: Arc<Session>,
        client: Option<ClientLink>,
        sampling: bool,
    ) -> Self {
        Self {
            state,
            session,
            client,
            sampling,
            sampling_tools: false,
            elicitation: false,
            roots: false,
            sampling_timeout: DEFAULT_SAMPLING_TIMEOUT,
            changes: None,
            round: None,
            input_name: None,
            log_level: None,
            stateless: false,
            progress_token: None,
            logger: Arc::from("mcp"),
            request_client: None,
            request_id: None,
        }
    }

    /// The same context, answering the request `id`.
    pub fn with_request_id(mut self, id: RequestId) -> Self {
        self.request_id = Some(id);
        self
    }

    /// The same context for a request that named its client itself (`_meta`).
    pub fn with_client_info(mut self, client: Option<Implementation>) -> Self {
        self.request_client = client;
        self
    }

    /// The client that made the request, as it named itself: in the request (2026-07-28),
    /// else at its session's `initialize`; `None` when it gave no name.
    pub fn client_info(&self) -> Option<Implementation> {
        self.request_client.clone()
    }

    /// The same context, for a client that declared sampling with tools or not.
    pub fn with_sampling_tools(mut self, tools: bool) -> Self {
        self.sampling_tools = tools;
        self
    }

    /// The same context, sending progress notifications under `token` (the request's
    /// `_meta.progressToken`).
    pub fn with_progress_token(mut self, token: Option<ProgressToken>) -> Self {
        self.progress_token = token;
        self
    }

    /// The same context, naming its log messages' `logger` so.
    pub fn with_logger(mut self, logger: Arc<str>) -> Self {
        self.logger = logger;
        self
    }

    /// The same context for a request of the stateless revision (see [`Context::sample`]
    /// and [`Context::resource_updated`]).
    pub fn stateless(mut self) -> Self {
        self.stateless = true;
        self
    }

    /// The same context for one round of a call on the stateless revision: sampling is
    /// answered from `round`, or asked for through it.
    pub fn with_input_round(mut self, round: Arc<InputRound>) -> Self {
        self.round = Some(round);
        self
    }

    /// The same context, sending log messages of `level` and above, as the request asked.
    pub fn with_log_level(mut self, level: Option<LoggingLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// The same context, telling the changes it makes to the other sessions listening to
    /// `user_key` in `hub`.
    pub fn with_changes(mut self, hub: Arc<ChangeHub>, user_key: Arc<str>) -> Self {
        self.changes = Some((hub, user_key));
        self
    }

    fn publish(&self, kind: ChangeKind) {
        if let Some((hub, user_key)) = &self.changes {
            hub.publish(
                user_key,
                Change {
                    origin: self.session.id,
                    kind,
                },
            );
        }
    }

    /// The same context with another limit on how long sampling may take.
    pub fn with_sampling_timeout(mut self, timeout: Duration) -> Self {
        self.sampling_timeout = timeout;
        self
    }

    /// A context with no client attached, as for a command line: sampling is unavailable and
    /// notifications go nowhere.
    pub fn detached(state: impl Any + Send + Sync) -> Self {
        Self::new(Arc::new(state), Arc::default(), None, false)
    }

    /// How long a sampling request may take before it is given up.
    pub fn sampling_timeout(&self) -> Duration {
        self.sampling_timeout
    }

    /// The application's state, when it is a `T`: what the server's [`App`](super::app::App)
    /// made for this request's user.
    pub fn state<T: Any>(&self) -> Option<&T> {
        self.state.downcast_ref()
    }

    /// The way to the client, when there is one.
    pub fn client(&self) -> Option<&ClientLink> {
        self.client.as_ref()
    }

    /// This client's session state.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Whether the client declared the sampling capability.
    pub fn client_supports_sampling(&self) -> bool {
        self.sampling && self.client.is_some()
    }

    /// Asks the client's model for a message, giving up after `timeout` so a silent client
    /// cannot hang the call.
    ///
    /// On revisions with sessions this is a `sampling/createMessage` request. On 2026-07-28
    /// the call's first round ends with [`ClientRequestError::InputRequired`] and the framework
    /// asks the client in its answer; the client's retry runs the handler again, and this
    /// then returns the client's answer.
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
        timeout: Duration,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        let client = match (&self.client, self.sampling) {
            (Some(client), true) => client,
            _ => return Err(ClientRequestError::Unsupported("sampling")),
        };
        if let Some(round) = &self.round {
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
            return from_round(round.answer("sampling", self.input_name("sampling"), request));
        }
        // What rmcp's `create_message` checks before it sends.
        if (params.tools.is_some() || params.tool_choice.is_some()) && !self.sampling_tools {
            return Err(ClientRequestError::Unsupported("sampling with tools"));
        }
        params
            .validate()
            .map_err(|error| ClientRequestError::Failed(error.to_string()))?;
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.ask(client, request, timeout).await? {
            ClientResult::CreateMessageResult(result) => Ok(*result),
            _ => Err(unexpected()),
        }
    }

    /// Sends `request` to the client and waits for its answer, given up after `timeout`.
    /// It is marked as sent while answering this context's request, so that over HTTP it
    /// rides that request's own response stream (SEP-2260). The link tells the client when
    /// it is given up (`notifications/cancelled`), so the client stops working on an answer
    /// nobody awaits; the session closing gives it up at once.
    async fn ask(
        &self,
        client: &ClientLink,
        request: ServerRequest,
        timeout: Duration,
    ) -> Result<ClientResult, ClientRequestError> {
        let asked = client.ask(request, self.request_id.clone(), timeout);
        let answer = tokio::select! {
            // The link's own timeout comes first; this one only bounds the send.
            answer = tokio::time::timeout(timeout + CANCEL_GRACE, asked) => answer,
            () = self.session.closing.cancelled() => {
                return Err(ClientRequestError::Failed("the session is closing".into()));
            }
        };
        match answer {
            Err(_) | Ok(Err(AskError::TimedOut(_))) => Err(ClientRequestError::TimedOut(timeout)),
            Ok(Err(error)) => Err(ClientRequestError::Failed(error.to_string())),
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// Sends `notification` to the client, unless the session is closing (nothing would
    /// deliver it then).
    async fn notify(
        &self,
        client: &ClientLink,
        notification: ServerNotification,
    ) -> Result<(), String> {
        tokio::select! {
            sent = client.notify(notification, self.request_id.clone()) => sent.map_err(|e| e.to_string()),
            () = self.session.closing.cancelled() => Err("the session is closing".into()),
        }
    }

    /// Tells the client that `uri` changed, when it subscribed to it, and the user's other
    /// sessions and listen streams.
    pub async fn resource_updated(&self, uri: &str) {
        self.publish(ChangeKind::Updated(uri.to_owned()));
        if let Some(client) = &self.client
            && !self.stateless
            && self.session.is_subscribed(uri)
            && let Err(error) = self
                .notify(client, resource_updated_notification(uri))
                .await
        {
            tracing::debug!(%error, uri, "could not send resources/updated");
        }
    }

    /// Tells the client, the user's other sessions and listen streams, that the list of
    /// resources changed.
    pub async fn resource_list_changed(&self) {
        self.publish(ChangeKind::ListChanged);
        if let Some(client) = &self.client
            && !self.stateless
            && let Err(error) = self
                .notify(client, resource_list_changed_notification())
                .await
        {
            tracing::debug!(%error, "could not send resources/list_changed");
        }
    }

    /// Asks the client's user for input shaped by `schema` (a form elicitation), giving up
    /// after `timeout`. The client must have declared the elicitation capability. On
    /// 2026-07-28 this takes rounds, as [`Context::sample`] does.
    pub async fn elicit(
        &self,
        message: impl Into<String>,
        schema: ElicitationSchema,
        timeout: Duration,
    ) -> Result<ElicitResult, ClientRequestError> {
        let client = match (&self.client, self.elicitation) {
            (Some(client), true) => client,
            _ => return Err(ClientRequestError::Unsupported("elicitation")),
        };
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: schema,
        };
        if let Some(round) = &self.round {
            let request = InputRequest::Elicitation(ElicitRequest::new(params));
            return from_round(round.answer(
                "elicitation",
                self.input_name("elicitation"),
                request,
            ));
        }
        let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
        match self.ask(client, request, timeout).await? {
            ClientResult::ElicitResult(result) => Ok(result),
            _ => Err(unexpected()),
        }
    }

    /// The client's roots (the folders or files it works in), giving up after `timeout`. The
    /// client must have declared the roots capability. On 2026-07-28 this takes rounds, as
    /// [`Context::sample`] does.
    pub async fn list_roots(
        &self,
        timeout: Duration,
    ) -> Result<ListRootsResult, ClientRequestError> {
        let client = match (&self.client, self.roots) {
            (Some(client), true) => client,
            _ => return Err(ClientRequestError::Unsupported("roots")),
        };
        if let Some(round) = &self.round {
            let request = InputRequest::ListRoots(ListRootsRequest::default());
            return from_round(round.answer("roots", self.input_name("roots"), request));
        }
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        match self.ask(client, request, timeout).await? {
            ClientResult::ListRootsResult(result) => Ok(result),
            _ => Err(unexpected()),
        }
    }

    /// The same context, naming the requests it makes of the client `name` (then `name-2`,
    /// ...): on 2026-07-28 they are the keys of the `inputRequests` the client answers, which
    /// a client or a specification may expect by name. Unnamed requests are named by kind:
    /// `sampling`, `elicitation`, `roots`.
    pub fn named_input(&self, name: &str) -> Self {
        let mut named = self.clone();
        named.input_name = Some(Arc::from(name));
        named
    }

    fn input_name<'a>(&'a self, kind: &'a str) -> &'a str {
        self.input_name.as_deref().unwrap_or(kind)
    }

    /// The same context, for a client that declared the roots capability or not.
    pub fn with_roots(mut self, roots: bool) -> Self {
        self.roots = roots;
        self
    }

    /// The same context, for a client that declared the elicitation capability or not.
    pub fn with_elicitation(mut self, elicitation: bool) -> Self {
        self.elicitation = elicitation;
        self
    }

    /// Tells the client how far the call has got, when it asked for progress (its request
    /// carried a `progressToken`); `total` is what `progress` counts up to, when known.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(client), Some(token)) = (&self.client, &self.progress_token) else {
            return;
        };
        let mut params = ProgressNotificationParam::new(token.clone(), progress);
        params.total = total;
        params.message = message.map(str::to_owned);
        let notification =
            ServerNotification::ProgressNotification(ProgressNotification::new(params));
        if let Err(error) = self.notify(client, notification).await {
            tracing::debug!(%error, "could not send a progress notification");
        }
    }

    /// Sends a log message to the client, if it asked for this level: with the request
    /// (2026-07-28), else with logging/setLevel.
    pub async fn log(&self, level: LoggingLevel, data: Value) {
        let wanted = match self.log_level {
            Some(min) => severity(level) >= severity(min),
            None => self.session.wants_log(level),
        };
        if let Some(client) = &self.client
            && wanted
        {
            let mut params = LoggingMessageNotificationParam::new(level, data);
            params.logger = Some(self.logger.to_string());
            let notification = ServerNotification::LoggingMessageNotification(
                LoggingMessageNotification::new(params),
            );
            if let Err(error) = self.notify(client, notification).await {
                tracing::debug!(%error, "could not send a log message");
            }
        }
    }
}

/// A client's answer of another kind than the request's.
fn unexpected() -> ClientRequestError {
    ClientRequestError::Failed("the client answered with another kind of result".into())
}

/// What a handler's request to the client gets in a round: the client's earlier answer, or
/// [`ClientRequestError::InputRequired`] while the framework asks for it.
fn from_round<T>(answer: RoundAnswer<T>) -> Result<T, ClientRequestError> {
    match answer {
        RoundAnswer::Answered(result) => Ok(result),
        RoundAnswer::Asked => Err(ClientRequestError::InputRequired),
    }
}
