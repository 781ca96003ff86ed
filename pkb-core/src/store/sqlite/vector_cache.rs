//! The store's vectors in memory for search by meaning's exact scan ([`Matrix`]): read from
//! `note_vectors` once, and kept while nothing is committed by any process (the store's change
//! stamp, as for notes), so that a search compares vectors in memory rather than reading every
//! row again.

use std::sync::{Arc, Mutex};

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

/// The matrix kept, of one model, at one moment of the store.
#[derive(Default)]
pub(super) struct VectorCache {
    kept: Mutex<Option<(ChangeStamp, String, Arc<Matrix>)>>,
}

impl VectorCache {
    /// The matrix of `model` kept at `now`, if any.
    pub(super) fn get(&self, now: ChangeStamp, model: &str) -> Option<Arc<Matrix>> {
        let kept = crate::locks::lock(&self.kept);
        match &*kept {
            Some((at, kept_model, matrix)) if *at == now && kept_model == model => {
                Some(Arc::clone(matrix))
            }
            _ => None,
        }
    }

    /// Keeps `matrix`, read at `at`, in place of any other.
    pub(super) fn keep(&self, at: ChangeStamp, model: &str, matrix: Arc<Matrix>) {
        *crate::locks::lock(&self.kept) = Some((at, model.to_owned(), matrix));
    }
}
