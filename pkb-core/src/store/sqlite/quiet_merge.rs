//! Merging the search index while the store is quiet.
//!
//! The merge runs only after a spell without requests from this process, and a step at a
//! time: a write that arrives meanwhile waits for one step at most, and the merge then waits
//! for the next quiet spell. Only writes add to the index, so only a write wakes it up again.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::{NoteBackend, StoreError};

/// Whether more of the index merge remains after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeProgress {
    /// Nothing left to merge.
    Done,
    /// A merge is under way; call again.
    More,
}

/// The writes made through one store's handles, announced to the index merge.
#[derive(Debug, Default)]
pub(super) struct Writes(Notify);

impl Writes {
    /// Wakes the index merge after a write.
    pub(super) fn record(&self) {
        // A permit is kept when nobody waits, so a write made mid-merge is not missed.
        self.0.notify_one();
    }
}

/// Runs one step of index merging on tokio's blocking pool, as writes run.
async fn step(backend: Arc<dyn NoteBackend>) -> Result<MergeProgress, StoreError> {
    tokio::task::spawn_blocking(move || backend.merge_index_step())
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?
}

/// Merges the index after a `quiet` spell without requests (the backend's
/// [`NoteBackend::requests_made`] standing still) once it starts, and after each write. Ends
/// with the runtime, or once the store is gone when it next wakes.
pub(super) async fn merge_when_quiet(
    backend: Weak<dyn NoteBackend>,
    writes: Arc<Writes>,
    quiet: Duration,
) {
    // Looks at the store only for a moment, so that it can close when its last handle goes.
    let requests = || backend.upgrade().map(|b| b.requests_made());
    loop {
        // Wait for a spell with no request in it.
        loop {
            let seen = requests();
            tokio::time::sleep(quiet).await;
            match requests() {
                None => return,
                now if now == seen => break,
                _ => {}
            }
        }
        let started = requests();
        loop {
            let Some(store) = backend.upgrade() else {
                return;
            };
            match step(store).await {
                Ok(MergeProgress::More) if requests() == started => continue,
                Ok(MergeProgress::More) => break,
                Ok(MergeProgress::Done) => {
                    writes.0.notified().await;
                    break;
                }
                Err(error) => {
                    tracing::warn!(%error, "merging the search index failed; trying again after the next write");
                    writes.0.notified().await;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::store::PutMode;
    use crate::store::sqlite::SqliteBackend;
    use crate::store::sqlite::index_merge::tests::{count, note, written_one_by_one};

    async fn merged(backend: &SqliteBackend) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while count(backend) > 1 {
            assert!(Instant::now() < deadline, "the index was not merged");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_index_is_merged_after_the_start_and_after_each_burst_of_writes() {
        let backend = written_one_by_one(14);
        let store =
            crate::store::sqlite::from_backend(Arc::clone(&backend) as Arc<dyn NoteBackend>);
        let _index_merge = store.spawn_index_merge(Duration::from_millis(50));
        merged(&backend).await;

        for i in 100..114 {
            store.put(note(i), PutMode::CreateOnly).await.expect("put");
        }
        merged(&backend).await;
        assert_eq!(store.count().await.unwrap(), 28);
        assert_eq!(
            store.search("number 113", &[], 1).await.unwrap()[0].id,
            "note-113"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_put_the_merge_off() {
        let backend = written_one_by_one(14);
        let store =
            crate::store::sqlite::from_backend(Arc::clone(&backend) as Arc<dyn NoteBackend>);
        let _index_merge = store.spawn_index_merge(Duration::from_secs(1));
        let reading = Instant::now();
        while reading.elapsed() < Duration::from_millis(2_500) {
            store.search("deploy", &[], 10).await.expect("search");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(count(&backend) > 1, "merged while searches were running");
        merged(&backend).await;
    }
}
