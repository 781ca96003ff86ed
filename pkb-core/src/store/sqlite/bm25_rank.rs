//! `pkb_rank(notes_fts, words, idfs, average_length[, results])`: FTS5's BM25, with each query
//! word's IDF given by the caller instead of counted by FTS5.
//!
//! `bm25()` walks the whole doclist of every phrase once per query to count the notes holding
//! it, about 70 ns a note: 6 ms for a word in 90,000 notes, although the vocabulary
//! ([`super::terms`]) already holds those counts. FTS5 takes a new ranking function only
//! through its C API, which is why this module, like [`super::fts5_tokenizer`], holds unsafe
//! code.
//!
//! Arguments: `words` has one byte per phrase of the MATCH expression, the query word the
//! phrase belongs to; `idfs` holds each word's IDF as a little-endian `f64`; `average_length` is
//! the tokens per note. A word's frequency is the sum of its phrases' instances weighted by
//! column ([`WEIGHTS`]), so the score is the one [`super::search_planner`] computes from the stored
//! counts, positive, higher is better.
//!
//! An optional fifth argument, the number of results the query keeps, lets it skip rows: a row
//! whose score could not beat that many rows already scored gets NULL, without its length being
//! read (a lookup per row, a third of the time of a two-word query at 100,000 notes).
#![allow(unsafe_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use rusqlite::{Connection, ffi};

use super::fts5_tokenizer::fts5_api;
use super::search_planner::bm25;
use super::terms::WEIGHTS;

/// The SQL name of the function.
pub(super) const NAME: &str = "pkb_rank";

/// Makes `pkb_rank` available on `conn`.
pub(super) fn register(conn: &Connection) -> rusqlite::Result<()> {
    let api = fts5_api(conn)?;
    let failed = |rc: c_int| {
        rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!("cannot register the {NAME} ranking function")),
        )
    };
    // SAFETY: FTS5 handed out `api` for this connection, and it lives as long as the
    // connection. The name is copied by FTS5; the function has no user data to free.
    let rc = unsafe {
        let Some(create) = (*api).xCreateFunction else {
            return Err(failed(ffi::SQLITE_MISUSE));
        };
        create(
            api,
            c"pkb_rank".as_ptr(),
            std::ptr::null_mut(),
            Some(pkb_rank),
            None,
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(failed(rc))
    }
}

/// The function FTS5 calls for each row. A panic or bad arguments become an SQL error.
unsafe extern "C" fn pkb_rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes a valid API, context and `argc` arguments for this call.
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { score(api, fts, argc, argv) }));
    // SAFETY: `ctx` is this call's result context.
    unsafe {
        match outcome {
            Ok(Ok(Some(score))) => ffi::sqlite3_result_double(ctx, score),
            Ok(Ok(None)) => ffi::sqlite3_result_null(ctx),
            Ok(Err(message)) => ffi::sqlite3_result_error(ctx, message.as_ptr(), -1),
            Err(_) => ffi::sqlite3_result_error(ctx, c"pkb_rank failed".as_ptr(), -1),
        }
    }
}

const BAD_ARGUMENTS: &CStr = c"pkb_rank takes the FTS5 table, the word of each phrase, the IDF of each word, the average length and optionally the number of results";
const FTS5_FAILED: &CStr = c"pkb_rank: FTS5 could not report the row";

/// What the calls of one query share, kept as FTS5's auxiliary data of the query.
struct QueryState {
    /// The query word of each phrase.
    words: Vec<u8>,
    idfs: Vec<f64>,
    average_length: f64,
    /// Each word's weighted instances in the row being scored.
    frequency: Vec<f64>,
    /// With a number of results: that many of the best scores so far, worst on top.
    best: Option<(usize, BinaryHeap<Reverse<Score>>)>,
    /// The last row answered and its answer, for a second call on the same row.
    last: Option<(i64, Option<f64>)>,
}

