//! The scoring every route shares: FTS5's BM25, with each word's IDF from the vocabulary and
//! its weighted count summed over its terms.

use super::*;
use crate::store::query_words::idf;

/// BM25's term-frequency saturation and length normalisation, as FTS5's `bm25()` has them.
pub(super) const K1: f64 = 1.2;
pub(super) const B: f64 = 0.75;

/// FTS5's BM25 (`fts5_aux.c`), with the IDF of each word taken from the vocabulary instead of a
/// walk over its doclist.
pub(super) struct Scorer {
    /// `(term id, word)` for every term of every word, sorted.
    terms: Vec<(u32, usize)>,
    /// One bit per term id, set for the terms in `terms`: most of a note's terms are not
    /// wanted, and a bit test dismisses each at once.
    wanted: Vec<u64>,
    idf: Vec<f64>,
    average_length: f64,
    /// Each word's weighted count in the note being scored.
    frequency: Vec<f64>,
}

impl Scorer {
    pub(super) fn new(words: &[Word], notes: i64, tokens: i64) -> Scorer {
        let idf = idfs(words, notes);
        let mut terms: Vec<(u32, usize)> = words
            .iter()
            .enumerate()
            .flat_map(|(i, w)| w.terms.iter().map(move |id| (*id, i)))
            .collect();
        terms.sort_unstable();
        let highest = terms.last().map_or(0, |(id, _)| *id as usize);
        let mut wanted = vec![0_u64; highest / 64 + 1];
        for (id, _) in &terms {
            wanted[*id as usize / 64] |= 1 << (id % 64);
        }
        Scorer {
            terms,
            wanted,
            frequency: vec![0.0; idf.len()],
            idf,
            average_length: average_length(notes, tokens),
        }
    }

    /// The score of a note from its stored counts (see [`NoteTerms`]); `None` when a word has
    /// none of its terms in the note.
    pub(super) fn score(&mut self, blob: &[u8]) -> Option<f64> {
        let (length, terms) = NoteTerms::read(blob);
        self.frequency.fill(0.0);
        for (id, count) in terms {
            let bits = self.wanted.get(id as usize / 64).copied().unwrap_or(0);
            if bits & (1 << (id % 64)) == 0 {
                continue;
            }
            // A term two words both start (`dep deploy`) counts for each.
            let from = self.terms.partition_point(|(t, _)| *t < id);
            for (_, word) in self.terms[from..].iter().take_while(|(t, _)| *t == id) {
                self.frequency[*word] += f64::from(count);
            }
        }
        if self.frequency.contains(&0.0) {
            return None;
        }
        Some(bm25(
            &self.frequency,
            &self.idf,
            f64::from(length),
            self.average_length,
        ))
    }
}

/// Each word's IDF as FTS5's `bm25()` computes it, from the notes holding the word.
pub(super) fn idfs(words: &[Word], notes: i64) -> Vec<f64> {
    words.iter().map(|w| idf(w.notes, notes)).collect()
}

/// Tokens per note.
pub(super) fn average_length(notes: i64, tokens: i64) -> f64 {
    (tokens.max(1) as f64) / (notes.max(1) as f64)
}

/// FTS5's BM25 (`fts5_aux.c`) of a note of `length` tokens, from each word's weighted
/// `frequency` in it and its `idf`.
pub(in crate::store::sqlite) fn bm25(
    frequency: &[f64],
    idf: &[f64],
    length: f64,
    average_length: f64,
) -> f64 {
    let norm = K1 * (1.0 - B + B * length / average_length);
    frequency
        .iter()
        .zip(idf)
        .map(|(f, idf)| idf * (f * (K1 + 1.0)) / (f + norm))
        .sum()
}
