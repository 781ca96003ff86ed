//! One search on a connection: the SQL that ranks the newest matches, run in a snapshot,
//! scored by FTS5's bm25 or by the planner's exact terms.

use super::rows::{sql_limit, tags_from_json, tags_to_json};
use super::*;

/// The `?2` best of the `?3` newest matches of `?1`, scored by `score`; ties go to the newer
/// note. With `tagged`, only notes carrying all `?5` tags of the JSON array `?4` count.
///
/// Innermost, FTS5 walks its doclist newest first and stops after `?3` rows, so a word found in
/// every note costs little more than a rarer one. In the middle, `ORDER BY score LIMIT` keeps
/// only the best rows while scanning (`ORDER BY rank` would make FTS5 sort every match itself,
/// 1.7 times slower). Only then does the join read `notes`, for the rows returned: joining
/// before the limit read every windowed row and tripled the cost of a rare word. The `+` keeps
/// `rowid IN` a filter on FTS5's rows rather than one FTS5 lookup per tagged note, and the
/// window counts only notes that pass it.
pub(super) fn search_sql(score: &str, tagged: bool) -> String {
    let tag_filter = if tagged {
        "AND +rowid IN (
            SELECT note FROM note_tags
            WHERE tag IN (SELECT value FROM json_each(?4))
            GROUP BY note HAVING count(*) = ?5
        )"
    } else {
        ""
    };
    format!(
        "
SELECT n.id, n.title, n.tags, m.score
FROM (
    SELECT rowid, score FROM (
        SELECT rowid, {score} AS score FROM notes_fts
        WHERE notes_fts MATCH ?1 {tag_filter}
        ORDER BY rowid DESC LIMIT ?3
    )
    ORDER BY score DESC, rowid DESC LIMIT ?2
) AS m
JOIN notes AS n ON n.seq = m.rowid
ORDER BY m.score DESC, m.rowid DESC"
    )
}

/// [`search_sql`] for each way of scoring, without and with tags.
pub(super) static SEARCH_SQL: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
    // BM25 with title, tags and body weighted as in `terms::WEIGHTS`, or `pkb_rank` with
    // the vocabulary's IDFs in `?6` to `?8`.
    let bm25 = "-bm25(notes_fts, 10.0, 4.0, 1.0)";
    let vocabulary = format!("{}(notes_fts, ?6, ?7, ?8, ?2)", bm25_rank::NAME);
    [
        [search_sql(bm25, false), search_sql(bm25, true)],
        [
            search_sql(&vocabulary, false),
            search_sql(&vocabulary, true),
        ],
    ]
});

/// Runs `f` in one read transaction of `conn`, committed when it succeeds (so that a table a
/// tokenizer created on the way stays) and rolled back when it fails. `BEGIN` and `COMMIT` are
/// cached statements: compiling them for every search was a twentieth of its time.
pub(super) fn in_snapshot<T>(
    conn: &Connection,
    f: impl FnOnce() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached("BEGIN")?.execute([])?;
    match f() {
        Ok(value) => {
            conn.prepare_cached("COMMIT")?.execute([])?;
            Ok(value)
        }
        Err(error) => {
            if !conn.is_autocommit() {
                let _ = conn
                    .prepare_cached("ROLLBACK")
                    .and_then(|mut rollback| rollback.execute([]));
            }
            Err(error)
        }
    }
}

/// [`NoteBackend::search`] on `conn`, in a snapshot the caller holds (where it read `size`),
/// for a query with words and a `limit` above 0.
pub(super) fn search_on(
    conn: &Connection,
    query: &str,
    tags: &[String],
    limit: usize,
    size: StoreSize,
) -> rusqlite::Result<Vec<SearchHit>> {
    let wanted = tags_to_json(tags.iter().map(String::as_str));
    let limit = limit.min(MAX_LIMIT);
    Ok(
        match search_planner::search(conn, query, tags, &wanted, limit, size)? {
            search_planner::Plan::Ranked(hits) => hits,
            search_planner::Plan::Fts5Terms(terms) => fts5_search(
                conn,
                Matching::Terms(&terms),
                tags,
                &wanted,
                limit,
                RANK_WINDOW,
            )?,
            search_planner::Plan::Fts5Prefixes => {
                let expr =
                    query::stemmed_match_expression(query, |word| terms::query_forms(conn, word))?;
                match expr {
                    Some(expr) => fts5_search(
                        conn,
                        Matching::Prefixes(&expr),
                        tags,
                        &wanted,
                        limit,
                        RANK_WINDOW,
                    )?,
                    None => Vec::new(),
                }
            }
        },
    )
}

/// What a search matches and how it scores its matches.
pub(super) enum Matching<'a> {
    /// The query's own prefix phrases (with their inflected forms), as a MATCH expression,
    /// scored by FTS5's `bm25()`.
    Prefixes(&'a str),
    /// The exact terms [`search_planner::search`] expanded the query to, scored by `pkb_rank`
    /// with the vocabulary's IDFs.
    Terms(&'a search_planner::Fts5Terms),
}

/// Search ranked over `matching` among its `window` newest matches ([`RANK_WINDOW`] for
/// `words`, all of them for hybrid's word ranking).
pub(super) fn fts5_search(
    conn: &Connection,
    matching: Matching<'_>,
    tags: &[String],
    tags_json: &str,
    limit: usize,
    window: i64,
) -> rusqlite::Result<Vec<SearchHit>> {
    let hit = |row: &Row<'_>| {
        Ok(SearchHit {
            id: row.get(0)?,
            title: row.get(1)?,
            tags: tags_from_json(row, 2)?,
            score: row.get(3)?,
        })
    };
    let tagged = !tags.is_empty();
    let wanted = i64::try_from(tags.len()).unwrap_or(i64::MAX);
    let limit = sql_limit(limit);
    let (expr, scoring) = match matching {
        Matching::Prefixes(expr) => (expr, None),
        Matching::Terms(terms) => (terms.expr.as_str(), Some(terms)),
    };
    let mut args: Vec<&dyn ToSql> = vec![&expr, &limit, &window];
    if tagged || scoring.is_some() {
        // The scoring arguments are ?6 to ?8 with or without tags; without, ?4 and ?5 are
        // bound but unused.
        args.extend([&tags_json as &dyn ToSql, &wanted]);
    }
    if let Some(terms) = scoring {
        args.extend([
            &terms.words as &dyn ToSql,
            &terms.idfs,
            &terms.average_length,
        ]);
    }
    let sql = &SEARCH_SQL[usize::from(scoring.is_some())][usize::from(tagged)];
    conn.prepare_cached(sql)?
        .query_map(args.as_slice(), hit)?
        .collect()
}
