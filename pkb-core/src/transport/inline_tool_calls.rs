//! Plain `tools/call` requests answered where the transport read them, through the same
//! handler rmcp's service loop would call, once the client has initialized.
//!
//! rmcp's loop gives every request a spawned task holding a 4.4 KB future, a channel hop back
//! to the loop and a second task to write the answer: on an `echo` that was about half of the
//! server's time (docs/performance.md). Here the handler is polled once on the spot. A call that
//! is done at once (`echo`, a `fetch` served from memory) is answered with no task at all; one
//! that waits (a read from disk, a write, sampling) moves to a task of its own, so the transport
//! goes on reading meanwhile.
//!
//! What rmcp's loop does around a request is kept: the handler gets the session's peer (for
//! sampling and notifications) and the negotiated version through rmcp's own
//! `ServerHandler::handle_request`; a `notifications/cancelled` drops the call's answer; and
//! the end of input waits for answers still on their way. It waits before rmcp's loop learns
//! of the end: the loop still carries the handlers' notifications meanwhile, which a `write`
//! awaits before its answer (rmcp's own drain, after the loop, loses such answers).
//! Before `initialize` has succeeded every call goes to rmcp, which refuses it. On the
//! stateless revision the first request starts rmcp's session; once a handler has seen its
//! peer, calls whose `_meta` is that revision's are answered here too, with that `_meta` in
//! the handler's context as rmcp's loop would put it.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorData, Request, RequestId, RequestMetaObject,
    ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, Service};
use tokio::io::AsyncWrite;
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::McpServer;
use crate::locks::lock;

/// How long the end of input waits for calls still being answered: what rmcp's loop allows its
/// own handlers then.
pub(super) const END_OF_INPUT_WAIT: Duration = Duration::from_secs(5);

/// How long closing waits for them otherwise (the service was cancelled, as on SIGTERM). What
/// could only finish through rmcp's stopped loop (a notification, a sampling request) gives up
/// at once (see [`InlineToolCalls::stopping`]), so what is left is the store's work: a burst of
/// pipelined writes, each with its fsync, took over the 2 s rmcp allows its own handlers, and
/// notes were then saved that were never answered.
pub(super) const CLOSE_WAIT: Duration = END_OF_INPUT_WAIT;

/// Answers plain tool calls for one session, from inside its [`LineTransport`].
///
/// [`LineTransport`]: super::LineTransport
pub struct InlineToolCalls {
    server: McpServer,
    /// Calls being answered, by request ID, so a cancellation can find them; each with the
    /// ticket of the call that registered it, in case a client reuses an ID while it runs.
    running: Mutex<HashMap<RequestId, (u64, CancellationToken)>>,
    next_ticket: AtomicU64,
    tasks: TaskTracker,
    wait_deadline: OnceLock<tokio::time::Instant>,
}

impl InlineToolCalls {
    /// Direct answers from `server`'s handler, from the moment it has answered `initialize`.
    pub fn new(server: McpServer) -> Arc<Self> {
        Arc::new(Self {
            server,
            running: Mutex::default(),
            next_ticket: AtomicU64::new(0),
            tasks: TaskTracker::new(),
            wait_deadline: OnceLock::new(),
        })
    }

