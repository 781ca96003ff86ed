//! Word search on PostgreSQL: the statements that find a query's newest matches and rank them,
//! and, for a query of several words, which of them should find the matches.
//!
//! PostgreSQL's search index answers every word of a query at once, and a word that is a
//! prefix of many (`hen`, a third of the notes) costs it as much as reading those notes' entries:
//! 6-7 ms at 100,000 notes, even beside a word that only a few hundred notes hold. A query of
//! several words therefore first counts, among the user's newest notes, how many hold each
//! word. The rare ones then find the matches through the index, and the common ones are checked
//! on the rows found, as SQLite's store finds candidates through its rarest word. The same
//! counts leave out of an any-word search the words half the notes hold, as SQLite's store
//! leaves them out.

use crate::store::query_words::{Share, idf};

/// The newest matches of `$matches`, ranked with the whole query: `$1` owner, `$2` query text,
/// `$3` tags, `$4` results, `$5` the ranking window. The matches are found as row addresses,
/// and only the window's rows are read again whole to be ranked: carrying every match's text
/// and vector through the search for the newest had made a search take up to half again as
/// long. Both parts run in the statement's one snapshot, in which a row's address does not
/// change.
macro_rules! ranked {
    ($matches:literal) => {
        concat!(
            "WITH recent AS (
                SELECT ctid AS address FROM pkb_notes
                WHERE owner = $1 AND tags @> $3 AND ",
            $matches,
            "
                ORDER BY created_order DESC LIMIT $5
            )
            SELECT id, title, tags,
                ts_rank('{0, 0.1, 0.4, 1}', search, pkb_query($2))::float8 AS score
            FROM pkb_notes
            WHERE ctid = ANY (ARRAY(SELECT address FROM recent)) AND owner = $1
            ORDER BY score DESC, created_order DESC LIMIT $4"
        )
    };
}

/// A search through the index for every word of the query.
pub(super) const EVERY_WORD: &str = ranked!("search @@ pkb_query($2)");

/// A search through the index for the rare words (`$6`, a tsquery of them) only; the whole
/// query is checked on each row they find. `ts_match_vq` is `@@` under a name the planner does
/// not match to the index, so that the common words are not looked up there too.
pub(super) const RARE_WORDS: &str =
    ranked!("search @@ $6::tsquery AND ts_match_vq(search, pkb_query($2))");

/// The field weights of hybrid's word ranking (body, tags, title): what SQLite's BM25 gives one
/// occurrence in each with its weights 10, 4 and 1 (k1 = 1.2: 1.96, 1.69 and 1.0). BM25
/// saturates a word's weighted count, where `ts_rank` weighs each occurrence after saturating:
/// with `words`' weights (0.1, 0.4, 1) a title saying a common word outranked a body saying a
/// rare one, however rare.
macro_rules! any_word_weights {
    () => {
        "'{0, 0.51, 0.86, 1}'"
    };
}

/// Hybrid's word ranking of a query of one word (`$2`, which PostgreSQL's parser may still
/// make several lexemes of): the notes of `$1` tagged `$3` holding any of its lexemes, ranked,
/// the best `$4`.
pub(super) const ANY_WORD: &str = concat!(
    "WITH q AS (
         SELECT replace(pkb_query($2)::text, ' & ', ' | ')::tsquery AS any)
     SELECT id, title, tags,
         ts_rank(",
    any_word_weights!(),
    ", search, q.any, 1)::float8 AS score
     FROM pkb_notes, q
     WHERE owner = $1 AND tags @> $3 AND search @@ q.any
     ORDER BY score DESC, created_order DESC LIMIT $4"
);

/// A row's score for a query of several words: each kept word's `ts_rank` (its frequency in the
/// note, saturating, weighted by field, divided by 1 + the log of the note's length, as BM25
/// normalises by length) times the word's IDF, summed, as BM25 sums them. The words are `$5`
/// (tsqueries' text) and their IDFs `$6`. `ts_rank` of the whole query ranks a note saying a
/// common word often above one saying a rare word once.
macro_rules! weighed_score {
    () => {
        concat!(
            "(SELECT sum(weighed.idf * ts_rank(",
            any_word_weights!(),
            ", search, weighed.word, 1)) FROM weighed)::float8 AS score"
        )
    };
}

/// The words of [`weighed_score`], each read once.
macro_rules! weighed_words {
    () => {
        "weighed AS MATERIALIZED (
             SELECT word::tsquery AS word, idf FROM unnest($5::text[], $6::float8[]) AS w(word, idf)
         )"
    };
}

/// Hybrid's word ranking of a query of several words: the notes of `$1` tagged `$3` that hold
/// any of the words kept (`$2`, a tsquery of them), ranked by [`weighed_score`], the best `$4`.
pub(super) const SOME_WORDS: &str = concat!(
    "WITH ",
    weighed_words!(),
    "
     SELECT id, title, tags, ",
    weighed_score!(),
    "
     FROM pkb_notes
     WHERE owner = $1 AND tags @> $3 AND search @@ $2::tsquery
     ORDER BY score DESC, created_order DESC LIMIT $4"
);

