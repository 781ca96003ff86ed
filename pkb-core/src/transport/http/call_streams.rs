//! The response streams of calls the gate answers itself ([`super::direct_calls`]), for what
//! their handlers send the client on them.
//!
//! A request a handler sends its client during a call (sampling, elicitation, roots) belongs on
//! that call's own response stream (SEP-2260). rmcp's session worker knows only the streams of
//! the requests it was given, so the session's transport ([`RoutedTransport`]) hands a request
//! marked as sent during a call answered directly (rmcp's `OriginatingRequestId`) to that
//! call's stream here instead, and with it any cancellation of that request. The client's
//! answer comes back as any answer does, through rmcp, to the handler that waits for it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::future::Either;
use rmcp::RoleServer;
use rmcp::model::{
    GetExtensions, JsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::OriginatingRequestId;
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use crate::locks::lock;

/// The open streams of one session's calls, by the calls' request ids.
#[derive(Default)]
pub(super) struct CallStreams {
    open: Mutex<HashMap<RequestId, Route>>,
}

struct Route {
    to_stream: mpsc::UnboundedSender<ServerJsonRpcMessage>,
    /// The ids of the requests sent on the stream: their cancellations follow them.
    asked: HashSet<RequestId>,
}

/// The messages for one call's stream; closed when dropped, after which its handler's
/// requests take rmcp's way (the session's standalone stream).
pub(super) struct CallStream {
    streams: Arc<CallStreams>,
    id: RequestId,
    pub(super) messages: mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
}

impl Drop for CallStream {
    fn drop(&mut self) {
        lock(&self.streams.open).remove(&self.id);
    }
}

impl CallStreams {
    /// The stream of the call `id`, unless a call of that id already has one (a client
    /// that reuses an id while its call runs: the second goes to rmcp).
    pub(super) fn open(self: &Arc<Self>, id: &RequestId) -> Option<CallStream> {
        let mut open = lock(&self.open);
        if open.contains_key(id) {
            return None;
        }
        let (to_stream, messages) = mpsc::unbounded_channel();
        open.insert(
            id.clone(),
            Route {
                to_stream,
                asked: HashSet::new(),
            },
        );
        Some(CallStream {
            streams: Arc::clone(self),
            id: id.clone(),
            messages,
        })
    }

    /// Hands `message` to the stream it belongs on, if it belongs on a call's stream and that
    /// is open; gives it back otherwise.
    fn route(&self, message: ServerJsonRpcMessage) -> Option<ServerJsonRpcMessage> {
        match &message {
            JsonRpcMessage::Request(request) => {
                let Some(OriginatingRequestId(call)) = request.request.extensions().get() else {
                    return Some(message);
                };
                let mut open = lock(&self.open);
                let Some(route) = open.get_mut(call) else {
                    return Some(message);
                };
                route.asked.insert(request.id.clone());
                route.to_stream.send(message).err().map(|unsent| unsent.0)
            }
            JsonRpcMessage::Notification(notification) => {
                let ServerNotification::CancelledNotification(cancelled) =
                    &notification.notification
                else {
                    return Some(message);
                };
                let Some(asked) = &cancelled.params.request_id else {
                    return Some(message);
                };
                let open = lock(&self.open);
                match open.values().find(|route| route.asked.contains(asked)) {
                    Some(route) => route.to_stream.send(message).err().map(|unsent| unsent.0),
                    None => Some(message),
                }
            }
            _ => Some(message),
        }
    }
}

/// A session's transport between rmcp's service and its session worker, through which what
/// belongs on a call's stream goes there ([`CallStreams`]).
pub(super) struct RoutedTransport<T> {
    pub(super) inner: T,
    pub(super) streams: Arc<CallStreams>,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for RoutedTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match self.streams.route(item) {
            None => Either::Left(std::future::ready(Ok(()))),
            Some(item) => Either::Right(self.inner.send(item)),
        }
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CancelledNotificationParam, Notification, PingRequest, ServerRequest};

    fn request(id: i64, during: Option<i64>) -> ServerJsonRpcMessage {
        let mut request = ServerRequest::PingRequest(PingRequest::default());
        if let Some(call) = during {
            request
                .extensions_mut()
                .insert(OriginatingRequestId(RequestId::Number(call)));
        }
        ServerJsonRpcMessage::request(request, RequestId::Number(id))
    }

    fn cancelled(id: i64) -> ServerJsonRpcMessage {
        let params = CancelledNotificationParam::new(Some(RequestId::Number(id)), None);
        ServerJsonRpcMessage::notification(ServerNotification::CancelledNotification(
            Notification::new(params),
        ))
    }

    #[test]
    fn what_a_call_asks_and_its_cancellation_ride_the_calls_stream_while_it_is_open() {
        let streams = Arc::new(CallStreams::default());
        let mut stream = streams.open(&RequestId::Number(7)).unwrap();
        assert!(
            streams.open(&RequestId::Number(7)).is_none(),
            "one stream per call id"
        );
        assert!(streams.route(request(0, Some(7))).is_none(), "taken");
        assert!(
            streams.route(request(1, Some(8))).is_some(),
            "another call's"
        );
        assert!(streams.route(request(2, None)).is_some(), "unmarked");
        assert!(streams.route(cancelled(0)).is_none(), "follows its request");
        assert!(streams.route(cancelled(1)).is_some());
        for _ in 0..2 {
            assert!(stream.messages.try_recv().is_ok());
        }
        assert!(stream.messages.try_recv().is_err());
        drop(stream);
        assert!(streams.route(request(3, Some(7))).is_some(), "closed");
    }
}
