//! The SQLite engine as a [`NoteBackend`]: each call as reads of the reader pool (or from
//! memory) and writes of the one writer.

use super::link_index;
use super::opening::open_reader;
use super::rows::{note_from_row, sorted_with_prefix, sql_limit, tags_from_json, tags_to_json};
use super::search::{Matching, fts5_search, in_snapshot, search_on};
use super::writes::{delete_write, purge_write, put_dated_write, put_write};
use super::*;
use super::{vector_cache, vectors};
use crate::links::{link_targets, links_of};

/// What reads of the history name in errors.
const READ_HISTORY: &str = "read the notes' history";
/// What reads of links name in errors.
const READ_LINKS: &str = "read the links between notes";

/// Whether any version of a note with this id is kept.
/// The statement that lists the changes `filter` lets through, and its values. Only the
/// conditions given are written, so that each finds its index: `seq` (the rowid) for a page
/// of all changes, `(id, version)` for one note's, `(kind, seq)` and `(changed_by, seq)` for
/// those of a kind or a client.
fn changes_statement(filter: &ChangeFilter) -> (String, Vec<rusqlite::types::Value>) {
    let mut conditions: Vec<&str> = Vec::new();
    let mut values: Vec<rusqlite::types::Value> = Vec::new();
    if let Some(before) = filter.before {
        conditions.push("seq < ?");
        values.push(i64::try_from(before).unwrap_or(i64::MAX).into());
    }
    if let Some(id) = &filter.id {
        conditions.push("id = ?");
        values.push(id.clone().into());
    }
    if let Some(by) = &filter.by {
        conditions.push("changed_by = ?");
        values.push(by.clone().into());
    }
    if let Some(change) = filter.change {
        conditions.push("kind = ?");
        values.push(change.as_str().to_owned().into());
    }
    if filter.newest {
        conditions.push(
            "version = (SELECT max(version) FROM note_versions AS later WHERE later.id = note_versions.id)",
        );
    }
    values.push(sql_limit(filter.limit).into());
    let mut sql = String::from(
        "SELECT seq, id, version, kind, changed_at, changed_by, title FROM note_versions",
    );
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    sql.push_str(" ORDER BY seq DESC LIMIT ?");
    (sql, values)
}

fn has_history(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM note_versions WHERE id = ?1 LIMIT 1")?
        .exists([id])
}

