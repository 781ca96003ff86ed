//! Event streams answered outside any session: the 2026-07-28 revision's
//! `subscriptions/listen`, which carries the user's note changes for as long as the client
//! keeps it open. Each is kept with the token that opened it, so that the gate's sweep ends
//! it once that token is revoked or expires, as it ends a session's. The gate keeps every
//! event stream it answers with a token here, since a session header does not tie a request
//! of that revision to the session; a session's own streams end with it anyway.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::locks::lock;

/// The open streams, by a number of their own, with their tokens.
#[derive(Default)]
pub(super) struct StatelessStreams {
    open: Mutex<HashMap<u64, (Arc<str>, CancellationToken)>>,
    next: AtomicU64,
}

impl StatelessStreams {
    /// `response`, whose body ends early if [`Self::end`] is called for it.
    pub(super) fn track(self: &Arc<Self>, response: Response, token: Arc<str>) -> Response {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        lock(&self.open).insert(id, (token, cancel.clone()));
        let open = OpenStream {
            streams: Arc::clone(self),
            id,
        };
        response.map(|body| {
            Body::new(EndableBody {
                body,
                ended: Box::pin(cancel.clone().cancelled_owned()),
                cancel,
                _open: open,
            })
        })
    }

    /// Each open stream's number and token.
    pub(super) fn tokens(&self) -> Vec<(u64, Arc<str>)> {
        lock(&self.open)
            .iter()
            .map(|(id, (token, _))| (*id, Arc::clone(token)))
            .collect()
    }

    /// Ends stream `id`: its client reads the end of the body.
    pub(super) fn end(&self, id: u64) {
        if let Some((_, cancel)) = lock(&self.open).remove(&id) {
            cancel.cancel();
        }
    }
}

/// A stream's place among the open ones, given up when its body is dropped.
struct OpenStream {
    streams: Arc<StatelessStreams>,
    id: u64,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        lock(&self.streams.open).remove(&self.id);
    }
}

struct EndableBody {
    body: Body,
    /// Woken when the stream is ended, even while the body has nothing to send.
    ended: Pin<Box<WaitForCancellationFutureOwned>>,
    cancel: CancellationToken,
    _open: OpenStream,
}

impl http_body::Body for EndableBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        if self.ended.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.cancel.is_cancelled() || self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