/// [`SOME_WORDS`] among the `$7` newest matches (every word common), found as row addresses and
/// read again whole only for the window, as [`EVERY_WORD`] reads them.
pub(super) const SOME_WORDS_NEWEST: &str = concat!(
    "WITH ",
    weighed_words!(),
    ",
     recent AS (
         SELECT ctid AS address FROM pkb_notes
         WHERE owner = $1 AND tags @> $3 AND search @@ $2::tsquery
         ORDER BY created_order DESC LIMIT $7
     )
     SELECT id, title, tags, ",
    weighed_score!(),
    "
     FROM pkb_notes
     WHERE ctid = ANY (ARRAY(SELECT address FROM recent)) AND owner = $1
     ORDER BY score DESC, created_order DESC LIMIT $4"
);

/// How many of the user's newest notes are counted for each word of the query.
pub(super) const SAMPLED: i64 = 256;

/// Each word of the query (`$2`) as a tsquery's text (`pkb_word_query`: its prefix or its
/// inflected forms), how many of the user's (`$1`) `$3` newest notes hold it, how many notes
/// were counted, and whether some note of the user holds it: a word none of the counted notes
/// holds is looked up in the index when `$4`, and taken as held by none otherwise. The words
/// are the lexemes PostgreSQL's parser makes of the folded query, as `pkb_query` makes them,
/// so that each is implied by the whole query: checking a row for the whole query after
/// finding it through some of its words gives exactly the query's matches.
pub(super) const WORD_COUNTS: &str = r#"
WITH newest AS (
    SELECT search FROM pkb_notes WHERE owner = $1 ORDER BY created_order DESC LIMIT $3
),
words AS (
    SELECT DISTINCT pkb_word_query(lexeme)::tsquery AS word
    FROM unnest(tsvector_to_array(to_tsvector('simple', pkb_fold($2)))) AS lexeme
)
SELECT word::text, counted.holding, (SELECT count(*) FROM newest),
    counted.holding > 0
        OR ($4 AND EXISTS (SELECT FROM pkb_notes WHERE owner = $1 AND search @@ word))
FROM words, LATERAL (SELECT count(*) AS holding FROM newest WHERE search @@ word) AS counted"#;

/// A word of a query, as [`WORD_COUNTS`] tells of it.
pub(super) struct WordCount {
    /// The word as a tsquery's text: the words it starts, or has the stem of.
    pub(super) query: String,
    /// How many of the counted newest notes hold it.
    pub(super) newest_holding: i64,
    /// Whether some note of the user holds it, as far as the count looked.
    pub(super) held_anywhere: bool,
}

/// A word of an any-word search, with its weight.
#[derive(Debug, PartialEq)]
pub(super) struct Weighed {
    /// The word as a tsquery's text.
    pub(super) query: String,
    /// Its IDF, as BM25's, among the notes counted: a sample of the newest, whose rare words
    /// all get the IDF of a word in half a note of them.
    pub(super) idf: f64,
}

/// A query's words and how many of the user's newest notes were counted for them.
pub(super) struct WordCounts {
    pub(super) words: Vec<WordCount>,
    pub(super) counted: i64,
}

/// The percentage of the counted notes below which a word is rare: at 100,000 notes, 3% is
/// 3,000 notes, whose index entries and rows cost about what the common word's check on them
/// saves.
const RARE_PERCENT: i64 = 3;

impl WordCounts {
    /// The query's rare words as one tsquery's text, when it has both rare and common ones.
    /// `None` leaves every word to the index, where it serves as well (all of them rare: the
    /// index intersects short lists; all common: the newest notes are read in order).
    pub(super) fn rare_words(&self) -> Option<String> {
        let (rare, common): (Vec<_>, Vec<_>) = self
            .words
            .iter()
            .partition(|word| word.newest_holding * 100 < RARE_PERCENT * self.counted);
        if rare.is_empty() || common.is_empty() {
            return None;
        }
        // Each word's query is an OR of its forms, which `&` binds tighter than.
        let queries: Vec<String> = rare
            .iter()
            .map(|word| format!("({})", word.query))
            .collect();
        Some(queries.join(" & "))
    }

