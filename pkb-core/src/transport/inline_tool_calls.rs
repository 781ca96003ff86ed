//! Plain `tools/call` requests of a Streamable HTTP session answered where the gate read them,
//! through the same handler rmcp's service loop would call, once the client has initialized.
//!
//! rmcp's loop gives every request a spawned task holding a 4.4 KB future, a channel hop back
//! to the loop and a second task to write the answer: on an `echo` that was about half of the
//! server's time (docs/performance.md). Here the handler is polled once on the spot. A call that
//! is done at once is answered with no task at all; one that waits moves to a task of its own.
//! Before `initialize` has succeeded every call goes to rmcp, which refuses it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorData, Request, RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, Service};
use tokio_util::task::TaskTracker;

use crate::McpServer;

/// Answers plain tool calls for one session over HTTP.
pub struct InlineToolCalls {
    server: McpServer,
    tasks: TaskTracker,
}

impl InlineToolCalls {
    /// Direct answers from `server`'s handler, from the moment it has answered `initialize`.
    pub fn new(server: McpServer) -> Arc<Self> {
        Arc::new(Self {
            server,
            tasks: TaskTracker::new(),
        })
    }

    /// The session's client handle once `initialize` has succeeded (or a stateless request
    /// has been served); until then calls go to rmcp.
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.server.peer()
    }

    /// Answers `call` in `context` for a transport that sends the answer itself (a session's
    /// call over HTTP): polled here first, then, if it waits, from a task of its own, which
    /// runs to its end even when the caller stops waiting (its client went away), as a
    /// handler under rmcp's loop would.
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
