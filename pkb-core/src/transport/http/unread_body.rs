//! A request answered before its body was read to the end ends its connection, and says so.
//!
//! The gate and the origin check refuse a request from its head alone, without reading its
//! body. hyper then reads what has already arrived of that body; when the rest is still on the
//! way it closes the connection after the answer, which it sends with no `Connection: close`.
//! A client that reuses connections (the official Python SDK's httpx does) sends its next
//! request on it and meets "Server disconnected without sending a response". Saying
//! `Connection: close` on such an answer tells the client to open a new connection instead.
//! The body is not read to keep the connection: a refused client must not make the server
//! take up to 4 MiB from it.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;
use http::header::CONNECTION;
use http_body::Body as _;

/// Answers `request`, with `Connection: close` when its body was not read to the end.
pub(super) async fn close_if_unread(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(ReadWatch {
            body,
            read: Arc::clone(&read),
        })
    });
    let mut response = next.run(request).await;
    if !read.load(Ordering::SeqCst) {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request's body that records when it has been read to the end.
struct ReadWatch {
    body: Body,
    read: Arc<AtomicBool>,
}

impl http_body::Body for ReadWatch {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) || self.body.is_end_stream() {
            self.read.store(true, Ordering::SeqCst);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
