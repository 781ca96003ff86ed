//! The background work that keeps every note's vectors: started by a store's first search by
//! meaning, it embeds each note that has no vectors of the encoder for its current version (the
//! engine drops a note's vectors with the change that makes them stale), then waits for the
//! next write. A write is never slowed by the encoder, and a restart or an import is caught up
//! with in the background.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Notify;

use super::passages::passages;
use crate::note::Note;
use crate::store::{NoteEngine, Store};

/// Notes read from the engine at a time.
const BATCH: usize = 32;
/// How long it waits for a write before it looks again by itself: another process writing to
/// the same store does not wake it.
const LOOK_AGAIN: Duration = Duration::from_secs(10);
/// How long it waits after a failure (a store that cannot be read, say).
const AFTER_FAILURE: Duration = Duration::from_secs(5);

/// Notes embedded at once: one for each CPU the process may use, at most 4, since each holds
/// its own working memory (a few MB). One more waits its turn on the encoder's threads.
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
        // Read once: the standard library learns it from the cgroup's files.
        let in_flight = at_once() + 1;
        // Notes read but not yet started, and those started (embedded, then kept).
        let mut waiting: VecDeque<Note> = VecDeque::new();
        let mut started: HashSet<String> = HashSet::new();
        let mut working = FuturesUnordered::new();
        loop {
            // One note more than there are CPUs: while a note's vectors are being kept, the
            // encoder's threads already work on the next (with as many as CPUs, a CPU idled
            // through each write and at the end of each batch: 8% of the indexing time).
            while working.len() < in_flight {
                if waiting.is_empty() {
                    // Held for one read only, so that a store no one uses any more is dropped.
                    let Some(store) = engine.upgrade() else {
                        return;
                    };
                    match store
                        .notes_without_vectors(model, BATCH + started.len())
                        .await
                    {
                        // Those being embedded have no vectors yet either.
                        Ok(pending) => {
                            waiting.extend(pending.into_iter().filter(|n| !started.contains(&n.id)))
                        }
                        Err(error) => {
                            tracing::warn!(%error, "cannot read the notes that need vectors");
                            drop(store);
                            tokio::time::sleep(AFTER_FAILURE).await;
                            continue;
                        }
                    }
                }
                let Some(note) = waiting.pop_front() else {
                    break;
                };
                started.insert(note.id.clone());
                working.push(keep_vectors(engine.clone(), note, model));
            }
            let Some((id, kept)) = working.next().await else {
                if !self.caught_up.swap(true, Ordering::SeqCst) {
                    self.caught_up_now.notify_waiters();
                }
                let _ = tokio::time::timeout(LOOK_AGAIN, self.wake.notified()).await;
                continue;
            };
            started.remove(&id);
            if !kept {
                // Read again later, the failed note with the others.
                waiting.clear();
                tokio::time::sleep(AFTER_FAILURE).await;
            }
        }
    }
}

/// Embeds `note` and keeps its vectors; its id, and false when either failed (logged).
async fn keep_vectors(engine: Weak<dyn NoteEngine>, note: Note, model: &str) -> (String, bool) {
    let vectors = match super::embed_in_background(passages(&note)).await {
        Ok(vectors) => vectors,
        Err(error) => {
            tracing::warn!(%error, id = note.id, "cannot make a note's vectors");
            return (note.id, false);
        }
    };
    let Some(store) = engine.upgrade() else {
        return (note.id, true);
    };
    if let Err(error) = store
        .put_vectors(&note.id, note.version, model, vectors)
        .await
    {
        tracing::warn!(%error, id = note.id, "cannot keep a note's vectors");
        return (note.id, false);
    }
    (note.id, true)
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
