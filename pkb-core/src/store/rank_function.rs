//! `pkb_rank(notes_fts, words, idfs, average_length)`: FTS5's BM25, with each query word's IDF
//! given by the caller instead of counted by FTS5.
//!
//! `bm25()` walks the whole doclist of every phrase once per query to count the notes holding
//! it, about 70 ns a note: 6 ms for a word in 90,000 notes, although the vocabulary
//! ([`super::terms`]) already holds those counts. FTS5 takes a new ranking function only
//! through its C API, which is why this one module holds unsafe code.
//!
//! Arguments: `words` has one byte per phrase of the MATCH expression, the query word the
//! phrase belongs to; `idfs` holds each word's IDF as a little-endian `f64`; `average_length` is
//! the tokens per note. A word's frequency is the sum of its phrases' instances weighted by
//! column ([`WEIGHTS`]), so the score is the one [`super::ranked`] computes from the stored
//! counts, positive, higher is better.
#![allow(unsafe_code)]

use std::ffi::{CStr, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use rusqlite::{Connection, ffi};

use super::ranked::bm25;
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

/// The connection's `fts5_api`, which FTS5 hands out through `SELECT fts5(?1)` with a pointer
/// bound to `?1`.
fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
    let failed = |rc: c_int| {
        rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some("cannot reach FTS5's API".to_owned()),
        )
    };
    let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
    // SAFETY: the handle is this open connection's; the statement is finalized before
    // returning; `api` outlives the step that writes through the bound pointer.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = std::ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            std::ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(failed(rc));
        }
        let mut rc = ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&raw mut api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        if rc == ffi::SQLITE_OK {
            rc = ffi::sqlite3_step(stmt);
        }
        ffi::sqlite3_finalize(stmt);
        if rc != ffi::SQLITE_ROW || api.is_null() {
            return Err(failed(if rc == ffi::SQLITE_ROW {
                ffi::SQLITE_ERROR
            } else {
                rc
            }));
        }
    }
    Ok(api)
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
            Ok(Ok(score)) => ffi::sqlite3_result_double(ctx, score),
            Ok(Err(message)) => ffi::sqlite3_result_error(ctx, message.as_ptr(), -1),
            Err(_) => ffi::sqlite3_result_error(ctx, c"pkb_rank failed".as_ptr(), -1),
        }
    }
}

/// The score of FTS5's current row.
///
/// # Safety
/// The arguments are those FTS5 passed to [`pkb_rank`].
unsafe fn score(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) -> Result<f64, &'static CStr> {
    const BAD_ARGUMENTS: &CStr =
        c"pkb_rank takes the FTS5 table, the word of each phrase, the IDF of each word and the average length";
    const FTS5_FAILED: &CStr = c"pkb_rank: FTS5 could not report the row";
    if argc != 3 || argv.is_null() {
        return Err(BAD_ARGUMENTS);
    }
    // SAFETY: FTS5 passes `argc` valid values, and a valid API for this row.
    let (args, api) = unsafe { (std::slice::from_raw_parts(argv, 3), &*api) };
    // SAFETY: the values are valid for this call, and so are the blobs they return.
    let (words, idfs, average_length) = unsafe {
        (
            value_blob(args[0]),
            value_blob(args[1]),
            ffi::sqlite3_value_double(args[2]),
        )
    };
    let idfs: Vec<f64> = idfs
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect();
    let (Some(column_size), Some(inst_count), Some(inst)) =
        (api.xColumnSize, api.xInstCount, api.xInst)
    else {
        return Err(FTS5_FAILED);
    };

    let mut length: c_int = 0;
    let mut instances: c_int = 0;
    // SAFETY: `fts` is the context of the current row.
    let rc = unsafe {
        match column_size(fts, -1, &mut length) {
            ffi::SQLITE_OK => inst_count(fts, &mut instances),
            rc => rc,
        }
    };
    if rc != ffi::SQLITE_OK {
        return Err(FTS5_FAILED);
    }
    let mut frequency = vec![0.0_f64; idfs.len()];
    for i in 0..instances {
        let (mut phrase, mut column, mut offset): (c_int, c_int, c_int) = (0, 0, 0);
        // SAFETY: as above, with `i` below the row's instance count.
        if unsafe { inst(fts, i, &mut phrase, &mut column, &mut offset) } != ffi::SQLITE_OK {
            return Err(FTS5_FAILED);
        }
        let word = usize::try_from(phrase)
            .ok()
            .and_then(|p| words.get(p))
            .map(|&w| usize::from(w));
        let weight = usize::try_from(column).ok().and_then(|c| WEIGHTS.get(c));
        match (word.and_then(|w| frequency.get_mut(w)), weight) {
            (Some(f), Some(weight)) => *f += f64::from(*weight),
            _ => return Err(BAD_ARGUMENTS),
        }
    }
    Ok(bm25(&frequency, &idfs, f64::from(length), average_length))
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