impl NoteBackend for SqliteBackend {
    fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        self.read_and_keep(&self.cache, || {
            self.read("read a note", |conn| {
                conn.prepare_cached(
                    "SELECT id, title, tags, body, created_at, updated_at, version FROM notes WHERE id = ?1",
                )?
                .query_row([id], note_from_row)
                .optional()
            })
        })
    }

    fn get_cached(&self, id: &str) -> Option<Note> {
        if self.damage().is_some() {
            return None;
        }
        let note = self.cache.get(id, self.changes.stamp()?)?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        Some(note)
    }

    fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        self.read_and_keep(&self.linked, || {
            self.read(READ_LINKS, |conn| {
                // One snapshot: the note, the notes it links to and those linking to it as
                // they were at one moment.
                in_snapshot(conn, || {
                    let Some(note) = conn
                        .prepare_cached(
                            "SELECT id, title, tags, body, created_at, updated_at, version FROM notes WHERE id = ?1",
                        )?
                        .query_row([id], note_from_row)
                        .optional()?
                    else {
                        return Ok(None);
                    };
                    let targets = link_targets(&note.body);
                    let resolved = targets
                        .iter()
                        .map(|t| link_index::resolve(conn, &TargetKeys::of(t)))
                        .collect::<rusqlite::Result<Vec<_>>>()?;
                    let backlinks = link_index::backlinks(conn, id)?;
                    Ok(Some(NoteWithLinks {
                        links: links_of(targets, resolved),
                        note,
                        backlinks,
                    }))
                })
            })
        })
    }

    fn get_with_links_cached(&self, id: &str) -> Option<NoteWithLinks> {
        if self.damage().is_some() {
            return None;
        }
        let found = self.linked.get(id, self.changes.stamp()?)?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        Some(found)
    }

    fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError> {
        self.read(READ_LINKS, |conn| {
            in_snapshot(conn, || {
                targets
                    .iter()
                    .map(|keys| link_index::resolve(conn, keys))
                    .collect()
            })
        })
    }

    fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError> {
        self.read(READ_LINKS, |conn| link_index::backlinks(conn, id))
    }

    fn links_folded_as(
        &self,
        folded: &[String],
    ) -> Result<Vec<(Backlink, TargetKeys)>, StoreError> {
        self.read(READ_LINKS, |conn| link_index::links_folded_as(conn, folded))
    }

    fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError> {
        self.write(SAVE_A_NOTE, put_write(draft, mode, provenance.clone()))
    }

    fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        self.write(SAVE_NOTES, put_dated_write(notes, mode, provenance.clone()))
    }

    fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        self.write(DELETE_A_NOTE, delete_write(id.to_owned(), by.to_owned()))
    }

    fn history(&self, id: &str, limit: usize) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        self.read(READ_HISTORY, |conn| {
            let versions = conn
                .prepare_cached(
                    "SELECT version, kind, changed_at, changed_by, title, length(body)
                     FROM note_versions WHERE id = ?1 ORDER BY version DESC LIMIT ?2",
                )?
                .query_map(params![id, sql_limit(limit)], |row| {
                    Ok(VersionSummary {
                        version: row.get(0)?,
                        change: ChangeKind::parse(&row.get::<_, String>(1)?),
                        at: row.get(2)?,
                        by: row.get(3)?,
                        title: row.get(4)?,
                        chars: row.get(5)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            if versions.is_empty() && !has_history(conn, id)? {
                return Ok(None);
            }
            Ok(Some(versions))
        })
    }

    fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        let (sql, values) = changes_statement(filter);
        self.read(READ_HISTORY, |conn| {
            conn.prepare_cached(&sql)?
                .query_map(rusqlite::params_from_iter(values.iter()), |row| {
                    Ok(ChangeEntry {
                        position: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                        change: RecentChange {
                            id: row.get(1)?,
                            version: row.get(2)?,
                            change: ChangeKind::parse(&row.get::<_, String>(3)?),
                            at: row.get(4)?,
                            by: row.get(5)?,
                            title: row.get(6)?,
                        },
                    })
                })?
                .collect()
        })
    }

    fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError> {
        self.read(READ_HISTORY, |conn| {
            let found = conn
                .prepare_cached(
                    "SELECT id, title, tags, body, created_at, changed_at, version, kind, changed_by
                     FROM note_versions WHERE id = ?1 AND version = ?2",
                )?
                .query_row(params![id, version], |row| {
                    Ok(NoteVersion {
                        note: note_from_row(row)?,
                        change: ChangeKind::parse(&row.get::<_, String>(7)?),
                        by: row.get(8)?,
                    })
                })
                .optional()?;
            Ok(match found {
                Some(found) => VersionLookup::Found(Box::new(found)),
                None if has_history(conn, id)? => VersionLookup::NoSuchVersion,
                None => VersionLookup::NoSuchNote,
            })
        })
    }

    fn prune_versions(&self, before: &str) -> Result<u64, StoreError> {
        self.write_alone("prune the notes' history", |tx| {
            tx.execute(
                "DELETE FROM note_versions AS old
                 WHERE changed_at < ?1
                   AND version < (SELECT max(version) FROM note_versions WHERE id = old.id)",
                [before],
            )
        })
        .map(|dropped| dropped as u64)
    }

    fn purge(&self, id: &str) -> Result<Purged, StoreError> {
        self.write(PURGE_A_NOTE, purge_write(id.to_owned()))
    }

    fn queued_writes(&self) -> Option<&dyn QueuedWrites> {
        Some(self)
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<NoteSummary>, StoreError> {
        self.read("list notes", |conn| {
            conn.prepare_cached(
                "SELECT id, title, tags, updated_at FROM notes WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?
            .query_map(params![after.unwrap_or(""), sql_limit(limit)], |row| {
                Ok(NoteSummary {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    tags: tags_from_json(row, 2)?,
                    updated_at: row.get(3)?,
                })
            })?
            .collect()
        })
    }

    fn list_with_bodies(&self, after: Option<&str>, limit: usize) -> Result<Vec<Note>, StoreError> {
        self.read("list notes", |conn| {
            conn.prepare_cached(
                "SELECT id, title, tags, body, created_at, updated_at, version FROM notes WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?
            .query_map(params![after.unwrap_or(""), sql_limit(limit)], note_from_row)?
            .collect()
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.read("count notes", |conn| {
            conn.prepare_cached("SELECT count(*) FROM notes")?
                .query_row([], |r| r.get::<_, i64>(0))
        })
        .map(|n| u64::try_from(n).unwrap_or(0))
    }

    fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        // Its words are folded as the index holds the notes (`query::folded_words`).
        if query::match_expression(query).is_none() || limit == 0 {
            return Ok(Vec::new());
        }
        self.read(SEARCH_NOTES, |conn| {
            // One snapshot for the planner's several statements, and one set of file locks
            // instead of one per statement.
            in_snapshot(conn, || {
                let size = StoreSize::read(conn)?;
                self.small_enough_to_search_at_once(size);
                search_on(conn, query, tags, limit, size)
            })
        })
    }

    fn search_at_once(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Option<Result<Vec<SearchHit>, StoreError>> {
        if !self.small_when_searched.load(Ordering::Relaxed) {
            return None;
        }
        if query::match_expression(query).is_none() || limit == 0 {
            return Some(Ok(Vec::new()));
        }
        // The size is read again in the search's own snapshot: another process may have
        // written many notes since.
        let found = self.read_at_once(SEARCH_NOTES, |conn| {
            in_snapshot(conn, || {
                let size = StoreSize::read(conn)?;
                if !self.small_enough_to_search_at_once(size) {
                    return Ok(None);
                }
                search_on(conn, query, tags, limit, size).map(Some)
            })
        })?;
        found.transpose()
    }

    fn search_any_words(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.read(SEARCH_NOTES, |conn| {
            in_snapshot(conn, || {
                let size = StoreSize::read(conn)?;
                let Some((terms, window)) = search_planner::any_word_terms(conn, query, size)?
                else {
                    return Ok(Vec::new());
                };
                // Every match is ranked, not only the newest (unless every word is common):
                // a word ranking to fuse with the meaning ranking is best at its best notes,
                // however old.
                let wanted = tags_to_json(tags.iter().map(String::as_str));
                fts5_search(
                    conn,
                    Matching::Terms(&terms),
                    tags,
                    &wanted,
                    limit.min(MAX_LIMIT),
                    window,
                )
            })
        })
    }

    fn notes_without_vectors(&self, model: &str, limit: usize) -> Result<Vec<Note>, StoreError> {
        self.read_quietly("find notes without vectors", |conn| {
            vectors::pending(conn, model, sql_limit(limit))
        })
    }

    fn put_vectors(
        &self,
        id: &str,
        version: u64,
        model: &str,
        vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        let (id, model) = (id.to_owned(), model.to_owned());
        self.write_quietly("keep a note's vectors", move |tx| {
            vectors::keep(tx, &id, version, &model, &vectors)
        })
    }

    fn nearest(
        &self,
        model: &str,
        query: &[f32],
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let read_at = self.changes.stamp();
        if let Some(kept) = read_at.and_then(|at| self.vector_cache.at(at, model)) {
            self.requests.fetch_add(1, Ordering::Relaxed);
            return Ok(kept.nearest(query, tags, limit));
        }
        let (now, matrix) = self.read(SEARCH_NOTES, |conn| {
            in_snapshot(conn, || {
                let now = vectors::generation(conn)?;
                let matrix = match self.vector_cache.latest(model) {
                    Some((generation, _, kept)) if generation == now.generation => kept,
                    // Only added since (the indexer catching up): those alone are read.
                    Some((_, removals, kept)) if removals == now.removals => {
                        std::sync::Arc::new(vector_cache::with_added(conn, model, &kept)?)
                    }
                    _ => std::sync::Arc::new(vector_cache::load(conn, model)?),
                };
                Ok((now, matrix))
            })
        })?;
        // Current at the stamp only if nothing was committed during the read.
        let unchanged = read_at.filter(|at| self.changes.stamp() == Some(*at));
        self.vector_cache.keep(
            unchanged,
            (now.generation, now.removals),
            model,
            std::sync::Arc::clone(&matrix),
        );
        Ok(matrix.nearest(query, tags, limit))
    }

    fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.read("list note ids", |conn| {
            sorted_with_prefix(
                conn,
                "SELECT id FROM notes WHERE id >= ?1 ORDER BY id",
                prefix,
                limit,
            )
        })
    }

    fn tags_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.read("list tags", |conn| {
            sorted_with_prefix(
                conn,
                "SELECT DISTINCT tag FROM note_tags WHERE tag >= ?1 ORDER BY tag",
                prefix,
                limit,
            )
        })
    }

    fn damage_checked(&self) -> Result<(), StoreError> {
        self.pages.wait();
        self.refuse_if_damaged()
    }

    fn requests_made(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn merge_index_step(&self) -> Result<MergeProgress, StoreError> {
        let start = !self.merging.load(Ordering::Relaxed);
        // Counting on a reader leaves the write lock, and the file, alone when there is
        // nothing to merge.
        if start
            && self.read_quietly("count the search index's segments", index_merge::segments)?
                <= index_merge::MAX_SEGMENTS
        {
            return Ok(MergeProgress::Done);
        }
        let progress =
            self.write_quietly("merge the search index", |tx| index_merge::step(tx, start))?;
        self.merging
            .store(progress == MergeProgress::More, Ordering::Relaxed);
        Ok(progress)
    }

    fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        self.write_alone("rebuild the indexes", |tx| {
            tx.execute_batch(
                "DELETE FROM note_tags;
                 INSERT OR IGNORE INTO note_tags (tag, note)
                     SELECT json_each.value, notes.seq FROM notes, json_each(notes.tags);",
            )?;
            schema::rebuild_search_index(tx)?;
            link_index::rebuild(tx)?;
            // Vectors of notes that are gone go; missing ones the indexer makes again.
            vectors::drop_orphans(tx)?;
            tx.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))
        })
    }

    fn verify(&self) -> Result<(), StoreError> {
        let integrity = |conn: &Connection| {
            let mut stmt = conn.prepare("PRAGMA integrity_check(5)")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        };
        // On a connection of its own: FTS5's part of this check runs on whatever it cached
        // of its index, and a reader that checked before a rebuild reports the rebuilt index
        // as malformed.
        let problems = match &self.path {
            Some(path) => open_reader(path)
                .and_then(|conn| integrity(&conn))
                .map_err(self.fail("check the store"))?,
            None => self.read("check the store", integrity)?,
        };
        let mut problems: Vec<String> = problems.into_iter().filter(|p| p != "ok").collect();
        // The search vocabulary must hold the counts of every note and of nothing else, and
        // its statistics must count the notes.
        let (uncounted, orphaned, notes, counted): (i64, i64, i64, i64) =
            self.read("check the store", |conn| {
                conn.query_row(
                    "SELECT (SELECT count(*) FROM notes
                             WHERE NOT EXISTS (SELECT 1 FROM note_terms WHERE note = seq)),
                            (SELECT count(*) FROM note_terms
                             WHERE NOT EXISTS (SELECT 1 FROM notes WHERE seq = note)),
                            (SELECT count(*) FROM notes),
                            (SELECT notes FROM search_stats WHERE id = 1)",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
            })?;
        if uncounted != 0 || orphaned != 0 || notes != counted {
            problems.push(format!(
                "search vocabulary out of step: {uncounted} notes without term counts, \
                 {orphaned} term counts without a note, {counted} notes counted of {notes}"
            ));
        }
        // Each term's stem must be the one the stemmer gives it now: one a dependency update
        // changed would find the forms of another word.
        let stale = self.read("check the store", terms::stale_stems)?;
        if stale != 0 {
            problems.push(format!(
                "search vocabulary out of step: {stale} terms hold another stem than the stemmer gives them"
            ));
        }
        let links = self.read("check the store", link_index::out_of_step)?;
        if links != 0 {
            problems.push(format!(
                "link index out of step: the links of {links} notes differ from their bodies"
            ));
        }
        let orphans = self.read("check the store", vectors::orphans)?;
        if orphans != 0 {
            problems.push(format!(
                "vectors out of step: {orphans} vectors belong to no note"
            ));
        }
        // FTS5 compares its index with the notes table; it is an INSERT, so it needs the
        // writer, and it changes nothing.
        let fts = self.write_alone("check the search index", |tx| {
            tx.execute(
                "INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
        });
        match fts {
            // Not getting the lock says nothing of the index.
            Err(busy @ StoreError::Busy { .. }) => return Err(busy),
            Err(e) => problems.push(format!("search index: {e}")),
            Ok(_) => {}
        }
        if problems.is_empty() {
            return Ok(());
        }
        let reason = problems.join("; ").replace('\n', " ");
        match &self.path {
            Some(path) => Err(StoreError::Corrupt {
                path: path.clone(),
                reason,
            }),
            None => Err(StoreError::Backend {
                context: "the in-memory store failed its check".to_owned(),
                source: reason.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How SQLite would read the changes `filter` lets through.
    fn plan(backend: &SqliteBackend, filter: &ChangeFilter) -> String {
        let (sql, values) = changes_statement(filter);
        backend
            .read("explain", |conn| {
                conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?
                    .query_map(rusqlite::params_from_iter(values.iter()), |row| {
                        row.get::<_, String>(3)
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .unwrap()
            .join("; ")
    }

    /// The Deleted page and a page of one client's changes read their own index, newest
    /// first, and sort nothing: neither walks the whole history for a rare kind or client.
    #[test]
    fn a_kind_and_a_client_are_read_through_their_index() {
        let backend = SqliteBackend::open_in_memory(false).expect("in-memory store");
        let deleted = ChangeFilter {
            change: Some(ChangeKind::Deleted),
            newest: true,
            limit: 51,
            ..ChangeFilter::default()
        };
        let plan_of_deleted = plan(&backend, &deleted);
        assert!(
            plan_of_deleted.contains("USING INDEX note_versions_by_kind (kind=?)"),
            "{plan_of_deleted}"
        );
        let older = ChangeFilter {
            before: Some(1_000),
            ..deleted
        };
        let plan_of_older = plan(&backend, &older);
        assert!(
            plan_of_older.contains("USING INDEX note_versions_by_kind (kind=? AND seq<?)"),
            "{plan_of_older}"
        );
        let by_client = ChangeFilter {
            by: Some("claude-code 2.1".into()),
            before: Some(1_000),
            limit: 51,
            ..ChangeFilter::default()
        };
        let plan_of_client = plan(&backend, &by_client);
        assert!(
            plan_of_client.contains("USING INDEX note_versions_by_client (changed_by=? AND seq<?)"),
            "{plan_of_client}"
        );
        for plan in [plan_of_deleted, plan_of_older, plan_of_client] {
            assert!(!plan.contains("TEMP B-TREE"), "{plan}");
        }
    }
}
