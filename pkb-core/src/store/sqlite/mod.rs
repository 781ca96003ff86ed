//! The SQLite engine: one file (WAL, full fsync on commit, FTS5 for search), and the runtime
//! that serves it as a [`NoteEngine`](crate::store::NoteEngine) without blocking the async
//! runtime: reads on the store's own read threads (a note read since the last commit from
//! memory, a small store's search on the caller's thread), writes queued and committed in
//! groups by one thread of tokio's blocking pool, the index merged when the store is quiet.
//!
//! One writer connection behind a mutex takes every write in a `BEGIN IMMEDIATE` transaction;
//! a small pool of reader connections serves reads in parallel, which WAL allows. The
//! in-memory store has a single connection for everything.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::types::Type;
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, Row, ToSql, Transaction, TransactionBehavior, params,
};

mod backend;
mod blocking;
mod change_watch;
mod group_commit;
pub(super) mod index_merge;
mod note_backend;
mod note_cache;
mod opening;
mod options;
mod page_check;
mod query;
mod queued_writes;
mod quiet_merge;
mod read_threads;
mod reader_pool;
mod reported_damage;
mod rows;

mod bm25_rank;
mod fold_function;
mod fts5_tokenizer;
mod link_index;
mod lock_wait;
mod schema;
mod search;
mod search_planner;
mod terms;
mod vector_cache;
mod vectors;
mod wal_watch;
mod write_probe;
mod writes;

pub use self::backend::NoteBackend;
use self::change_watch::ChangeWatch;
use self::group_commit::{ResultSlot, WriteQueue};
use self::note_cache::{Kept, NoteCache};
use self::opening::{WAL_AUTOCHECKPOINT_PAGES, file_reads_sound};
use self::options::READ_THREADS;
pub use self::options::{DamageCheck, SqliteOptions};
use self::page_check::{PageCheck, Verdict};
pub use self::queued_writes::{QueuedWrite, QueuedWrites};
pub use self::quiet_merge::MergeProgress;
use self::reader_pool::ReaderPool;
use self::reported_damage::ReportedDamage;
use self::schema::{Depth, FileState, InspectError, SCHEMA_VERSION};
use self::search_planner::StoreSize;
use self::terms::{KnownTermIds, VocabularyChanges};
use super::{
    BoxError, ChangeEntry, ChangeFilter, ChangeKind, MAX_LIMIT, NoteDates, NoteDraft, NoteSummary,
    NoteVersion, Provenance, Purged, PutMode, PutOutcome, RANK_WINDOW, RecentChange, SearchHit,
    Store, StoreError, VersionLookup, VersionSummary,
};
use crate::fold::fold_for_search;
use crate::links::{Backlink, LinkedNote, NoteWithLinks, TargetKeys};
use crate::locks::lock;
use crate::note::{Note, now_rfc3339};

/// Opens the store file at `path`, creating it (and its folders) when missing or empty.
///
/// A new store gets the contract's three notes unless `seed` is false. A file that is not a
/// PKB store, is cut short, or comes from a newer PKB is refused and left byte-for-byte
/// unchanged. Damage inside the file is looked for in the background
/// ([`DamageCheck::InBackground`]). Blocks while it opens the file; call it before serving.
pub fn open(path: &Path, seed: bool) -> Result<Store, StoreError> {
    open_with_options(
        path,
        &SqliteOptions {
            seed,
            ..SqliteOptions::default()
        },
    )
}

/// [`open`] with every option.
pub fn open_with_options(path: &Path, options: &SqliteOptions) -> Result<Store, StoreError> {
    let backend = SqliteBackend::open(path, options)?;
    Ok(with_read_threads(Arc::new(backend), options.max_readers))
}

/// An ephemeral store in memory; it writes no file and is gone when the last clone drops.
pub fn open_in_memory(seed: bool) -> Result<Store, StoreError> {
    let backend = SqliteBackend::open_in_memory(seed)?;
    Ok(from_backend(Arc::new(backend)))
}

