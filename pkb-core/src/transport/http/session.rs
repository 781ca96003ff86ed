//! One Streamable HTTP session: its server, answering through PKB's dispatcher, and the routes
//! of what it sends its client. A request's answer, and the requests and progress its handler
//! sends the client while answering it, ride the response to that request; everything else
//! (log messages, resource notifications, changes made elsewhere) rides the session's
//! standalone stream, the one its client opens with a GET.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rmcp::model::{JsonRpcMessage, RequestId, ServerNotification};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{self, EventIds};
use crate::McpServer;
use crate::framework::client_link::{ClientLink, Outbox, Outgoing};
use crate::locks::lock;

/// A message on its way to a stream, in the box the link sent it in: a channel allocates room
/// for 32 of what it carries when it is made, and each request makes one.
pub(super) type Message = Box<Outgoing>;

/// How many messages a stream holds for a client slow to read it before the session waits.
const STREAM_CAPACITY: usize = 64;

/// How many messages for the standalone stream are kept while none is open: the latest, for
/// the GET that opens one (a client opens it after `initialize`, and a call may log before).
const KEPT_FOR_STANDALONE: usize = 16;

/// The most GETs open beside the standalone stream: they only keep alive (a client has one
/// standalone stream), and past this the oldest is ended.
const MAX_SHADOWS: usize = 32;

/// One session.
pub(super) struct HttpSession {
    /// The session's server.
    pub(super) server: McpServer,
    link: ClientLink,
    routes: Arc<Routes>,
    /// Cancelled when the session ends: every stream of it ends.
    pub(super) closed: CancellationToken,
    /// Request streams opened so far, which number their events.
    request_streams: AtomicU64,
}

/// Where a session's messages go.
#[derive(Default)]
struct Routes {
    /// The open streams of the requests being answered, by the request's id: each with its
    /// number, so that a stream is closed only by its own request.
    requests: Mutex<HashMap<RequestId, (u64, mpsc::Sender<Message>)>>,
    standalone: Mutex<Standalone>,
}

#[derive(Default)]
struct Standalone {
    stream: Option<mpsc::Sender<Message>>,
    /// What came while no standalone stream was open.
    kept: VecDeque<Message>,
    /// GETs beside the standalone stream, oldest first.
    shadows: VecDeque<CancellationToken>,
}

impl HttpSession {
    /// A session served by `template`'s registry, ended at the latest when `stop` is.
    pub(super) fn open(template: &McpServer, stop: &CancellationToken) -> Arc<Self> {
        let (link, outgoing) = ClientLink::new();
        let session = Arc::new(Self {
            server: template.session_over(link.clone()),
            link: link.clone(),
            routes: Arc::default(),
            closed: stop.child_token(),
            request_streams: AtomicU64::new(0),
        });
        tokio::spawn(route(
            Arc::clone(&session.routes),
            link,
            outgoing,
            session.closed.clone(),
        ));
        session
    }

    /// Ends the session: its streams end, and what waits on its client gives up.
    pub(super) fn close(&self) {
        self.closed.cancel();
        self.server.close_session();
    }

    /// The way to the client.
    pub(super) fn link(&self) -> &ClientLink {
        &self.link
    }

    /// Opens the stream of the request `id`: what the session sends while answering it, and
    /// the answer, come on it. The stream's number names its events. `None` while another
    /// request of that id is being answered: ids are the client's to keep apart.
    pub(super) fn open_request_stream(
        &self,
        id: &RequestId,
    ) -> Option<(u64, mpsc::Receiver<Message>)> {
        let mut requests = lock(&self.routes.requests);
        if requests.contains_key(id) {
            return None;
        }
        let (sender, receiver) = mpsc::channel(STREAM_CAPACITY);
        let number = self.request_streams.fetch_add(1, Ordering::Relaxed);
        requests.insert(id.clone(), (number, sender));
        Some((number, receiver))
    }

    /// Forgets the stream `number` of the request `id` (its answer was given otherwise, or
    /// will never be).
    pub(super) fn close_request_stream(&self, id: &RequestId, number: u64) {
        let mut requests = lock(&self.routes.requests);
        if requests.get(id).is_some_and(|(open, _)| *open == number) {
            requests.remove(id);
        }
    }

    /// A GET's stream: the standalone stream, unless one is open; then one that only keeps
    /// alive until the session ends. `priming`: the revision expects a priming event.
    pub(super) fn open_standalone(&self, priming: bool) -> axum::response::Response {
        let first: Vec<Bytes> = if priming {
            vec![events::priming("0")]
        } else {
            Vec::new()
        };
        let mut standalone = lock(&self.routes.standalone);
        if standalone.stream.as_ref().is_some_and(|s| !s.is_closed()) {
            let shadow = self.closed.child_token();
            standalone.shadows.push_back(shadow.clone());
            if standalone.shadows.len() > MAX_SHADOWS
                && let Some(oldest) = standalone.shadows.pop_front()
            {
                oldest.cancel();
            }
            standalone.shadows.retain(|s| !s.is_cancelled());
            return events::stream(first, None, EventIds::Counted, shadow);
        }
        let (sender, receiver) = mpsc::channel(STREAM_CAPACITY.max(KEPT_FOR_STANDALONE));
        for message in standalone.kept.drain(..) {
            // The channel holds more than is ever kept.
            let _ = sender.try_send(message);
        }
        standalone.stream = Some(sender);
        events::stream(
            first,
            Some(receiver),
            EventIds::Counted,
            self.closed.clone(),
        )
    }
}

