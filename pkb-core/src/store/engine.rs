//! The interface every storage backend implements, whatever its kind.

use std::time::Duration;

use async_trait::async_trait;

use super::{NoteDates, NoteDraft, NoteSummary, PutMode, PutOutcome, SearchHit, StoreError};
use crate::note::Note;

/// An async storage engine behind [`super::Store`]: one user's notes.
///
/// Inputs have been validated and normalised by [`super::Store`]. An engine must not block
/// the runtime's threads: one over a blocking library runs its calls on threads of its own
/// ([`super::sqlite::NoteBackend`] and [`super::sqlite::from_backend`] do that for SQLite).
#[async_trait]
pub trait NoteEngine: Send + Sync {
    /// The note with this exact id.
    async fn get(&self, id: &str) -> Result<Option<Note>, StoreError>;
    /// Saves one note atomically.
    async fn put(&self, draft: NoteDraft, mode: PutMode) -> Result<PutOutcome, StoreError>;
    /// Saves several notes with the dates they bring, in one atomic transaction; outcomes in
    /// the order given. Dates reaching it are in the store's own RFC 3339 form.
    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> Result<Vec<PutOutcome>, StoreError>;
    /// Deletes a note; whether it existed.
    async fn delete(&self, id: &str) -> Result<bool, StoreError>;
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
