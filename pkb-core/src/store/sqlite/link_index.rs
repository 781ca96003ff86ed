//! The link index: each note's link targets with the keys they resolve by, written beside the
//! note in its transaction, so that backlinks are a lookup; and resolution, in the contract's
//! order, on a connection.

use rusqlite::{Connection, OptionalExtension, params};

use crate::links::{Backlink, LinkedNote, TargetKeys, link_targets, title_key};

/// Indexes the links of the note at `seq` whose body is `body`.
pub(super) fn index_links(conn: &Connection, seq: i64, body: &str) -> rusqlite::Result<()> {
    let targets = link_targets(body);
    if targets.is_empty() {
        return Ok(());
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO note_links (note, position, target, derived, folded) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (position, target) in targets.iter().enumerate() {
        let keys = TargetKeys::of(target);
        insert.execute(params![
            seq,
            position as i64,
            keys.target,
            keys.derived,
            keys.folded
        ])?;
    }
    Ok(())
}

/// Removes the links of the note at `seq` from the index.
pub(super) fn unindex_links(conn: &Connection, seq: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM note_links WHERE note = ?1")?
        .execute([seq])?;
    Ok(())
}

/// Makes the link index and the notes' title keys again from the notes.
pub(super) fn rebuild(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM note_links", [])?;
    let notes: Vec<(i64, String, String)> = conn
        .prepare("SELECT seq, title, body FROM notes")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut key = conn.prepare("UPDATE notes SET title_key = ?2 WHERE seq = ?1")?;
    for (seq, title, body) in notes {
        key.execute(params![seq, title_key(&title)])?;
        index_links(conn, seq, &body)?;
    }
    Ok(())
}

/// How many notes' entries in the link index, or title keys, disagree with the notes.
pub(super) fn out_of_step(conn: &Connection) -> rusqlite::Result<usize> {
    let mut stmt = conn.prepare("SELECT seq, title, title_key, body FROM notes")?;
    let mut rows = stmt.query([])?;
    let mut stored = conn.prepare_cached(
        "SELECT target, derived, folded FROM note_links WHERE note = ?1 ORDER BY position",
    )?;
    let mut wrong = 0;
    while let Some(row) = rows.next()? {
        let (seq, title, key, body): (i64, String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        let expected: Vec<(String, String, String)> = link_targets(&body)
            .iter()
            .map(|t| {
                let keys = TargetKeys::of(t);
                (keys.target, keys.derived, keys.folded)
            })
            .collect();
        let found: Vec<(String, String, String)> = stored
            .query_map([seq], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        if found != expected || key != title_key(&title) {
            wrong += 1;
        }
    }
    let orphaned: i64 = conn.query_row(
        "SELECT count(DISTINCT note) FROM note_links WHERE NOT EXISTS (SELECT 1 FROM notes WHERE seq = note)",
        [],
        |r| r.get(0),
    )?;
    Ok(wrong + orphaned as usize)
}

/// The note `keys` resolve to: by id, by the derived id, by title ignoring case.
pub(super) fn resolve(
    conn: &Connection,
    keys: &TargetKeys,
) -> rusqlite::Result<Option<LinkedNote>> {
    let mut by_id = conn.prepare_cached("SELECT id, title FROM notes WHERE id = ?1")?;
    let linked = |r: &rusqlite::Row<'_>| {
        Ok(LinkedNote {
            id: r.get(0)?,
            title: r.get(1)?,
        })
    };
    if let Some(note) = by_id.query_row([&keys.target], linked).optional()? {
        return Ok(Some(note));
    }
    if let Some(note) = by_id.query_row([&keys.derived], linked).optional()? {
        return Ok(Some(note));
    }
    conn.prepare_cached("SELECT id, title FROM notes WHERE title_key = ?1 ORDER BY id LIMIT 1")?
        .query_row([&keys.folded], linked)
        .optional()
}

/// The notes whose links resolve to the note `id`, sorted by id: the index gives the links
/// that may, and each is resolved to see that it does.
pub(super) fn backlinks(conn: &Connection, id: &str) -> rusqlite::Result<Vec<Backlink>> {
    let Some(key) = conn
        .prepare_cached("SELECT title_key FROM notes WHERE id = ?1")?
        .query_row([id], |r| r.get::<_, String>(0))
        .optional()?
    else {
        return Ok(Vec::new());
    };
    let candidates: Vec<(String, String, TargetKeys)> = conn
        .prepare_cached(
            "SELECT s.id, s.title, l.target, l.derived, l.folded
             FROM note_links l JOIN notes s ON s.seq = l.note
             WHERE l.target = ?1 OR l.derived = ?1 OR l.folded = ?2",
        )?
        .query_map(params![id, key], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                TargetKeys {
                    target: r.get(2)?,
                    derived: r.get(3)?,
                    folded: r.get(4)?,
                },
            ))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut found: Vec<Backlink> = Vec::new();
    for (source, title, keys) in candidates {
        if found.iter().any(|b| b.id == source) {
            continue;
        }
        if resolve(conn, &keys)?.is_some_and(|note| note.id == id) {
            found.push(Backlink { id: source, title });
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(found)
}

/// See [`NoteEngine::links_folded_as`](crate::store::NoteEngine::links_folded_as).
pub(super) fn links_folded_as(
    conn: &Connection,
    folded: &[String],
) -> rusqlite::Result<Vec<(Backlink, TargetKeys)>> {
    let mut found = Vec::new();
    let mut by_folded = conn.prepare_cached(
        "SELECT s.id, s.title, l.target, l.derived, l.folded
         FROM note_links l JOIN notes s ON s.seq = l.note
         WHERE l.folded = ?1",
    )?;
    for key in folded {
        let rows = by_folded.query_map([key], |r| {
            Ok((
                Backlink {
                    id: r.get(0)?,
                    title: r.get(1)?,
                },
                TargetKeys {
                    target: r.get(2)?,
                    derived: r.get(3)?,
                    folded: r.get(4)?,
                },
            ))
        })?;
        for row in rows {
            found.push(row?);
        }
    }
    found.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    Ok(found)
}
