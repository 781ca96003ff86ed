//! Writes inside a transaction: a note's row and its index entries put, replaced or removed,
//! and each write of the engine as the group commit runs it.

use super::link_index;
use super::rows::tags_to_json;
use super::*;
use crate::links::title_key;

/// Inserts a new note at `version` and its index entries; returns its rowid.
fn insert_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    draft: &NoteDraft,
    tags_json: &str,
    created_at: &str,
    updated_at: &str,
    version: u64,
) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "INSERT INTO notes (id, title, tags, body, created_at, updated_at, version, title_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        draft.id,
        draft.title,
        tags_json,
        draft.body,
        created_at,
        updated_at,
        version,
        title_key(&draft.title)
    ])?;
    let seq = conn.last_insert_rowid();
    index_row(
        conn,
        vocabulary,
        seq,
        &draft.title,
        tags_json,
        &draft.body,
        &draft.tags,
    )?;
    Ok(seq)
}

/// Keeps `note` as its version `note.version`, made by `kind` at `note.updated_at`.
fn record_version(
    conn: &Connection,
    note: &Note,
    tags_json: &str,
    kind: ChangeKind,
    by: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO note_versions (id, version, kind, changed_at, changed_by, title, tags, body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        note.id,
        note.version,
        kind.as_str(),
        note.updated_at,
        by,
        note.title,
        tags_json,
        note.body,
        note.created_at
    ])?;
    Ok(())
}

/// The version a note made now under `id` gets: one more than any version the id had (a
/// deleted note's count goes on), else 1.
fn next_version(conn: &Connection, id: &str) -> rusqlite::Result<u64> {
    conn.prepare_cached("SELECT coalesce(max(version), 0) + 1 FROM note_versions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
}

/// Adds a stored note to the search, tag and link indexes. Single-row statements only: see
/// the schema's note on savepoints.
pub(super) fn index_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    seq: i64,
    title: &str,
    tags_json: &str,
    body: &str,
    tags: &[String],
) -> rusqlite::Result<()> {
    // As the index's content, the `notes_folded` view, reads the row.
    let (folded_title, folded_tags, folded_body) = (
        fold_for_search(title),
        fold_for_search(tags_json),
        fold_for_search(body),
    );
    conn.prepare_cached(
        "INSERT INTO notes_fts (rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![seq, folded_title, folded_tags, folded_body])?;
    terms::index_terms(
        conn,
        vocabulary,
        seq,
        &folded_title,
        &folded_tags,
        &folded_body,
    )?;
    let mut tag_row =
        conn.prepare_cached("INSERT OR IGNORE INTO note_tags (tag, note) VALUES (?1, ?2)")?;
    for tag in tags {
        tag_row.execute(params![tag, seq])?;
    }
    link_index::index_links(conn, seq, body)
}

/// Removes a note from the search, tag and link indexes. FTS5's external-content `delete` needs
/// exactly the values that were indexed, which are the stored ones folded.
pub(super) fn unindex_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    old: &StoredRow,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO notes_fts (notes_fts, rowid, title, tags, body) VALUES ('delete', ?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        old.seq,
        fold_for_search(&old.title),
        fold_for_search(&old.tags_json),
        fold_for_search(&old.body)
    ])?;
    terms::unindex_terms(conn, vocabulary, old.seq)?;
    conn.prepare_cached("DELETE FROM note_tags WHERE note = ?1")?
        .execute([old.seq])?;
    // Made again by the background indexer, for the note as it is now.
    super::vectors::forget(conn, old.seq)?;
    link_index::unindex_links(conn, old.seq)
}

/// A note's row as stored, with what its index entries were made from.
pub(super) struct StoredRow {
    seq: i64,
    title: String,
    tags_json: String,
    body: String,
    created_at: String,
    version: u64,
}

pub(super) fn stored_row(conn: &Connection, id: &str) -> rusqlite::Result<Option<StoredRow>> {
    conn.prepare_cached(
        "SELECT seq, title, tags, body, created_at, version FROM notes WHERE id = ?1",
    )?
    .query_row([id], |r| {
        Ok(StoredRow {
            seq: r.get(0)?,
            title: r.get(1)?,
            tags_json: r.get(2)?,
            body: r.get(3)?,
            created_at: r.get(4)?,
            version: r.get(5)?,
        })
    })
    .optional()
}

/// The dates one put stores.
#[derive(Clone, Copy)]
pub(super) struct Stamps<'a> {
    /// `created_at`; `None` keeps a replaced note's, and gives a new note `updated`.
    pub created: Option<&'a str>,
    /// `updated_at`.
    pub updated: &'a str,
}

impl<'a> Stamps<'a> {
    /// A save made now.
    pub fn now(now: &'a str) -> Self {
        Stamps {
            created: None,
            updated: now,
        }
    }
}

