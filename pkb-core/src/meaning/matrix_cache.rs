//! A store's vectors kept in memory for search by meaning's exact scan ([`Matrix`]), while
//! their generation stays: every engine keeps a number that moves on whenever any process
//! adds or removes a vector, so that a search compares vectors in memory rather than reading
//! every one again. An engine that can tell that nothing at all was committed since (its
//! `Stamp`) need not even read the generation.

use std::sync::{Arc, Mutex};

use super::Matrix;

/// The matrix kept, of one model, at one generation of the vectors.
pub struct MatrixCache<Stamp = ()> {
    kept: Mutex<Option<Kept<Stamp>>>,
}

impl<Stamp> Default for MatrixCache<Stamp> {
    fn default() -> Self {
        Self {
            kept: Mutex::new(None),
        }
    }
}

struct Kept<Stamp> {
    /// The engine's change stamp it was read or last found current at, if nothing was
    /// committed meanwhile: while the stamp is the same, nothing needs reading at all.
    at: Option<Stamp>,
    generation: i64,
    /// How many of the generation's moves removed vectors, for an engine that counts them.
    removals: i64,
    model: String,
    matrix: Arc<Matrix>,
}

impl<Stamp: PartialEq> MatrixCache<Stamp> {
    /// The matrix of `model` kept, if nothing was committed since `now`.
    pub fn at(&self, now: Stamp, model: &str) -> Option<Arc<Matrix>> {
        let kept = crate::locks::lock(&self.kept);
        kept.as_ref()
            .filter(|k| k.at.as_ref() == Some(&now) && k.model == model)
            .map(|k| Arc::clone(&k.matrix))
    }

    /// The matrix of `model` kept, whatever its generation, with its generation and count of
    /// removals: an engine may read what was added since rather than every vector again.
    pub fn latest(&self, model: &str) -> Option<(i64, i64, Arc<Matrix>)> {
        let kept = crate::locks::lock(&self.kept);
        kept.as_ref()
            .filter(|k| k.model == model)
            .map(|k| (k.generation, k.removals, Arc::clone(&k.matrix)))
    }

    /// Keeps `matrix`, the vectors of `model` at `generation` (with `removals`, for an engine
    /// that counts them), current at the change stamp `at` if nothing was committed while it
    /// was read, in place of any other.
    pub fn keep(
        &self,
        at: Option<Stamp>,
        (generation, removals): (i64, i64),
        model: &str,
        matrix: Arc<Matrix>,
    ) {
        *crate::locks::lock(&self.kept) = Some(Kept {
            at,
            generation,
            removals,
            model: model.to_owned(),
            matrix,
        });
    }
}
