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

use crate::store::query_words::Share;

/// The newest matches of `$MATCHES` (as row addresses; both parts of the statement run in its
/// one snapshot, in which a row's address does not change), ranked with the whole query:
/// `$1` owner, `$2` query text, `$3` tags, `$4` results, `$5` the ranking window.
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

/// How many of the user's newest notes are counted for each word of the query.
pub(super) const SAMPLED: i64 = 256;

/// Each word of the query (`$2`) as a prefix tsquery's text, how many of the user's (`$1`)
/// `$3` newest notes hold it, how many notes were counted, and whether some note of the user
/// holds it: a word none of the counted notes holds is looked up in the index when `$4`, and
/// taken as held by none otherwise. The words are the lexemes PostgreSQL's parser makes of the
/// folded query, as `pkb_query` makes them, so that each is implied by the whole query:
/// checking a row for the whole query after finding it through some of its words gives
/// exactly the query's matches.
pub(super) const WORD_COUNTS: &str = r#"
WITH newest AS (
    SELECT search FROM pkb_notes WHERE owner = $1 ORDER BY created_order DESC LIMIT $3
),
words AS (
    SELECT DISTINCT (E'\'' || replace(replace(lexeme, E'\\', E'\\\\'), '''', '''''')
        || E'\':*')::tsquery AS word
    FROM unnest(tsvector_to_array(to_tsvector('simple', pkb_fold($2)))) AS lexeme
)
SELECT word::text, counted.holding, (SELECT count(*) FROM newest),
    counted.holding > 0
        OR ($4 AND EXISTS (SELECT FROM pkb_notes WHERE owner = $1 AND search @@ word))
FROM words, LATERAL (SELECT count(*) AS holding FROM newest WHERE search @@ word) AS counted"#;

/// A word of a query, as [`WORD_COUNTS`] tells of it.
pub(super) struct WordCount {
    /// The word as a prefix tsquery's text.
    pub(super) text: String,
    /// How many of the counted notes hold it.
    pub(super) holding: i64,
    /// Whether some note holds it.
    pub(super) held: bool,
}

/// The share of the counted notes below which a word is rare: at 100,000 notes, 3% is 3,000
/// notes, whose index entries and rows cost about what the common word's check on them saves.
const RARE_SHARE: f64 = 0.03;

/// The query's rare words as one tsquery's text, when it has both rare and common ones, from
/// its `words` among `counted` notes. `None` leaves every word to the index, where it serves
/// as well (all of them rare: the index intersects short lists; all common: the newest notes
/// are read in order).
pub(super) fn rare_words(words: &[WordCount], counted: i64) -> Option<String> {
    let limit = RARE_SHARE * counted as f64;
    let (rare, common): (Vec<_>, Vec<_>) =
        words.iter().partition(|word| (word.holding as f64) < limit);
    if rare.is_empty() || common.is_empty() {
        return None;
    }
    let texts: Vec<&str> = rare.iter().map(|word| word.text.as_str()).collect();
    Some(texts.join(" & "))
}

/// Each of the query's `words` with its [`Share`] of the notes, for [`kept_any_words`](
/// crate::store::query_words::kept_any_words): half when half the `counted` newest notes hold
/// it.
pub(super) fn shares(words: Vec<WordCount>, counted: i64) -> Vec<(String, Share)> {
    words
        .into_iter()
        .map(|word| {
            let share = if counted > 0 && word.holding * 2 >= counted {
                Share::Half
            } else if word.held {
                Share::Some
            } else {
                Share::None
            };
            (word.text, share)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(counts: &[(&str, i64, bool)]) -> Vec<WordCount> {
        counts
            .iter()
            .map(|(text, holding, held)| WordCount {
                text: (*text).to_owned(),
                holding: *holding,
                held: *held,
            })
            .collect()
    }

    #[test]
    fn rare_words_find_the_matches_when_common_ones_are_beside_them() {
        let counts = words(&[
            ("'hen':*", 120, true),
            ("'rockri':*", 1, true),
            ("'zyx':*", 0, false),
        ]);
        assert_eq!(
            rare_words(&counts, 256).as_deref(),
            Some("'rockri':* & 'zyx':*")
        );
        // 3% of 256 is 7.68: a word in 7 notes is rare, in 8 it is not.
        let edge = words(&[("'a':*", 7, true), ("'b':*", 8, true)]);
        assert_eq!(rare_words(&edge, 256).as_deref(), Some("'a':*"));
    }

    #[test]
    fn a_query_of_only_rare_or_only_common_words_stays_with_the_index() {
        let rare = words(&[("'a':*", 1, true), ("'b':*", 2, true)]);
        assert_eq!(rare_words(&rare, 256), None);
        let common = words(&[("'a':*", 90, true), ("'b':*", 200, true)]);
        assert_eq!(rare_words(&common, 256), None);
        assert_eq!(rare_words(&words(&[("'a':*", 0, false)]), 256), None);
        // No notes counted: nothing is known, and nothing is common.
        let none = words(&[("'a':*", 0, false), ("'b':*", 0, false)]);
        assert_eq!(rare_words(&none, 0), None);
    }

    #[test]
    fn a_word_half_the_counted_notes_hold_has_half_the_share() {
        let counts = words(&[
            ("'the':*", 128, true),
            ("'of':*", 127, true),
            ("'deploy':*", 0, true),
            ("'zebra':*", 0, false),
        ]);
        assert_eq!(
            shares(counts, 256),
            [
                ("'the':*".to_owned(), Share::Half),
                ("'of':*".to_owned(), Share::Some),
                ("'deploy':*".to_owned(), Share::Some),
                ("'zebra':*".to_owned(), Share::None),
            ]
        );
        assert_eq!(
            shares(words(&[("'a':*", 0, false)]), 0),
            [("'a':*".to_owned(), Share::None)]
        );
    }
}