    /// The session's client handle once `initialize` has succeeded (or a stateless request
    /// has been served); until then calls go to rmcp.
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.server.peer()
    }

    /// Answers `call` through `writer`: on the spot if its handler finishes at once, otherwise
    /// from a task of its own. `permit` (see [`super::in_flight`]) is held until then.
    pub(super) async fn answer<W>(
        self: &Arc<Self>,
        peer: &Peer<RoleServer>,
        id: RequestId,
        call: CallToolRequestParams,
        meta: Option<RequestMetaObject>,
        writer: &Arc<tokio::sync::Mutex<W>>,
        permit: Option<OwnedSemaphorePermit>,
    ) where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut context = RequestContext::new(id.clone(), peer.clone());
        // A 2026-07-28 request's revision, capabilities and log level, where rmcp's loop
        // would put them.
        if let Some(meta) = meta {
            context.meta = meta;
        }
        let ticket = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        lock(&self.running).insert(id, (ticket, context.ct.clone()));
        let answering = self
            .clone()
            .respond(context, call, writer.clone(), ticket)
            // The permit goes back once the answer is written, or dropped.
            .map(move |()| drop(permit));
        let mut answering = Box::pin(answering);
        // One poll here, with the reading task's waker: a finished call costs no task. A call
        // that is not finished is polled again by its own task, which registers its own waker.
        if let Poll::Ready(()) = futures::poll!(answering.as_mut()) {
            return;
        }
        self.tasks.spawn(answering);
    }

    /// Runs the handler rmcp's loop would run for `call`, and writes its answer unless the call
    /// was cancelled meanwhile.
    async fn respond<W>(
        self: Arc<Self>,
        context: RequestContext<RoleServer>,
        call: CallToolRequestParams,
        writer: Arc<tokio::sync::Mutex<W>>,
        ticket: u64,
    ) where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let id = context.id.clone();
        let cancelled = context.ct.clone();
        let answer = run_handler(&self.server, context, call).await;
        self.finished(&id, ticket);
        if cancelled.is_cancelled() {
            tracing::debug!("dropping the answer to a cancelled call");
            return;
        }
        if let Err(error) = super::write_line(&writer, &answer).await {
            tracing::warn!(%error, "could not write a tool call's answer");
        }
    }

    /// Answers `call` in `context` for a transport that sends the answer itself (a session's
    /// call over HTTP): polled here first, then, if it waits, from a task of its own, which
    /// runs to its end even when the caller stops waiting (its client went away), as a
    /// handler under rmcp's loop would.
    #[cfg(feature = "http")]
    pub(super) async fn answer_message(
        &self,
        context: RequestContext<RoleServer>,
        call: CallToolRequestParams,
    ) -> ServerJsonRpcMessage {
        let id = context.id.clone();
        let server = self.server.clone();
        let mut answering = Box::pin(async move { run_handler(&server, context, call).await });
        if let Poll::Ready(answer) = futures::poll!(answering.as_mut()) {
            return answer;
        }
        let (answered, answer) = tokio::sync::oneshot::channel();
        self.tasks.spawn(async move {
            let _ = answered.send(answering.await);
        });
        answer.await.unwrap_or_else(|_| internal_error(id))
    }

    /// Forgets a call whose handler has returned, before its answer is written: once the
    /// client sees the answer it may reuse the ID.
    fn finished(&self, id: &RequestId, ticket: u64) {
        let mut running = lock(&self.running);
        if running.get(id).is_some_and(|(held, _)| *held == ticket) {
            running.remove(id);
        }
    }

    /// Drops the answer of the call `id` if it is still being worked on, as rmcp does for a
    /// `notifications/cancelled`: the handler runs to its end, its answer is not sent.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some((_, cancelled)) = lock(&self.running).remove(id) {
            tracing::info!(%id, "cancelled");
            cancelled.cancel();
        }
    }

    /// The session's loop has stopped: what waits to reach the client gives up, so the calls
    /// behind it can answer.
    pub(super) fn stopping(&self) {
        self.server.close_session();
    }

    /// Waits for the calls still being answered, until `within` after the first time it was
    /// called. Safe to drop and call again: rmcp may drop the transport's `receive` while this
    /// waits, and ask again.
    pub(super) async fn wait_for_running(&self, within: Duration) {
        self.tasks.close();
        let deadline = *self
            .wait_deadline
            .get_or_init(|| tokio::time::Instant::now() + within);
        if tokio::time::timeout_at(deadline, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("timed out waiting for tool calls still being answered");
        }
    }
}

/// The answer of `server`'s handler to `call`, as rmcp's loop would send it.
async fn run_handler(
    server: &McpServer,
    context: RequestContext<RoleServer>,
    call: CallToolRequestParams,
) -> ServerJsonRpcMessage {
    let id = context.id.clone();
    let request = ClientRequest::CallToolRequest(Request::new(call));
    // Tool handlers' panics are already caught by the registry; this catches one in the code
    // around them, which would otherwise unwind into the transport's task.
    let outcome = AssertUnwindSafe(server.handle_request(request, context))
        .catch_unwind()
        .await;
    match outcome {
        Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
        Ok(Err(error)) => {
            // The client's mistake, answered to it: see pkb-server's log filter.
            tracing::debug!(%id, ?error, "response error");
            ServerJsonRpcMessage::error(error, Some(id))
        }
        Err(_) => {
            tracing::error!(%id, "a tool call panicked outside its handler");
            internal_error(id)
        }
    }
}

fn internal_error(id: RequestId) -> ServerJsonRpcMessage {
    let error = ErrorData::internal_error("internal error while answering the call", None);
    ServerJsonRpcMessage::error(error, Some(id))
}