/// A score ordered by [`f64::total_cmp`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl QueryState {
    /// Reads the call's arguments.
    ///
    /// # Safety
    /// `args` are the values FTS5 passed to this call.
    unsafe fn new(args: &[*mut ffi::sqlite3_value]) -> Result<QueryState, &'static CStr> {
        // SAFETY: the values are valid for this call, and so are the blobs they return;
        // both are copied before it returns.
        let (words, idfs, average_length, results) = unsafe {
            (
                value_blob(args[0]).to_vec(),
                value_blob(args[1]),
                ffi::sqlite3_value_double(args[2]),
                args.get(3).map(|&v| ffi::sqlite3_value_int64(v)),
            )
        };
        let idfs: Vec<f64> = idfs
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        if words.iter().any(|&w| usize::from(w) >= idfs.len()) {
            return Err(BAD_ARGUMENTS);
        }
        let best = match results.map(usize::try_from) {
            Some(Ok(limit)) if limit > 0 => Some((limit, BinaryHeap::with_capacity(limit + 1))),
            None => None,
            Some(_) => return Err(BAD_ARGUMENTS),
        };
        Ok(QueryState {
            words,
            frequency: vec![0.0; idfs.len()],
            idfs,
            average_length,
            best,
            last: None,
        })
    }

    /// Whether a row whose score can be at most `bound` cannot make the results: enough rows
    /// already scored better. A tie is kept, whichever way it would go.
    fn beaten(&self, bound: f64) -> bool {
        match &self.best {
            Some((limit, best)) if best.len() >= *limit => {
                best.peek().is_some_and(|Reverse(worst)| bound < worst.0)
            }
            _ => false,
        }
    }

    fn record(&mut self, score: f64) {
        if let Some((limit, best)) = &mut self.best {
            best.push(Reverse(Score(score)));
            if best.len() > *limit {
                best.pop();
            }
        }
    }
}

/// Frees a [`QueryState`] when FTS5 is done with the query.
unsafe extern "C" fn drop_state(state: *mut c_void) {
    // SAFETY: FTS5 hands back the pointer `score` gave it, once.
    drop(unsafe { Box::from_raw(state.cast::<QueryState>()) });
}

/// This query's [`QueryState`], made from this call's arguments on its first call.
///
/// # Safety
/// The arguments are those FTS5 passed to [`pkb_rank`]; the state is used only during this
/// call.
unsafe fn query_state<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    args: &[*mut ffi::sqlite3_value],
) -> Result<&'a mut QueryState, &'static CStr> {
    let (Some(get), Some(set)) = (api.xGetAuxdata, api.xSetAuxdata) else {
        return Err(FTS5_FAILED);
    };
    // SAFETY: the only auxiliary data of this function is a `QueryState` it set, which FTS5
    // keeps until the query ends; FTS5 makes no other call of it meanwhile.
    unsafe {
        let kept = get(fts, 0).cast::<QueryState>();
        if !kept.is_null() {
            return Ok(&mut *kept);
        }
        let state = Box::into_raw(Box::new(QueryState::new(args)?));
        // On failure FTS5 has already freed `state` through `drop_state`.
        if set(fts, state.cast::<c_void>(), Some(drop_state)) != ffi::SQLITE_OK {
            return Err(FTS5_FAILED);
        }
        Ok(&mut *state)
    }
}

