//! Plain `tools/call` requests answered where the transport read them, through the same
//! handler rmcp's service loop would call, once the session is running.
//!
//! rmcp's loop gives every request a spawned task holding a 4.4 KB future, a channel hop back
//! to the loop and a second task to write the answer: on an `echo` that was about half of the
//! server's time (README, Performance). Here the handler is polled once on the spot. A call that
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

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorData, Request, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, Service};
use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::PkbServer;
use crate::framework::context::lock;

/// How long closing waits for calls still being answered: what rmcp's loop allows its own
/// handlers at the end of input.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Answers plain tool calls for one session, from inside its [`LineTransport`].
///
/// [`LineTransport`]: super::LineTransport
pub struct DirectCalls {
    server: PkbServer,
    /// Set once rmcp has answered `initialize`; until then every call goes through rmcp.
    peer: OnceLock<Peer<RoleServer>>,
    /// Calls that did not finish at once, by request ID, so a cancellation can find them.
    waiting: Mutex<HashMap<RequestId, CancellationToken>>,
    tasks: TaskTracker,
    drain_deadline: OnceLock<tokio::time::Instant>,
}

impl DirectCalls {
    /// Direct answers from `server`'s handler; inactive until [`start`](Self::start).
    pub fn new(server: PkbServer) -> Arc<Self> {
        Arc::new(Self {
            server,
            peer: OnceLock::new(),
            waiting: Mutex::default(),
            tasks: TaskTracker::new(),
            drain_deadline: OnceLock::new(),
        })
    }

    /// Starts answering directly, with `peer`: the running session's handle on the client,
    /// from `RunningService::peer` once `serve` has returned.
    pub fn start(&self, peer: Peer<RoleServer>) {
        if self.peer.set(peer).is_err() {
            tracing::warn!("direct tool calls were started twice; kept the first session");
        }
    }

    /// The session's peer once started.
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get()
    }

    /// Answers `call` through `writer`: on the spot if its handler finishes at once, otherwise
    /// from a task of its own.
    pub(super) async fn answer<W>(
        self: &Arc<Self>,
        peer: &Peer<RoleServer>,
        id: RequestId,
        call: CallToolRequestParams,
        writer: &Arc<tokio::sync::Mutex<W>>,
    ) where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let context = RequestContext::new(id.clone(), peer.clone());
        let cancelled = context.ct.clone();
        let mut answering = Box::pin(respond(self.server.clone(), context, call, writer.clone()));
        // One poll here, with the reading task's waker: a finished call costs no task. A call
        // that is not finished is polled again by its own task, which registers its own waker.
        if let Poll::Ready(()) = futures::poll!(answering.as_mut()) {
            return;
        }
        lock(&self.waiting).insert(id.clone(), cancelled);
        let direct = self.clone();
        self.tasks.spawn(async move {
            answering.await;
            lock(&direct.waiting).remove(&id);
        });
    }

    /// Drops the answer of the call `id` if it is still being worked on, as rmcp does for a
    /// `notifications/cancelled`: the handler runs to its end, its answer is not sent.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some(cancelled) = lock(&self.waiting).remove(id) {
            tracing::info!(%id, "cancelled");
            cancelled.cancel();
        }
    }

    /// Waits for the calls still being answered, until [`DRAIN_TIMEOUT`] after the first
    /// time it was called. Safe to drop and call again: rmcp may drop the transport's
    /// `receive` while this waits, and asks again.
    pub(super) async fn drain(&self) {
        self.tasks.close();
        let deadline = *self
            .drain_deadline
            .get_or_init(|| tokio::time::Instant::now() + DRAIN_TIMEOUT);
        if tokio::time::timeout_at(deadline, self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("timed out waiting for tool calls still being answered");
        }
    }
}

/// Runs the handler rmcp's loop would run for `call`, and writes its answer unless the call
/// was cancelled meanwhile.
async fn respond<W>(
    server: PkbServer,
    context: RequestContext<RoleServer>,
    call: CallToolRequestParams,
    writer: Arc<tokio::sync::Mutex<W>>,
) where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let id = context.id.clone();
    let cancelled = context.ct.clone();
    let request = ClientRequest::CallToolRequest(Request::new(call));
    // Tool handlers' panics are already caught by the registry; this catches one in the code
    // around them, which here would otherwise unwind into the transport's reading task.
    let outcome = AssertUnwindSafe(server.handle_request(request, context))
        .catch_unwind()
        .await;
    let answer = match outcome {
        Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
        Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
        Err(_) => {
            tracing::error!(%id, "a tool call panicked outside its handler");
            let error = ErrorData::internal_error("internal error while answering the call", None);
            ServerJsonRpcMessage::error(error, Some(id))
        }
    };
    if cancelled.is_cancelled() {
        tracing::debug!("dropping the answer to a cancelled call");
        return;
    }
    if let Err(error) = super::write_line(&writer, &answer).await {
        tracing::warn!(%error, "could not write a tool call's answer");
    }
}
