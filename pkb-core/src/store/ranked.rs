//! Search planned from the vocabulary, so that no query walks a whole doclist it can avoid.
//!
//! Each query word is folded by FTS5's own tokenizer and looked up in [`super::terms`]'s
//! vocabulary: the terms it starts and how many notes hold each. From those counts the
//! planner picks the cheapest of three ways to rank the newest [`RANK_WINDOW`] matches:
//!
//! - every word is rare: FTS5's own prefix query and `bm25()`, whose doclist walks are short;
//! - otherwise, when walking every word's doclist for `bm25()`'s IDF costs less than reading
//!   the candidates' counts: FTS5 with the words' exact terms ORed (no prefix merge) and
//!   `bm25()`;
//! - otherwise (a word in a large share of the notes): candidates come newest first from the
//!   rarest word's exact terms through FTS5, or from the tag index under a tag filter; each is
//!   checked for every word and scored here from the counts kept per note and the
//!   vocabulary's IDF, with FTS5's formula, until the window is full.
//!
//! The routes rank a prefix slightly differently (FTS5's prefix query gives it one IDF over
//! the notes holding any of its terms; `bm25()` over exact terms gives each term its own;
//! scoring here sums the terms' note counts), all BM25 with the same weights.
//!
//! A word FTS5 splits into several terms (`a—b`), or a prefix of more than [`MAX_EXPANSIONS`]
//! terms, leaves the query to FTS5's prefix query.

use rusqlite::{Connection, params};

use super::SearchHit;
use super::sqlite::RANK_WINDOW;
use super::terms::NoteTerms;

/// Most terms one query word may expand to; a shorter prefix is left to FTS5.
pub(super) const MAX_EXPANSIONS: usize = 256;

/// A query whose every word is held by at most this many notes (summed over a prefix's terms)
/// is left to FTS5's prefix query, which is then cheap and ranks exactly as FTS5 does.
pub(super) const FTS5_RANKS_UP_TO: i64 = 5_000;

/// Measured costs on the benchmark machine, in nanoseconds, that the planner weighs: one
/// doclist entry walked by `bm25()`'s IDF pass; one candidate scored by `bm25()`; one
/// candidate's counts read where the candidates are dense (a range read) or sparse (a lookup).
const NS_PER_DOCLIST_ENTRY: f64 = 80.0;
const NS_PER_BM25_ROW: f64 = 1_000.0;
const NS_PER_DENSE_READ: f64 = 500.0;
const NS_PER_SPARSE_READ: f64 = 9_000.0;

/// BM25's term-frequency saturation and length normalisation, as FTS5's `bm25()` has them.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The notes holding a term of one word (`?1`), newest first.
const CANDIDATES_SQL: &str =
    "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?1 ORDER BY rowid DESC";

/// The notes carrying tag `?1`, newest first.
const TAGGED_SQL: &str = "SELECT note FROM note_tags WHERE tag = ?1 ORDER BY note DESC";

/// The notes carrying all `?2` tags of the JSON array `?1`, newest first.
const ALL_TAGGED_SQL: &str = "
SELECT note FROM note_tags WHERE tag IN (SELECT value FROM json_each(?1))
GROUP BY note HAVING count(*) = ?2
ORDER BY note DESC";

/// Reading the counts of every note in a range costs a small share of looking one note up (see
/// the costs above), so candidates spread over at most this many times their number are read as
/// a range.
const RANGE_READ_SPREAD: i64 = 4;

/// One query word: the ids of the terms it starts, and how many notes hold one of them.
struct Word {
    terms: Vec<u32>,
    notes: i64,
}

/// How a query is answered.
#[derive(Debug, PartialEq)]
pub(super) enum Plan {
    /// Ranked here; the hits.
    Ranked(Vec<SearchHit>),
    /// By FTS5 and `bm25()` over this MATCH expression of exact terms.
    Fts5Terms(String),
    /// By FTS5 and `bm25()` over its own prefix query.
    Fts5Prefixes,
}

/// Searches as [`super::NoteBackend::search`] does, or says which FTS5 query to run instead.
/// `tags` are normalised; `tags_json` is their JSON array.
pub(super) fn search(
    conn: &Connection,
    query: &str,
    tags: &[String],
    tags_json: &str,
    limit: usize,
) -> rusqlite::Result<Plan> {
    search_routed(conn, query, tags, tags_json, limit, None)
}

