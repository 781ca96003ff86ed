//! Search planned from the vocabulary, so that no query walks a whole doclist it can avoid.
//!
//! Each query word is folded by FTS5's own tokenizer and looked up in [`super::terms`]'s
//! vocabulary: the terms it starts and how many notes hold each. From those counts the
//! planner ([`route`]) picks the cheapest of three ways to rank the newest [`RANK_WINDOW`]
//! matches:
//!
//! - FTS5 with the words' exact terms ORed (no prefix merge at search time; a 2- or
//!   3-character word is the prefix the index keeps merged, see [`prefix_kept`]), scored by
//!   `pkb_rank` ([`super::bm25_rank`]), which takes the IDFs from the vocabulary where
//!   `bm25()` would walk every word's doclist to count its notes;
//! - candidates newest first from the rarest word's exact terms through FTS5, or from the tag
//!   index under a tag filter, each checked for every word and scored here from the counts
//!   kept per note, until the window is full;
//! - the scan: when the matches are a large share of the notes, every note's counts read
//!   newest first and scored here, with no FTS5 at all. If the matches turn out sparser than
//!   the counts predicted, the rest of the window comes from the rarest word's candidates.
//!
//! All three score alike: FTS5's BM25 formula and weights, each word's IDF from the
//! notes holding its terms (summed over a prefix's terms, where FTS5's prefix query counts
//! the notes holding any of them once), and its weighted count summed over its terms.
//!
//! A word FTS5 splits into several terms (`a—b`), or a prefix of more than [`MAX_EXPANSIONS`]
//! terms, leaves the query to FTS5's prefix query.

mod any_words;
mod executors;
mod scoring;

pub(super) use self::any_words::any_word_terms;
use self::executors::{
    ALL_TAGGED_SQL, CANDIDATES_SQL, CountLookup, RangeCounts, Ranking, TAGGED_SQL,
    look_up_in_batches, scan_newest,
};
pub(super) use self::scoring::bm25;
use self::scoring::{Scorer, average_length, idfs};

use rusqlite::{Connection, OptionalExtension, params};

use super::RANK_WINDOW;
use super::SearchHit;
use super::terms::{NoteTerms, VocabularyTerm};

/// Most terms one query word may expand to; a shorter prefix is left to FTS5.
pub(super) const MAX_EXPANSIONS: usize = 256;

/// Costs the planner weighs (see [`route`]), in nanoseconds: fitted to each route's time over
/// two sets of the store benchmark's queries at 100,000 notes, each query forced down every
/// route. `NS_PER_RANKED_ROW` fell from 1,650 once `pkb_rank` stopped reading the length of
/// rows that cannot make the results: with 1,000 and 600, the planner's p99 over both query
/// sets was 0.3-0.6 ms lower than with 1,650 (three alternating runs each), with no
/// difference between the two.
///
/// FTS5 seeks each term of the other words at every candidate. A seek costs
/// `NS_PER_SEEK_PER_TERM` while the term still has entries to step to, plus
/// `NS_PER_ENTRY_SKIPPED` for each entry it passes between two candidates, up to
/// `NS_PER_FAR_SEEK`, where the doclist's index takes it to a page of its own. This replaced a
/// cost per term and per candidate, which put a rare word beside a prefix of many rare terms
/// at twice its time (`tru foust`: 8.5 ms foreseen, 2.5 ms measured) and a common word beside
/// a rare one at half of it (`hor wenbeamlam`: 1.0 ms foreseen, 2.3 ms measured).
///
/// The rarest word's terms are stepped together: each over its own entries
/// (`NS_PER_ROW_PER_TERM`), and at every step each term's position is compared
/// (`NS_PER_TERM_COMPARED`). Charging every term the whole window instead sent single 3-letter
/// prefixes of 20-40 terms to the scan (`bea`: 4.2 ms, against 2.3 ms through FTS5); in the
/// fitted simulation over both query sets this took the planner's p99 from 3.79 to 3.30 and
/// 3.44 ms (the best route for each query: 3.30 ms).
const NS_PER_TERM_OPENED: f64 = 13_000.0;
const NS_PER_ROW_PER_TERM: f64 = 80.0;
const NS_PER_TERM_COMPARED: f64 = 20.0;
const NS_PER_SEEK_PER_TERM: f64 = 100.0;
const NS_PER_ENTRY_SKIPPED: f64 = 20.0;
const NS_PER_FAR_SEEK: f64 = 4_000.0;
const NS_PER_RANKED_ROW: f64 = 1_000.0;
const NS_PER_DENSE_READ: f64 = 1_700.0;
const NS_PER_SPARSE_READ: f64 = 3_500.0;
const NS_PER_NOTE_SCANNED: f64 = 700.0;

