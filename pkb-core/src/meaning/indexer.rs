//! The background work that keeps every note's vectors: started by a store's first search by
//! meaning, it embeds each note that has no vectors of the encoder for its current version (the
//! engine drops a note's vectors with the change that makes them stale), then waits for the
//! next write. A write is never slowed by the encoder, and a restart or an import is caught up
//! with in the background.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::Notify;

use super::passages::passages;
use crate::store::{NoteEngine, Store};

/// Notes read from the engine at a time.
const BATCH: usize = 32;
/// How long it waits for a write before it looks again by itself: another process writing to
/// the same store does not wake it.
const LOOK_AGAIN: Duration = Duration::from_secs(10);
/// How long it waits after a failure (a store that cannot be read, say).
const AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Notes embedded at once: one for each CPU the process may use, at most 4, since each holds
/// its own working memory (a few MB).
fn at_once() -> usize {
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 4)
}

/// The indexer of one store; it runs once started, for as long as the store is open.
#[derive(Default)]
pub struct VectorIndexer {
    wake: Notify,
    started: AtomicBool,
    /// Whether it has once found every note with its vectors.
    caught_up: AtomicBool,
    /// Told when it does.
    caught_up_now: Notify,
    /// When the first search by meaning stops waiting for it; later searches wait no longer.
    patience_ends: std::sync::OnceLock<tokio::time::Instant>,
}

impl VectorIndexer {
    /// Tells it the notes changed.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Waits, until `patience` after the first search by meaning at most, for it to have once
    /// given every note its vectors: so that the first search of a small store (one at a
    /// terminal, say) finds its notes, while the searches of a large store that is still being
    /// read do not each wait in turn.
    pub async fn first_catch_up(&self, patience: Duration) {
        if self.caught_up.load(Ordering::SeqCst) {
            return;
        }
        let ends = *self
            .patience_ends
            .get_or_init(|| tokio::time::Instant::now() + patience);
        let notified = self.caught_up_now.notified();
        if self.caught_up.load(Ordering::SeqCst) {
            return;
        }
        let _ = tokio::time::timeout_at(ends, notified).await;
    }

    /// Starts it for `store`, unless it runs already. Needs a tokio runtime.
    pub fn start(self: &Arc<Self>, store: &Store) {
        if self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let engine = Arc::downgrade(store.engine());
        tokio::spawn(Arc::clone(self).run(engine));
    }

    async fn run(self: Arc<Self>, engine: Weak<dyn NoteEngine>) {
        let model = super::model_id();
        loop {
            // Held for one batch only, so that a store no one uses any more is dropped.
            let Some(store) = engine.upgrade() else {
                return;
            };
            let pending = match store.notes_without_vectors(model, BATCH).await {
                Ok(pending) => pending,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the notes that need vectors");
                    drop(store);
                    tokio::time::sleep(AFTER_FAILURE).await;
                    continue;
                }
            };
            if pending.is_empty() {
                drop(store);
                if !self.caught_up.swap(true, Ordering::SeqCst) {
                    self.caught_up_now.notify_waiters();
                }
                let _ = tokio::time::timeout(LOOK_AGAIN, self.wake.notified()).await;
                continue;
            }
            // Several notes at once, each on a CPU of its own: a note's matrix products are
            // too small to spread over several CPUs well. Kept as each is done, not in order:
            // a long note (24 passages) would otherwise hold the other CPUs' next notes back.
            let mut embedded = futures::stream::iter(pending)
                .map(|note| async move {
                    let vectors = super::embed_in_background(passages(&note)).await;
                    (note, vectors)
                })
                .buffer_unordered(at_once());
            while let Some((note, vectors)) = embedded.next().await {
                let vectors = match vectors {
                    Ok(vectors) => vectors,
                    Err(error) => {
                        tracing::warn!(%error, id = note.id, "cannot make a note's vectors");
                        tokio::time::sleep(AFTER_FAILURE).await;
                        break;
                    }
                };
                if let Err(error) = store
                    .put_vectors(&note.id, note.version, model, vectors)
                    .await
                {
                    tracing::warn!(%error, id = note.id, "cannot keep a note's vectors");
                    tokio::time::sleep(AFTER_FAILURE).await;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_first_searches_wait_for_the_first_catch_up() {
        let indexer = VectorIndexer::default();
        let patience = Duration::from_millis(1000);
        let first = tokio::time::Instant::now();
        indexer.first_catch_up(patience).await;
        assert!(first.elapsed() >= patience, "the first search waits");
        let later = tokio::time::Instant::now();
        indexer.first_catch_up(patience).await;
        assert!(
            later.elapsed() < patience * 9 / 10,
            "a later search does not wait again: {:?}",
            later.elapsed()
        );
    }
}