    /// Each word with its IDF among the counted notes and its [`Share`], for
    /// [`kept_any_words`](crate::store::query_words::kept_any_words): half when half the
    /// counted newest notes hold it.
    pub(super) fn shares(self) -> Vec<(Weighed, Share)> {
        let counted = self.counted;
        self.words
            .into_iter()
            .map(|word| {
                let share = if counted > 0 && word.newest_holding * 2 >= counted {
                    Share::Half
                } else if word.held_anywhere {
                    Share::Some
                } else {
                    Share::None
                };
                let weighed = Weighed {
                    idf: idf(word.newest_holding, counted),
                    query: word.query,
                };
                (weighed, share)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::postgres::{PgDatabase, testing};
    use crate::store::{NoteDraft, PutMode};

    /// Counted in a database (`PKB_TEST_POSTGRES`): a store's common word and its rare ones,
    /// the parts of a compound word among them, and a word the parser keeps with a quote.
    #[tokio::test]
    async fn a_store_s_counts_tell_its_rare_words_from_its_common_ones() {
        let Some(admin) = testing::admin_url() else {
            return;
        };
        let url = testing::database(&admin, "pkb_unit_tests").await;
        let database = PgDatabase::connect(&url, false).await.expect("connect");
        let key = testing::fresh_key();
        let drafts = (0..300)
            .map(|i| NoteDraft {
                id: format!("n{i:03}"),
                title: "Note".to_owned(),
                tags: Vec::new(),
                body: if i % 100 == 7 {
                    "a common word, a rarity: e-mail x.com/a'b".to_owned()
                } else {
                    "a common word".to_owned()
                },
            })
            .collect();
        let store = database.store_for(&key);
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        let notes = database.notes_for(&key);

        let counts = notes.word_counts("common rarity", false).await.unwrap();
        assert_eq!(counts.counted, SAMPLED);
        assert_eq!(
            counts.rare_words().as_deref(),
            Some("('rarity':* | '\u{1}rariti' | 'rariti')"),
            "the word's prefix, its stem, and the stem as a word"
        );

        let counts = notes.word_counts("common e-mail", false).await.unwrap();
        let rare = counts.rare_words().expect("rare words");
        let mut rare: Vec<&str> = rare.split(" & ").collect();
        rare.sort_unstable();
        assert_eq!(
            rare,
            [
                "('e':* | '\u{1}e')",
                "('e-mail':* | '\u{1}e-mail')",
                "('mail':* | '\u{1}mail')"
            ]
        );
        let found = store.search("common e-mail", &[], 10).await.unwrap();
        let mut found: Vec<String> = found.into_iter().map(|hit| hit.id).collect();
        found.sort();
        assert_eq!(found, ["n007", "n107", "n207"]);

        let counts = notes.word_counts("x.com/a'b common", false).await.unwrap();
        let quoted = counts
            .words
            .iter()
            .find(|word| word.query == "'x.com/a''b':* | '\u{1}x.com/a''b'")
            .expect("the word with its quote");
        // The newest 256 of the 300 notes hold two of the three.
        assert_eq!(quoted.newest_holding, 2);
    }

    fn words(counts: &[(&str, i64, bool)], counted: i64) -> WordCounts {
        let words = counts
            .iter()
            .map(|(query, holding, held)| WordCount {
                query: (*query).to_owned(),
                newest_holding: *holding,
                held_anywhere: *held,
            })
            .collect();
        WordCounts { words, counted }
    }

    #[test]
    fn rare_words_find_the_matches_when_common_ones_are_beside_them() {
        let counts = words(
            &[
                ("'hen':*", 120, true),
                ("'rockri':*", 1, true),
                ("'zyx':*", 0, false),
            ],
            256,
        );
        assert_eq!(
            counts.rare_words().as_deref(),
            Some("('rockri':*) & ('zyx':*)")
        );
        // 3% of 256 is 7.68: a word in 7 notes is rare, in 8 it is not.
        let edge = words(&[("'a':*", 7, true), ("'b':*", 8, true)], 256);
        assert_eq!(edge.rare_words().as_deref(), Some("('a':*)"));
    }

    #[test]
    fn a_query_of_only_rare_or_only_common_words_stays_with_the_index() {
        let rare = words(&[("'a':*", 1, true), ("'b':*", 2, true)], 256);
        assert_eq!(rare.rare_words(), None);
        let common = words(&[("'a':*", 90, true), ("'b':*", 200, true)], 256);
        assert_eq!(common.rare_words(), None);
        assert_eq!(words(&[("'a':*", 0, false)], 256).rare_words(), None);
        // No notes counted: nothing is known, and nothing is common.
        let none = words(&[("'a':*", 0, false), ("'b':*", 0, false)], 0);
        assert_eq!(none.rare_words(), None);
    }

    #[test]
    fn the_fewer_counted_notes_hold_a_word_the_more_it_weighs() {
        let counts = words(
            &[("'a':*", 100, true), ("'b':*", 3, true), ("'c':*", 0, true)],
            256,
        );
        let weights: Vec<f64> = counts.shares().iter().map(|(word, _)| word.idf).collect();
        assert!(
            weights[0] < weights[1] && weights[1] < weights[2],
            "{weights:?}"
        );
        assert_eq!(weights[2], idf(0, 256));
    }

    #[test]
    fn a_word_half_the_counted_notes_hold_has_half_the_share() {
        let counts = words(
            &[
                ("'the':*", 128, true),
                ("'of':*", 127, true),
                ("'deploy':*", 0, true),
                ("'zebra':*", 0, false),
            ],
            256,
        );
        let shares: Vec<(String, Share)> = counts
            .shares()
            .into_iter()
            .map(|(word, share)| (word.query, share))
            .collect();
        assert_eq!(
            shares,
            [
                ("'the':*".to_owned(), Share::Half),
                ("'of':*".to_owned(), Share::Some),
                ("'deploy':*".to_owned(), Share::Some),
                ("'zebra':*".to_owned(), Share::None),
            ]
        );
        assert_eq!(words(&[("'a':*", 0, false)], 0).shares()[0].1, Share::None);
    }
}
