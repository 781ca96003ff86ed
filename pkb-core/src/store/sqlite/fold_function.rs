//! `pkb_fold(text)`: [`crate::fold::fold_for_search`] in SQL, through which the search index
//! reads the notes (the `notes_folded` view is its external content). Every connection that
//! may rebuild or check the index registers it.

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;

use crate::fold::fold_for_search;

/// The function's SQL name.
const NAME: &str = "pkb_fold";

/// Registers `pkb_fold` on `conn`.
pub(super) fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        NAME,
        1,
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_INNOCUOUS,
        |ctx| {
            let text = ctx.get_raw(0).as_str().map_err(|e| {
                rusqlite::Error::UserFunctionError(format!("{NAME} takes text: {e}").into())
            })?;
            Ok(fold_for_search(text).into_owned())
        },
    )
}
