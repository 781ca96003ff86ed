//! SSE priming events (SEP-1699: an event with an id and empty data, sent first so that a
//! client can resume the stream) belong to 2025-11-25 and later. rmcp sends one at the head of
//! every event stream whatever the session's revision, and the official TypeScript SDK up to
//! 1.22, which speaks the older revisions, parses its empty data as a message and reports an
//! error for each. The official TypeScript server sends them from 2025-11-25 on only; so does
//! this one.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt;

/// `response`, an event stream, without its first event when that is a priming event.
pub(super) fn without_priming(response: Response) -> Response {
    response.map(|body| {
        let mut first = true;
        Body::new(body.map_frame(move |frame| {
            let primes = std::mem::take(&mut first) && frame.data_ref().is_some_and(is_priming);
            if primes {
                Frame::data(Bytes::new())
            } else {
                frame
            }
        }))
    })
}

/// Whether an encoded event carries no data: every `data:` line of it empty, and one at least.
fn is_priming(event: &Bytes) -> bool {
    let mut data_lines = event
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"))
        .peekable();
    data_lines.peek().is_some() && data_lines.all(|data| data.trim_ascii().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_a_priming_event_from_a_message() {
        assert!(is_priming(&Bytes::from_static(
            b"data: \nid: 0/0\nretry: 3000\n\n"
        )));
        assert!(is_priming(&Bytes::from_static(b"id: 0\ndata:\n\n")));
        assert!(!is_priming(&Bytes::from_static(
            b"data: {\"jsonrpc\":\"2.0\"}\nid: 0/1\n\n"
        )));
        assert!(!is_priming(&Bytes::from_static(b": keep-alive\n\n")));
    }
}
