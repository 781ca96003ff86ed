//! Writes a backend queues for its next group commit, so that whoever asked waits for the
//! answer without holding a thread.
//!
//! A blocking backend's write otherwise holds a thread of tokio's blocking pool until its
//! group is durable: with 32 writes in flight, 32 threads, each with a stack and, once it
//! has committed a group, a malloc arena of its own. Queued instead, the writes wait as tasks
//! and one thread at a time commits them ([`BlockingEngine`](super::blocking)), in groups as
//! large as before.

use futures::future::BoxFuture;

use super::{NoteDates, NoteDraft, Provenance, PutMode, PutOutcome, StoreError};

/// A queued write: refused at once (`Err`), or its answer once its group is committed.
pub type QueuedWrite<'a, T> = Result<BoxFuture<'a, Result<T, StoreError>>, StoreError>;

/// The writes of a backend that commits them in groups (see [`NoteBackend::queued_writes`]).
/// A queued write is committed only by a call of [`QueuedWrites::commit_queued`] made after
/// it was queued.
///
/// [`NoteBackend::queued_writes`]: super::NoteBackend::queued_writes
pub trait QueuedWrites: Send + Sync {
    /// Queues [`NoteBackend::put`](super::NoteBackend::put).
    fn queue_put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> QueuedWrite<'_, PutOutcome>;
    /// Queues [`NoteBackend::put_dated`](super::NoteBackend::put_dated).
    fn queue_put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> QueuedWrite<'_, Vec<PutOutcome>>;
    /// Queues [`NoteBackend::delete`](super::NoteBackend::delete).
    fn queue_delete(&self, id: &str, by: &str) -> QueuedWrite<'_, bool>;
    /// Whether a write may be queued now; otherwise it runs as the backend's blocking write
    /// does, on a thread of its own (for a check that must do I/O first, say).
    fn can_queue(&self) -> bool {
        true
    }
    /// Commits every write queued, in groups, on the calling thread (it blocks).
    fn commit_queued(&self);
    /// Whether a write is queued.
    fn has_queued(&self) -> bool;
}
