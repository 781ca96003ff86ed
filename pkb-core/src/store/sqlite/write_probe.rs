//! Whether this process can write the store, found out at start: a file, `-wal` or `-shm`
//! another user left read-only lets every read work and every write fail, which a user should
//! hear of when the server starts rather than at the first note lost.

use rusqlite::{Connection, ErrorCode};

/// What stops `conn` writing, if anything. Takes the write lock for a moment when it is free;
/// a store another process is writing to is writable, so a held lock answers `None`. Fails
/// only when `conn` cannot be given back its way of waiting for locks.
pub(super) fn cannot_write(conn: &Connection) -> rusqlite::Result<Option<&'static str>> {
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Ok(Some(READ_ONLY));
    }
    // Not waiting for the lock: a writer elsewhere means writes work.
    conn.busy_timeout(std::time::Duration::ZERO)?;
    let probe = conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;");
    if !conn.is_autocommit() {
        // BEGIN took, ROLLBACK did not: no transaction may stay open on the writer.
        conn.execute_batch("ROLLBACK")?;
    }
    super::lock_wait::wait_for_locks(conn)?;
    Ok(match probe {
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::ReadOnly) => Some(READ_ONLY),
        _ => None,
    })
}

/// What a user is told when the store can only be read.
pub(super) const READ_ONLY: &str = "this process can only read the store: check that it may \
     write the file, its -wal and -shm files beside it, and their folder";
