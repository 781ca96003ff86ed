//! The store's vectors in memory for search by meaning's exact scan ([`Matrix`]): read from
//! `note_vectors` once, and kept while no vector is added or removed by any process (the
//! vectors' generation, which a commit that leaves them alone does not move on), so that a
//! search compares vectors in memory rather than reading every row again. While nothing at all
//! is committed (the store's change stamp, as for notes) not even the generation is read.

use rusqlite::Connection;

use super::change_watch::ChangeStamp;
use super::rows::tags_from_json;
use crate::meaning::Matrix;

/// Reads every vector of `model`, by note.
pub(super) fn load(conn: &Connection, model: &str) -> rusqlite::Result<Matrix> {
    let mut matrix = Matrix::default();
    let mut stmt = conn.prepare_cached(
        "SELECT n.id, n.title, n.tags, v.vector FROM note_vectors v JOIN notes n ON n.seq = v.note
         WHERE v.model = ?1 ORDER BY v.note, v.passage",
    )?;
    let mut rows = stmt.query([model])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        if !matrix.holds_last(&id) {
            matrix.push_note(id, row.get(1)?, tags_from_json(row, 2)?);
        }
        matrix.push_vector(row.get_ref(3)?.as_blob()?);
    }
    Ok(matrix)
}

/// The matrix kept between searches, current while nothing is committed (the store's change
/// stamp) or while the vectors' generation stays.
pub(super) type VectorCache = crate::meaning::MatrixCache<ChangeStamp>;
