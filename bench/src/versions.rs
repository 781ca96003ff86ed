//! A store whose every note has many versions, as `write` with overwrite makes them: what
//! `pkb-store-bench --versions` weighs and the web page phase of `pkb-bench` reads.

use pkb_core::store::{NoteDraft, PutMode, Store};

use crate::corpus::{Corpus, Rng};

/// Notes written in one transaction.
pub const BATCH: usize = 1_000;

/// Writes each note of `ids` (note `i` of `corpus`) `rounds` more times, each time with
/// another body, in batches of [`BATCH`]: `rounds + 1` versions of each.
pub async fn write_again(
    store: &Store,
    ids: &[String],
    corpus: &Corpus,
    rng: &mut Rng,
    rounds: usize,
) {
    let n = ids.len();
    for round in 0..rounds {
        for start in (0..n).step_by(BATCH) {
            let batch: Vec<NoteDraft> = (start..(start + BATCH).min(n))
                .map(|i| {
                    let mut draft = corpus.note(rng, i).draft();
                    draft.id = ids[i].clone();
                    draft.body = format!("{} (round {round})", draft.body);
                    draft
                })
                .collect();
            store
                .put_many(batch, PutMode::Replace)
                .await
                .expect("replace");
        }
    }
}
