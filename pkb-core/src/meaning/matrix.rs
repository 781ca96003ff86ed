//! Vectors as the engines store them (little-endian `f32`), and the exact scan of search by
//! meaning: every vector of a store in memory, 8 bits a coordinate, each note scored by its
//! best passage.

use std::sync::Arc;

use crate::store::SearchHit;

/// A vector as stored: its coordinates as little-endian `f32`.
pub fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every vector of one encoder, with the notes they belong to: in parts, so that the vectors
/// added since a matrix was read are appended as a part of their own while the parts read
/// before are shared, not copied (copying 11 MB at each search while the indexer added vectors
/// left the allocator's arenas fragmented).
#[derive(Default, Clone)]
pub struct Matrix {
    parts: Vec<Arc<Part>>,
    dimensions: usize,
    /// The engine's position of the last vector read (SQLite's row id), from which the vectors
    /// added later are read.
    read_through: i64,
}

/// Some notes and all their vectors: a note is never in two parts.
#[derive(Default, Clone)]
struct Part {
    notes: Vec<Owner>,
    /// For each vector, its note's index in `notes`.
    rows: Vec<u32>,
    /// For each vector, what its coordinates were divided by to fit in `i8`.
    scales: Vec<f32>,
    coordinates: Vec<i8>,
}

#[derive(Clone)]
struct Owner {
    id: String,
    title: String,
    tags: Vec<String>,
}

impl Matrix {
    /// Merges the last parts while the one before is at most twice the size of the last, so
    /// that the parts stay few (about the logarithm of the vectors added) and the large part
    /// read first is copied only once as much has been added to it.
    pub fn settle(&mut self) {
        while let [.., before, last] = self.parts.as_slice() {
            if before.rows.len() > 2 * last.rows.len() {
                break;
            }
            let last = self.parts.pop().expect("two parts");
            let before = self.parts.last_mut().expect("one part");
            Arc::make_mut(before).append(&last);
        }
    }

    /// Whether any of `ids` is a note of this matrix.
    pub fn holds_any(&self, ids: &[String]) -> bool {
        let ids: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
        self.parts
            .iter()
            .flat_map(|part| &part.notes)
            .any(|owner| ids.contains(owner.id.as_str()))
    }

    /// The engine's position of the last vector read, as [`Matrix::set_read_through`] said.
    pub fn read_through(&self) -> i64 {
        self.read_through
    }

    /// Notes the engine's position of the last vector read.
    pub fn set_read_through(&mut self, position: i64) {
        self.read_through = self.read_through.max(position);
    }

    /// Adds a passage's stored vector (see [`vector_bytes`]) read from an engine, whose rows
    /// come a note's passages together; `read` holds the notes this read has added, so that
    /// a note is told by the rows read, not by the matrix (whose last note may be a kept one).
    /// `note` gives the note's title and tags, read once a note.
    pub fn push_passage<E>(
        &mut self,
        read: &mut Vec<String>,
        id: String,
        note: impl FnOnce() -> Result<(String, Vec<String>), E>,
        stored: &[u8],
    ) -> Result<(), E> {
        if read.last() != Some(&id) {
            let (title, tags) = note()?;
            self.push_note(id.clone(), title, tags);
            read.push(id);
        }
        self.push_vector(stored);
        Ok(())
    }

    /// Adds a note, whose vectors [`Matrix::push_vector`] adds next.
    fn push_note(&mut self, id: String, title: String, tags: Vec<String>) {
        self.last_part().notes.push(Owner { id, title, tags });
    }

    /// Adds a stored vector (see [`vector_bytes`]) of the note added last.
    fn push_vector(&mut self, stored: &[u8]) {
        let vector: Vec<f32> = stored
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        self.dimensions = vector.len();
        let (scale, coordinates) = quantized(&vector);
        let part = self.last_part();
        part.coordinates.extend(coordinates);
        part.scales.push(scale);
        part.rows.push(part.notes.len().saturating_sub(1) as u32);
    }

    /// The part vectors are added to: a new one if the last is shared with another matrix (a
    /// clone adds the vectors of notes not in it beside the parts it shares; [`Matrix::settle`]
    /// it once they are).
    fn last_part(&mut self) -> &mut Part {
        if self
            .parts
            .last_mut()
            .is_none_or(|part| Arc::get_mut(part).is_none())
        {
            self.parts.push(Arc::default());
        }
        Arc::get_mut(self.parts.last_mut().expect("a part")).expect("a part of its own")
    }

    /// The notes whose best vector is nearest to `query`, carrying every tag of `tags`.
    pub fn nearest(&self, query: &[f32], tags: &[String], limit: usize) -> Vec<SearchHit> {
        if self.dimensions != query.len() || self.dimensions == 0 {
            return Vec::new();
        }
        // The query in 8 bits too: products of integers, which the compiler makes vector
        // instructions of, took the scan of 28,000 passages from 5.5 ms to 2.3 ms here.
        let (query_scale, query) = quantized(query);
        // Scores first, each note's strings copied only for the results.
        let mut scored: Vec<(f32, &Owner)> = self
            .parts
            .iter()
            .flat_map(|part| part.best_scores(self.dimensions, query_scale, &query, tags))
            .collect();
        let by_score = |a: &(f32, &Owner), b: &(f32, &Owner)| b.0.total_cmp(&a.0);
        if scored.len() > limit && limit > 0 {
            scored.select_nth_unstable_by(limit - 1, by_score);
        }
        scored.truncate(limit);
        scored.sort_by(by_score);
        scored
            .into_iter()
            .map(|(score, owner)| SearchHit {
                id: owner.id.clone(),
                title: owner.title.clone(),
                tags: owner.tags.clone(),
                score: f64::from(score),
            })
            .collect()
    }
}