/// The score of FTS5's current row; `None` when given the number of results and enough rows
/// already scored better than this one can. That bound takes the note's length as zero, so
/// only the rows it cannot rule out pay for reading their length, a lookup per row.
///
/// # Safety
/// The arguments are those FTS5 passed to [`pkb_rank`].
unsafe fn score(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) -> Result<Option<f64>, &'static CStr> {
    if !(3..=4).contains(&argc) || argv.is_null() {
        return Err(BAD_ARGUMENTS);
    }
    // SAFETY: FTS5 passes `argc` valid values, and a valid API for this row.
    let (args, api) = unsafe { (std::slice::from_raw_parts(argv, argc as usize), &*api) };
    // SAFETY: as above; the state is used only in this call.
    let state = unsafe { query_state(api, fts, args)? };
    let (Some(column_size), Some(inst_count), Some(inst), Some(rowid)) =
        (api.xColumnSize, api.xInstCount, api.xInst, api.xRowid)
    else {
        return Err(FTS5_FAILED);
    };
    // SAFETY: `fts` is the context of the current row.
    let row = unsafe { rowid(fts) };
    if let Some((last, answer)) = state.last
        && last == row
    {
        // Asked twice for one row: counting it again would make it beat itself.
        return Ok(answer);
    }

    let mut instances: c_int = 0;
    // SAFETY: `fts` is the context of the current row.
    if unsafe { inst_count(fts, &mut instances) } != ffi::SQLITE_OK {
        return Err(FTS5_FAILED);
    }
    state.frequency.fill(0.0);
    for i in 0..instances {
        let (mut phrase, mut column, mut offset): (c_int, c_int, c_int) = (0, 0, 0);
        // SAFETY: as above, with `i` below the row's instance count.
        if unsafe { inst(fts, i, &mut phrase, &mut column, &mut offset) } != ffi::SQLITE_OK {
            return Err(FTS5_FAILED);
        }
        let word = usize::try_from(phrase)
            .ok()
            .and_then(|p| state.words.get(p))
            .map(|&w| usize::from(w));
        let weight = usize::try_from(column).ok().and_then(|c| WEIGHTS.get(c));
        match (word.and_then(|w| state.frequency.get_mut(w)), weight) {
            (Some(f), Some(weight)) => *f += f64::from(*weight),
            _ => return Err(BAD_ARGUMENTS),
        }
    }
    // BM25 falls as the length grows, so length zero bounds the score from above.
    let answer = if state.beaten(bm25(
        &state.frequency,
        &state.idfs,
        0.0,
        state.average_length,
    )) {
        None
    } else {
        let mut length: c_int = 0;
        // SAFETY: `fts` is the context of the current row.
        if unsafe { column_size(fts, -1, &mut length) } != ffi::SQLITE_OK {
            return Err(FTS5_FAILED);
        }
        let score = bm25(
            &state.frequency,
            &state.idfs,
            f64::from(length),
            state.average_length,
        );
        state.record(score);
        Some(score)
    };
    state.last = Some((row, answer));
    Ok(answer)
}

/// The bytes of a BLOB value; empty for NULL.
///
/// # Safety
/// `value` is valid, and stays so while the slice is used.
unsafe fn value_blob<'a>(value: *mut ffi::sqlite3_value) -> &'a [u8] {
    // SAFETY: per the function's contract; SQLite returns NULL for an empty blob.
    unsafe {
        let data = ffi::sqlite3_value_blob(value).cast::<u8>();
        let len = usize::try_from(ffi::sqlite3_value_bytes(value)).unwrap_or(0);
        if data.is_null() || len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(data, len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5 (title, tags, body);
             INSERT INTO t VALUES ('alpha', '', 'alpha beta beta gamma');
             INSERT INTO t VALUES ('other', 'alpha', 'delta');",
        )
        .unwrap();
        conn
    }

    fn rank(conn: &Connection, expr: &str, words: &[u8], idfs: &[f64]) -> rusqlite::Result<f64> {
        let idfs: Vec<u8> = idfs.iter().flat_map(|f| f.to_le_bytes()).collect();
        conn.query_row(
            "SELECT pkb_rank(t, ?2, ?3, 3.0) FROM t WHERE t MATCH ?1 ORDER BY rowid LIMIT 1",
            rusqlite::params![expr, words, idfs],
            |r| r.get(0),
        )
    }

    #[test]
    fn weights_each_words_instances_by_column() {
        let conn = table();
        // Row 1 has 5 tokens: alpha in the title (10) and body (1); beta twice in the body.
        let got = rank(&conn, "alpha AND (beta OR gamma)", &[0, 1, 1], &[2.0, 0.5]).unwrap();
        let want = bm25(&[11.0, 3.0], &[2.0, 0.5], 5.0, 3.0);
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }

    #[test]
    fn bad_arguments_are_an_sql_error_not_a_crash() {
        let conn = table();
        let error = rank(&conn, "alpha", &[7], &[1.0]).unwrap_err();
        assert!(error.to_string().contains("pkb_rank takes"), "{error}");
        let error = conn
            .query_row("SELECT pkb_rank(t) FROM t WHERE t MATCH 'alpha'", [], |r| {
                r.get::<_, f64>(0)
            })
            .unwrap_err();
        assert!(error.to_string().contains("pkb_rank takes"), "{error}");
    }
}