/// Reading the counts of every note in a range costs a small share of looking one note up (see
/// the costs above), so candidates spread over at most this many times their number are read as
/// a range.
const RANGE_READ_SPREAD: i64 = 4;

/// One query word: the ids of the terms it starts, and how many notes hold one of them.
struct Word {
    terms: Vec<u32>,
    /// How many notes each of the word's FTS5 phrases holds: one per term, or one for the
    /// whole word where FTS5 keeps its prefix (see [`prefix_kept`]).
    phrase_notes: Vec<i64>,
    notes: i64,
}

/// How a query is answered.
#[derive(Debug, PartialEq)]
pub(super) enum Plan {
    /// Ranked here; the hits.
    Ranked(Vec<SearchHit>),
    /// By FTS5 over a MATCH expression of exact terms, scored by `pkb_rank` with the
    /// vocabulary's IDFs.
    Fts5Terms(Fts5Terms),
    /// By FTS5 and `bm25()` over its own prefix query.
    Fts5Prefixes,
}

/// An FTS5 query of the words' exact terms, and what `pkb_rank` ([`super::bm25_rank`])
/// needs to score its matches as [`Scorer`] does.
#[derive(Debug, PartialEq)]
pub(super) struct Fts5Terms {
    /// Each word's terms ORed, the words ANDed.
    pub(super) expr: String,
    /// The word of each phrase of `expr`, one byte each.
    pub(super) words: Vec<u8>,
    /// Each word's IDF, as little-endian `f64`s.
    pub(super) idfs: Vec<u8>,
    pub(super) average_length: f64,
}

/// How large the store is, as its search statistics (`search_stats`) count it.
#[derive(Debug, Clone, Copy)]
pub(super) struct StoreSize {
    pub(super) notes: i64,
    /// Words in every note together.
    pub(super) tokens: i64,
}

impl StoreSize {
    /// The statistics, in the caller's snapshot.
    pub(super) fn read(conn: &Connection) -> rusqlite::Result<Self> {
        conn.prepare_cached("SELECT notes, tokens FROM search_stats WHERE id = 1")?
            .query_row([], |r| {
                Ok(StoreSize {
                    notes: r.get(0)?,
                    tokens: r.get(1)?,
                })
            })
    }
}

/// Searches as [`super::NoteBackend::search`] does, or says which FTS5 query to run instead.
/// `tags` are normalised; `tags_json` is their JSON array; `size` is read in the same snapshot.
pub(super) fn search(
    conn: &Connection,
    query: &str,
    tags: &[String],
    tags_json: &str,
    limit: usize,
    size: StoreSize,
) -> rusqlite::Result<Plan> {
    search_routed(conn, query, tags, tags_json, limit, size, None)
}

/// The ways of ranking a query; see the module's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Fts5Terms,
    /// Candidates from FTS5 (all words ANDed) or from the tag index, scored here.
    Here,
    /// Every note's counts read newest first and scored here; after this many notes without
    /// filling the window, the rest as [`Route::Here`].
    Scan(i64),
}

