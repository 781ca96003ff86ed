//! The interface every storage backend implements, whatever its kind.

use std::time::Duration;

use async_trait::async_trait;

use super::{
    ChangeEntry, ChangeFilter, NoteDates, NoteDraft, NoteSummary, Provenance, Purged, PutMode,
    PutOutcome, SearchHit, StoreError, VersionLookup, VersionSummary,
};
use crate::links::{Backlink, LinkedNote, NoteWithLinks, TargetKeys, link_targets, links_of};
use crate::note::Note;

/// An async storage engine behind [`super::Store`]: one user's notes.
///
/// Inputs have been validated and normalised by [`super::Store`]. Every change of a note is
/// kept as a version, recorded in the change's own transaction with its [`Provenance`]. An engine must not block
/// the runtime's threads: one over a blocking library runs its calls on threads of its own
/// ([`super::sqlite::NoteBackend`] and [`super::sqlite::from_backend`] do that for SQLite).
#[async_trait]
pub trait NoteEngine: Send + Sync {
    /// The note with this exact id.
    async fn get(&self, id: &str) -> Result<Option<Note>, StoreError>;
    /// Saves one note atomically, with its new version.
    async fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError>;
    /// Saves several notes with the dates they bring, in one atomic transaction; outcomes in
    /// the order given. Dates reaching it are in the store's own RFC 3339 form.
    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError>;
    /// Deletes a note, keeping it as a `deleted` version made `by` that client; whether it
    /// existed.
    async fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError>;
    /// The versions of the note with this id, newest first, at most `limit`; `None` when no
    /// note ever had the id.
    async fn history(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Option<Vec<VersionSummary>>, StoreError>;
    /// The latest changes that `filter` lets through, newest first, at most `filter.limit`.
    async fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError>;
    /// One version of a note, whole.
    async fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError>;
    /// The notes `targets` resolve to now, in order (`None` where none does): the note whose
    /// id is the target, else whose id the target derives, else whose title equals it ignoring
    /// case (the lowest id of several).
    async fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError>;
    /// The notes that link to the note with this id, sorted by id; from the link index, not
    /// a read of every note.
    async fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError>;
    /// The notes with a link whose target, folded as titles are, is one of `folded`, with
    /// that link's keys, sorted by id: the notes that may link to a vault's note by its
    /// file's name. An engine without a link index has none.
    async fn links_folded_as(
        &self,
        _folded: &[String],
    ) -> Result<Vec<(Backlink, TargetKeys)>, StoreError> {
        Ok(Vec::new())
    }
    /// The note with this id, its links resolved now and its backlinks.
    async fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        let Some(note) = self.get(id).await? else {
            return Ok(None);
        };
        let targets = link_targets(&note.body);
        let keys: Vec<TargetKeys> = targets.iter().map(|t| TargetKeys::of(t)).collect();
        let resolved = self.resolve_targets(&keys).await?;
        let backlinks = self.backlinks(id).await?;
        Ok(Some(NoteWithLinks {
            links: links_of(targets, resolved),
            note,
            backlinks,
        }))
    }
    /// Drops every version made before `before` (RFC 3339, the store's form), except each
    /// note's newest; how many were dropped.
    async fn prune_versions(&self, before: &str) -> Result<u64, StoreError>;
    /// Erases a note and all its versions for good.
    async fn purge(&self, id: &str) -> Result<Purged, StoreError>;
    /// Up to `limit` notes with ids greater than `after`, sorted by id (bytewise).
    async fn list(&self, after: Option<&str>, limit: usize)
    -> Result<Vec<NoteSummary>, StoreError>;
    /// Up to `limit` whole notes with ids greater than `after`, sorted by id (bytewise).
    async fn list_with_bodies(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError>;
    /// How many notes there are.
    async fn count(&self) -> Result<u64, StoreError>;
    /// Full-text search; see [`super::Store::search`].
    async fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;
    /// Word search in which a note need match only some of the query's words (each also as a
    /// prefix), ranked BM25-style: the word half of hybrid search.
    async fn search_any_words(
        &self,
        _query: &str,
        _tags: &[String],
        _limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        Err(no_meaning())
    }
    /// Up to `limit` notes that have no vectors of `model` for their current version.
    async fn notes_without_vectors(
        &self,
        _model: &str,
        _limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        Err(no_meaning())
    }
    /// Keeps `vectors` (of `model`, one per passage) as the note's, if it is still at
    /// `version`; whether it was.
    async fn put_vectors(
        &self,
        _id: &str,
        _version: u64,
        _model: &str,
        _vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        Err(no_meaning())
    }
    /// The notes whose best passage is nearest to `query` (a unit vector of `model`), best
    /// first, carrying every tag of `tags`; the score is the cosine similarity.
    async fn nearest(
        &self,
        _model: &str,
        _query: &[f32],
        _tags: &[String],
        _limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        Err(no_meaning())
    }
    /// Sorted ids starting with `prefix` (taken literally).
    async fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// Sorted distinct tags starting with `prefix` (taken literally).
    async fn tags_with_prefix(&self, prefix: &str, limit: usize)
    -> Result<Vec<String>, StoreError>;

    /// Checks the whole store, search index included, for damage or drift.
    async fn verify(&self) -> Result<(), StoreError>;
    /// Rebuilds everything derived from the notes (the search index above all); how many
    /// notes there are.
    async fn rebuild_indexes(&self) -> Result<u64, StoreError>;
    /// Brings the search index into its fastest shape, when the engine merges its index itself.
    async fn merge_index(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Waits for a damage check that opening started, if any; its finding.
    async fn damage_checked(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Starts the engine's background index merge, run once the store has been quiet for `quiet`;
    /// `None` when the engine needs none.
    fn spawn_index_merge(&self, _quiet: Duration) -> Option<tokio::task::JoinHandle<()>> {
        None
    }
}

/// What an engine without vectors answers a search by meaning.
fn no_meaning() -> StoreError {
    StoreError::Meaning("this store keeps no vectors: search by meaning is not available".into())
}
