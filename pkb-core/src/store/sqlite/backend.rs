//! The interface between SQLite's runtime (read threads, queued writes committed in groups,
//! the quiet index merge) and the connections that do the work: what lets a note come from
//! memory, a small store's search run on the caller's thread, and writes wait as tasks.

use super::{MergeProgress, QueuedWrites};
use crate::links::{Backlink, LinkedNote, NoteWithLinks, TargetKeys};
use crate::note::Note;
use crate::store::{
    ChangeEntry, ChangeFilter, NoteDates, NoteDraft, NoteSummary, Provenance, Purged, PutMode,
    PutOutcome, SearchHit, StoreError, VersionLookup, VersionSummary,
};

/// A blocking engine, served as a [`NoteEngine`](crate::store::NoteEngine) by this folder's
/// runtime ([`from_backend`](super::from_backend)): SQLite's, or a test double.
///
/// Methods may block on disk I/O, except [`NoteBackend::get_cached`] and
/// [`NoteBackend::search_at_once`]; the runtime calls the other reads from its read threads
/// and writes from tokio's blocking pool. Inputs reaching `put` and `put_many` have been
/// validated and normalised by [`Store`](crate::store::Store).
pub trait NoteBackend: Send + Sync {
    /// The note with this exact id.
    fn get(&self, id: &str) -> Result<Option<Note>, StoreError>;
    /// The note with this id if it can be had at once, from memory, and nothing has been
    /// committed since it was read, by any process; `None` sends the caller to
    /// [`NoteBackend::get`]. Called on the async runtime's threads, so it must not block.
    fn get_cached(&self, _id: &str) -> Option<Note> {
        None
    }
    /// The note with this id, its links resolved now and its backlinks. A backend without
    /// a link index (a test double) answers its note with none.
    fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        Ok(self.get(id)?.map(|note| NoteWithLinks {
            note,
            links: Vec::new(),
            backlinks: Vec::new(),
        }))
    }
    /// [`NoteBackend::get_with_links`] from memory, as [`NoteBackend::get_cached`] does.
    fn get_with_links_cached(&self, _id: &str) -> Option<NoteWithLinks> {
        None
    }
    /// See [`NoteEngine::resolve_targets`](crate::store::NoteEngine::resolve_targets); without
    /// a link index, nothing resolves.
    fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError> {
        Ok(vec![None; targets.len()])
    }
    /// See [`NoteEngine::backlinks`](crate::store::NoteEngine::backlinks).
    fn backlinks(&self, _id: &str) -> Result<Vec<Backlink>, StoreError> {
        Ok(Vec::new())
    }
    /// See [`NoteEngine::links_folded_as`](crate::store::NoteEngine::links_folded_as).
    fn links_folded_as(
        &self,
        _folded: &[String],
    ) -> Result<Vec<(Backlink, TargetKeys)>, StoreError> {
        Ok(Vec::new())
    }
    /// See [`NoteEngine::search_any_words`](crate::store::NoteEngine::search_any_words).
    fn search_any_words(
        &self,
        _query: &str,
        _tags: &[String],
        _limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        Err(StoreError::Meaning("this store keeps no vectors".into()))
    }
    /// See [`NoteEngine::notes_without_vectors`](crate::store::NoteEngine::notes_without_vectors).
    fn notes_without_vectors(&self, _model: &str, _limit: usize) -> Result<Vec<Note>, StoreError> {
        Err(StoreError::Meaning("this store keeps no vectors".into()))
    }
    /// See [`NoteEngine::put_vectors`](crate::store::NoteEngine::put_vectors).
    fn put_vectors(
        &self,
        _id: &str,
        _version: u64,
        _model: &str,
        _vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        Err(StoreError::Meaning("this store keeps no vectors".into()))
    }
    /// See [`NoteEngine::nearest`](crate::store::NoteEngine::nearest).
    fn nearest(
        &self,
        _model: &str,
        _query: &[f32],
        _tags: &[String],
        _limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        Err(StoreError::Meaning("this store keeps no vectors".into()))
    }
    /// Saves one note atomically, with its new version.
    fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError>;
    /// Saves several notes in one atomic transaction; outcomes in the drafts' order.
    fn put_many(
        &self,
        drafts: Vec<NoteDraft>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        let undated = drafts.into_iter().map(|d| (d, NoteDates::default()));
        self.put_dated(undated.collect(), mode, provenance)
    }
    /// Saves several notes with the dates they bring, in one atomic transaction; outcomes in
    /// the order given. Dates reaching it are in the store's own RFC 3339 form.
    fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError>;
    /// Deletes a note, keeping it as a `deleted` version; whether it existed.
    fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError>;
    /// See [`NoteEngine::history`](crate::store::NoteEngine::history). A backend that keeps
    /// no history (a test double) refuses this and the other history calls.
    fn history(&self, _id: &str, _limit: usize) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        Err(no_history())
    }
    /// See [`NoteEngine::changes`](crate::store::NoteEngine::changes).
    fn changes(&self, _filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        Err(no_history())
    }
    /// See [`NoteEngine::version`](crate::store::NoteEngine::version).
    fn version(&self, _id: &str, _version: u64) -> Result<VersionLookup, StoreError> {
        Err(no_history())
    }
    /// See [`NoteEngine::prune_versions`](crate::store::NoteEngine::prune_versions).
    fn prune_versions(&self, _before: &str) -> Result<u64, StoreError> {
        Err(no_history())
    }
    /// See [`NoteEngine::purge`](crate::store::NoteEngine::purge).
    fn purge(&self, _id: &str) -> Result<Purged, StoreError> {
        Err(no_history())
    }
    /// The backend's writes as queued ones, if it commits them in groups: [`Store`] then
    /// waits for them as tasks rather than with a thread each. `None`: writes run on the
    /// blocking pool, one thread each.
    fn queued_writes(&self) -> Option<&dyn QueuedWrites> {
        None
    }
    /// Up to `limit` notes with ids greater than `after`, sorted by id.
    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<NoteSummary>, StoreError>;
    /// Up to `limit` whole notes with ids greater than `after`, sorted by id.
    fn list_with_bodies(&self, after: Option<&str>, limit: usize) -> Result<Vec<Note>, StoreError>;
    /// How many notes there are.
    fn count(&self) -> Result<u64, StoreError>;
    /// Full-text search; see [`Store::search`]. `tags` come normalised.
    fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;
    /// [`NoteBackend::search`] at once, on the caller's thread, when it is sure to be quick
    /// (a small store) and a connection is free; `None` sends the caller to
    /// [`NoteBackend::search`]. Called on the async runtime's threads, so it must not wait
    /// for a lock or a connection.
    fn search_at_once(
        &self,
        _query: &str,
        _tags: &[String],
        _limit: usize,
    ) -> Option<Result<Vec<SearchHit>, StoreError>> {
        None
    }
    /// Sorted ids starting with `prefix` (taken literally).
    fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// Sorted distinct tags starting with `prefix` (normalised, then taken literally).
    fn tags_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// Checks the whole store, including the search index, for damage.
    fn verify(&self) -> Result<(), StoreError>;
    /// Waits for the damage check that opening started, if any; its finding.
    fn damage_checked(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// How many reads and writes this engine has served for requests; a count that stands
    /// still means the store is quiet. An engine that does not count answers 0.
    fn requests_made(&self) -> u64 {
        0
    }
    /// One bounded step of merging the search index's pieces, which writes add; whether more
    /// remains. An engine without such an index has nothing to do.
    fn merge_index_step(&self) -> Result<MergeProgress, StoreError> {
        Ok(MergeProgress::Done)
    }
    /// Rebuilds every index derived from the notes (search index, vocabulary, tags) from
    /// the notes themselves; how many notes there are. An engine without derived indexes
    /// has nothing to rebuild.
    fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        Err(StoreError::Unavailable(
            "this store has no indexes to rebuild".to_owned(),
        ))
    }
}

fn no_history() -> StoreError {
    StoreError::Unavailable("this store keeps no history".to_owned())
}