impl Drop for HttpSession {
    /// A session dropped without being closed (its `initialize` dropped half-way) still ends
    /// its routing task.
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Takes each message the session sends and puts it where it belongs, until the session ends.
async fn route(
    routes: Arc<Routes>,
    link: ClientLink,
    mut outgoing: Outbox,
    closed: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            biased;
            () = closed.cancelled() => return,
            next = outgoing.recv() => match next {
                Some(next) => next,
                None => return,
            },
        };
        deliver(&routes, next).await;
        link.written();
    }
}

async fn deliver(routes: &Routes, message: Message) {
    let during = message.during.clone();
    let (stream, answers) = match &message.message {
        JsonRpcMessage::Response(response) => (Some(response.id.clone()), true),
        JsonRpcMessage::Error(error) => (error.id.clone(), true),
        JsonRpcMessage::Request(_) => (during, false),
        JsonRpcMessage::Notification(notification) => {
            let of_the_request = matches!(
                notification.notification,
                ServerNotification::ProgressNotification(_)
                    | ServerNotification::CancelledNotification(_)
            );
            (during.filter(|_| of_the_request), false)
        }
    };
    if let Some(id) = stream {
        // An answer closes its stream; anything else keeps it open.
        let sender = {
            let mut requests = lock(&routes.requests);
            if answers {
                requests.remove(&id).map(|(_, sender)| sender)
            } else {
                requests.get(&id).map(|(_, sender)| sender.clone())
            }
        };
        if let Some(sender) = sender {
            match sender.send(message).await {
                Ok(()) => return,
                // The client stopped reading the request's stream: an answer is lost with
                // it, anything else goes to the standalone stream.
                Err(mpsc::error::SendError(message)) if !answers => {
                    return to_standalone(routes, message).await;
                }
                Err(_) => return,
            }
        }
        if answers {
            tracing::debug!(%id, "an answer whose stream is gone");
            return;
        }
    }
    to_standalone(routes, message).await;
}

async fn to_standalone(routes: &Routes, message: Message) {
    let stream = lock(&routes.standalone).stream.clone();
    let message = match stream {
        Some(stream) => match stream.send(message).await {
            Ok(()) => return,
            Err(mpsc::error::SendError(message)) => message,
        },
        None => message,
    };
    let mut standalone = lock(&routes.standalone);
    if let Some(stream) = &standalone.stream {
        if !stream.is_closed() {
            // A GET opened the stream anew meanwhile.
            let _ = stream.try_send(message);
            return;
        }
        standalone.stream = None;
    }
    standalone.kept.push_back(message);
    if standalone.kept.len() > KEPT_FOR_STANDALONE {
        standalone.kept.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;
    use rmcp::model::{ServerJsonRpcMessage, ServerResult};

    use super::*;
    use crate::framework::context::resource_list_changed_notification;
    use crate::{Declarations, Registry, Stateless};

    #[tokio::test]
    async fn an_answer_ends_its_request_stream_and_the_rest_waits_for_the_standalone_one() {
        let registry = Registry::new(Declarations::new()).unwrap();
        let template = McpServer::new(registry, Stateless::new("test", "1"));
        let session = HttpSession::open(&template, &CancellationToken::new());
        let id = RequestId::Number(1);
        let (_, mut stream) = session.open_request_stream(&id).unwrap();
        assert!(
            session.open_request_stream(&id).is_none(),
            "an id being answered is not taken twice"
        );
        // Sent while answering the request, but not of it: the standalone stream's.
        let link = session.link();
        link.notify(resource_list_changed_notification(), Some(id.clone()))
            .await
            .unwrap();
        let answer = ServerJsonRpcMessage::response(ServerResult::empty(()), id.clone());
        link.send(answer, Some(id.clone())).await.unwrap();
        let first = stream.recv().await.unwrap();
        assert!(
            matches!(first.message, JsonRpcMessage::Response(_)),
            "{first:?}"
        );
        assert!(
            stream.recv().await.is_none(),
            "the stream ends with its answer"
        );

        // Kept until a GET opens the standalone stream, which begins with it.
        let mut body = session.open_standalone(true).into_body();
        let priming = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(priming.starts_with(b"data: \nid: 0\n"), "{priming:?}");
        let kept = body.frame().await.unwrap().unwrap().into_data().unwrap();
        let kept = String::from_utf8_lossy(&kept);
        assert!(
            kept.contains("notifications/resources/list_changed"),
            "{kept}"
        );

        // A second GET only keeps alive: the client has one standalone stream.
        let mut shadow = session.open_standalone(false).into_body();
        session.close();
        assert!(shadow.frame().await.is_none(), "ends with the session");
        assert!(body.frame().await.is_none(), "ends with the session");
    }
}
