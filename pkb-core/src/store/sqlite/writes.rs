//! Writes inside a transaction: a note's row and its index entries put, replaced or removed,
//! and each write of the engine as the group commit runs it.

use super::rows::tags_to_json;
use super::*;

/// Inserts a new note and its index entries; returns its rowid.
pub(super) fn insert_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    id: &str,
    title: &str,
    tags: &[String],
    body: &str,
    stamps: Stamps<'_>,
) -> rusqlite::Result<i64> {
    let tags_json = tags_to_json(tags.iter().map(String::as_str));
    conn.prepare_cached(
        "INSERT INTO notes (id, title, tags, body, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        title,
        tags_json,
        body,
        stamps.created.unwrap_or(stamps.updated),
        stamps.updated
    ])?;
    let seq = conn.last_insert_rowid();
    index_row(conn, vocabulary, seq, title, &tags_json, body, tags)?;
    Ok(seq)
}

/// Adds a stored note to the search and tag indexes. Single-row statements only: see the
/// schema's note on savepoints.
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
    let (title, tags_json, body) = (
        fold_for_search(title),
        fold_for_search(tags_json),
        fold_for_search(body),
    );
    conn.prepare_cached(
        "INSERT INTO notes_fts (rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![seq, title, tags_json, body])?;
    terms::index_terms(conn, vocabulary, seq, &title, &tags_json, &body)?;
    let mut tag_row =
        conn.prepare_cached("INSERT OR IGNORE INTO note_tags (tag, note) VALUES (?1, ?2)")?;
    for tag in tags {
        tag_row.execute(params![tag, seq])?;
    }
    Ok(())
}

/// Removes a note from the search and tag indexes. FTS5's external-content `delete` needs
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
    Ok(())
}

/// A note's row as stored, with what its index entries were made from.
pub(super) struct StoredRow {
    seq: i64,
    title: String,
    tags_json: String,
    body: String,
    created_at: String,
}

pub(super) fn stored_row(conn: &Connection, id: &str) -> rusqlite::Result<Option<StoredRow>> {
    conn.prepare_cached("SELECT seq, title, tags, body, created_at FROM notes WHERE id = ?1")?
        .query_row([id], |r| {
            Ok(StoredRow {
                seq: r.get(0)?,
                title: r.get(1)?,
                tags_json: r.get(2)?,
                body: r.get(3)?,
                created_at: r.get(4)?,
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

/// One put inside the caller's transaction, its vocabulary changes added to `vocabulary`.
pub(super) fn put_in(
    tx: &Connection,
    vocabulary: &mut VocabularyChanges,
    draft: NoteDraft,
    mode: PutMode,
    stamps: Stamps<'_>,
) -> rusqlite::Result<PutOutcome> {
    let old = stored_row(tx, &draft.id)?;
    let replaceable = |old: &StoredRow| match mode {
        PutMode::CreateOnly => false,
        PutMode::Replace => true,
        PutMode::ReplaceTagged(tag) => serde_json::from_str::<Vec<String>>(&old.tags_json)
            .is_ok_and(|tags| tags.iter().any(|t| t == tag)),
    };
    match old {
        Some(old) if !replaceable(&old) => Ok(PutOutcome::Exists),
        Some(old) => {
            unindex_row(tx, vocabulary, &old)?;
            let tags_json = tags_to_json(draft.tags.iter().map(String::as_str));
            let created_at = stamps.created.map_or(old.created_at, str::to_owned);
            tx.prepare_cached(
                "UPDATE notes SET title = ?2, tags = ?3, body = ?4, created_at = ?5, updated_at = ?6 WHERE seq = ?1",
            )?
            .execute(params![
                old.seq,
                draft.title,
                tags_json,
                draft.body,
                created_at,
                stamps.updated
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
            Ok(PutOutcome::Replaced(Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at,
                updated_at: stamps.updated.to_owned(),
            }))
        }
        None => {
            insert_row(
                tx,
                vocabulary,
                &draft.id,
                &draft.title,
                &draft.tags,
                &draft.body,
                stamps,
            )?;
            Ok(PutOutcome::Created(Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at: stamps.created.unwrap_or(stamps.updated).to_owned(),
                updated_at: stamps.updated.to_owned(),
            }))
        }
    }
}

/// The write of `put`; it may run twice (see [`group_commit`]), hence the clone.
pub(super) fn put_write(
    draft: NoteDraft,
    mode: PutMode,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<PutOutcome> + Send + 'static
{
    move |tx, vocabulary| {
        put_in(
            tx,
            vocabulary,
            draft.clone(),
            mode,
            Stamps::now(&now_rfc3339()),
        )
    }
}

/// The write of `put_dated`.
pub(super) fn put_dated_write(
    notes: Vec<(NoteDraft, NoteDates)>,
    mode: PutMode,
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
                put_in(tx, vocabulary, draft.clone(), mode, stamps)
            })
            .collect()
    }
}

/// The write of `delete`.
pub(super) fn delete_write(
    id: String,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<bool> + Send + 'static {
    move |tx, vocabulary| {
        let Some(old) = stored_row(tx, &id)? else {
            return Ok(false);
        };
        unindex_row(tx, vocabulary, &old)?;
        tx.prepare_cached("DELETE FROM notes WHERE seq = ?1")?
            .execute([old.seq])?;
        Ok(true)
    }
}

impl QueuedWrites for SqliteBackend {
    fn queue_put(&self, draft: NoteDraft, mode: PutMode) -> QueuedWrite<'_, PutOutcome> {
        self.queued(SAVE_A_NOTE, put_write(draft, mode))
    }

    fn queue_put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> QueuedWrite<'_, Vec<PutOutcome>> {
        self.queued(SAVE_NOTES, put_dated_write(notes, mode))
    }

    fn queue_delete(&self, id: &str) -> QueuedWrite<'_, bool> {
        self.queued(DELETE_A_NOTE, delete_write(id.to_owned()))
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
