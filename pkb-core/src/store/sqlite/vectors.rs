//! The notes' vectors for search by meaning: one row per passage, of the encoder that made it,
//! removed with the change that makes them stale (in its transaction), made again by the
//! background indexer. [`super::vector_cache`] scans them, and keeps them in memory while their
//! generation stays the same.

use rusqlite::{Connection, OptionalExtension, params};

use super::rows::note_from_row;
use crate::meaning::vector_bytes;
use crate::note::Note;

/// Forgets the vectors of the note at `seq`.
pub(super) fn forget(conn: &Connection, seq: i64) -> rusqlite::Result<()> {
    let forgotten = conn
        .prepare_cached("DELETE FROM note_vectors WHERE note = ?1")?
        .execute([seq])?;
    if forgotten > 0 {
        removed(conn)?;
    }
    Ok(())
}

/// Moves the vectors' generation on: vectors were added.
fn added(conn: &Connection) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE vector_generation SET generation = generation + 1 WHERE id = 1")?
        .execute([])?;
    Ok(())
}

/// Moves the vectors' generation on, and their count of removals: vectors were removed.
fn removed(conn: &Connection) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE vector_generation SET generation = generation + 1, removals = removals + 1
         WHERE id = 1",
    )?
    .execute([])?;
    Ok(())
}

/// Where the vectors are: their generation, the same number as long as no vector was added
/// or removed, and how many of its moves removed vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Generation {
    pub(super) generation: i64,
    pub(super) removals: i64,
}

/// The vectors' generation now.
pub(super) fn generation(conn: &Connection) -> rusqlite::Result<Generation> {
    conn.prepare_cached("SELECT generation, removals FROM vector_generation WHERE id = 1")?
        .query_row([], |r| {
            Ok(Generation {
                generation: r.get(0)?,
                removals: r.get(1)?,
            })
        })
}

/// Up to `limit` notes with no vectors of `model`.
pub(super) fn pending(conn: &Connection, model: &str, limit: i64) -> rusqlite::Result<Vec<Note>> {
    conn.prepare_cached(
        "SELECT id, title, tags, body, created_at, updated_at, version FROM notes n
         WHERE NOT EXISTS (SELECT 1 FROM note_vectors v WHERE v.note = n.seq AND v.model = ?1)
         ORDER BY n.seq LIMIT ?2",
    )?
    .query_map(params![model, limit], note_from_row)?
    .collect()
}

/// Keeps `vectors` as the note's, if it is still at `version`.
pub(super) fn keep(
    conn: &Connection,
    id: &str,
    version: u64,
    model: &str,
    vectors: &[Vec<f32>],
) -> rusqlite::Result<bool> {
    let Some(seq) = conn
        .prepare_cached("SELECT seq FROM notes WHERE id = ?1 AND version = ?2")?
        .query_row(params![id, version], |r| r.get::<_, i64>(0))
        .optional()?
    else {
        return Ok(false);
    };
    forget(conn, seq)?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO note_vectors (note, passage, model, vector) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (passage, vector) in vectors.iter().enumerate() {
        insert.execute(params![seq, passage as i64, model, vector_bytes(vector)])?;
    }
    added(conn)?;
    Ok(true)
}

/// How many vectors belong to no note (which a change bypassing PKB could leave).
pub(super) fn orphans(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT count(*) FROM note_vectors WHERE NOT EXISTS (SELECT 1 FROM notes WHERE seq = note)",
        [],
        |r| r.get(0),
    )
}

/// Removes the vectors that belong to no note.
pub(super) fn drop_orphans(conn: &Connection) -> rusqlite::Result<()> {
    let dropped = conn.execute(
        "DELETE FROM note_vectors WHERE NOT EXISTS (SELECT 1 FROM notes WHERE seq = note)",
        [],
    )?;
    if dropped > 0 {
        removed(conn)?;
    }
    Ok(())
}