/// The three ways of ranking a query; see the module's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Fts5Prefixes,
    Fts5Terms,
    Here,
}

/// [`search`], taking `forced` instead of the planner's choice where the query allows it.
fn search_routed(
    conn: &Connection,
    query: &str,
    tags: &[String],
    tags_json: &str,
    limit: usize,
    forced: Option<Route>,
) -> rusqlite::Result<Plan> {
    let mut words = Vec::new();
    // Each word's MATCH expression: its exact terms ORed.
    let mut matches: Vec<String> = Vec::new();
    for word in super::query::words(query) {
        // FTS5 only lowercases ASCII letters and digits; anything else goes through its
        // tokenizer, which folds case and diacritics its own way.
        let term = if word.bytes().all(|b| b.is_ascii_alphanumeric()) {
            word.to_ascii_lowercase()
        } else {
            match super::terms::query_term(conn, word)? {
                Some(term) => term,
                None => return Ok(Plan::Fts5Prefixes),
            }
        };
        let Some((word, terms)) = expand(conn, &term)? else {
            return Ok(Plan::Fts5Prefixes);
        };
        if word.terms.is_empty() {
            return Ok(Plan::Ranked(Vec::new()));
        }
        matches.push(format!("({})", terms.join(" OR ")));
        words.push(word);
    }
    if words.is_empty() || limit == 0 {
        return Ok(Plan::Ranked(Vec::new()));
    }
    let (notes, tokens): (i64, i64) = conn
        .prepare_cached("SELECT notes, tokens FROM search_stats WHERE id = 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    match forced.unwrap_or_else(|| route(&words, notes)) {
        Route::Fts5Prefixes => return Ok(Plan::Fts5Prefixes),
        Route::Fts5Terms => return Ok(Plan::Fts5Terms(matches.join(" AND "))),
        Route::Here => {}
    }

    // Candidates come newest first from the rarest word's terms through FTS5, or, with tags,
    // from the tag index: a tag filter is usually far more selective than a word common
    // enough to take this route. Every word is then checked in the candidate's counts, which
    // scoring reads anyway; left to FTS5, an AND would seek every term of every other word at
    // each candidate.
    let scorer = Scorer::new(&words, notes, tokens);
    let rarest = (0..words.len())
        .min_by_key(|&i| words[i].notes)
        .unwrap_or(0);
    let dense_if = |held: i64| held.saturating_mul(RANGE_READ_SPREAD) >= notes;
    let mut candidates;
    let (mut rows, dense) = match tags {
        [] => {
            candidates = conn.prepare_cached(CANDIDATES_SQL)?;
            let dense = dense_if(words[rarest].notes);
            (candidates.query(params![matches[rarest]])?, dense)
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
            (candidates.query([tag])?, dense_if(held))
        }
        _ => {
            let wanted = i64::try_from(tags.len()).unwrap_or(i64::MAX);
            candidates = conn.prepare_cached(ALL_TAGGED_SQL)?;
            (candidates.query(params![tags_json, wanted])?, false)
        }
    };
    let mut counts = NoteCounts::new(conn, dense)?;
    let window = usize::try_from(RANK_WINDOW).unwrap_or(usize::MAX);
    let mut scored = Vec::new();
    while let Some(row) = rows.next()? {
        let seq: i64 = row.get(0)?;
        if let Some(score) = counts.read(seq)?.and_then(|blob| scorer.score(blob)) {
            scored.push((score, seq));
            if scored.len() == window {
                break;
            }
        }
    }
    drop(rows);

    // Best first; ties go to the newer note, as with FTS5's ranking.
    scored.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    scored.truncate(limit);
    let mut note = conn.prepare_cached("SELECT id, title, tags FROM notes WHERE seq = ?1")?;
    let mut hits = Vec::with_capacity(scored.len());
    for (score, seq) in scored {
        hits.push(note.query_row([seq], |r| {
            Ok(SearchHit {
                id: r.get(0)?,
                title: r.get(1)?,
                tags: super::sqlite::tags_from_json(r, 2)?,
                score,
            })
        })?);
    }
    Ok(Plan::Ranked(hits))
}