/// One put inside the caller's transaction, its vocabulary changes added to `vocabulary`,
/// the note's new version recorded with `provenance`.
pub(super) fn put_in(
    tx: &Connection,
    vocabulary: &mut VocabularyChanges,
    draft: NoteDraft,
    mode: PutMode,
    stamps: Stamps<'_>,
    provenance: &Provenance,
) -> rusqlite::Result<PutOutcome> {
    let old = stored_row(tx, &draft.id)?;
    let replaceable = |old: &StoredRow| match mode {
        PutMode::CreateOnly => false,
        PutMode::Replace | PutMode::ReplaceAtVersion(_) => true,
        PutMode::ReplaceTagged(tag) => serde_json::from_str::<Vec<String>>(&old.tags_json)
            .is_ok_and(|tags| tags.iter().any(|t| t == tag)),
    };
    let tags_json = tags_to_json(draft.tags.iter().map(String::as_str));
    match (old, mode) {
        (None, PutMode::ReplaceAtVersion(_)) => Ok(PutOutcome::Missing),
        (Some(old), PutMode::ReplaceAtVersion(expected)) if old.version != expected => {
            Ok(PutOutcome::Stale {
                current: old.version,
            })
        }
        (Some(old), _) if !replaceable(&old) => Ok(PutOutcome::Exists),
        (Some(old), _) => {
            unindex_row(tx, vocabulary, &old)?;
            let created_at = stamps.created.map_or(old.created_at, str::to_owned);
            let version = old.version + 1;
            tx.prepare_cached(
                "UPDATE notes SET title = ?2, tags = ?3, body = ?4, created_at = ?5, updated_at = ?6, version = ?7, title_key = ?8 WHERE seq = ?1",
            )?
            .execute(params![
                old.seq,
                draft.title,
                tags_json,
                draft.body,
                created_at,
                stamps.updated,
                version,
                title_key(&draft.title)
            ])?;
            index_row(
                tx,
                vocabulary,
                old.seq,
                &draft.title,
                &tags_json,
                &draft.body,
                &draft.tags,
            )?;
            let note = Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at,
                updated_at: stamps.updated.to_owned(),
                version,
            };
            record_version(
                tx,
                &note,
                &tags_json,
                provenance.kind_for(false),
                &provenance.by,
            )?;
            Ok(PutOutcome::Replaced(note))
        }
        (None, _) => {
            let version = next_version(tx, &draft.id)?;
            let created_at = stamps.created.unwrap_or(stamps.updated);
            insert_row(
                tx,
                vocabulary,
                &draft,
                &tags_json,
                created_at,
                stamps.updated,
                version,
            )?;
            let note = Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at: created_at.to_owned(),
                updated_at: stamps.updated.to_owned(),
                version,
            };
            record_version(
                tx,
                &note,
                &tags_json,
                provenance.kind_for(true),
                &provenance.by,
            )?;
            Ok(PutOutcome::Created(note))
        }
    }
}

/// The write of `put`; it may run twice (see [`group_commit`]), hence the clone.
pub(super) fn put_write(
    draft: NoteDraft,
    mode: PutMode,
    provenance: Provenance,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<PutOutcome> + Send + 'static
{
    move |tx, vocabulary| {
        put_in(
            tx,
            vocabulary,
            draft.clone(),
            mode,
            Stamps::now(&now_rfc3339()),
            &provenance,
        )
    }
}

/// The write of `put_dated`.
pub(super) fn put_dated_write(
    notes: Vec<(NoteDraft, NoteDates)>,
    mode: PutMode,
    provenance: Provenance,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<Vec<PutOutcome>>
+ Send
+ 'static {
    move |tx, vocabulary| {
        let now = now_rfc3339();
        notes
            .iter()
            .map(|(draft, dates)| {
                let stamps = Stamps {
                    created: dates.created_at.as_deref(),
                    updated: dates.updated_at.as_deref().unwrap_or(&now),
                };
                put_in(tx, vocabulary, draft.clone(), mode, stamps, &provenance)
            })
            .collect()
    }
}

/// The write of `delete`: the note goes, and stays in its history as a `deleted` version.
pub(super) fn delete_write(
    id: String,
    by: String,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<bool> + Send + 'static {
    move |tx, vocabulary| {
        let Some(old) = stored_row(tx, &id)? else {
            return Ok(false);
        };
        unindex_row(tx, vocabulary, &old)?;
        tx.prepare_cached("DELETE FROM notes WHERE seq = ?1")?
            .execute([old.seq])?;
        // `record_version` keeps the tags as stored, from `old.tags_json`.
        let gone = Note {
            tags: Vec::new(),
            id: id.clone(),
            title: old.title,
            body: old.body,
            created_at: old.created_at,
            updated_at: now_rfc3339(),
            version: old.version + 1,
        };
        record_version(tx, &gone, &old.tags_json, ChangeKind::Deleted, &by)?;
        Ok(true)
    }
}

/// The write of `purge`: the note, if it exists, and every version of it, for good.
pub(super) fn purge_write(
    id: String,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<Purged> + Send + 'static
{
    move |tx, vocabulary| {
        let note = match stored_row(tx, &id)? {
            Some(old) => {
                unindex_row(tx, vocabulary, &old)?;
                tx.prepare_cached("DELETE FROM notes WHERE seq = ?1")?
                    .execute([old.seq])?;
                true
            }
            None => false,
        };
        let versions = tx
            .prepare_cached("DELETE FROM note_versions WHERE id = ?1")?
            .execute([&id])?;
        Ok(Purged {
            note,
            versions: versions as u64,
        })
    }
}

impl QueuedWrites for SqliteBackend {
    fn queue_put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> QueuedWrite<'_, PutOutcome> {
        self.queued(SAVE_A_NOTE, put_write(draft, mode, provenance.clone()))
    }

    fn queue_put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> QueuedWrite<'_, Vec<PutOutcome>> {
        self.queued(SAVE_NOTES, put_dated_write(notes, mode, provenance.clone()))
    }

    fn queue_delete(&self, id: &str, by: &str) -> QueuedWrite<'_, bool> {
        self.queued(DELETE_A_NOTE, delete_write(id.to_owned(), by.to_owned()))
    }

    fn can_queue(&self) -> bool {
        // While damage is on record each write looks at the file again when due, which reads
        // all of it: that must happen on a blocking thread, as unqueued writes run.
        self.damage().is_none()
    }

    fn commit_queued(&self) {
        let mut writer = lock(&self.writer);
        while self.commit_next_group(&mut writer) {}
    }

    fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }
}