/// A store over any blocking backend, e.g. a test double: its reads run on threads of
/// the store's own, its writes on tokio's blocking pool.
pub fn from_backend(backend: Arc<dyn NoteBackend>) -> Store {
    with_read_threads(backend, READ_THREADS)
}

fn with_read_threads(backend: Arc<dyn NoteBackend>, count: usize) -> Store {
    Store::from_engine(Arc::new(blocking::BlockingEngine::new(backend, count)))
}

/// A store of at most this many notes, holding at most [`SEARCH_AT_ONCE_TOKENS`] words in
/// all, answers a search on the caller's thread ([`NoteBackend::search_at_once`]): any
/// search of so little takes tens of microseconds at most, about what the hop to a read
/// thread and back costs. The words bound it as the notes alone do not: 64 long notes can
/// hold a vocabulary whose prefix queries take milliseconds.
const SEARCH_AT_ONCE_NOTES: i64 = 64;
/// See [`SEARCH_AT_ONCE_NOTES`]: 64 notes of 125 words.
const SEARCH_AT_ONCE_TOKENS: i64 = 8_000;

/// What each call does, as its errors name it.
pub(super) const SEARCH_NOTES: &str = "search notes";
pub(super) const SAVE_A_NOTE: &str = "save a note";
pub(super) const SAVE_NOTES: &str = "save notes";
pub(super) const DELETE_A_NOTE: &str = "delete a note";
pub(super) const PURGE_A_NOTE: &str = "purge a note";

pub(super) struct SqliteBackend {
    // Declared before `writer` so that readers close first and the writer, closing last,
    // checkpoints the WAL into the main file and removes it.
    readers: Option<ReaderPool>,
    /// Tells whether anything was committed since a note was read; its connection, too,
    /// closes before the writer.
    changes: ChangeWatch,
    writer: Mutex<Writer>,
    /// Requests' writes waiting to be committed by whichever holds the writer next.
    queue: WriteQueue,
    /// The file, or `None` in memory; named in error messages.
    path: Option<PathBuf>,
    /// The read of every page for damage; see [`page_check`].
    pages: PageCheck,
    /// Whether the writer may copy the WAL into the main file: only once the pages are known
    /// sound, so that a damaged file is never written to.
    checkpoints_on: AtomicBool,
    /// Damage SQLite reported during a call, or the page check found: every call is refused
    /// until a read of the whole file finds it sound.
    reported: ReportedDamage,
    /// Whether the page check's damage has been put on record in `reported`.
    page_damage_reported: AtomicBool,
    /// Whether this process wrote: then closing waits for the page check, so the WAL can be
    /// folded into the file, rather than cancelling it.
    wrote: AtomicBool,
    /// Whether this process has a merge of the search index under way; see [`index_merge`].
    merging: AtomicBool,
    /// Reads and writes made for requests, which put off the page check and the index merge.
    requests: Arc<AtomicU64>,
    /// Notes read since the last commit, served without a query.
    cache: NoteCache,
    /// The same, with their links and backlinks, as `fetch` answers them.
    linked: NoteCache<NoteWithLinks>,
    /// The vectors read since the last commit, for search by meaning.
    vector_cache: vector_cache::VectorCache,
    /// Whether the store was small enough at its last search for the next to try
    /// [`NoteBackend::search_at_once`] (true until a first search has looked).
    small_when_searched: AtomicBool,
    /// Whether the write-ahead log commits go into is still the file at its path.
    wal: wal_watch::WalWatch,
}

/// The one connection that writes, with the term ids its groups of writes have found.
struct Writer {
    conn: Connection,
    known_terms: KnownTermIds,
}

impl Writer {
    fn new(conn: Connection) -> Self {
        Writer {
            conn,
            known_terms: KnownTermIds::default(),
        }
    }
}

