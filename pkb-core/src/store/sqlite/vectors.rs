//! The notes' vectors for search by meaning: one row per passage, of the encoder that made it,
//! removed with the change that makes them stale (in its transaction), made again by the
//! background indexer; and the exact scan that finds the nearest notes.

use rusqlite::{Connection, OptionalExtension, params};

use super::rows::{note_from_row, tags_from_json};
use crate::note::Note;
use crate::store::SearchHit;

/// Forgets the vectors of the note at `seq`.
pub(super) fn forget(conn: &Connection, seq: i64) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM note_vectors WHERE note = ?1")?
        .execute([seq])?;
    Ok(())
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
        insert.execute(params![seq, passage as i64, model, to_bytes(vector)])?;
    }
    Ok(true)
}

/// The notes whose best passage is nearest to `query`, carrying every tag of `tags`: every
/// vector of `model` read and compared (an exact scan).
pub(super) fn nearest(
    conn: &Connection,
    model: &str,
    query: &[f32],
    tags: &[String],
    limit: usize,
) -> rusqlite::Result<Vec<SearchHit>> {
    let mut stmt = conn.prepare_cached(
        "SELECT n.id, n.title, n.tags, v.vector FROM note_vectors v JOIN notes n ON n.seq = v.note
         WHERE v.model = ?1 ORDER BY v.note",
    )?;
    let mut rows = stmt.query([model])?;
    let mut best: Vec<SearchHit> = Vec::new();
    while let Some(row) = rows.next()? {
        let score = f64::from(dot(query, row.get_ref(3)?.as_blob()?));
        let id: String = row.get(0)?;
        match best.last_mut() {
            // Rows come by note: a note's passages one after another.
            Some(last) if last.id == id => last.score = last.score.max(score),
            _ => {
                let note_tags = tags_from_json(row, 2)?;
                if !tags.iter().all(|t| note_tags.contains(t)) {
                    continue;
                }
                best.push(SearchHit {
                    id,
                    title: row.get(1)?,
                    tags: note_tags,
                    score,
                });
            }
        }
    }
    best.sort_by(|a, b| b.score.total_cmp(&a.score));
    best.truncate(limit);
    Ok(best)
}

fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The dot product of `query` and a stored vector (both unit vectors: their cosine).
fn dot(query: &[f32], stored: &[u8]) -> f32 {
    stored
        .chunks_exact(4)
        .zip(query)
        .map(|(bytes, q)| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) * q)
        .sum()
}
