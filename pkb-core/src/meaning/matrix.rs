//! Vectors as the engines store them (little-endian `f32`), and the exact scan of search by
//! meaning: every vector of a store in memory, 8 bits a coordinate, each note scored by its
//! best passage.

use crate::store::SearchHit;

/// A vector as stored: its coordinates as little-endian `f32`.
pub fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every vector of one encoder, with the notes they belong to.
#[derive(Default)]
pub struct Matrix {
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
    /// Whether the last vector added was of the note `id`: a note's passages come together.
    pub fn holds_last(&self, id: &str) -> bool {
        self.notes.last().is_some_and(|owner| owner.id == id)
    }

    /// Adds a note, whose vectors [`Matrix::push_vector`] adds next.
    pub fn push_note(&mut self, id: String, title: String, tags: Vec<String>) {
        self.notes.push(Owner { id, title, tags });
    }

    /// Adds a stored vector (see [`vector_bytes`]) of the note added last.
    pub fn push_vector(&mut self, stored: &[u8]) {
        let vector: Vec<f32> = stored
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        self.dimensions = vector.len();
        let largest = vector
            .iter()
            .fold(0f32, |m, x| m.max(x.abs()))
            .max(f32::MIN_POSITIVE);
        let scale = largest / 127.0;
        self.coordinates
            .extend(vector.iter().map(|x| (x / scale).round() as i8));
        self.scales.push(scale);
        self.rows.push(self.notes.len().saturating_sub(1) as u32);
    }

    /// The notes whose best vector is nearest to `query`, carrying every tag of `tags`.
    pub fn nearest(&self, query: &[f32], tags: &[String], limit: usize) -> Vec<SearchHit> {
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
