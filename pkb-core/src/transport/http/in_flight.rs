//! The POST requests whose answer is not yet sent, counted until their body is sent or
//! dropped, so that a shutdown can wait for them; and how a response's body holds what must
//! last as long as it does.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::body::Body;
use axum::response::Response;
use http_body_util::BodyExt;
use tokio::sync::Notify;

/// The POST requests whose answer is not yet sent, so a shutdown can wait for them.
#[derive(Default)]
pub struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    pub(super) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(Arc::clone(self))
    }

    /// Waits until no request is in flight.
    pub async fn idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

pub(super) struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// `response`, whose body holds `held` (a place in flight, a place for a stream) until it is
/// sent or dropped.
pub(super) fn held_until_sent(response: Response, held: impl Send + Sync + 'static) -> Response {
    response.map(|body| {
        Body::new(body.map_frame(move |frame| {
            let _held = &held;
            frame
        }))
    })
}
