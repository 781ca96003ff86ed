//! Running a blocking [`NoteBackend`] (SQLite's) as an async [`NoteEngine`]: reads on the
//! store's own read threads (but a note from memory, and a small store's search, which the
//! backend answers at once), writes and maintenance on tokio's blocking pool. A backend that
//! queues its writes ([`QueuedWrites`]) has them committed by one thread at a time, while the
//! calls that made them wait as tasks.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use super::quiet_merge::{self, MergeProgress, Writes};
use super::read_threads::ReadThreads;
use super::{
    NoteBackend, NoteDates, NoteDraft, NoteSummary, PutMode, PutOutcome, QueuedWrite, QueuedWrites,
    SearchHit, StoreError,
};
use crate::links::{Backlink, LinkedNote, NoteWithLinks, TargetKeys};
use crate::note::Note;
use crate::store::NoteEngine;
use crate::store::{ChangeEntry, ChangeFilter, Provenance, Purged, VersionLookup, VersionSummary};

/// A blocking backend served from threads, so that no call blocks the runtime.
pub(super) struct BlockingEngine {
    backend: Arc<dyn NoteBackend>,
    /// Serve the reads; `None` if they could not be started, and reads then take tokio's
    /// blocking pool like writes.
    reads: Option<ReadThreads>,
    /// The writes made through this engine, which wake the index merge.
    writes: Arc<Writes>,
    /// Whether a thread is committing the backend's queued writes.
    committing: Arc<AtomicBool>,
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
            committing: Arc::default(),
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

    /// The backend's queued writes, if it takes one now.
    fn queueing(&self) -> Option<&dyn QueuedWrites> {
        self.backend
            .queued_writes()
            .filter(|queued| queued.can_queue())
    }

    /// The answer of `queued`, a write the backend queued, once a thread has committed it.
    async fn queued<T>(&self, queued: QueuedWrite<'_, T>) -> Result<T, StoreError> {
        let answer = queued?;
        self.commit_queued();
        let written = answer.await;
        self.writes.record();
        written
    }

    /// Makes sure a thread commits the backend's queued writes: starts one unless one is at
    /// it, which then commits what was queued before it stops.
    fn commit_queued(&self) {
        // Given back however the thread ends, or if it never runs (the runtime shutting
        // down): the next write then starts another, which commits what was left queued.
        let Some(held) = Committing::take(&self.committing) else {
            return;
        };
        let backend = Arc::clone(&self.backend);
        let flag = Arc::clone(&self.committing);
        let commit = move || {
            let mut held = held;
            let Some(queued) = backend.queued_writes() else {
                return;
            };
            loop {
                // A panic drops the writes it was committing, which answers them with an
                // error; the next writes must still find a thread.
                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| queued.commit_queued()));
                drop(held);
                // A write queued after the last group, whose caller saw this thread still at
                // work, is committed here; if another caller has started a thread, it is that
                // thread's.
                if !queued.has_queued() {
                    return;
                }
                match Committing::take(&flag) {
                    Some(again) => held = again,
                    None => return,
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(commit)),
            Err(_) => commit(),
        }
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

/// The right to commit a backend's queued writes, held by one thread at a time and given
/// back when dropped.
struct Committing(Arc<AtomicBool>);

impl Committing {
    /// The right, unless another holds it.
    fn take(flag: &Arc<AtomicBool>) -> Option<Self> {
        (!flag.swap(true, Ordering::SeqCst)).then(|| Self(Arc::clone(flag)))
    }
}

impl Drop for Committing {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
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

    async fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError> {
        if let Some(queued) = self.queueing() {
            return self.queued(queued.queue_put(draft, mode, provenance)).await;
        }
        let provenance = provenance.clone();
        self.write(move |b| b.put(draft, mode, &provenance)).await
    }

    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        if let Some(queued) = self.queueing() {
            return self
                .queued(queued.queue_put_dated(notes, mode, provenance))
                .await;
        }
        let provenance = provenance.clone();
        self.write(move |b| b.put_dated(notes, mode, &provenance))
            .await
    }

    async fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        if let Some(queued) = self.queueing() {
            return self.queued(queued.queue_delete(id, by)).await;
        }
        let (id, by) = (id.to_owned(), by.to_owned());
        self.write(move |b| b.delete(&id, &by)).await
    }

    async fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        if let Some(found) = self.backend.get_with_links_cached(id) {
            return Ok(Some(found));
        }
        let id = id.to_owned();
        self.read(move |b| b.get_with_links(&id)).await
    }

    async fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError> {
        let targets = targets.to_vec();
        self.read(move |b| b.resolve_targets(&targets)).await
    }

    async fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError> {
        let id = id.to_owned();
        self.read(move |b| b.backlinks(&id)).await
    }

    async fn links_folded_as(
        &self,
        folded: &[String],
    ) -> Result<Vec<(Backlink, TargetKeys)>, StoreError> {
        let folded = folded.to_vec();
        self.read(move |b| b.links_folded_as(&folded)).await
    }

    async fn history(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        let id = id.to_owned();
        self.read(move |b| b.history(&id, limit)).await
    }

    async fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        let filter = filter.clone();
        self.read(move |b| b.changes(&filter)).await
    }

    async fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError> {
        let id = id.to_owned();
        self.read(move |b| b.version(&id, version)).await
    }

    async fn prune_versions(&self, before: &str) -> Result<u64, StoreError> {
        let before = before.to_owned();
        self.write(move |b| b.prune_versions(&before)).await
    }

    async fn purge(&self, id: &str) -> Result<Purged, StoreError> {
        let id = id.to_owned();
        self.write(move |b| b.purge(&id)).await
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
        if let Some(found) = self.backend.search_at_once(query, tags, limit) {
            return found;
        }
        let query = query.to_owned();
        let tags = tags.to_vec();
        self.read(move |b| b.search(&query, &tags, limit)).await
    }

    async fn search_any_words(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let (query, tags) = (query.to_owned(), tags.to_vec());
        self.read(move |b| b.search_any_words(&query, &tags, limit))
            .await
    }

    async fn notes_without_vectors(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        let model = model.to_owned();
        self.call(move |b| b.notes_without_vectors(&model, limit))
            .await
    }

    async fn put_vectors(
        &self,
        id: &str,
        version: u64,
        model: &str,
        vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        let (id, model) = (id.to_owned(), model.to_owned());
        self.call(move |b| b.put_vectors(&id, version, &model, vectors))
            .await
    }

    async fn nearest(
        &self,
        model: &str,
        query: &[f32],
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let (model, query, tags) = (model.to_owned(), query.to_vec(), tags.to_vec());
        self.read(move |b| b.nearest(&model, &query, &tags, limit))
            .await
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