/// [`search`], taking `forced` instead of the planner's choice where the query allows it.
fn search_routed(
    conn: &Connection,
    query: &str,
    tags: &[String],
    tags_json: &str,
    limit: usize,
    StoreSize { notes, tokens }: StoreSize,
    forced: Option<Route>,
) -> rusqlite::Result<Plan> {
    let mut words = Vec::new();
    // Each word's MATCH expression: its exact terms ORed, or the prefix FTS5 keeps.
    let mut matches: Vec<String> = Vec::new();
    for word in crate::store::query_words::folded_words(query) {
        let word = &*word;
        let Some(term) = super::terms::query_term(conn, word)? else {
            return Ok(Plan::Fts5Prefixes);
        };
        let Some((word, phrases)) = expand(conn, &term)? else {
            return Ok(Plan::Fts5Prefixes);
        };
        if word.terms.is_empty() {
            return Ok(Plan::Ranked(Vec::new()));
        }
        matches.push(format!("({})", phrases.join(" OR ")));
        words.push(word);
    }
    if words.is_empty() || limit == 0 {
        return Ok(Plan::Ranked(Vec::new()));
    }
    if words.len() > usize::from(u8::MAX) {
        // More words than `pkb_rank` numbers; FTS5 ranks them alone.
        return Ok(Plan::Fts5Prefixes);
    }
    let mut chosen = forced.unwrap_or_else(|| route(&words, notes));
    if !tags.is_empty() && matches!(chosen, Route::Scan(_)) {
        // The scan does not know tags; the tag index is the better source anyway.
        chosen = Route::Here;
    }
    if forced.is_none() && chosen == Route::Fts5Terms {
        let rarest = words.iter().map(|w| w.notes).min().unwrap_or(0);
        if tag_is_rarer(conn, tags, rarest)? {
            // FTS5 would walk the word's matches for the few that carry the tag.
            chosen = Route::Here;
        }
    }
    tracing::trace!(query, ?chosen, "search route");
    let scan_budget = match chosen {
        Route::Fts5Terms => {
            return Ok(Plan::Fts5Terms(Fts5Terms {
                expr: matches.join(" AND "),
                words: words
                    .iter()
                    .enumerate()
                    .flat_map(|(i, w)| std::iter::repeat_n(i as u8, w.phrase_notes.len()))
                    .collect(),
                idfs: idfs(&words, notes)
                    .iter()
                    .flat_map(|idf| idf.to_le_bytes())
                    .collect(),
                average_length: average_length(notes, tokens),
            }));
        }
        Route::Here => 0,
        Route::Scan(budget) => budget,
    };

    let window = usize::try_from(RANK_WINDOW).unwrap_or(usize::MAX);
    let mut ranking = Ranking::new(Scorer::new(&words, notes, tokens), window);
    // Notes at or above this one have been looked at.
    let mut below = i64::MAX;
    if scan_budget > 0 {
        match scan_newest(conn, scan_budget, &mut ranking)? {
            Some(oldest) => below = oldest,
            None => return ranking.hits(conn, limit),
        }
    }

    // Candidates come newest first from the rarest word's exact terms through FTS5, or, with
    // tags, from the tag index: a tag filter is usually far more selective than a word common
    // enough to take this route. Each is checked for every word in its counts, which scoring
    // reads anyway; left to FTS5, an AND would seek every term of every other word at each
    // candidate.
    let rarest = (0..words.len())
        .min_by_key(|&i| words[i].notes)
        .unwrap_or(0);
    let mut candidates;
    let (mut rows, held) = match tags {
        [] => {
            candidates = conn.prepare_cached(CANDIDATES_SQL)?;
            let rows = candidates.query(params![matches[rarest], below])?;
            (rows, words[rarest].notes as f64)
        }
        [tag] => {
            let held: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM note_tags WHERE tag = ?1 LIMIT ?2)",
                )?
                .query_row(
                    params![tag, (notes + RANGE_READ_SPREAD - 1) / RANGE_READ_SPREAD],
                    |r| r.get(0),
                )?;
            candidates = conn.prepare_cached(TAGGED_SQL)?;
            (candidates.query([tag])?, held as f64)
        }
        _ => {
            let wanted = i64::try_from(tags.len()).unwrap_or(i64::MAX);
            candidates = conn.prepare_cached(ALL_TAGGED_SQL)?;
            (candidates.query(params![tags_json, wanted])?, 0.0)
        }
    };
    if dense(held, notes) {
        let mut counts = RangeCounts::new(conn)?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            if let Some(blob) = counts.read(seq)? {
                ranking.offer(seq, blob);
                if ranking.full() {
                    break;
                }
            }
        }
    } else {
        // The share of candidates expected to hold every word.
        let matching = expected_matches(&words, notes)
            / if tags.is_empty() {
                words[rarest].notes
            } else {
                notes
            }
            .max(1) as f64;
        look_up_in_batches(
            &mut rows,
            &mut CountLookup::new(conn)?,
            &mut ranking,
            matching,
        )?;
    }
    drop(rows);
    ranking.hits(conn, limit)
}

