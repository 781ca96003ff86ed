//! A bound on the requests read but not yet answered.
//!
//! Answers are written as they are ready, each by a task of its own (rmcp's loop spawns one per
//! answer, and so does a direct call that had to wait). A client that keeps sending requests
//! but stops reading its answers would otherwise have the server read on and hold every answer
//! in memory: pipelined `echo` calls into an unread pipe took it past 900 MB in two seconds.
//! With a permit per request, given back once its answer is written, the server stops reading
//! when [`MAX_IN_FLIGHT`] answers are waiting, and the pipe carries the pressure back to the
//! client, as it would for any program reading a pipe.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::RequestId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::locks::lock;

/// The most requests read and not yet answered. Far above what clients keep in flight (the
/// benchmark's pipelined run keeps 32), far below what memory notices: at most a few tens of
/// KB per answer.
///
/// A request waiting on the client (`summarize` asking for a sample) holds its permit, so a
/// client with more such calls open than this would have to wait for their sampling timeout.
pub const MAX_IN_FLIGHT: usize = 256;

/// The permits of one transport.
pub(super) struct InFlight {
    permits: Arc<Semaphore>,
    /// Taken before the next line is read, so that waiting for a permit never drops a line.
    reserved: Option<OwnedSemaphorePermit>,
    /// Permits of requests that rmcp answers, by request ID, until [`InFlight::answered`].
    by_id: Arc<Mutex<HashMap<RequestId, OwnedSemaphorePermit>>>,
}

impl InFlight {
    pub(super) fn new() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            reserved: None,
            by_id: Arc::default(),
        }
    }

    /// Waits until one more request may be read. Cancel-safe: a permit obtained is kept.
    pub(super) async fn reserve(&mut self) {
        if self.reserved.is_none() {
            // The semaphore is never closed.
            self.reserved = self.permits.clone().acquire_owned().await.ok();
        }
    }

    /// The reserved permit, for an answer written here; dropping it after the write gives it
    /// back.
    pub(super) fn take(&mut self) -> Option<OwnedSemaphorePermit> {
        self.reserved.take()
    }

    /// Keeps the reserved permit for request `id`, which rmcp answers. A second request with
    /// the ID of one still open shares its permit: rmcp answers only one of them.
    pub(super) fn hold_for(&mut self, id: RequestId) {
        let mut by_id = lock(&self.by_id);
        if !by_id.contains_key(&id)
            && let Some(permit) = self.reserved.take()
        {
            by_id.insert(id, permit);
        }
    }

    /// The permit of request `id`, whose answer is about to be written.
    pub(super) fn answered(&self, id: &RequestId) -> Option<OwnedSemaphorePermit> {
        lock(&self.by_id).remove(id)
    }

    /// Gives back the permit of request `id`, cancelled by the client: rmcp writes no answer.
    pub(super) fn cancelled(&self, id: &RequestId) {
        drop(self.answered(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_permit_comes_back_when_its_request_is_answered_or_cancelled() {
        let mut in_flight = InFlight::new();
        let free = |in_flight: &InFlight| in_flight.permits.available_permits();
        in_flight.reserve().await;
        in_flight.hold_for(RequestId::Number(1));
        assert_eq!(free(&in_flight), MAX_IN_FLIGHT - 1);
        // The same ID again rides on the first permit, and the new one stays reserved.
        in_flight.reserve().await;
        in_flight.hold_for(RequestId::Number(1));
        assert_eq!(free(&in_flight), MAX_IN_FLIGHT - 2);
        drop(in_flight.answered(&RequestId::Number(1)));
        assert_eq!(free(&in_flight), MAX_IN_FLIGHT - 1);
        assert!(in_flight.answered(&RequestId::Number(1)).is_none());

        in_flight.hold_for(RequestId::Number(2));
        in_flight.cancelled(&RequestId::Number(2));
        assert_eq!(free(&in_flight), MAX_IN_FLIGHT);
    }

    #[tokio::test]
    async fn reading_waits_while_every_permit_is_out() {
        let mut in_flight = InFlight::new();
        let mut taken = Vec::new();
        for _ in 0..MAX_IN_FLIGHT {
            in_flight.reserve().await;
            taken.push(in_flight.take().unwrap());
        }
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), in_flight.reserve());
        assert!(waiting.await.is_err(), "no permit is left");
        taken.pop();
        in_flight.reserve().await;
        assert!(in_flight.take().is_some());
    }
}