impl Part {
    /// Adds `other`'s notes and vectors after these.
    fn append(&mut self, other: &Part) {
        let offset = self.notes.len() as u32;
        self.notes.extend(other.notes.iter().cloned());
        self.rows.extend(other.rows.iter().map(|row| row + offset));
        self.scales.extend(&other.scales);
        self.coordinates.extend(&other.coordinates);
    }

    /// Each of this part's notes carrying every tag of `tags`, scored by its best vector's
    /// product with `query` (8-bit, divided by `query_scale`).
    fn best_scores<'a>(
        &'a self,
        dimensions: usize,
        query_scale: f32,
        query: &[i8],
        tags: &[String],
    ) -> impl Iterator<Item = (f32, &'a Owner)> {
        let mut best: Vec<Option<f32>> = vec![None; self.notes.len()];
        for (row, coordinates) in self.coordinates.chunks_exact(dimensions).enumerate() {
            let dot: i32 = coordinates
                .iter()
                .zip(query)
                .map(|(c, q)| i32::from(*c) * i32::from(*q))
                .sum();
            let score = dot as f32 * self.scales[row] * query_scale;
            let note = &mut best[self.rows[row] as usize];
            *note = Some(note.map_or(score, |s| s.max(score)));
        }
        best.into_iter()
            .zip(&self.notes)
            .filter_map(|(score, owner)| Some((score?, owner)))
            .filter(|(_, owner)| tags.iter().all(|t| owner.tags.contains(t)))
    }
}

/// `vector` as 8-bit coordinates, and what they were divided by to fit in `i8`.
fn quantized(vector: &[f32]) -> (f32, Vec<i8>) {
    let largest = vector
        .iter()
        .fold(0f32, |m, x| m.max(x.abs()))
        .max(f32::MIN_POSITIVE);
    let scale = largest / 127.0;
    (
        scale,
        vector.iter().map(|x| (x / scale).round() as i8).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(angle: f32) -> Vec<f32> {
        let mut v = vec![0.0; 384];
        v[0] = angle.cos();
        v[1] = angle.sin();
        v
    }

    #[test]
    fn scores_are_cosines_to_within_the_coordinates_precision() {
        let mut matrix = Matrix::default();
        for (k, angle) in [0.1f32, 0.5, 1.0, 2.0].into_iter().enumerate() {
            matrix.push_note(
                format!("n{k}"),
                format!("N{k}"),
                vec![format!("t{}", k % 2)],
            );
            matrix.push_vector(&vector_bytes(&unit(angle)));
        }
        let hits = matrix.nearest(&unit(0.0), &[], 10);
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["n0", "n1", "n2", "n3"]);
        for (hit, angle) in hits.iter().zip([0.1f64, 0.5, 1.0, 2.0]) {
            assert!(
                (hit.score - angle.cos()).abs() < 0.02,
                "{} {}",
                hit.score,
                angle.cos()
            );
        }
        let tagged = matrix.nearest(&unit(0.0), &["t1".to_owned()], 10);
        let ids: Vec<&str> = tagged.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["n1", "n3"]);
        assert!(
            matrix.nearest(&[1.0, 0.0], &[], 10).is_empty(),
            "another length"
        );
    }

    #[test]
    fn a_note_scores_its_best_passage() {
        let mut matrix = Matrix::default();
        matrix.push_note("long".into(), "Long".into(), Vec::new());
        for angle in [1.5f32, 0.2, 1.0] {
            matrix.push_vector(&vector_bytes(&unit(angle)));
        }
        let hits = matrix.nearest(&unit(0.0), &[], 10);
        assert_eq!(hits.len(), 1);
        assert!((hits[0].score - 0.2f64.cos()).abs() < 0.02);
    }

    #[test]
    fn vectors_added_in_parts_are_found_as_if_read_at_once() {
        let mut whole = Matrix::default();
        let mut grown = Matrix::default();
        for k in 0..200 {
            let angle = k as f32 / 70.0;
            let mut added = grown.clone();
            for matrix in [&mut whole, &mut added] {
                matrix.push_note(
                    format!("n{k}"),
                    format!("N{k}"),
                    vec![format!("t{}", k % 3)],
                );
                matrix.push_vector(&vector_bytes(&unit(angle + 0.3)));
                matrix.push_vector(&vector_bytes(&unit(angle)));
            }
            added.settle();
            grown = added;
        }
        assert!(
            grown.parts.len() <= 8,
            "parts stay few: {}",
            grown.parts.len()
        );
        for (query, tags) in [(0.4, vec![]), (2.0, vec!["t1".to_owned()])] {
            let ids = |m: &Matrix| -> Vec<String> {
                m.nearest(&unit(query), &tags, 7)
                    .into_iter()
                    .map(|h| h.id)
                    .collect()
            };
            assert_eq!(ids(&grown), ids(&whole));
        }
        let shared = grown.clone();
        assert!(
            Arc::ptr_eq(&shared.parts[0], &grown.parts[0]),
            "a matrix extended shares the parts read before"
        );
        assert!(grown.holds_any(&["n9".into(), "none".into()]));
        assert!(grown.holds_any(&["n199".into()]), "in the last part");
        assert!(!grown.holds_any(&["n200".into(), "none".into()]));
    }
}
