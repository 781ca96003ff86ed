//! The store's vectors in memory for search by meaning's exact scan ([`Matrix`]): read from
//! `note_vectors` once, and kept while no vector is added or removed by any process (the
//! vectors' generation, which a commit that leaves them alone does not move on), so that a
//! search compares vectors in memory rather than reading every row again. While nothing at all
//! is committed (the store's change stamp, as for notes) not even the generation is read.

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

/// The matrix kept, of one model, at one generation of the vectors.
#[derive(Default)]
pub(super) struct VectorCache {
    kept: Mutex<Option<Kept>>,
}

struct Kept {
    /// The store's change stamp it was read or last found current at, if nothing was
    /// committed meanwhile: while the stamp is the same, nothing needs reading at all.
    at: Option<ChangeStamp>,
    generation: i64,
    model: String,
    matrix: Arc<Matrix>,
}

impl VectorCache {
    /// The matrix of `model` kept, if nothing was committed since `now`.
    pub(super) fn at(&self, now: ChangeStamp, model: &str) -> Option<Arc<Matrix>> {
        let kept = crate::locks::lock(&self.kept);
        kept.as_ref()
            .filter(|k| k.at == Some(now) && k.model == model)
            .map(|k| Arc::clone(&k.matrix))
    }

    /// The matrix of `model` kept, if the vectors are still at `generation`.
    pub(super) fn of_generation(&self, generation: i64, model: &str) -> Option<Arc<Matrix>> {
        let kept = crate::locks::lock(&self.kept);
        kept.as_ref()
            .filter(|k| k.generation == generation && k.model == model)
            .map(|k| Arc::clone(&k.matrix))
    }

    /// Keeps `matrix`, the vectors of `model` at `generation`, current at the change stamp
    /// `at` if nothing was committed while it was read, in place of any other.
    pub(super) fn keep(
        &self,
        at: Option<ChangeStamp>,
        generation: i64,
        model: &str,
        matrix: Arc<Matrix>,
    ) {
        *crate::locks::lock(&self.kept) = Some(Kept {
            at,
            generation,
            model: model.to_owned(),
            matrix,
        });
    }
}
