//! Telling whether anything was committed to a store since a moment, by this process or any
//! other, without a call into SQLite: what lets a note kept in memory be served without
//! the hop to a read thread, and never after it went out of date.
//!
//! For a file in WAL mode the answer is the header of the WAL index, the shared memory
//! (`-shm` file) through which SQLite's connections in every process agree on what is
//! committed. Each commit rewrites it before the commit returns, and SQLite reads it itself,
//! at the start of every read, to tell whether its page cache is still good. It is read here
//! through SQLite's own mapping (the VFS's `xShmMap`), which is why this module holds unsafe
//! code. Its layout is documented (<https://sqlite.org/walformat.html>) and fixed, since
//! every SQLite version on one file must agree on it.

#![allow(unsafe_code)]

use std::path::Path;
use std::ptr::NonNull;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, ffi};

/// A moment in a store's history: two equal stamps mean nothing was committed between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ChangeStamp([u32; HEADER_WORDS]);

/// The words of one copy of the WAL index header (`WalIndexHdr`, 48 bytes).
const HEADER_WORDS: usize = 12;

/// The size SQLite maps the WAL index in (`WALINDEX_PGSZ`).
const WAL_INDEX_REGION_BYTES: i32 = 32 * 1024;

/// Where a backend learns of commits.
pub(super) enum ChangeWatch {
    /// The WAL index header of a file: sees every process's commits.
    WalIndex(WalIndexHeader),
    /// A count of this backend's own writes, for a store nothing else can write (in memory).
    OwnWrites(AtomicU64),
    /// Commits cannot be seen (a file not in WAL mode): nothing may be served from memory.
    Blind,
}

impl ChangeWatch {
    /// Watches the store file at `path` through its WAL index; [`ChangeWatch::Blind`] when the
    /// file is not in WAL mode or its index cannot be reached. Opening waits up to
    /// `busy_timeout` for another process's recovery of the WAL.
    pub(super) fn file(path: &Path, busy_timeout: Duration) -> ChangeWatch {
        match WalIndexHeader::open(path, busy_timeout) {
            Ok(Some(header)) => ChangeWatch::WalIndex(header),
            Ok(None) => ChangeWatch::Blind,
            Err(error) => {
                // Only speed is lost: every note is then read from the file.
                tracing::warn!(path = %path.display(), %error, "cannot watch the store for commits; notes read are not kept in memory");
                ChangeWatch::Blind
            }
        }
    }

    /// The stamp of now, or `None` when it cannot be told (or a commit is being published).
    pub(super) fn stamp(&self) -> Option<ChangeStamp> {
        match self {
            ChangeWatch::WalIndex(header) => header.stamp(),
            ChangeWatch::OwnWrites(writes) => {
                let count = writes.load(Ordering::Acquire);
                let mut words = [0; HEADER_WORDS];
                // The low and high halves of the count.
                words[0] = count as u32;
                words[1] = (count >> 32) as u32;
                Some(ChangeStamp(words))
            }
            ChangeWatch::Blind => None,
        }
    }

