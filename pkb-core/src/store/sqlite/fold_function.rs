//! `pkb_fold(text)`: [`crate::fold::fold_for_search`] in SQL, through which the search index
//! reads the notes (the `notes_folded` view is its external content). Every connection that
//! may rebuild or check the index registers it.

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;

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
            // The columns hold UTF-8 text; a row edited from outside that holds anything else
            // is folded as best it can be rather than failing a rebuild or a check.
            Ok(match ctx.get_raw(0) {
                ValueRef::Text(bytes) => {
                    fold_for_search(&String::from_utf8_lossy(bytes)).into_owned()
                }
                _ => String::new(),
            })
        },
    )
}