/// The cheapest route for `words` in a store of `notes` notes.
///
/// `bm25()` walks the doclist of every term once for its IDF, then scores each candidate.
/// Scoring here reads each candidate's counts: in one range read when the candidates are
/// dense (the rarest word is in a quarter of the notes or more, so the window's matches lie
/// close together), one lookup each otherwise.
fn route(words: &[Word], notes: i64) -> Route {
    if words.iter().all(|w| w.notes <= FTS5_RANKS_UP_TO) {
        return Route::Fts5Prefixes;
    }
    let walked: i64 = words.iter().map(|w| w.notes).sum();
    let rarest = words.iter().map(|w| w.notes).min().unwrap_or(0);
    let candidates = rarest.min(RANK_WINDOW) as f64;
    let bm25 = walked as f64 * NS_PER_DOCLIST_ENTRY + candidates * NS_PER_BM25_ROW;
    let dense = rarest.saturating_mul(RANGE_READ_SPREAD) >= notes;
    let here = candidates
        * if dense {
            NS_PER_DENSE_READ
        } else {
            NS_PER_SPARSE_READ
        };
    if bm25 < here {
        Route::Fts5Terms
    } else {
        Route::Here
    }
}

/// Reads notes' stored counts ([`NoteTerms`] blobs), asked for newest first.
struct NoteCounts<'conn> {
    /// One note by its number.
    lookup: rusqlite::CachedStatement<'conn>,
    /// With dense candidates, the next notes at or below a number, read a chunk at a time.
    range: Option<rusqlite::CachedStatement<'conn>>,
    chunk: Vec<(i64, Vec<u8>)>,
    at: usize,
}

/// Notes read per range read.
const RANGE_CHUNK: i64 = 256;

impl<'conn> NoteCounts<'conn> {
    fn new(conn: &'conn Connection, dense: bool) -> rusqlite::Result<Self> {
        let range = if dense {
            Some(conn.prepare_cached(
                "SELECT note, terms FROM note_terms WHERE note <= ?1 ORDER BY note DESC LIMIT ?2",
            )?)
        } else {
            None
        };
        Ok(NoteCounts {
            lookup: conn.prepare_cached("SELECT terms FROM note_terms WHERE note = ?1")?,
            range,
            chunk: Vec::new(),
            at: 0,
        })
    }

    /// The counts of note `seq`, which is older than any asked for before.
    fn read(&mut self, seq: i64) -> rusqlite::Result<Option<&[u8]>> {
        let Some(range) = &mut self.range else {
            let mut rows = self.lookup.query([seq])?;
            return Ok(match rows.next()? {
                Some(row) => {
                    self.chunk = vec![(seq, row.get(0)?)];
                    self.chunk.first().map(|(_, blob)| blob.as_slice())
                }
                None => None,
            });
        };
        while self.chunk.get(self.at).is_some_and(|(note, _)| *note > seq) {
            self.at += 1;
        }
        if self.at >= self.chunk.len() {
            self.chunk = range
                .query_map(params![seq, RANGE_CHUNK], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            self.at = 0;
        }
        Ok(match self.chunk.get(self.at) {
            Some((note, blob)) if *note == seq => Some(blob.as_slice()),
            _ => None,
        })
    }
}

/// The terms starting with `prefix` and the FTS5 phrases for them; `None` when there are more
/// than [`MAX_EXPANSIONS`].
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
        notes: 0,
    };
    let mut phrases = Vec::new();
    while let Some(row) = rows.next()? {
        if word.terms.len() == MAX_EXPANSIONS {
            return Ok(None);
        }
        word.terms
            .push(u32::try_from(row.get::<_, i64>(0)?).unwrap_or(u32::MAX));
        phrases.push(format!(
            "\"{}\"",
            row.get::<_, String>(1)?.replace('"', "\"\"")
        ));
        word.notes = word.notes.saturating_add(row.get(2)?);
    }
    Ok(Some((word, phrases)))
}

/// FTS5's BM25 (`fts5_aux.c`), with the IDF of each word taken from the vocabulary instead of a
/// walk over its doclist.
struct Scorer {
    /// `(term id, word)` for every term of every word, sorted, to merge with a note's terms.
    terms: Vec<(u32, usize)>,
    idf: Vec<f64>,
    average_length: f64,
}