    /// Records a write by this backend, once it has committed (or failed).
    pub(super) fn wrote(&self) {
        if let ChangeWatch::OwnWrites(writes) = self {
            writes.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// The two copies of the WAL index header, in SQLite's mapping of the `-shm` file.
pub(super) struct WalIndexHeader {
    words: NonNull<AtomicU32>,
    /// The connection whose mapping `words` points into: SQLite unmaps the index when the
    /// last connection of the process to the file closes, so this one stays open. It runs
    /// no statement after opening (the mutex only makes it shareable).
    _mapping_owner: Mutex<Connection>,
}

// SAFETY: the pointer is to memory shared between processes and threads, which stays mapped
// while `_mapping_owner` is open, as long as the pointer exists. This code only reads it,
// with atomic loads; SQLite writes it with plain stores and a barrier, and reads it through
// `volatile` pointers, so a load may see a header half-written, which `stamp` detects as
// SQLite's own readers do.
unsafe impl Send for WalIndexHeader {}
// SAFETY: as for `Send`: nothing but atomic loads goes through the pointer.
unsafe impl Sync for WalIndexHeader {}

impl WalIndexHeader {
    /// Opens a connection of its own to the file at `path` and finds its WAL index header;
    /// `None` when the file is not in WAL mode or its index is not in shared memory.
    fn open(path: &Path, busy_timeout: Duration) -> rusqlite::Result<Option<WalIndexHeader>> {
        // The file's header tells its journal mode, as `PRAGMA journal_mode` would, without
        // the reading and parsing of the whole schema that pragma makes a new connection do
        // (a fifth of opening a store). Only a WAL file is opened: mapping the index of
        // another would make a `-shm` file for it.
        if !in_wal_mode(path) {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(busy_timeout)?;
        // Folding the WAL into the file on close is the store's writer's decision (it waits
        // for the page check), never this connection's.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        // A read of the database maps the WAL index's first region, which `header_of` finds.
        conn.query_row("PRAGMA schema_version", [], |row| row.get::<_, i64>(0))?;
        let words = header_of(&conn);
        Ok(words.map(|words| WalIndexHeader {
            words,
            _mapping_owner: Mutex::new(conn),
        }))
    }

    /// The header as it stands, or `None` while a commit is writing it: the writer updates the
    /// second copy, then the first, so a reader that finds both equal saw a whole header
    /// (SQLite's own readers check the same way).
    fn stamp(&self) -> Option<ChangeStamp> {
        let copy = |first: usize| -> [u32; HEADER_WORDS] {
            std::array::from_fn(|i| {
                // SAFETY: the region is at least 32 KiB, 4-byte aligned and mapped while
                // `_mapping_owner` is open; both copies lie in its first 96 bytes.
                unsafe { self.words.add(first + i).as_ref() }.load(Ordering::Acquire)
            })
        };
        let first = copy(0);
        let second = copy(HEADER_WORDS);
        (first == second).then_some(ChangeStamp(first))
    }
}

/// Whether the database file at `path` is in WAL mode: its header's read and write format
/// versions (bytes 18 and 19) are 2, which SQLite writes when it switches a file to WAL and
/// nothing else (<https://sqlite.org/fileformat.html#file_format_version_numbers>).
fn in_wal_mode(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    std::fs::File::open(path)
        .and_then(|mut file| file.read_exact(&mut header))
        .is_ok_and(|()| header[18] == 2 && header[19] == 2)
}

/// Where SQLite maps the WAL index header of `conn`'s main database, if it does.
fn header_of(conn: &Connection) -> Option<NonNull<AtomicU32>> {
    let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
    // SAFETY: `conn` is open; FILE_POINTER writes the main database's `sqlite3_file*`, owned
    // by the connection, into `file`.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_FILE_POINTER,
            (&raw mut file).cast(),
        )
    };
    if rc != ffi::SQLITE_OK || file.is_null() {
        return None;
    }
    // SAFETY: `file` is the live file of `conn`; its methods table is static for the VFS.
    // xShmMap exists from version 2 of the table on.
    let map = unsafe {
        let methods = (*file).pMethods;
        if methods.is_null() || (*methods).iVersion < 2 {
            return None;
        }
        (*methods).xShmMap?
    };
    let mut region: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: region 0 in SQLite's region size, without extending the file: the region every
    // WAL reader of `conn` maps, already mapped by the read `conn` made. The VFS serialises
    // this with the connections' own calls under its shared-memory mutex.
    let rc = unsafe { map(file, 0, WAL_INDEX_REGION_BYTES, 0, &raw mut region) };
    if rc != ffi::SQLITE_OK {
        return None;
    }
    NonNull::new(region.cast::<AtomicU32>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(path: &Path, journal_mode: &str) -> Connection {
        let conn = Connection::open(path).unwrap();
        let mode: String = conn
            .query_row(&format!("PRAGMA journal_mode = {journal_mode}"), [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(mode.eq_ignore_ascii_case(journal_mode));
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
            .unwrap();
        conn
    }

    #[test]
    fn the_stamp_moves_with_every_commit_of_any_connection_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watched.db");
        let other = create(&path, "wal");
        let watch = ChangeWatch::file(&path, Duration::from_secs(5));
        assert!(
            matches!(watch, ChangeWatch::WalIndex(_)),
            "a WAL file is watched"
        );

        let mut seen = vec![watch.stamp().unwrap()];
        let count: i64 = other
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 1);
        assert_eq!(watch.stamp(), Some(seen[0]), "a read commits nothing");
        for i in 0..20 {
            other.execute("INSERT INTO t VALUES (?1)", [i]).unwrap();
            let now = watch.stamp().unwrap();
            assert!(!seen.contains(&now), "commit {i} gave a stamp seen before");
            seen.push(now);
        }
        // A checkpoint copies pages without changing what is committed; the next commit
        // starts the WAL over and must still give a new stamp.
        other
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        other.execute("UPDATE t SET x = x + 1", []).unwrap();
        let restarted = watch.stamp().unwrap();
        assert!(!seen.contains(&restarted), "a commit after a checkpoint");
        // A failed transaction commits nothing.
        assert!(other.execute("INSERT INTO missing VALUES (1)", []).is_err());
        assert_eq!(watch.stamp(), Some(restarted));
    }

    #[test]
    fn a_file_outside_wal_mode_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollback.db");
        let _conn = create(&path, "delete");
        assert!(matches!(
            ChangeWatch::file(&path, Duration::from_secs(5)),
            ChangeWatch::Blind
        ));
        assert_eq!(ChangeWatch::Blind.stamp(), None);
    }

    #[test]
    fn every_own_write_gives_a_new_stamp_past_32_bits() {
        let watch = ChangeWatch::OwnWrites(AtomicU64::new(u64::from(u32::MAX)));
        let before = watch.stamp().unwrap();
        watch.wrote();
        // The count is wider than one word.
        assert_ne!(watch.stamp().unwrap(), before);
    }
}