impl SqliteBackend {
    /// Wraps an engine error with what was being done and where; SQLite's report of a damaged
    /// file becomes [`StoreError::Corrupt`], and a lock not got in time [`StoreError::Busy`].
    fn fail(&self, action: &'static str) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        move |e| match &self.path {
            Some(path) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                self.reported.record(e.to_string());
                StoreError::Corrupt {
                    path: path.clone(),
                    reason: e.to_string(),
                }
            }
            _ if matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ) =>
            {
                StoreError::Busy {
                    store: self.label(),
                    action: action.to_owned(),
                }
            }
            _ => StoreError::Backend {
                context: format!(
                    "cannot {action} in {}{}",
                    self.label(),
                    match e.sqlite_error_code() {
                        Some(rusqlite::ErrorCode::ReadOnly) =>
                            format!(" ({})", write_probe::READ_ONLY),
                        // A disk that fails to read or write says nothing of the file itself.
                        Some(rusqlite::ErrorCode::SystemIoFailure) => " (the disk failed to \
                            read or write it; the file is not known to be damaged: check the \
                            disk, then run `pkb-server check`)"
                            .to_owned(),
                        _ => String::new(),
                    }
                ),
                source: Box::new(e),
            },
        }
    }

    /// Whether what is committed now is durable: the write-ahead log is still the file at its
    /// path. Checked before a write is queued and after each commit, before it is answered.
    fn durable(&self) -> rusqlite::Result<()> {
        self.wal.check().map_err(|why| group_commit::aborted(&why))
    }

    /// The store as messages show it: its file, or the in-memory store.
    fn label(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "the in-memory store".to_owned(),
        }
    }

    /// What is known to be damaged: by the page check, or by SQLite during a call.
    fn damage(&self) -> Option<String> {
        self.report_page_damage();
        self.reported.reason()
    }

    /// Puts damage the page check found on record, once, like damage SQLite reports during a
    /// call: a later read of the whole file that finds it sound takes it back the same way.
    fn report_page_damage(&self) {
        if let Some(Verdict::Damaged(reason)) = self.pages.verdict()
            && !self.page_damage_reported.swap(true, Ordering::AcqRel)
        {
            self.reported.record(reason.clone());
        }
    }

    /// Whether the page check, or a read of the whole file since, found every page sound.
    fn pages_sound(&self) -> bool {
        match self.pages.verdict() {
            Some(Verdict::Sound) => true,
            Some(Verdict::Damaged(_)) => {
                self.report_page_damage();
                !self.reported.is_known()
            }
            _ => false,
        }
    }

    /// Refuses every call once damage is known; known damage is looked for again first when
    /// a look is due (see [`reported_damage`]).
    fn refuse_if_damaged(&self) -> Result<(), StoreError> {
        self.report_page_damage();
        if let Some(path) = &self.path
            && self.reported.look_again(|| file_reads_sound(path))
        {
            // The writer may keep a page as it was misread; readers that read one are closed.
            if let Err(error) = lock(&self.writer)
                .conn
                .execute_batch("PRAGMA shrink_memory")
            {
                tracing::warn!(%error, "cannot empty the writer's page cache");
            }
        }
        self.refuse_if_damage_known()
    }

    /// [`Self::refuse_if_damaged`] without the look at the whole file: no I/O, no lock.
    fn refuse_if_damage_known(&self) -> Result<(), StoreError> {
        match (self.damage(), &self.path) {
            (Some(reason), Some(path)) => Err(StoreError::Corrupt {
                path: path.clone(),
                reason,
            }),
            _ => Ok(()),
        }
    }

    /// Runs `f` on a reader connection for a request; `action` names it in errors.
    fn read<T>(
        &self,
        action: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.read_quietly(action, f)
    }

    /// [`Self::read`] for the store's own background work (page check, index merge), which
    /// must not end a quiet spell.
    fn read_quietly<T>(
        &self,
        action: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.refuse_if_damaged()?;
        match &self.readers {
            Some(pool) => pool.with(f),
            None => f(&lock(&self.writer).conn),
        }
        .map_err(self.fail(action))
    }

    /// Whether a store of `size` is small enough for [`NoteBackend::search_at_once`],
    /// remembered for the next search.
    fn small_enough_to_search_at_once(&self, size: StoreSize) -> bool {
        let small = size.notes <= SEARCH_AT_ONCE_NOTES && size.tokens <= SEARCH_AT_ONCE_TOKENS;
        self.small_when_searched.store(small, Ordering::Relaxed);
        small
    }

    /// [`Self::read`] if a connection is free at once and no damage is known; `None` without
    /// waiting for a connection or a look at the file otherwise, and where SQLite would wait
    /// for another connection's lock.
    fn read_at_once<T>(
        &self,
        action: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<Result<T, StoreError>> {
        if self.damage().is_some() {
            return None;
        }
        let out = lock_wait::without_waiting(|| match &self.readers {
            Some(pool) => pool.try_with(f),
            None => match self.writer.try_lock() {
                Ok(writer) => Some(f(&writer.conn)),
                Err(std::sync::TryLockError::Poisoned(writer)) => {
                    Some(f(&writer.into_inner().conn))
                }
                Err(std::sync::TryLockError::WouldBlock) => None,
            },
        })?;
        if let Err(error) = &out
            && matches!(
                error.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            )
        {
            return None;
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        Some(out.map_err(self.fail(action)))
    }

    /// Runs `f` on a reader connection and unwraps its answer.
    #[cfg(test)]
    pub(super) fn read_for_tests<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> T {
        self.read_quietly("run a test", f).expect("test read")
    }

    /// Runs `f` for a request and commits it, together with the other requests' writes that
    /// wait meanwhile (group commit: see [`WriteQueue`]), and with their vocabulary changes;
    /// answers once it is durable. `action` names it in errors.
    fn write<T, F>(&self, action: &'static str, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T> + Send + 'static,
    {
        // The log file is checked before the group, by whichever thread commits it.
        self.refuse_if_damaged()?;
        let slot = self.queue_write(f);
        loop {
            if let Some(result) = slot.take() {
                return result.map_err(self.fail(action));
            }
            let mut writer = lock(&self.writer);
            // The thread that held the writer may have committed this write with its own.
            if let Some(result) = slot.take() {
                return result.map_err(self.fail(action));
            }
            if !self.commit_next_group(&mut writer) {
                // Not settled and not queued: its group ended without settling it.
                return Err(group_commit::aborted("the write was lost")).map_err(self.fail(action));
            }
        }
    }

    /// Queues `f` for the next group; its result arrives in the slot.
    fn queue_write<T, F>(&self, f: F) -> Arc<ResultSlot<T>>
    where
        T: Send + 'static,
        F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T> + Send + 'static,
    {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.wrote.store(true, Ordering::Relaxed);
        self.queue.push(f)
    }

    /// The queued write `f`, answered once a thread running [`QueuedWrites::commit_queued`]
    /// has committed it. Called on the async runtime's threads, so it looks only at what is
    /// known: damage on record refuses it at once (while damage is on record writes are not
    /// queued, see [`QueuedWrites::can_queue`], so that the look at the whole file runs on a
    /// blocking thread), and the log file is checked by the thread committing the group.
    fn queued<T, F>(&self, action: &'static str, f: F) -> QueuedWrite<'_, T>
    where
        T: Send + 'static,
        F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T> + Send + 'static,
    {
        self.refuse_if_damage_known()?;
        let slot = self.queue_write(f);
        Ok(Box::pin(async move {
            slot.wait().await.map_err(self.fail(action))
        }))
    }

    /// Commits the writes queued now as one group on the writer; false if none were. Each
    /// write's result, the commit's failure included, goes to its slot.
    fn commit_next_group(&self, writer: &mut Writer) -> bool {
        let group = self.queue.take_group();
        if group.is_empty() {
            return false;
        }
        let committed = group_commit::commit_group(
            &mut writer.conn,
            &mut writer.known_terms,
            group,
            |conn| {
                self.durable()?;
                self.allow_checkpoints(conn)
            },
            || {
                // Before any write is answered: a read its caller makes next must not be
                // served the note as it was from memory.
                self.changes.wrote();
                self.durable()
            },
        );
        if let Err(error) = committed {
            // A commit that failed changed nothing, but what was kept is dropped all the same.
            self.changes.wrote();
            // Damage is put on record here, whether or not anyone still waits for an answer.
            let _ = self.fail("commit notes")(error);
        }
        true
    }

    /// Runs `f` for a request in an IMMEDIATE transaction of its own, for what must not share
    /// one (a rebuild, a check); `action` names it in errors.
    fn write_alone<T>(
        &self,
        action: &'static str,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.write_quietly(action, f)
    }

    /// [`Self::write`] for the store's own background work (page check, index merge), which
    /// must not end a quiet spell. Taking the write lock up front means waiting for other
    /// writers honours the busy timeout; a deferred transaction that upgrades from read to
    /// write gets SQLITE_BUSY at once instead.
    fn write_quietly<T>(
        &self,
        action: &'static str,
        f: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        self.refuse_if_damaged()?;
        self.durable().map_err(self.fail(action))?;
        self.wrote.store(true, Ordering::Relaxed);
        let mut writer = lock(&self.writer);
        // It may write the vocabulary (a rebuild does) by other means than a group's.
        writer.known_terms.forget();
        let run = |conn: &mut Connection| {
            self.allow_checkpoints(conn)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            self.durable()?;
            Ok(out)
        };
        let written = run(&mut writer.conn);
        self.changes.wrote();
        written.map_err(self.fail(action))
    }

    /// Runs `read`, a read of one note, and keeps the note in memory for
    /// [`NoteBackend::get_cached`].
    ///
    /// The stamp is taken before the read, whose snapshot is then at least as new, so a note
    /// is only ever served at a moment whose data it shows. A commit during the read makes
    /// that moment past: the note would never be served, and keeping it would drop what was
    /// kept at the new moment, so it is not kept.
    fn read_and_keep<T: Kept>(
        &self,
        cache: &NoteCache<T>,
        read: impl FnOnce() -> Result<Option<T>, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let read_at = self.changes.stamp();
        let note = read()?;
        if let (Some(note), Some(read_at)) = (&note, read_at)
            && self.changes.stamp() == Some(read_at)
        {
            cache.keep(note, read_at);
        }
        Ok(note)
    }

    /// Lets the writer copy the WAL into the main file once the page check has passed; until
    /// then, and for good once damage is known, it only appends to the WAL.
    fn allow_checkpoints(&self, writer: &Connection) -> rusqlite::Result<()> {
        let allowed = self.pages_sound() && !self.reported.is_known();
        if allowed && self.checkpoints_on.load(Ordering::Relaxed) {
            return Ok(());
        }
        let pages = if allowed { WAL_AUTOCHECKPOINT_PAGES } else { 0 };
        writer.pragma_update(None, "wal_autocheckpoint", pages)?;
        writer.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, !allowed)?;
        self.checkpoints_on.store(allowed, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for SqliteBackend {
    fn drop(&mut self) {
        // The check's connection closes first, and a check that passed lets the writer,
        // closing last, fold the WAL into the file. After writes, the check is worth waiting
        // for: without it, a run of short sessions would grow the WAL without end.
        if self.wrote.load(Ordering::Relaxed) {
            self.pages.wait();
        } else {
            self.pages.stop();
        }
        let _ = self.allow_checkpoints(&lock(&self.writer).conn);
    }
}

#[cfg(test)]
mod tests {
    use super::search::in_snapshot;
    use super::*;

    fn failure(code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    #[test]
    fn a_snapshot_whose_reads_fail_is_rolled_back_and_the_next_begins_anew() {
        let conn = Connection::open_in_memory().unwrap();
        let failed: rusqlite::Result<()> = in_snapshot(&conn, || {
            assert!(!conn.is_autocommit(), "inside a transaction");
            conn.execute("SELECT * FROM no_such_table", []).map(|_| ())
        });
        assert!(failed.is_err());
        assert!(conn.is_autocommit(), "the failed snapshot was rolled back");
        let answer = in_snapshot(&conn, || {
            conn.query_row("SELECT 42", [], |r| r.get::<_, i64>(0))
        });
        assert_eq!(answer.unwrap(), 42);
        assert!(conn.is_autocommit());
    }

    #[test]
    fn a_disk_that_fails_is_not_called_damage_nor_a_lock_busy() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let io = backend.fail("save the note")(failure(rusqlite::ffi::SQLITE_IOERR_READ));
        let text = io.to_string();
        assert!(
            matches!(io, StoreError::Backend { .. })
                && text.contains("the disk failed to read or write it")
                && text.contains("not known to be damaged")
                && !text.contains("restore"),
            "{text}"
        );
        let read_only = backend.fail("save the note")(failure(rusqlite::ffi::SQLITE_READONLY));
        assert!(
            read_only.to_string().contains(write_probe::READ_ONLY),
            "{read_only}"
        );
        assert!(backend.damage().is_none(), "no damage is on record");
    }

    #[test]
    fn a_store_in_memory_is_searched_at_once_unless_its_connection_is_in_use() {
        let backend = SqliteBackend::open_in_memory(true).unwrap();
        let held = lock(&backend.writer);
        assert!(backend.search_at_once("deploy", &[], 10).is_none());
        drop(held);
        let hits = backend.search_at_once("deploy", &[], 10).unwrap().unwrap();
        assert_eq!(hits, backend.search("deploy", &[], 10).unwrap());
    }

    #[test]
    fn a_store_of_few_but_long_notes_is_searched_on_a_read_thread() {
        let backend = SqliteBackend::open_in_memory(true).unwrap();
        let long = NoteDraft {
            id: "long".to_owned(),
            title: "Long".to_owned(),
            tags: Vec::new(),
            body: (0..SEARCH_AT_ONCE_TOKENS)
                .map(|n| format!("word{n}"))
                .collect::<Vec<_>>()
                .join(" "),
        };
        backend
            .put(
                long,
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert!(backend.search_at_once("word1", &[], 10).is_none());
        assert!(!backend.small_when_searched.load(Ordering::Relaxed));
        assert_eq!(backend.search("word12", &[], 10).unwrap().len(), 1);
    }

    #[test]
    fn a_read_at_once_that_meets_a_lock_is_left_to_a_read_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.db");
        let backend = SqliteBackend::open(&path, &SqliteOptions::default()).unwrap();
        backend.search("deploy", &[], 10).unwrap();
        // A lock SQLite would wait for answers "busy" at once here (`lock_wait`'s tests).
        for code in [rusqlite::ffi::SQLITE_BUSY, rusqlite::ffi::SQLITE_LOCKED] {
            let met: Option<Result<(), StoreError>> =
                backend.read_at_once("search notes", |_| Err(failure(code)));
            assert!(met.is_none(), "code {code}");
        }
        let other: Option<Result<(), StoreError>> = backend.read_at_once("search notes", |_| {
            Err(failure(rusqlite::ffi::SQLITE_IOERR_READ))
        });
        assert!(matches!(other, Some(Err(StoreError::Backend { .. }))));
        assert!(backend.search_at_once("deploy", &[], 10).is_some());
    }

    #[test]
    fn a_small_store_is_searched_at_once_and_a_grown_one_on_a_read_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.db");
        let options = SqliteOptions {
            max_readers: 1,
            ..SqliteOptions::default()
        };
        let backend = SqliteBackend::open(&path, &options).unwrap();
        // Another process's view of the same file.
        let other = SqliteBackend::open(&path, &options).unwrap();
        assert!(
            backend.search_at_once("deploy", &[], 10).is_none(),
            "no connection is open yet, and opening one is left to a read thread"
        );
        let on_a_thread = backend.search("deploy", &[], 10).unwrap();
        let at_once = backend
            .search_at_once("deploy", &[], 10)
            .expect("a 3-note store is searched at once")
            .unwrap();
        assert_eq!(at_once.len(), 1);
        assert_eq!(at_once, on_a_thread);
        let reader = backend.readers.as_ref().unwrap();
        reader
            .with(|_| {
                assert!(
                    backend.search_at_once("deploy", &[], 10).is_none(),
                    "it does not wait for the one connection, in use"
                );
                Ok(())
            })
            .unwrap();
        other.search("deploy", &[], 10).unwrap();
        assert!(other.search_at_once("deploy", &[], 10).is_some());

        let grown = (0..SEARCH_AT_ONCE_NOTES)
            .map(|n| NoteDraft {
                id: format!("deploy-{n}"),
                title: format!("Deploy {n}"),
                tags: Vec::new(),
                body: "Another deploy.".to_owned(),
            })
            .collect();
        backend
            .put_many(
                grown,
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert!(
            other.search_at_once("deploy", &[], 10).is_none(),
            "the size is read again in the search's snapshot"
        );
        assert!(!other.small_when_searched.load(Ordering::Relaxed));
        let on_a_thread = other.search("deploy", &[], 100).unwrap();
        assert_eq!(on_a_thread.len(), 65);
        assert!(backend.search_at_once("deploy", &[], 10).is_none());
    }

    #[test]
    fn vectors_kept_in_memory_outlive_commits_that_leave_them_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.db");
        let backend = SqliteBackend::open(&path, &SqliteOptions::default()).unwrap();
        let other = SqliteBackend::open(&path, &SqliteOptions::default()).unwrap();
        let by = crate::store::Provenance::write("test");
        let draft = |id: &str| NoteDraft {
            id: id.to_owned(),
            title: id.to_owned(),
            tags: Vec::new(),
            body: "text".to_owned(),
        };
        for id in ["north", "south"] {
            backend.put(draft(id), PutMode::CreateOnly, &by).unwrap();
        }
        let model = "test-model";
        let unit = |x: f32| vec![x, (1.0 - x * x).sqrt()];
        assert!(
            backend
                .put_vectors("north", 1, model, vec![unit(1.0)])
                .unwrap()
        );
        let nearest = |store: &SqliteBackend| -> Vec<String> {
            let hits = store.nearest(model, &unit(1.0), &[], 10).unwrap();
            hits.into_iter().map(|h| h.id).collect()
        };
        let kept = |store: &SqliteBackend| {
            let now = store.read_for_tests(vectors::generation);
            store
                .vector_cache
                .latest(model)
                .filter(|(generation, _, _)| *generation == now.generation)
                .map(|(_, _, matrix)| matrix)
        };
        assert_eq!(nearest(&backend), ["north"]);
        let first = kept(&backend).expect("the matrix is kept");

        // Another note written, here and by another process: no vector changed.
        backend
            .put(draft("east"), PutMode::CreateOnly, &by)
            .unwrap();
        other.put(draft("west"), PutMode::CreateOnly, &by).unwrap();
        assert_eq!(nearest(&backend), ["north"]);
        let after = kept(&backend).expect("still kept");
        assert!(Arc::ptr_eq(&first, &after), "the matrix was not read again");

        // North's vector turned around behind the generation's back, as only a change
        // bypassing PKB could: vectors added by another process are read alone, so the kept
        // north still leads.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute(
                "UPDATE note_vectors SET vector = ?1",
                [crate::meaning::vector_bytes(&unit(-1.0))],
            )
            .unwrap();
        assert!(
            other
                .put_vectors("south", 1, model, vec![unit(0.6)])
                .unwrap()
        );
        assert_eq!(nearest(&backend), ["north", "south"]);
        // A note with vectors changed, which removes them: everything is read again.
        other.put(draft("north"), PutMode::Replace, &by).unwrap();
        assert_eq!(
            nearest(&backend),
            ["south"],
            "the changed note's vectors are gone"
        );
        other.delete("south", "test").unwrap();
        assert!(nearest(&backend).is_empty());
    }
}
