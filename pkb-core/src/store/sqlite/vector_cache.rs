//! The vectors of the store in memory, 8 bits a coordinate, for search by meaning's exact scan:
//! read from `note_vectors` once, and kept while nothing is committed by any process (the
//! store's change stamp, as for notes), so that a search compares vectors in memory rather
//! than reading every row again.

use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use super::change_watch::ChangeStamp;
use super::rows::tags_from_json;
use crate::store::SearchHit;

/// Every vector of one encoder, with the notes they belong to.
pub(super) struct Matrix {
    notes: Vec<Owner>,
    /// For each vector, its note's index in `notes`.
    rows: Vec<u32>,
    /// For each vector, what its coordinates were divided by to fit in `i8`.
    scales: Vec<f32>,
    coordinates: Vec<i8>,
    dimensions: usize,
}

struct Owner {
    id: String,
    title: String,
    tags: Vec<String>,
}

impl Matrix {
    /// Reads every vector of `model`, by note.
    pub(super) fn load(conn: &Connection, model: &str) -> rusqlite::Result<Matrix> {
        let mut matrix = Matrix {
            notes: Vec::new(),
            rows: Vec::new(),
            scales: Vec::new(),
            coordinates: Vec::new(),
            dimensions: 0,
        };
        let mut stmt = conn.prepare_cached(
            "SELECT n.id, n.title, n.tags, v.vector FROM note_vectors v JOIN notes n ON n.seq = v.note
             WHERE v.model = ?1 ORDER BY v.note, v.passage",
        )?;
        let mut rows = stmt.query([model])?;
        let mut last: Option<String> = None;
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            if last.as_deref() != Some(&id) {
                matrix.notes.push(Owner {
                    id: id.clone(),
                    title: row.get(1)?,
                    tags: tags_from_json(row, 2)?,
                });
                last = Some(id);
            }
            let vector: Vec<f32> = row
                .get_ref(3)?
                .as_blob()?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            matrix.dimensions = vector.len();
            let largest = vector
                .iter()
                .fold(0f32, |m, x| m.max(x.abs()))
                .max(f32::MIN_POSITIVE);
            let scale = largest / 127.0;
            matrix
                .coordinates
                .extend(vector.iter().map(|x| (x / scale).round() as i8));
            matrix.scales.push(scale);
            matrix.rows.push((matrix.notes.len() - 1) as u32);
        }
        Ok(matrix)
    }

    /// The notes whose best vector is nearest to `query`, carrying every tag of `tags`.
    pub(super) fn nearest(&self, query: &[f32], tags: &[String], limit: usize) -> Vec<SearchHit> {
        let mut best: Vec<Option<f32>> = vec![None; self.notes.len()];
        if self.dimensions == query.len() {
            for (row, coordinates) in self.coordinates.chunks_exact(self.dimensions).enumerate() {
                let score = coordinates
                    .iter()
                    .zip(query)
                    .map(|(c, q)| f32::from(*c) * q)
                    .sum::<f32>()
                    * self.scales[row];
                let note = &mut best[self.rows[row] as usize];
                *note = Some(note.map_or(score, |s| s.max(score)));
            }
        }
        let mut hits: Vec<SearchHit> = best
            .into_iter()
            .zip(&self.notes)
            .filter_map(|(score, owner)| {
                let score = score?;
                tags.iter()
                    .all(|t| owner.tags.contains(t))
                    .then(|| SearchHit {
                        id: owner.id.clone(),
                        title: owner.title.clone(),
                        tags: owner.tags.clone(),
                        score: f64::from(score),
                    })
            })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit);
        hits
    }
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
