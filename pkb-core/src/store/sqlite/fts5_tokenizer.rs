//! FTS5's own `unicode61` tokenizer, called directly: the terms of a note or of a query word
//! exactly as the index makes them, without a table to make them in.
//!
//! Running each note through an FTS5 table in TEMP and reading its vocabulary was a fifth of a
//! write's time: the vocabulary view writes the table's pending data out as a segment first,
//! and emptying the table merges it away again. FTS5 hands out its tokenizers only through its
//! C API, which is why this module, like [`super::bm25_rank`], holds unsafe code.
//!
//! A tokenizer instance is kept per thread. `unicode61` keeps nothing of the connection it was
//! found through (its constructor ignores its user data), and its functions are the bundled
//! SQLite's own, so the instance stays valid whatever connection later runs on the thread.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use rusqlite::{Connection, ffi};

/// The index's tokenizer and its arguments, as every FTS5 table of the schema declares them
/// (`tokenize = 'unicode61 remove_diacritics 2'`).
const NAME: &CStr = c"unicode61";
const ARGUMENTS: [&CStr; 2] = [c"remove_diacritics", c"2"];

/// The longest term FTS5 indexes, in bytes (`FTS5_MAX_TOKEN_SIZE`); longer tokens are cut.
const MAX_TERM_BYTES: usize = 32_768;

/// Calls `each(term)` for every token of `text`, in order, as the index would store it.
pub(super) fn for_each_term(
    conn: &Connection,
    text: &str,
    mut each: impl FnMut(&[u8]),
) -> rusqlite::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    TOKENIZER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Tokenizer::new(conn)?);
        }
        let tokenizer = slot.as_ref().expect("created above");
        tokenizer.tokenize(text, &mut each)
    })
}

thread_local! {
    static TOKENIZER: RefCell<Option<Tokenizer>> = const { RefCell::new(None) };
}

/// One `unicode61` instance and the functions that run it.
struct Tokenizer {
    instance: *mut ffi::Fts5Tokenizer,
    module: ffi::fts5_tokenizer,
}

impl Tokenizer {
    fn new(conn: &Connection) -> rusqlite::Result<Tokenizer> {
        let failed = |rc: c_int| {
            rusqlite::Error::SqliteFailure(
                ffi::Error::new(rc),
                Some("cannot start FTS5's unicode61 tokenizer".to_owned()),
            )
        };
        let api = fts5_api(conn)?;
        let mut module = ffi::fts5_tokenizer {
            xCreate: None,
            xDelete: None,
            xTokenize: None,
        };
        let mut user_data: *mut c_void = std::ptr::null_mut();
        let mut instance: *mut ffi::Fts5Tokenizer = std::ptr::null_mut();
        let mut arguments = ARGUMENTS.map(CStr::as_ptr);
        // SAFETY: `api` is this open connection's; FTS5 fills `module` and `user_data`, and
        // copies nothing of the arguments, which outlive the call.
        unsafe {
            let Some(find) = (*api).xFindTokenizer else {
                return Err(failed(ffi::SQLITE_MISUSE));
            };
            let rc = find(api, NAME.as_ptr(), &mut user_data, &mut module);
            if rc != ffi::SQLITE_OK {
                return Err(failed(rc));
            }
            let (Some(create), Some(_), Some(_)) =
                (module.xCreate, module.xDelete, module.xTokenize)
            else {
                return Err(failed(ffi::SQLITE_MISUSE));
            };
            let rc = create(
                user_data,
                arguments.as_mut_ptr(),
                c_int::try_from(arguments.len()).unwrap_or(0),
                &mut instance,
            );
            if rc != ffi::SQLITE_OK || instance.is_null() {
                return Err(failed(if rc == ffi::SQLITE_OK {
                    ffi::SQLITE_ERROR
                } else {
                    rc
                }));
            }
        }
        Ok(Tokenizer { instance, module })
    }

    fn tokenize(&self, text: &str, each: &mut dyn FnMut(&[u8])) -> rusqlite::Result<()> {
        let length = c_int::try_from(text.len()).map_err(|_| {
            rusqlite::Error::SqliteFailure(
                ffi::Error::new(ffi::SQLITE_TOOBIG),
                Some("text too long to tokenize".to_owned()),
            )
        })?;
        let mut context = Context {
            each,
            panicked: false,
        };
        // SAFETY: `new` checked the function; the instance is ours and used by this thread
        // only; `text` and `context` outlive the call, which is synchronous.
        let rc = unsafe {
            let tokenize = self.module.xTokenize.expect("checked in new");
            tokenize(
                self.instance,
                (&raw mut context).cast::<c_void>(),
                ffi::FTS5_TOKENIZE_DOCUMENT,
                text.as_ptr().cast::<c_char>(),
                length,
                Some(on_token),
            )
        };
        if rc == ffi::SQLITE_OK && !context.panicked {
            Ok(())
        } else {
            Err(rusqlite::Error::SqliteFailure(
                ffi::Error::new(if rc == ffi::SQLITE_OK {
                    ffi::SQLITE_ERROR
                } else {
                    rc
                }),
                Some("cannot tokenize the text".to_owned()),
            ))
        }
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        if let Some(delete) = self.module.xDelete {
            // SAFETY: the instance was made by this module's xCreate and is freed once.
            unsafe { delete(self.instance) }
        }
    }
}

/// What the token callback reaches through its context pointer.
struct Context<'a> {
    each: &'a mut dyn FnMut(&[u8]),
    panicked: bool,
}

/// FTS5's callback for each token; a panic stops the tokenizing as an error.
unsafe extern "C" fn on_token(
    context: *mut c_void,
    _flags: c_int,
    token: *const c_char,
    length: c_int,
    _start: c_int,
    _end: c_int,
) -> c_int {
    // SAFETY: `context` is the `Context` that `tokenize` passed, alive for the call; FTS5
    // gives `length` bytes at `token`, valid until the callback returns.
    let context = unsafe { &mut *context.cast::<Context<'_>>() };
    let length = usize::try_from(length).unwrap_or(0).min(MAX_TERM_BYTES);
    let term: &[u8] = if token.is_null() || length == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(token.cast::<u8>(), length) }
    };
    if catch_unwind(AssertUnwindSafe(|| (context.each)(term))).is_err() {
        context.panicked = true;
        return ffi::SQLITE_ERROR;
    }
    ffi::SQLITE_OK
}

/// The connection's `fts5_api`, which FTS5 hands out through `SELECT fts5(?1)` with a pointer
/// bound to `?1`.
pub(super) fn fts5_api(conn: &Connection) -> rusqlite::Result<*mut ffi::fts5_api> {
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
