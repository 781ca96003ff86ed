//! A session's way to its client: what the server sends it (answers, notifications, its own
//! requests) and the answers to those requests waiting to come back.
//!
//! The transport owns the other end: it takes each [`Outgoing`] message from the receiver
//! [`ClientLink::new`] returns and writes it where it belongs (stdio: the next line; HTTP: the
//! response stream of the request being answered, else the session's standalone stream).

// Sampling and logging are deprecated by the stateless 2026-07-28 revision; the older
// revisions, served beside it, still use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CancelledNotification, CancelledNotificationParam, ClientResult, ErrorData, JsonRpcMessage,
    NumberOrString, RequestId, ServerJsonRpcMessage, ServerNotification, ServerRequest,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::locks::lock;

/// How many messages may wait for the transport to write them before a sender waits.
const OUTBOX_CAPACITY: usize = 64;

/// One message for the client, and the client's request it was sent while answering, if any.
#[derive(Debug)]
pub struct Outgoing {
    /// The message.
    pub message: ServerJsonRpcMessage,
    /// The request being answered when it was sent: over HTTP it rides that request's stream.
    pub during: Option<RequestId>,
}

/// What a link sends, for its transport to write. Each message is boxed: a channel allocates
/// room for 32 of what it carries when it is made, and a session's link is made whether it
/// sends anything or not.
pub type Outbox = mpsc::Receiver<Box<Outgoing>>;

/// Appends `message` to `out` as JSON. An error answering no readable id says `"id": null`,
/// as JSON-RPC 2.0 asks (rmcp's type would leave the id out, as only 2026-07-28 allows).
pub fn encode(message: &ServerJsonRpcMessage, out: &mut Vec<u8>) -> serde_json::Result<()> {
    match message {
        JsonRpcMessage::Error(error) if error.id.is_none() => {
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": error.error});
            serde_json::to_writer(out, &answer)
        }
        message => serde_json::to_writer(out, message),
    }
}

/// The client cannot be reached any more: its transport has stopped.
#[derive(Debug, thiserror::Error)]
#[error("the client's connection is closed")]
pub struct Unreachable;

/// Why a request to the client got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// Nothing came back within the time allowed; the client was told to stop.
    #[error("the client did not answer within {0:?}")]
    TimedOut(Duration),
    /// The client answered with an error.
    #[error("{}", .0.message)]
    Refused(ErrorData),
    /// The connection is gone.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
}

type Waiting = oneshot::Sender<Result<ClientResult, ErrorData>>;

/// `notifications/cancelled` for the server's request `id`, given up on.
fn cancelled(id: RequestId) -> ServerNotification {
    // rmcp's words for it.
    let params = CancelledNotificationParam::new(Some(id), Some("request timeout".to_owned()));
    ServerNotification::CancelledNotification(CancelledNotification::new(params))
}

/// A request to the client, sent or being sent, whose asker may be dropped before it is
/// answered (its call was cancelled, its session closed): then nobody waits for the answer any
/// more, and the client is told so, as far as the outbox has room.
struct OpenAsk<'a> {
    link: &'a ClientLink,
    /// `None` once the asker has its outcome.
    id: Option<RequestId>,
    during: Option<RequestId>,
}

