//! Running a blocking [`NoteBackend`] (SQLite's) as an async [`NoteEngine`]: reads on the
//! store's own read threads, writes and maintenance on tokio's blocking pool.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::quiet_merge::{self, MergeProgress, Writes};
use super::read_threads::ReadThreads;
use super::{
    NoteBackend, NoteDates, NoteDraft, NoteEngine, NoteSummary, PutMode, PutOutcome, SearchHit,
    StoreError,
};
use crate::note::Note;

/// A blocking backend served from threads, so that no call blocks the runtime.
pub(super) struct BlockingEngine {
    backend: Arc<dyn NoteBackend>,
    /// Serve the reads; `None` if they could not be started, and reads then take tokio's
    /// blocking pool like writes.
    reads: Option<ReadThreads>,
    /// The writes made through this engine, which wake the index merge.
    writes: Arc<Writes>,
}

impl BlockingEngine {
    /// Serves `backend` with `read_threads` threads for reads.
    pub(super) fn new(backend: Arc<dyn NoteBackend>, read_threads: usize) -> Self {
        let reads = match ReadThreads::start(&backend, read_threads) {
            Ok(reads) => Some(reads),
            Err(error) => {
                tracing::warn!(%error, "cannot start the store's read threads; reading on the blocking pool");
                None
            }
        };
        BlockingEngine {
            backend,
            reads,
            writes: Arc::default(),
        }
    }

    /// Runs the read `f` on the store's read threads.
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&dyn NoteBackend) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        match &self.reads {
            Some(reads) => reads.run(f).await,
            None => self.call(f).await,
        }
    }

    /// Runs the write `f` as [`BlockingEngine::call`] does, and wakes the index merge.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&dyn NoteBackend) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let written = self.call(f).await;
        self.writes.record();
        written
    }

    /// Runs `f` on the blocking pool when inside a tokio runtime, inline otherwise.
    async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&dyn NoteBackend) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let backend = Arc::clone(&self.backend);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle
                .spawn_blocking(move || f(backend.as_ref()))
                .await
                .map_err(|e| StoreError::Unavailable(e.to_string()))?,
            Err(_) => f(backend.as_ref()),
        }
    }
}

#[async_trait]
impl NoteEngine for BlockingEngine {
    async fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        if let Some(note) = self.backend.get_cached(id) {
            return Ok(Some(note));
        }
        let id = id.to_owned();
        self.read(move |b| b.get(&id)).await
    }

    async fn put(&self, draft: NoteDraft, mode: PutMode) -> Result<PutOutcome, StoreError> {
        self.write(move |b| b.put(draft, mode)).await
    }

    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        self.write(move |b| b.put_dated(notes, mode)).await
    }

    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        let id = id.to_owned();
        self.write(move |b| b.delete(&id)).await
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<NoteSummary>, StoreError> {
        let after = after.map(str::to_owned);
        self.read(move |b| b.list(after.as_deref(), limit)).await
    }

    async fn list_with_bodies(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        let after = after.map(str::to_owned);
        self.read(move |b| b.list_with_bodies(after.as_deref(), limit))
            .await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        self.read(|b| b.count()).await
    }

    async fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let query = query.to_owned();
        let tags = tags.to_vec();
        self.read(move |b| b.search(&query, &tags, limit)).await
    }

    async fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.to_owned();
        self.read(move |b| b.ids_with_prefix(&prefix, limit)).await
    }

    async fn tags_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.to_owned();
        self.read(move |b| b.tags_with_prefix(&prefix, limit)).await
    }

    async fn verify(&self) -> Result<(), StoreError> {
        self.call(|b| b.verify()).await
    }

    async fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        self.call(|b| b.rebuild_indexes()).await
    }

    async fn merge_index(&self) -> Result<(), StoreError> {
        while self.call(|b| b.merge_index_step()).await? == MergeProgress::More {}
        Ok(())
    }

    async fn damage_checked(&self) -> Result<(), StoreError> {
        self.call(|b| b.damage_checked()).await
    }

    fn spawn_index_merge(&self, quiet: Duration) -> Option<tokio::task::JoinHandle<()>> {
        Some(tokio::spawn(quiet_merge::merge_when_quiet(
            Arc::downgrade(&self.backend),
            Arc::clone(&self.writes),
            quiet,
        )))
    }
}
