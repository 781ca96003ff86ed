//! The store of a vault: the SQLite store in `.pkb/` answers every read, and each change is
//! written to the note's file before it is answered, after any change made to that file on
//! disk that PKB had not read yet has been taken in (so the client's change applies on top of
//! it, and nothing on disk is lost).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::file_index::stem_key;
use super::sync::Folder;
use crate::links::{Backlink, LinkedNote, NoteWithLinks, TargetKeys, title_key};
use crate::note::Note;
use crate::store::NoteEngine;
use crate::store::{
    ChangeEntry, ChangeFilter, NoteDates, NoteDraft, NoteSummary, Provenance, Purged, PutMode,
    PutOutcome, SearchHit, StoreError, VersionLookup, VersionSummary,
};

/// A [`NoteEngine`] over a vault's folder.
pub struct FolderEngine {
    folder: Arc<Folder>,
}

impl FolderEngine {
    /// The engine of `folder`.
    pub fn new(folder: Arc<Folder>) -> FolderEngine {
        FolderEngine { folder }
    }

    fn inner(&self) -> Arc<dyn NoteEngine> {
        self.folder.inner()
    }

    /// The note whose file a link names, as Obsidian resolves `[[name]]` and
    /// `[[folder/name]]`: by the file's name without `.md`, ignoring case.
    async fn by_file_name(&self, target: &str) -> Result<Option<LinkedNote>, StoreError> {
        let Some(id) = self.folder.id_of_file_named(target) else {
            return Ok(None);
        };
        Ok(self.inner().get(&id).await?.map(|note| LinkedNote {
            id: note.id,
            title: note.title,
        }))
    }

    /// Adds to `found` (sorted by id) the notes whose links name the file of note `id`
    /// (`[[name]]`, `[[folder/name]]`) and lead to it, as `links` resolves them.
    async fn add_file_name_backlinks(
        &self,
        id: &str,
        found: &mut Vec<Backlink>,
    ) -> Result<(), StoreError> {
        let Some(path) = self.folder.path_of(id) else {
            return Ok(());
        };
        let whole = path.strip_suffix(".md").unwrap_or(&path);
        let mut names = vec![title_key(whole)];
        let mut below = whole;
        while let Some((_, rest)) = below.split_once('/') {
            names.push(title_key(rest));
            below = rest;
        }
        names.push(stem_key(&path));
        names.sort();
        names.dedup();
        let candidates = self.inner().links_folded_as(&names).await?;
        if candidates.is_empty() {
            return Ok(());
        }
        let keys: Vec<TargetKeys> = candidates.iter().map(|(_, keys)| keys.clone()).collect();
        let resolved = self.resolve_targets(&keys).await?;
        for ((source, _), note) in candidates.into_iter().zip(resolved) {
            if note.is_some_and(|note| note.id == id) && !found.iter().any(|b| b.id == source.id) {
                found.push(source);
            }
        }
        found.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(())
    }

    /// Writes the files of the notes a change left.
    async fn write_files(&self, outcomes: &[PutOutcome]) -> Result<(), StoreError> {
        for outcome in outcomes {
            if let PutOutcome::Created(note) | PutOutcome::Replaced(note) = outcome {
                self.folder.write_note_file(note).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl NoteEngine for FolderEngine {
    async fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        self.inner().get(id).await
    }

    async fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError> {
        let _turn = self.folder.turn().await?;
        self.folder.take_in_file_of(&draft.id).await?;
        let outcome = self.inner().put(draft, mode, provenance).await?;
        self.write_files(std::slice::from_ref(&outcome)).await?;
        Ok(outcome)
    }

    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        let _turn = self.folder.turn().await?;
        for (draft, _) in &notes {
            self.folder.take_in_file_of(&draft.id).await?;
        }
        let outcomes = self.inner().put_dated(notes, mode, provenance).await?;
        self.write_files(&outcomes).await?;
        Ok(outcomes)
    }

    async fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        let _turn = self.folder.turn().await?;
        self.folder.take_in_file_of(id).await?;
        let existed = self.inner().delete(id, by).await?;
        if let Some(path) = self.folder.path_of(id) {
            self.folder.move_to_trash(id, &path).await?;
        }
        Ok(existed)
    }

    async fn history(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        self.inner().history(id, limit).await
    }

    async fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        self.inner().changes(filter).await
    }

    async fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError> {
        self.inner().version(id, version).await
    }

    async fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError> {
        let mut resolved = self.inner().resolve_targets(targets).await?;
        for (keys, note) in targets.iter().zip(resolved.iter_mut()) {
            if note.is_none() {
                *note = self.by_file_name(&keys.target).await?;
            }
        }
        Ok(resolved)
    }

    async fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError> {
        let mut found = self.inner().backlinks(id).await?;
        self.add_file_name_backlinks(id, &mut found).await?;
        Ok(found)
    }

    async fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        let Some(mut found) = self.inner().get_with_links(id).await? else {
            return Ok(None);
        };
        for link in found.links.iter_mut().filter(|link| link.id.is_none()) {
            if let Some(note) = self.by_file_name(&link.target).await? {
                link.id = Some(note.id);
                link.title = Some(note.title);
            }
        }
        self.add_file_name_backlinks(id, &mut found.backlinks)
            .await?;
        Ok(Some(found))
    }

    async fn prune_versions(&self, before: &str) -> Result<u64, StoreError> {
        self.inner().prune_versions(before).await
    }

    async fn purge(&self, id: &str) -> Result<Purged, StoreError> {
        let _turn = self.folder.turn().await?;
        let purged = self.inner().purge(id).await?;
        self.folder.erase(id).await?;
        Ok(purged)
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<NoteSummary>, StoreError> {
        self.inner().list(after, limit).await
    }

    async fn list_with_bodies(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        self.inner().list_with_bodies(after, limit).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        self.inner().count().await
    }

    async fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.inner().search(query, tags, limit).await
    }

    async fn search_any_words(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.inner().search_any_words(query, tags, limit).await
    }

    async fn notes_without_vectors(
        &self,
        model: &str,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        self.inner().notes_without_vectors(model, limit).await
    }

    async fn put_vectors(
        &self,
        id: &str,
        version: u64,
        model: &str,
        vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        self.inner().put_vectors(id, version, model, vectors).await
    }

    async fn nearest(
        &self,
        model: &str,
        query: &[f32],
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        self.inner().nearest(model, query, tags, limit).await
    }

    async fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.inner().ids_with_prefix(prefix, limit).await
    }

    async fn tags_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.inner().tags_with_prefix(prefix, limit).await
    }

    async fn verify(&self) -> Result<(), StoreError> {
        self.inner().verify().await
    }

    async fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        self.folder.take_in_changes().await?;
        self.inner().rebuild_indexes().await
    }

    async fn merge_index(&self) -> Result<(), StoreError> {
        self.inner().merge_index().await
    }

    async fn damage_checked(&self) -> Result<(), StoreError> {
        self.inner().damage_checked().await
    }

    fn spawn_index_merge(&self, quiet: Duration) -> Option<tokio::task::JoinHandle<()>> {
        self.inner().spawn_index_merge(quiet)
    }
}