impl Scorer {
    fn new(words: &[Word], notes: i64, tokens: i64) -> Scorer {
        let total = notes.max(1) as f64;
        let idf = words
            .iter()
            .map(|w| {
                // A prefix's notes are summed over its terms, which counts a note holding two
                // of them twice; FTS5 counts the union. Capped at the number of notes.
                let holding = w.notes.min(notes).max(0) as f64;
                let idf = ((total - holding + 0.5) / (holding + 0.5)).ln();
                if idf <= 0.0 { 1e-6 } else { idf }
            })
            .collect();
        let mut terms: Vec<(u32, usize)> = words
            .iter()
            .enumerate()
            .flat_map(|(i, w)| w.terms.iter().map(move |id| (*id, i)))
            .collect();
        terms.sort_unstable();
        Scorer {
            terms,
            idf,
            average_length: (tokens.max(1) as f64) / total,
        }
    }

    /// The score of a note from its stored counts (see [`NoteTerms`]); `None` when a word has
    /// none of its terms in the note.
    fn score(&self, blob: &[u8]) -> Option<f64> {
        let (length, terms) = NoteTerms::read(blob);
        let mut frequency = vec![0.0_f64; self.idf.len()];
        // Both lists are sorted by term id: one pass over each.
        let mut wanted = self.terms.iter().peekable();
        for (id, count) in terms {
            while wanted.next_if(|(w, _)| *w < id).is_some() {}
            while let Some((_, word)) = wanted.next_if(|(w, _)| *w == id) {
                frequency[*word] += f64::from(count);
            }
            if wanted.peek().is_none() {
                break;
            }
        }
        if frequency.contains(&0.0) {
            return None;
        }
        let length = f64::from(length);
        let norm = K1 * (1.0 - B + B * length / self.average_length);
        Some(
            frequency
                .iter()
                .zip(&self.idf)
                .map(|(f, idf)| idf * (f * (K1 + 1.0)) / (f + norm))
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::sqlite::{SqliteBackend, fts5_search};
    use super::super::{NoteBackend, NoteDraft, PutMode, query};
    use super::*;

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
            backend.put(draft, PutMode::CreateOnly).unwrap();
        }
        // Replacements and deletions must leave the vocabulary as if never written.
        for i in (0..240).step_by(7) {
            let draft = NoteDraft {
                id: format!("n{i}"),
                title: pick(2).join(" "),
                tags: vec!["t".to_owned()],
                body: pick(8).join(" "),
            };
            backend.put(draft, PutMode::Replace).unwrap();
        }
        for i in (3..240).step_by(11) {
            assert!(backend.delete(&format!("n{i}")).unwrap());
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
        let wanted = super::super::sqlite::tags_to_json(tags.iter().map(String::as_str));
        Ok(
            match search_routed(conn, q, tags, &wanted, 1000, Some(route))? {
                Plan::Ranked(hits) => Some(hits),
                Plan::Fts5Terms(expr) => Some(fts5_search(conn, &expr, tags, &wanted, 1000)?),
                Plan::Fts5Prefixes => None,
            },
        )
    }

    fn by_prefixes(conn: &Connection, q: &str, tags: &[String]) -> Vec<SearchHit> {
        let wanted = super::super::sqlite::tags_to_json(tags.iter().map(String::as_str));
        let expr = query::match_expression(q).unwrap();
        fts5_search(conn, &expr, tags, &wanted, 1000).unwrap()
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
                for route in [Route::Here, Route::Fts5Terms] {
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
    fn a_word_of_one_term_scores_as_fts5_bm25_does_on_every_route() {
        let backend = corpus();
        for q in ["rare", "depth", "grocery", "alphabet deployment", "x100"] {
            for route in [Route::Here, Route::Fts5Terms] {
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
    fn the_planner_leaves_rare_words_to_fts5_and_takes_common_ones() {
        let word = |notes| Word {
            terms: vec![1],
            notes,
        };
        let n = 100_000;
        assert_eq!(route(&[word(300)], n), Route::Fts5Prefixes);
        assert_eq!(route(&[word(300), word(4_000)], n), Route::Fts5Prefixes);
        assert_eq!(
            route(&[word(90_000)], n),
            Route::Here,
            "dense: read as a range"
        );
        assert_eq!(
            route(&[word(10_000)], n),
            Route::Fts5Terms,
            "sparse: bm25 is cheaper"
        );
        assert_eq!(route(&[word(90_000), word(300)], n), Route::Here);
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
        many.put(draft, PutMode::CreateOnly).unwrap();
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
