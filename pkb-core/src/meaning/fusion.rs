//! Reciprocal rank fusion: two rankings made one, each result scored by the sum over the
//! rankings of 1 / (k + its rank), k = 60, as in Cormack, Clarke and Büttcher (2009).

use crate::store::SearchHit;

/// The constant of the fusion.
pub const K: f64 = 60.0;

/// `first` and `second` (each best first) fused, best first, at most `limit`; ties keep the
/// first ranking's order.
pub fn fuse(first: Vec<SearchHit>, second: Vec<SearchHit>, limit: usize) -> Vec<SearchHit> {
    let mut fused: Vec<SearchHit> = Vec::with_capacity(first.len() + second.len());
    for ranking in [first, second] {
        for (rank, hit) in ranking.into_iter().enumerate() {
            let score = 1.0 / (K + rank as f64 + 1.0);
            match fused.iter_mut().find(|seen| seen.id == hit.id) {
                Some(seen) => seen.score += score,
                None => fused.push(SearchHit { score, ..hit }),
            }
        }
    }
    // Stable: equal scores keep the order they were met in.
    fused.sort_by(|a, b| b.score.total_cmp(&a.score));
    fused.truncate(limit);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(ids: &[&str]) -> Vec<SearchHit> {
        ids.iter()
            .map(|id| SearchHit {
                id: (*id).to_owned(),
                title: id.to_uppercase(),
                tags: Vec::new(),
                score: 0.0,
            })
            .collect()
    }

    #[test]
    fn a_note_both_rankings_find_comes_first() {
        let fused = fuse(hits(&["a", "b", "c"]), hits(&["c", "d"]), 10);
        let ids: Vec<&str> = fused.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["c", "a", "b", "d"]);
        let both = 1.0 / 63.0 + 1.0 / 61.0;
        assert!((fused[0].score - both).abs() < 1e-12);
        assert_eq!(fuse(hits(&["a", "b"]), Vec::new(), 1).len(), 1);
    }
}
