//! Merging the search index while the store is quiet.
//!
//! The merge runs only after a spell without writes from this process, and a step at a time:
//! a write that arrives meanwhile waits for one step at most, and the merge then waits for
//! the next quiet spell.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::{NoteBackend, StoreError, Upkeep};

/// The writes made through one store's handles, counted and announced.
#[derive(Debug, Default)]
pub(super) struct Writes {
    made: AtomicU64,
    announced: Notify,
}

impl Writes {
    /// Counts a write and wakes the upkeep.
    pub(super) fn record(&self) {
        self.made.fetch_add(1, Ordering::Relaxed);
        // A permit is kept when nobody waits, so a write made mid-merge is not missed.
        self.announced.notify_one();
    }

    fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}

/// Runs one step of index merging on tokio's blocking pool, as writes run.
async fn step(backend: Arc<dyn NoteBackend>) -> Result<Upkeep, StoreError> {
    tokio::task::spawn_blocking(move || backend.tidy_index_step())
        .await
        .map_err(|e| StoreError::Unavailable(e.to_string()))?
}

/// Merges the index after every `quiet` spell without writes, starting with one after launch.
/// Ends with the runtime, or once the store is gone when it next wakes.
pub(super) async fn keep_tidy(
    backend: Weak<dyn NoteBackend>,
    writes: Arc<Writes>,
    quiet: Duration,
) {
    loop {
        // Wait for a spell with no write in it.
        loop {
            let seen = writes.made();
            tokio::time::sleep(quiet).await;
            if writes.made() == seen {
                break;
            }
        }
        let started = writes.made();
        loop {
            // Holding the store only for a step lets it close when its last handle goes.
            let Some(backend) = backend.upgrade() else {
                return;
            };
            match step(backend).await {
                Ok(Upkeep::More) if writes.made() == started => continue,
                Ok(Upkeep::More) => break,
                Ok(Upkeep::Done) => {
                    writes.announced.notified().await;
                    break;
                }
                Err(error) => {
                    tracing::warn!(%error, "merging the search index failed; trying again after the next write");
                    writes.announced.notified().await;
                    break;
                }
            }
        }
        if backend.strong_count() == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::store::index_merge::tests::{count, note, written_one_by_one};
    use crate::store::sqlite::SqliteBackend;
    use crate::store::{PutMode, Store};

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
        let store = Store::from_backend(Arc::clone(&backend) as Arc<dyn NoteBackend>);
        let _upkeep = store.spawn_index_upkeep(Duration::from_millis(50));
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
}
