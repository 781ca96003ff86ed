//! rmcp's own session manager, each session's transport routed through [`CallStreams`]: the
//! requests handlers send during calls the gate answers directly ride those calls' streams.
//! Everything else is rmcp's, unchanged.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::WorkerTransport;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use super::call_streams::{CallStreams, RoutedTransport};
use super::direct_calls;

/// The sessions of one server: rmcp's [`LocalSessionManager`], with each session's
/// [`CallStreams`].
#[derive(Default)]
pub(super) struct RoutedSessions {
    pub(super) local: LocalSessionManager,
}

impl SessionManager for RoutedSessions {
    type Error = LocalSessionManagerError;
    type Transport = RoutedTransport<WorkerTransport<LocalSessionWorker>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, inner) = self.local.create_session().await?;
        let streams = Arc::new(CallStreams::default());
        direct_calls::opened_streams(&streams);
        Ok((id, RoutedTransport { inner, streams }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.local.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.local.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.local.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(Shared::new(self.local.create_stream(id, message).await?))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.local.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(Shared::new(self.local.create_standalone_stream(id).await?))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(Shared::new(self.local.resume(id, last_event_id).await?))
    }
}

/// A stream that may be shared between threads: rmcp's own streams are, but its manager's
/// signatures promise only `Send`. Polled through `&mut`, so its lock is never taken.
struct Shared<S>(std::sync::Mutex<Pin<Box<S>>>);

impl<S> Shared<S> {
    fn new(stream: S) -> Self {
        Self(std::sync::Mutex::new(Box::pin(stream)))
    }
}

impl<S: Stream + Send> Stream for Shared<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let stream = self.get_mut().0.get_mut();
        stream
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
            .poll_next(cx)
    }
}