/// Whether one of `tags` is on far fewer notes than a word held by `notes` notes, so that the
/// tag index is the better source of candidates. Counts at most a few thousand of its notes.
fn tag_is_rarer(conn: &Connection, tags: &[String], notes: i64) -> rusqlite::Result<bool> {
    let enough = (notes / 4).min(5_000);
    let mut count = conn
        .prepare_cached("SELECT count(*) FROM (SELECT 1 FROM note_tags WHERE tag = ?1 LIMIT ?2)")?;
    for tag in tags {
        if count.query_row(params![tag, enough], |r| r.get::<_, i64>(0))? < enough {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How many notes are expected to hold every word, taking the words as independent.
fn expected_matches(words: &[Word], notes: i64) -> f64 {
    let total = notes.max(1) as f64;
    words
        .iter()
        .map(|w| (w.notes as f64 / total).min(1.0))
        .product::<f64>()
        * total
}

/// Whether `held` of `notes` notes lie close enough together for range reads.
fn dense(held: f64, notes: i64) -> bool {
    held * RANGE_READ_SPREAD as f64 >= notes as f64
}

/// The cheapest route for `words` in a store of `notes` notes, from the costs the routes are
/// measured at. Words are taken as independent to estimate how many notes hold them all.
///
/// - FTS5 steps through the rarest word's terms until the window holds enough matches,
///   seeking every other word's terms at each (the more entries a seek passes, the dearer),
///   and `pkb_rank` scores each match.
/// - Scoring here steps through the rarest word's terms the same way but reads each
///   candidate's counts instead of seeking: a range read when the word is in a quarter of the
///   notes or more, so that the window's candidates lie close together, a lookup otherwise.
/// - The scan reads notes newest first until the window is full, with no FTS5 at all: as many
///   notes as the window needs at the matches' share of all notes.
fn route(words: &[Word], notes: i64) -> Route {
    let total = notes.max(1) as f64;
    let window = RANK_WINDOW as f64;
    let expected = expected_matches(words, notes);
    let rarest_index = (0..words.len())
        .min_by_key(|&i| words[i].notes)
        .unwrap_or(0);
    let rarest = &words[rarest_index];
    let share = (expected / rarest.notes.max(1) as f64).clamp(1e-6, 1.0);
    let candidates = (window / share).min(rarest.notes as f64);
    // Each term of the rarest word is stepped only over its share of the candidates, but
    // every step compares all of its terms' positions.
    let reach = candidates / rarest.notes.max(1) as f64;
    let stepped: f64 = rarest
        .phrase_notes
        .iter()
        .map(|&phrase_notes| {
            NS_PER_TERM_OPENED
                + phrase_notes.min(notes) as f64 * reach * NS_PER_ROW_PER_TERM
                + candidates * NS_PER_TERM_COMPARED
        })
        .sum();

    let others = words
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != rarest_index)
        .flat_map(|(_, word)| &word.phrase_notes);
    let mut seeks = 0.0;
    let mut other_terms = 0.0;
    for &phrase_notes in others {
        // The phrase's entries between two of the rarest word's notes.
        let between = phrase_notes.min(notes) as f64 / rarest.notes.max(1) as f64;
        seeks += NS_PER_SEEK_PER_TERM * between.min(1.0)
            + (between * NS_PER_ENTRY_SKIPPED).min(NS_PER_FAR_SEEK);
        other_terms += 1.0;
    }
    let fts5 = stepped
        + other_terms * NS_PER_TERM_OPENED
        + candidates * seeks
        + expected.min(window) * NS_PER_RANKED_ROW;
    let read = if dense(rarest.notes as f64, notes) {
        NS_PER_DENSE_READ
    } else {
        NS_PER_SPARSE_READ
    };
    let here = stepped + candidates * read;
    let scanned = (window * total / expected.max(1.0)).min(total);
    let scan = scanned * NS_PER_NOTE_SCANNED;

    if scan < here.min(fts5) {
        // Twice the notes expected, in case the words are less independent than taken.
        Route::Scan((scanned * 2.0) as i64 + 256)
    } else if fts5 < here {
        Route::Fts5Terms
    } else {
        Route::Here
    }
}

/// The terms starting with `prefix`, then its inflected forms that do not
/// ([`super::terms::forms_beyond_prefix`]), and the FTS5 phrases for them; `None` when more
/// than [`MAX_EXPANSIONS`] terms start with it.
fn expand(conn: &Connection, prefix: &str) -> rusqlite::Result<Option<(Word, Vec<String>)>> {
    // Every term starting with `prefix` sorts at or after it and before `prefix` followed by
    // the greatest character.
    let end = format!("{prefix}{}", char::MAX);
    let mut stmt = conn.prepare_cached(
        "SELECT id, term, notes FROM search_terms WHERE term >= ?1 AND term < ?2 LIMIT ?3",
    )?;
    let probe = i64::try_from(MAX_EXPANSIONS + 1).unwrap_or(i64::MAX);
    let mut rows = stmt.query(params![prefix, end, probe])?;
    let mut word = Word {
        terms: Vec::new(),
        phrase_notes: Vec::new(),
        notes: 0,
    };
    let mut phrases = Vec::new();
    fn add(word: &mut Word, phrases: &mut Vec<String>, (id, term, notes): VocabularyTerm) {
        word.terms.push(u32::try_from(id).unwrap_or(u32::MAX));
        phrases.push(format!("\"{}\"", term.replace('"', "\"\"")));
        word.phrase_notes.push(notes);
        word.notes = word.notes.saturating_add(notes);
    }
    while let Some(row) = rows.next()? {
        if word.terms.len() == MAX_EXPANSIONS {
            return Ok(None);
        }
        add(
            &mut word,
            &mut phrases,
            (row.get(0)?, row.get(1)?, row.get(2)?),
        );
    }
    if word.terms.len() > 1 && prefix_kept(prefix) {
        // One doclist, merged when the index was written, instead of one per term.
        phrases.clear();
        phrases.push(format!("\"{}\"*", prefix.replace('"', "\"\"")));
        word.phrase_notes = vec![word.notes];
    }
    // Each form is one term more, none of them among those the prefix starts: a note holding
    // both counts each once, as it does for two terms of a prefix.
    for form in super::terms::forms_beyond_prefix(conn, prefix)? {
        add(&mut word, &mut phrases, form);
    }
    Ok(Some((word, phrases)))
}

/// Whether FTS5 keeps the notes of every term starting with `prefix` together, as it does for
/// prefixes of the lengths in the index's `prefix` option (schema version 3 on).
fn prefix_kept(prefix: &str) -> bool {
    super::schema::KEPT_PREFIX_CHARS.contains(&prefix.chars().count())
}

#[cfg(test)]
mod tests {
    use super::super::SqliteBackend;
    use super::super::search::{Matching, fts5_search};
    use super::*;
    use crate::store::sqlite::NoteBackend;
    use crate::store::sqlite::{query, terms};
    use crate::store::{NoteDraft, PutMode};

    /// Words sharing prefixes, with capitals and diacritics the index folds.
    const WORDS: &[&str] = &[
        "deploy",
        "deployment",
        "Deployed",
        "depth",
        "café",
        "cafe",
        "cafeteria",
        "Über",
        "uber",
        "group",
        "grow",
        "growth",
        "ground",
        "grocery",
        "rare",
        "alpha",
        "alphabet",
        "x1",
        "x10",
        "x100",
        "note",
        "notes",
        "noted",
        "naïve",
        "naive",
    ];

    /// Every route a query can be forced to, the scan whole, handing over to FTS5's candidates
    /// at once, and part way.
    const ROUTES: [Route; 5] = [
        Route::Here,
        Route::Fts5Terms,
        Route::Scan(i64::MAX),
        Route::Scan(1),
        Route::Scan(40),
    ];

    fn corpus() -> SqliteBackend {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let mut state = 0x2545_f491_u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            ((state >> 33) as usize) % n
        };
        let mut pick =
            |count: usize| -> Vec<&str> { (0..count).map(|_| WORDS[next(WORDS.len())]).collect() };
        for i in 0..240 {
            let draft = NoteDraft {
                id: format!("n{i}"),
                title: pick(1 + i % 3).join(" "),
                tags: pick(i % 3).iter().map(|t| t.to_lowercase()).collect(),
                body: pick(5 + i % 20).join(" "),
            };
            backend
                .put(
                    draft,
                    PutMode::CreateOnly,
                    &crate::store::Provenance::write("test"),
                )
                .unwrap();
        }
        // Replacements and deletions must leave the vocabulary as if never written.
        for i in (0..240).step_by(7) {
            let draft = NoteDraft {
                id: format!("n{i}"),
                title: pick(2).join(" "),
                tags: vec!["t".to_owned()],
                body: pick(8).join(" "),
            };
            backend
                .put(
                    draft,
                    PutMode::Replace,
                    &crate::store::Provenance::write("test"),
                )
                .unwrap();
        }
        for i in (3..240).step_by(11) {
            assert!(backend.delete(&format!("n{i}"), "test").unwrap());
        }
        backend
    }

    fn queries() -> Vec<String> {
        let mut out = Vec::new();
        for w in WORDS {
            let chars: Vec<char> = w.chars().collect();
            for n in 1..=chars.len() {
                out.push(chars[..n].iter().collect());
            }
        }
        out.extend(
            [
                "deploy gro",
                "x1 note",
                "cafe naive",
                "ALPHA alphab",
                "rare rare",
                "zzz",
            ]
            .map(String::from),
        );
        out
    }

    /// The hits of `q` by `route`, or `None` when the query cannot take it.
    fn routed(
        conn: &Connection,
        q: &str,
        tags: &[String],
        route: Route,
    ) -> rusqlite::Result<Option<Vec<SearchHit>>> {
        routed_best(conn, q, tags, route, 1000)
    }

    /// [`routed`], keeping at most `limit` hits.
    fn routed_best(
        conn: &Connection,
        q: &str,
        tags: &[String],
        route: Route,
        limit: usize,
    ) -> rusqlite::Result<Option<Vec<SearchHit>>> {
        let wanted = super::super::rows::tags_to_json(tags.iter().map(String::as_str));
        let size = StoreSize::read(conn)?;
        Ok(
            match search_routed(conn, q, tags, &wanted, limit, size, Some(route))? {
                Plan::Ranked(hits) => Some(hits),
                Plan::Fts5Terms(terms) => Some(fts5_search(
                    conn,
                    Matching::Terms(&terms),
                    tags,
                    &wanted,
                    limit,
                    RANK_WINDOW,
                )?),
                Plan::Fts5Prefixes => None,
            },
        )
    }

    /// The hits of FTS5's own prefix query for `q`, each word with its inflected forms.
    fn by_prefixes(conn: &Connection, q: &str, tags: &[String]) -> Vec<SearchHit> {
        let wanted = super::super::rows::tags_to_json(tags.iter().map(String::as_str));
        let expr = query::stemmed_match_expression(q, |word| terms::query_forms(conn, word))
            .unwrap()
            .unwrap();
        fts5_search(
            conn,
            Matching::Prefixes(&expr),
            tags,
            &wanted,
            1000,
            RANK_WINDOW,
        )
        .unwrap()
    }

    #[test]
    fn every_route_finds_exactly_what_fts5_prefix_queries_find() {
        let backend = corpus();
        let mut taken = 0;
        for q in queries() {
            for tags in [
                vec![],
                vec!["t".to_owned()],
                vec!["deploy".to_owned(), "grow".to_owned()],
            ] {
                for route in ROUTES {
                    let (got, want) = backend.read_for_tests(|conn| {
                        Ok((
                            routed(conn, &q, &tags, route)?,
                            by_prefixes(conn, &q, &tags),
                        ))
                    });
                    let Some(got) = got else { continue };
                    taken += 1;
                    let mut got: Vec<&str> = got.iter().map(|h| h.id.as_str()).collect();
                    let mut want: Vec<&str> = want.iter().map(|h| h.id.as_str()).collect();
                    got.sort_unstable();
                    want.sort_unstable();
                    assert_eq!(got, want, "query {q:?}, tags {tags:?}, {route:?}");
                }
            }
        }
        assert!(taken > 400, "most queries take the vocabulary: {taken}");
    }

    #[test]
    fn pkb_rank_skipping_rows_that_cannot_make_the_results_changes_no_result() {
        let backend = corpus();
        let mut compared = 0;
        for q in queries() {
            for tags in [vec![], vec!["t".to_owned()]] {
                let every = backend
                    .read_for_tests(|conn| routed_best(conn, &q, &tags, Route::Fts5Terms, 1000));
                let Some(every) = every else { continue };
                for limit in [1, 2, 3, 10] {
                    let best = backend
                        .read_for_tests(|conn| {
                            routed_best(conn, &q, &tags, Route::Fts5Terms, limit)
                        })
                        .unwrap();
                    let want = &every[..limit.min(every.len())];
                    let ids = |hits: &[SearchHit]| -> Vec<String> {
                        hits.iter().map(|h| h.id.clone()).collect()
                    };
                    assert_eq!(ids(&best), ids(want), "query {q:?}, tags {tags:?}, {limit}");
                    for (b, w) in best.iter().zip(want) {
                        assert_eq!(b.score.to_bits(), w.score.to_bits(), "query {q:?}");
                    }
                    compared += 1;
                }
            }
        }
        assert!(
            compared > 200,
            "most queries take the vocabulary: {compared}"
        );
    }

    #[test]
    fn every_route_ranks_the_same_window_of_newest_matches() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let window = usize::try_from(RANK_WINDOW).unwrap();
        // Five times the window, so that a word in two notes of nine fills the window while
        // too sparse for range reads.
        let drafts = (0..window * 5)
            .map(|i| {
                let mut body = vec!["common"];
                if i % 9 < 2 {
                    body.push("sparse");
                }
                if i % 2 == 0 {
                    body.push("half");
                }
                if i % 3 == 0 {
                    body.push("third");
                }
                body.push(if i % 5 == 0 { "deployment" } else { "deploy" });
                NoteDraft {
                    id: format!("n{i}"),
                    title: format!("Note {}", i % 7),
                    tags: Vec::new(),
                    body: body.join(" "),
                }
            })
            .collect();
        backend
            .put_many(
                drafts,
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        for q in [
            "common",
            "half",
            "third",
            "sparse",
            "common third",
            "half third",
            "sparse half",
            "dep",
            "com hal",
        ] {
            for route in ROUTES {
                let (got, want) = backend.read_for_tests(|conn| {
                    Ok((
                        routed(conn, q, &[], route)?.unwrap(),
                        by_prefixes(conn, q, &[]),
                    ))
                });
                let mut got: Vec<&str> = got.iter().map(|h| h.id.as_str()).collect();
                let mut want: Vec<&str> = want.iter().map(|h| h.id.as_str()).collect();
                got.sort_unstable();
                want.sort_unstable();
                assert_eq!(got, want, "query {q:?}, {route:?}");
            }
        }
    }

    #[test]
    fn every_vocabulary_route_gives_the_same_scores() {
        let backend = corpus();
        let mut compared = 0;
        for q in queries() {
            for tags in [vec![], vec!["t".to_owned()]] {
                let scored = |route| {
                    backend.read_for_tests(|conn| {
                        let hits = routed(conn, &q, &tags, route)?;
                        Ok(hits.map(|hits| {
                            let mut hits: Vec<(String, f64)> =
                                hits.into_iter().map(|h| (h.id, h.score)).collect();
                            hits.sort_by(|a, b| a.0.cmp(&b.0));
                            hits
                        }))
                    })
                };
                let Some(here) = scored(Route::Here) else {
                    continue;
                };
                for route in ROUTES {
                    let other = scored(route).expect("same words, same routes");
                    assert_eq!(other.len(), here.len(), "{q:?} {tags:?} {route:?}");
                    for (a, b) in other.iter().zip(&here) {
                        assert_eq!(a.0, b.0, "{q:?} {tags:?} {route:?}");
                        assert!(
                            (a.1 - b.1).abs() < 1e-9 * b.1.abs().max(1.0),
                            "{q:?} {tags:?} {route:?}: {a:?} vs {b:?}"
                        );
                    }
                    compared += other.len();
                }
            }
        }
        assert!(compared > 1_000, "compared {compared} scores");
    }

    #[test]
    fn a_two_or_three_letter_word_is_read_from_the_prefix_fts5_keeps() {
        let backend = corpus();
        let expr = |q: &str| {
            backend.read_for_tests(|conn| {
                let size = StoreSize::read(conn)?;
                match search_routed(conn, q, &[], "[]", 10, size, Some(Route::Fts5Terms))? {
                    Plan::Fts5Terms(terms) => Ok(terms.expr),
                    other => panic!("{q}: {other:?}"),
                }
            })
        };
        // `gr` and `gro` start group, grow and growth; `grow` starts grow and growth.
        assert_eq!(expr("gr"), r#"("gr"*)"#);
        assert_eq!(
            expr("gro deploy"),
            r#"("gro"*) AND ("deploy" OR "deployed" OR "deployment")"#
        );
        let four = expr("grow");
        assert!(four.contains(r#""grow" OR "growth""#), "{four}");
        assert_eq!(
            expr("noted"),
            r#"("noted" OR "note" OR "notes")"#,
            "the forms of its stem that it does not start"
        );
    }

    #[test]
    fn counts_of_a_note_deleted_behind_the_vocabulary_do_not_fail_a_search() {
        let backend = corpus();
        let scan = Route::Scan(i64::MAX);
        let before = backend.read_for_tests(|conn| routed(conn, "n", &[], scan));
        let gone = before.expect("`n` takes the vocabulary")[0].id.clone();
        // What a build from before the vocabulary does to delete a note: FTS5 and the row,
        // not the counts.
        backend.read_for_tests(|conn| {
            conn.execute(
                "INSERT INTO notes_fts (notes_fts, rowid, title, tags, body)
                     SELECT 'delete', seq, title, tags, body FROM notes WHERE id = ?1",
                [&gone],
            )?;
            conn.execute("DELETE FROM notes WHERE id = ?1", [&gone])
        });
        for route in ROUTES {
            let hits = backend.read_for_tests(|conn| routed(conn, "n", &[], route));
            let hits = hits.expect("`n` takes the vocabulary");
            assert!(!hits.is_empty(), "{route:?}");
            assert!(
                hits.iter().all(|h| h.id != gone),
                "{route:?}: {gone} is gone"
            );
        }
    }

    #[test]
    fn a_word_of_one_term_scores_as_fts5_bm25_does_on_every_route() {
        let backend = corpus();
        // Words without inflected forms in the corpus: FTS5's bm25() scores each form as a
        // phrase of its own, where the routes sum a word's forms.
        for q in ["rare", "depth", "grocery", "alphabet growth", "x100"] {
            for route in ROUTES {
                let (got, want) = backend.read_for_tests(|conn| {
                    Ok((
                        routed(conn, q, &[], route)?.unwrap(),
                        by_prefixes(conn, q, &[]),
                    ))
                });
                assert_eq!(got.len(), want.len(), "{q}");
                for (a, b) in got.iter().zip(&want) {
                    assert_eq!(a.id, b.id, "{q} {route:?}: same order");
                    assert!(
                        (a.score - b.score).abs() < 1e-9 * b.score.abs().max(1.0),
                        "{q} {route:?}: {a:?} vs {b:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_planner_takes_the_cheapest_route_for_rare_and_common_words() {
        let prefix = |notes: i64, terms: u32| Word {
            terms: (0..terms).collect(),
            phrase_notes: vec![notes / i64::from(terms); terms as usize],
            notes,
        };
        let word = |notes| prefix(notes, 1);
        let n = 100_000;
        assert_eq!(
            route(&[word(300)], n),
            Route::Fts5Terms,
            "rare: FTS5 steps through its few notes"
        );
        assert_eq!(route(&[word(300), word(4_000)], n), Route::Fts5Terms);
        assert!(
            matches!(route(&[word(90_000)], n), Route::Scan(budget) if budget > 2_000),
            "in most notes: the newest notes hold the window"
        );
        assert_eq!(
            route(&[word(10_000)], n),
            Route::Fts5Terms,
            "sparse: FTS5 steps through it, cheaper than looking each note up"
        );
        assert_eq!(
            route(&[word(90_000), word(300)], n),
            Route::Here,
            "a common word beside a rare one: each seek jumps a page of the common one's doclist"
        );
        assert_eq!(
            route(&[prefix(21_700, 30)], n),
            Route::Fts5Terms,
            "a short prefix of many terms: each term is stepped over its share of the window only"
        );
        assert_eq!(
            route(&[prefix(46_000, 22), word(4_096)], n),
            Route::Fts5Terms,
            "a prefix of many rarer terms beside a mid-frequency word: most seeks pass few entries"
        );
        assert_eq!(
            route(&[prefix(90_000, 60), word(300)], n),
            Route::Here,
            "a common prefix beside a rare word: one lookup beats sixty seeks"
        );
        // A prefix FTS5 keeps is one phrase however many terms it starts.
        let kept = |notes: i64| Word {
            terms: (0..50).collect(),
            phrase_notes: vec![notes],
            notes,
        };
        assert_eq!(
            route(&[kept(54_000), kept(36_000)], n),
            Route::Fts5Terms,
            "two kept prefixes (`pon nö`): two doclists stepped together"
        );
        assert_eq!(
            route(&[kept(62_000), word(2_457)], n),
            Route::Fts5Terms,
            "a kept prefix beside a mid-frequency word (`cha stait`): one seek per candidate"
        );
    }

    #[test]
    fn a_tag_on_far_fewer_notes_than_the_words_supplies_the_candidates() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let drafts = (0..400)
            .map(|i| NoteDraft {
                id: format!("n{i}"),
                title: "Common".to_owned(),
                tags: if i % 40 == 0 {
                    vec!["everywhere".to_owned(), "seldom".to_owned()]
                } else {
                    vec!["everywhere".to_owned()]
                },
                body: "common words".to_owned(),
            })
            .collect();
        backend
            .put_many(
                drafts,
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let tags = |t: &[&str]| t.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
        backend.read_for_tests(|conn| {
            assert!(tag_is_rarer(conn, &tags(&["seldom"]), 400)?);
            assert!(tag_is_rarer(conn, &tags(&["everywhere", "seldom"]), 400)?);
            assert!(!tag_is_rarer(conn, &tags(&["everywhere"]), 400)?);
            assert!(
                !tag_is_rarer(conn, &tags(&["seldom"]), 30)?,
                "the word is rarer"
            );
            Ok(())
        });
    }

    #[test]
    fn split_words_and_long_expansions_are_left_to_fts5() {
        let backend = corpus();
        backend.read_for_tests(|conn| {
            for q in ["café", "NAÏVE", "cafe"] {
                assert!(routed(conn, q, &[], Route::Here)?.is_some(), "{q}");
            }
            assert!(
                routed(conn, "a\u{2014}b", &[], Route::Here)?.is_none(),
                "two terms"
            );
            assert_eq!(routed(conn, "zzz", &[], Route::Here)?, Some(Vec::new()));
            Ok(())
        });
        let many = SqliteBackend::open_in_memory(false).unwrap();
        let body: Vec<String> = (0..MAX_EXPANSIONS + 6).map(|i| format!("zq{i}")).collect();
        let draft = NoteDraft {
            id: "many".to_owned(),
            title: "Many".to_owned(),
            tags: Vec::new(),
            body: body.join(" "),
        };
        many.put(
            draft,
            PutMode::CreateOnly,
            &crate::store::Provenance::write("test"),
        )
        .unwrap();
        many.read_for_tests(|conn| {
            assert!(
                routed(conn, "zq", &[], Route::Here)?.is_none(),
                "more than MAX_EXPANSIONS terms: FTS5's prefix query"
            );
            let hits = routed(conn, "zq1", &[], Route::Here)?.expect("a few terms: the vocabulary");
            assert_eq!(hits.len(), 1);
            Ok(())
        });
        assert_eq!(
            many.search("zq", &[], 10).unwrap().len(),
            1,
            "found either way"
        );
    }
}
