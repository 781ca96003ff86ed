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
        "SELECT v.rowid, n.id, n.title, n.tags, v.vector
         FROM note_vectors v JOIN notes n ON n.seq = v.note
         WHERE v.model = ?1 ORDER BY v.note, v.passage",
    )?;
    read_into(&mut matrix, stmt.query([model])?)?;
    Ok(matrix)
}

/// `kept` (its parts shared, not copied) with the vectors of `model` added since it was read:
/// those of higher row ids, in the order they were added. Only while no vector was removed
/// meanwhile: a removed row's id may be given again, and a note's vectors are added only once
/// those it had are removed, so that a note is never in both parts. A note read as added that
/// `kept` holds had its vectors removed where no removal was counted (by hand): then every
/// vector is read again.
pub(super) fn with_added(
    conn: &Connection,
    model: &str,
    kept: &Matrix,
) -> rusqlite::Result<Matrix> {
    let mut stmt = conn.prepare_cached(
        "SELECT v.rowid, n.id, n.title, n.tags, v.vector
         FROM note_vectors v JOIN notes n ON n.seq = v.note
         WHERE v.model = ?1 AND v.rowid > ?2 ORDER BY v.rowid",
    )?;
    let mut matrix = kept.clone();
    let ids = read_into(
        &mut matrix,
        stmt.query(rusqlite::params![model, kept.read_through()])?,
    )?;
    if kept.holds_any(&ids) {
        return load(conn, model);
    }
    matrix.settle();
    Ok(matrix)
}

/// Adds `rows` (row id, note id, title, tags, vector) to `matrix`, a note's passages together,
/// and says which notes they were.
fn read_into(matrix: &mut Matrix, mut rows: rusqlite::Rows<'_>) -> rusqlite::Result<Vec<String>> {
    let mut ids = Vec::new();
    while let Some(row) = rows.next()? {
        matrix.push_passage(
            &mut ids,
            row.get(1)?,
            || Ok::<_, rusqlite::Error>((row.get(2)?, tags_from_json(row, 3)?)),
            row.get_ref(4)?.as_blob()?,
        )?;
        matrix.set_read_through(row.get(0)?);
    }
    Ok(ids)
}

/// The matrix kept between searches, current while nothing is committed (the store's change
/// stamp) or while the vectors' generation stays.
pub(super) type VectorCache = crate::meaning::MatrixCache<ChangeStamp>;