impl Drop for OpenAsk<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let was_waiting = lock(&self.link.inner.waiting).remove(&id).is_some();
        if was_waiting {
            let message = ServerJsonRpcMessage::notification(cancelled(id));
            let outgoing = Box::new(Outgoing {
                message,
                during: self.during.take(),
            });
            self.link.inner.unwritten.fetch_add(1, Ordering::SeqCst);
            if self.link.inner.outbox.try_send(outgoing).is_err() {
                self.link.inner.unwritten.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// PKB's handle on one session's client. Cloning it gives another handle on the same client.
#[derive(Clone)]
pub struct ClientLink {
    inner: Arc<LinkInner>,
}

struct LinkInner {
    outbox: mpsc::Sender<Box<Outgoing>>,
    /// Messages sent and not yet written by the transport (see [`ClientLink::written`]).
    unwritten: AtomicUsize,
    /// The requests sent to the client and not yet answered, by the id they were sent with.
    waiting: Mutex<HashMap<RequestId, Waiting>>,
    next_id: AtomicI64,
    /// Cancelled once the client's input has ended: it can answer nothing any more.
    input_ended: CancellationToken,
}

impl ClientLink {
    /// A link, and the receiver of what it sends, for the transport to write.
    pub fn new() -> (Self, Outbox) {
        let (outbox, outgoing) = mpsc::channel(OUTBOX_CAPACITY);
        let inner = LinkInner {
            outbox,
            unwritten: AtomicUsize::new(0),
            waiting: Mutex::default(),
            next_id: AtomicI64::new(0),
            input_ended: CancellationToken::new(),
        };
        (
            Self {
                inner: Arc::new(inner),
            },
            outgoing,
        )
    }

    /// Sends `message`, sent while answering `during` if that is set.
    pub async fn send(
        &self,
        message: ServerJsonRpcMessage,
        during: Option<RequestId>,
    ) -> Result<(), Unreachable> {
        // Counted once it has its place, with no wait between: a sender dropped while it
        // waits for one (its call given up) leaves the count as it was.
        let place = self.inner.outbox.reserve().await.map_err(|_| Unreachable)?;
        self.inner.unwritten.fetch_add(1, Ordering::SeqCst);
        place.send(Box::new(Outgoing { message, during }));
        Ok(())
    }

    /// How many messages were sent and not yet written: when none, a transport may write a
    /// message of its own at once, with nothing sent before it left behind.
    pub fn unwritten(&self) -> usize {
        self.inner.unwritten.load(Ordering::SeqCst)
    }

    /// The transport wrote one message it took from the receiver.
    pub fn written(&self) {
        self.inner.unwritten.fetch_sub(1, Ordering::SeqCst);
    }

    /// Sends `notification`.
    pub async fn notify(
        &self,
        notification: ServerNotification,
        during: Option<RequestId>,
    ) -> Result<(), Unreachable> {
        self.send(ServerJsonRpcMessage::notification(notification), during)
            .await
    }

    /// Sends `request` and waits for the client's answer, at most `timeout`; past it the
    /// client is told the request is cancelled, so it stops working on an answer nobody awaits.
    pub async fn ask(
        &self,
        request: ServerRequest,
        during: Option<RequestId>,
        timeout: Duration,
    ) -> Result<ClientResult, AskError> {
        // Numbered from 0 in each session, as rmcp's own server numbers them.
        let id = NumberOrString::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (answered, answer) = oneshot::channel();
        {
            // Checked under the lock `end_input` drains: a request is either refused here or
            // given up there.
            let mut waiting = lock(&self.inner.waiting);
            if self.inner.input_ended.is_cancelled() {
                return Err(Unreachable.into());
            }
            waiting.insert(id.clone(), answered);
        }
        let mut open = OpenAsk {
            link: self,
            id: Some(id.clone()),
            during: during.clone(),
        };
        let message = ServerJsonRpcMessage::request(request, id.clone());
        self.send(message, during.clone()).await?;
        let outcome = tokio::time::timeout(timeout, answer).await;
        open.id = None;
        match outcome {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(AskError::Refused(error)),
            // The link's last handle went away with the request still open.
            Ok(Err(_)) => Err(Unreachable.into()),
            Err(_) => {
                lock(&self.inner.waiting).remove(&id);
                let _ = self.notify(cancelled(id), during).await;
                Err(AskError::TimedOut(timeout))
            }
        }
    }

    /// The client's input has ended (stdin closed): it can answer nothing more, so every
    /// request waiting on it is given up now (as unreachable), later ones at once, and what
    /// waits on [`ClientLink::input_ended`] stops; what the server sends is still written.
    pub fn end_input(&self) {
        self.inner.input_ended.cancel();
        // Dropping each sender wakes its asker with the link unreachable.
        lock(&self.inner.waiting).clear();
    }

    /// Waits until the client's input has ended ([`ClientLink::end_input`]).
    pub async fn input_ended(&self) {
        self.inner.input_ended.cancelled().await;
    }

    /// Hands the client's answer to the request `id` to whoever waits for it. An answer to a
    /// request never sent, or given up, is ignored.
    pub fn answered(&self, id: &RequestId, outcome: Result<ClientResult, ErrorData>) {
        let waiting = lock(&self.inner.waiting).remove(id);
        match waiting {
            Some(waiting) => {
                let _ = waiting.send(outcome);
            }
            None => tracing::debug!(%id, "ignored an answer to no open request"),
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ListRootsRequest, ListRootsResult, ServerRequest};

    use super::*;

    #[tokio::test]
    async fn the_end_of_the_clients_input_gives_up_what_waits_on_its_answers() {
        let (link, mut outgoing) = ClientLink::new();
        let asking = tokio::spawn({
            let link = link.clone();
            async move {
                let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
                link.ask(request, None, Duration::from_secs(600)).await
            }
        });
        outgoing.recv().await.expect("the request is sent");
        link.end_input();
        let outcome = asking.await.unwrap();
        assert!(
            matches!(outcome, Err(AskError::Unreachable(_))),
            "{outcome:?}"
        );
        link.input_ended().await;
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let later = link.ask(request, None, Duration::from_secs(600)).await;
        assert!(matches!(later, Err(AskError::Unreachable(_))), "{later:?}");
        // What the server sends is still written.
        let notification = ServerNotification::ToolListChangedNotification(Default::default());
        link.notify(notification, None).await.unwrap();
        assert!(outgoing.recv().await.is_some());
    }

    #[tokio::test]
    async fn an_answer_reaches_the_request_it_answers() {
        let (link, mut outgoing) = ClientLink::new();
        let asking = tokio::spawn({
            let link = link.clone();
            async move {
                let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
                link.ask(request, None, Duration::from_secs(5)).await
            }
        });
        let sent = outgoing.recv().await.unwrap();
        let JsonRpcMessage::Request(request) = sent.message else {
            panic!("a request");
        };
        // An answer to another id changes nothing.
        link.answered(
            &NumberOrString::Number(7),
            Err(ErrorData::invalid_request("x", None)),
        );
        link.answered(
            &request.id,
            Ok(ClientResult::ListRootsResult(ListRootsResult::default())),
        );
        assert!(matches!(
            asking.await.unwrap(),
            Ok(ClientResult::ListRootsResult(_))
        ));
    }

    #[test]
    fn an_error_without_a_readable_id_says_id_null() {
        let answer = crate::framework::incoming::error_answer(
            serde_json::Value::Null,
            -32700,
            "parse error",
        );
        let mut line = Vec::new();
        encode(&answer, &mut line).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(value.get("id"), Some(&serde_json::Value::Null), "{value}");
        assert_eq!(value["error"]["code"], -32700);
    }

    #[tokio::test]
    async fn a_request_left_unanswered_is_cancelled_at_its_timeout() {
        let (link, mut outgoing) = ClientLink::new();
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let during = Some(NumberOrString::Number(3));
        let asked = link
            .ask(request, during.clone(), Duration::from_millis(50))
            .await;
        assert!(matches!(asked, Err(AskError::TimedOut(_))), "{asked:?}");
        let first = outgoing.recv().await.unwrap();
        let cancel = outgoing.recv().await.unwrap();
        assert_eq!(cancel.during, during);
        let JsonRpcMessage::Notification(notification) = cancel.message else {
            panic!("a notification");
        };
        let ServerNotification::CancelledNotification(cancelled) = notification.notification else {
            panic!("notifications/cancelled");
        };
        let JsonRpcMessage::Request(request) = first.message else {
            panic!("a request");
        };
        assert_eq!(cancelled.params.request_id, Some(request.id));
    }

    #[tokio::test]
    async fn a_request_its_asker_gave_up_is_forgotten_and_the_client_told() {
        let (link, mut outgoing) = ClientLink::new();
        let asking = tokio::spawn({
            let link = link.clone();
            async move {
                let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
                link.ask(request, None, Duration::from_secs(60)).await
            }
        });
        let JsonRpcMessage::Request(request) = outgoing.recv().await.unwrap().message else {
            panic!("a request");
        };
        asking.abort();
        assert!(asking.await.unwrap_err().is_cancelled());
        assert!(lock(&link.inner.waiting).is_empty());
        let JsonRpcMessage::Notification(notification) = outgoing.recv().await.unwrap().message
        else {
            panic!("a notification");
        };
        let ServerNotification::CancelledNotification(cancelled) = notification.notification else {
            panic!("notifications/cancelled");
        };
        assert_eq!(cancelled.params.request_id, Some(request.id));
    }

    #[tokio::test]
    async fn a_closed_transport_fails_at_once() {
        let (link, outgoing) = ClientLink::new();
        drop(outgoing);
        let request = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let asked = link.ask(request, None, Duration::from_secs(60)).await;
        assert!(matches!(asked, Err(AskError::Unreachable(_))), "{asked:?}");
    }
}
