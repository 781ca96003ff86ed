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
mod note_cache;
mod page_check;
mod query;
mod queued_writes;
mod quiet_merge;
mod read_threads;
mod reported_damage;

mod bm25_rank;
mod fold_function;
mod fts5_tokenizer;
mod lock_wait;
mod schema;
mod search_planner;
mod terms;
mod wal_watch;
mod write_probe;

pub use self::backend::NoteBackend;
use self::change_watch::ChangeWatch;
use self::group_commit::{ResultSlot, WriteQueue};
use self::note_cache::NoteCache;
use self::page_check::{PageCheck, Verdict};
pub use self::queued_writes::{QueuedWrite, QueuedWrites};
pub use self::quiet_merge::MergeProgress;
use self::reported_damage::ReportedDamage;
use self::schema::{Depth, FileState, InspectError, SCHEMA_VERSION};
use self::search_planner::StoreSize;
use self::terms::{KnownTermIds, VocabularyChanges};
use super::{
    BoxError, MAX_LIMIT, NoteDates, NoteDraft, NoteSummary, PutMode, PutOutcome, RANK_WINDOW,
    SearchHit, Store, StoreError,
};
use crate::fold::fold_for_search;
use crate::locks::lock;
use crate::note::{Note, now_rfc3339};

/// How to open a SQLite store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Seed a newly created store with the contract's three notes.
    pub seed: bool,
    /// Most read connections kept open at once (at least 1), and the number of read threads.
    pub max_readers: usize,
    /// When an existing file is read through for damaged pages.
    pub damage_check: DamageCheck,
}

/// When [`open`] reads every table and index of an existing file
/// for damage.
///
/// Either way a file found damaged is not written to: in the background, the WAL is not copied
/// into the main file until the check has passed, and every call after a failed check (or after
/// SQLite reports damage during a call) is refused with [`StoreError::Corrupt`]. A file not in
/// WAL mode is always checked before `open` returns. A store that wrote waits for the check
/// when it closes, so that its writes can be folded into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DamageCheck {
    /// Before `open` returns, which then refuses a damaged file. Costs a read of the whole
    /// file (about 0.3 s at 100,000 notes).
    BeforeOpen,
    /// On a thread of its own after `open` returns, so a server answers at once.
    #[default]
    InBackground,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            seed: true,
            max_readers: READ_THREADS,
            damage_check: DamageCheck::default(),
        }
    }
}

/// Reading threads, and read connections, of a store opened with default options or from a
/// backend. Two let a fetch pass a slow search; each further one costs a connection's page
/// cache and a malloc arena (four took the benchmark's peak RSS from 24 to 31 MiB).
const READ_THREADS: usize = 2;

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

/// How long a connection waits for another one's lock before giving up with "busy"
/// ([`lock_wait`]).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Prepared statements kept per connection; the store uses fewer than this.
const STATEMENT_CACHE: usize = 32;
/// The WAL file is cut back to this size after a checkpoint instead of staying at its peak.
const WAL_SIZE_LIMIT: i64 = 32 * 1024 * 1024;
/// SQLite's default: the writer copies the WAL into the main file once it holds this many pages.
const WAL_AUTOCHECKPOINT_PAGES: i64 = 1000;
/// A store of at most this many notes, holding at most [`SEARCH_AT_ONCE_TOKENS`] words in
/// all, answers a search on the caller's thread ([`NoteBackend::search_at_once`]): any
/// search of so little takes tens of microseconds at most, about what the hop to a read
/// thread and back costs. The words bound it as the notes alone do not: 64 long notes can
/// hold a vocabulary whose prefix queries take milliseconds.
const SEARCH_AT_ONCE_NOTES: i64 = 64;
/// See [`SEARCH_AT_ONCE_NOTES`]: 64 notes of 125 words.
const SEARCH_AT_ONCE_TOKENS: i64 = 8_000;

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
fn search_sql(score: &str, tagged: bool) -> String {
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
static SEARCH_SQL: LazyLock<[[String; 2]; 2]> = LazyLock::new(|| {
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
    pub(super) fn open(path: &Path, options: &SqliteOptions) -> Result<Self, StoreError> {
        let open_error = |source: BoxError| StoreError::Open {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: parent.to_owned(),
                source: Box::new(e),
            })?;
        }
        if path.is_dir() {
            return Err(open_error("it is a folder, not a file".into()));
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| open_error(Box::new(e)))?;
        lock_wait::wait_for_locks(&conn).map_err(|e| open_error(Box::new(e)))?;
        // Closing the last connection checkpoints the WAL into the main file. A foreign WAL
        // database with pending frames must not be touched, so that stays off until the file
        // is known to be ours.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|e| open_error(Box::new(e)))?;
        // Whatever reads the search index's content (a rebuild, a migration) needs `pkb_fold`.
        fold_function::register(&conn).map_err(|e| open_error(Box::new(e)))?;

        // Everything up to here only read. Look at the file inside one read transaction
        // (a consistent snapshot that does not block writers in other processes).
        let file_len = std::fs::metadata(path)
            .map_err(|e| open_error(Box::new(e)))?
            .len();
        let state = {
            let tx = Transaction::new_unchecked(&conn, TransactionBehavior::Deferred)
                .map_err(|e| open_error(Box::new(e)))?;
            schema::inspect(&tx, Depth::Full { file_len })
        };
        let state = accept(path, state)?;
        // Only the WAL keeps writes out of the main file until the check has passed. A file in
        // another journal mode is checked first: switching it to WAL rewrites its header.
        let in_wal = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))
            .map_err(|e| open_error(Box::new(e)))?
            .eq_ignore_ascii_case("wal");
        let requests = Arc::<AtomicU64>::default();
        let pages = match state {
            FileState::Pkb(SCHEMA_VERSION)
                if in_wal && options.damage_check == DamageCheck::InBackground =>
            {
                let conn = open_reader(path).map_err(|e| open_error(Box::new(e)))?;
                PageCheck::start(conn, path.display().to_string(), Arc::clone(&requests))
                    .map_err(|e| open_error(Box::new(e)))?
            }
            // A migration writes to the file, so it waits for the check.
            FileState::Pkb(_) => match page_check::check(&conn, &AtomicBool::new(false)) {
                Verdict::Damaged(reason) => {
                    return Err(StoreError::Corrupt {
                        path: path.to_owned(),
                        reason,
                    });
                }
                verdict => PageCheck::done(verdict),
            },
            _ => PageCheck::done(Verdict::Sound),
        };

        // The file is ours or blank, and checked unless it is already in WAL mode: from here
        // on writing is fine. Switching to WAL writes the header, which is why it waits.
        let mode = enable_wal(&conn).map_err(|e| open_error(Box::new(e)))?;
        let wal = if mode.eq_ignore_ascii_case("wal") {
            wal_watch::WalWatch::of(path)
        } else {
            tracing::warn!(path = %path.display(), %mode, "WAL unavailable; readers will wait for writers");
            wal_watch::WalWatch::none()
        };
        configure_writer(&conn).map_err(|e| open_error(Box::new(e)))?;

        if state != FileState::Pkb(SCHEMA_VERSION) {
            // IMMEDIATE takes the write lock before looking again, so two processes creating
            // the same new file run one after the other and the second sees the first's work.
            let tx = Transaction::new_unchecked(&conn, TransactionBehavior::Immediate)
                .map_err(|e| open_error(Box::new(e)))?;
            match accept(path, schema::inspect(&tx, Depth::Quick))? {
                FileState::Blank => {
                    schema::upgrade(&tx, 0, options.seed).map_err(|e| open_error(Box::new(e)))?;
                    tracing::info!(path = %path.display(), seeded = options.seed, "created note store");
                }
                FileState::Pkb(version) if version < SCHEMA_VERSION => {
                    schema::upgrade(&tx, version, false).map_err(|e| open_error(Box::new(e)))?;
                    tracing::info!(path = %path.display(), from = version, to = SCHEMA_VERSION, "migrated note store");
                }
                _ => {}
            }
            tx.commit().map_err(|e| open_error(Box::new(e)))?;
        }
        let backend = SqliteBackend {
            readers: Some(ReaderPool::new(path.to_owned(), options.max_readers)),
            writer: Mutex::new(Writer::new(conn)),
            queue: WriteQueue::default(),
            path: Some(path.to_owned()),
            pages,
            checkpoints_on: AtomicBool::new(false),
            reported: ReportedDamage::default(),
            page_damage_reported: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            merging: AtomicBool::new(false),
            requests,
            changes: ChangeWatch::file(path, BUSY_TIMEOUT),
            cache: NoteCache::new(),
            small_when_searched: AtomicBool::new(true),
            wal,
        };
        backend
            .allow_checkpoints(&lock(&backend.writer).conn)
            .map_err(|e| open_error(Box::new(e)))?;
        if let Some(why) = write_probe::cannot_write(&lock(&backend.writer).conn)
            .map_err(|e| open_error(Box::new(e)))?
        {
            tracing::warn!(path = %path.display(), "{why}; every write will fail");
        }
        Ok(backend)
    }

    pub(super) fn open_in_memory(seed: bool) -> Result<Self, StoreError> {
        let fail = |e: rusqlite::Error| StoreError::Backend {
            context: "cannot create the in-memory store".to_owned(),
            source: Box::new(e),
        };
        let mut conn = Connection::open_in_memory().map_err(fail)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        prepare_for_search(&conn).map_err(fail)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        schema::upgrade(&tx, 0, seed).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(SqliteBackend {
            readers: None,
            writer: Mutex::new(Writer::new(conn)),
            queue: WriteQueue::default(),
            path: None,
            pages: PageCheck::done(Verdict::Sound),
            checkpoints_on: AtomicBool::new(true),
            reported: ReportedDamage::default(),
            page_damage_reported: AtomicBool::new(false),
            wrote: AtomicBool::new(false),
            merging: AtomicBool::new(false),
            requests: Arc::default(),
            changes: ChangeWatch::OwnWrites(AtomicU64::new(0)),
            cache: NoteCache::new(),
            small_when_searched: AtomicBool::new(true),
            wal: wal_watch::WalWatch::none(),
        })
    }

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
    pub(super) fn read_and_keep(
        &self,
        read: impl FnOnce() -> Result<Option<Note>, StoreError>,
    ) -> Result<Option<Note>, StoreError> {
        let read_at = self.changes.stamp();
        let note = read()?;
        if let (Some(note), Some(read_at)) = (&note, read_at)
            && self.changes.stamp() == Some(read_at)
        {
            self.cache.keep(note, read_at);
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

/// Turns an inspection into the state to act on, or the error that refuses the file.
fn accept(path: &Path, state: Result<FileState, InspectError>) -> Result<FileState, StoreError> {
    let path = path.to_owned();
    match state {
        Ok(FileState::Foreign(reason)) => Err(StoreError::NotPkb { path, reason }),
        Ok(FileState::TooNew(found)) => Err(StoreError::TooNew {
            path,
            found,
            supported: SCHEMA_VERSION,
        }),
        Ok(FileState::Damaged(reason)) => Err(StoreError::Corrupt { path, reason }),
        Ok(state) => Ok(state),
        Err(InspectError::NotSqlite) => Err(StoreError::NotPkb {
            path,
            reason: "it is not an SQLite database".to_owned(),
        }),
        Err(InspectError::Corrupt(e)) => Err(StoreError::Corrupt {
            path,
            reason: e.to_string(),
        }),
        Err(InspectError::Other(e)) => Err(StoreError::Open {
            path,
            source: Box::new(e),
        }),
    }
}

/// Switches the file to WAL and returns the journal mode now in force.
///
/// Two processes switching a new file at once both hold a read lock and both need the
/// exclusive one; SQLite then answers one of them "busy" at once, without waiting (waiting
/// could deadlock). Retrying is safe: once the other process has switched, the pragma finds WAL
/// already on and takes no lock at all.
fn enable_wal(conn: &Connection) -> rusqlite::Result<String> {
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Per-connection settings for the writer; none of them writes to the file.
fn configure_writer(conn: &Connection) -> rusqlite::Result<()> {
    // FULL syncs the WAL on every commit: an answered write survives power loss, not only a
    // crash of the process. fullfsync matters on macOS only, where plain fsync stops at the
    // drive's cache.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "fullfsync", true)?;
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    prepare_for_search(conn)
}

/// What SQLite keeps aside while it runs a statement (sorts, materialized views) stays in
/// memory, never in a file. Set outside any transaction, which SQLite requires.
fn keep_temp_tables_in_memory(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "temp_store", "MEMORY")
}

/// What a connection that searches needs: temporary data in memory, `pkb_rank`, and
/// `pkb_fold`, through which the index reads the notes; and plans that stay put.
fn prepare_for_search(conn: &Connection) -> rusqlite::Result<()> {
    keep_temp_tables_in_memory(conn)?;
    // Without the planner's stability guarantee, a statement whose plan could use a bound
    // value (a `LIMIT ?`, with STAT4 a compared column) is compiled again each time that
    // value is bound: most of the store's statements, every call, about a third of a
    // search's time on a small store.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    fold_function::register(conn)?;
    bm25_rank::register(conn)
}

/// Runs `f` in one read transaction of `conn`, committed when it succeeds (so that a table a
/// tokenizer created on the way stays) and rolled back when it fails. `BEGIN` and `COMMIT` are
/// cached statements: compiling them for every search was a twentieth of its time.
fn in_snapshot<T>(
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

/// Whether a read of the whole file at `path`, on a connection of its own, finds every page
/// and the search index sound: `PRAGMA quick_check`, which runs FTS5's own check too.
fn file_reads_sound(path: &Path) -> bool {
    let problems = open_reader(path).and_then(|conn| {
        let mut check = conn.prepare("PRAGMA quick_check(1)")?;
        check
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()
    });
    matches!(problems.as_deref(), Ok([ok]) if ok == "ok")
}

fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    lock_wait::wait_for_locks(&conn)?;
    // The store's files are only ever written by the writer.
    conn.pragma_update(None, "query_only", true)?;
    prepare_for_search(&conn)?;
    // The writer alone decides when the WAL may go into the main file; see `allow_checkpoints`.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Reader connections, opened on demand up to `max` and reused.
struct ReaderPool {
    path: PathBuf,
    max: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
}

struct PoolState {
    idle: Vec<Connection>,
    open: usize,
}

impl ReaderPool {
    fn new(path: PathBuf, max: usize) -> Self {
        ReaderPool {
            path,
            max: max.max(1),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        let conn = self.checkout()?;
        self.run(conn, f)
    }

    /// [`Self::with`] on an idle connection, or `None` if none is idle: it neither waits nor
    /// opens one.
    fn try_with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<rusqlite::Result<T>> {
        let conn = lock(&self.state).idle.pop()?;
        Some(self.run(conn, f))
    }

    /// Runs `f` on `conn`, checked out of this pool, and gives it back.
    fn run<T>(
        &self,
        conn: Connection,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let mut slot = Slot {
            pool: self,
            lost: true,
        };
        let out = f(&conn);
        // A page SQLite could not make sense of stays in the connection's cache, where a file
        // mended since would never be read again: that connection is closed.
        if let Err(e) = &out
            && e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseCorrupt)
        {
            return out;
        }
        slot.lost = false;
        lock(&self.state).idle.push(conn);
        self.returned.notify_one();
        out
    }

    fn checkout(&self) -> rusqlite::Result<Connection> {
        let mut state = lock(&self.state);
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(conn);
            }
            if state.open < self.max {
                state.open += 1;
                drop(state);
                return open_reader(&self.path).inspect_err(|_| {
                    lock(&self.state).open -= 1;
                    self.returned.notify_one();
                });
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Frees a connection's place in the pool if the caller panics while using it (the connection
/// itself is then dropped and closed by the unwinding).
struct Slot<'a> {
    pool: &'a ReaderPool,
    lost: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if self.lost {
            lock(&self.pool.state).open -= 1;
            self.pool.returned.notify_one();
        }
    }
}

/// Tags as stored in `notes.tags`: a JSON array of strings.
pub(super) fn tags_to_json<'a>(tags: impl Iterator<Item = &'a str>) -> String {
    serde_json::Value::Array(tags.map(serde_json::Value::from).collect()).to_string()
}

pub(super) fn tags_from_json(row: &Row<'_>, column: usize) -> rusqlite::Result<Vec<String>> {
    let text: String = row.get(column)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(column, Type::Text, Box::new(e)))
}

fn note_from_row(row: &Row<'_>) -> rusqlite::Result<Note> {
    Ok(Note {
        id: row.get(0)?,
        title: row.get(1)?,
        tags: tags_from_json(row, 2)?,
        body: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
    })
}

fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0)
}

/// [`NoteBackend::search`] on `conn`, in a snapshot the caller holds (where it read `size`),
/// for a query with words (`expr` is its [`query::match_expression`]) and a `limit` above 0.
fn search_on(
    conn: &Connection,
    query: &str,
    expr: &str,
    tags: &[String],
    limit: usize,
    size: StoreSize,
) -> rusqlite::Result<Vec<SearchHit>> {
    let wanted = tags_to_json(tags.iter().map(String::as_str));
    let limit = limit.min(MAX_LIMIT);
    Ok(
        match search_planner::search(conn, query, tags, &wanted, limit, size)? {
            search_planner::Plan::Ranked(hits) => hits,
            search_planner::Plan::Fts5Terms(terms) => {
                fts5_search(conn, &terms.expr, Some(&terms), tags, &wanted, limit)?
            }
            search_planner::Plan::Fts5Prefixes => {
                fts5_search(conn, expr, None, tags, &wanted, limit)?
            }
        },
    )
}

/// Search ranked over the MATCH expression `expr`: the query's own prefix phrases scored by
/// FTS5's `bm25()`, or the exact terms [`search_planner::search`] expanded them to, scored by
/// `pkb_rank` with the vocabulary's IDFs.
fn fts5_search(
    conn: &Connection,
    expr: &str,
    scoring: Option<&search_planner::Fts5Terms>,
    tags: &[String],
    tags_json: &str,
    limit: usize,
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
    let mut args: Vec<&dyn ToSql> = vec![&expr, &limit, &RANK_WINDOW];
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

/// Inserts a new note and its index entries; returns its rowid.
fn insert_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    id: &str,
    title: &str,
    tags: &[String],
    body: &str,
    stamps: Stamps<'_>,
) -> rusqlite::Result<i64> {
    let tags_json = tags_to_json(tags.iter().map(String::as_str));
    conn.prepare_cached(
        "INSERT INTO notes (id, title, tags, body, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        title,
        tags_json,
        body,
        stamps.created.unwrap_or(stamps.updated),
        stamps.updated
    ])?;
    let seq = conn.last_insert_rowid();
    index_row(conn, vocabulary, seq, title, &tags_json, body, tags)?;
    Ok(seq)
}

/// Adds a stored note to the search and tag indexes. Single-row statements only: see the
/// schema's note on savepoints.
fn index_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    seq: i64,
    title: &str,
    tags_json: &str,
    body: &str,
    tags: &[String],
) -> rusqlite::Result<()> {
    // As the index's content, the `notes_folded` view, reads the row.
    let (title, tags_json, body) = (
        fold_for_search(title),
        fold_for_search(tags_json),
        fold_for_search(body),
    );
    conn.prepare_cached(
        "INSERT INTO notes_fts (rowid, title, tags, body) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![seq, title, tags_json, body])?;
    terms::index_terms(conn, vocabulary, seq, &title, &tags_json, &body)?;
    let mut tag_row =
        conn.prepare_cached("INSERT OR IGNORE INTO note_tags (tag, note) VALUES (?1, ?2)")?;
    for tag in tags {
        tag_row.execute(params![tag, seq])?;
    }
    Ok(())
}

/// Removes a note from the search and tag indexes. FTS5's external-content `delete` needs
/// exactly the values that were indexed, which are the stored ones folded.
fn unindex_row(
    conn: &Connection,
    vocabulary: &mut VocabularyChanges,
    old: &StoredRow,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO notes_fts (notes_fts, rowid, title, tags, body) VALUES ('delete', ?1, ?2, ?3, ?4)",
    )?
    .execute(params![
        old.seq,
        fold_for_search(&old.title),
        fold_for_search(&old.tags_json),
        fold_for_search(&old.body)
    ])?;
    terms::unindex_terms(conn, vocabulary, old.seq)?;
    conn.prepare_cached("DELETE FROM note_tags WHERE note = ?1")?
        .execute([old.seq])?;
    Ok(())
}

/// A note's row as stored, with what its index entries were made from.
struct StoredRow {
    seq: i64,
    title: String,
    tags_json: String,
    body: String,
    created_at: String,
}

fn stored_row(conn: &Connection, id: &str) -> rusqlite::Result<Option<StoredRow>> {
    conn.prepare_cached("SELECT seq, title, tags, body, created_at FROM notes WHERE id = ?1")?
        .query_row([id], |r| {
            Ok(StoredRow {
                seq: r.get(0)?,
                title: r.get(1)?,
                tags_json: r.get(2)?,
                body: r.get(3)?,
                created_at: r.get(4)?,
            })
        })
        .optional()
}

/// The dates one put stores.
#[derive(Clone, Copy)]
pub(super) struct Stamps<'a> {
    /// `created_at`; `None` keeps a replaced note's, and gives a new note `updated`.
    pub created: Option<&'a str>,
    /// `updated_at`.
    pub updated: &'a str,
}

impl<'a> Stamps<'a> {
    /// A save made now.
    pub fn now(now: &'a str) -> Self {
        Stamps {
            created: None,
            updated: now,
        }
    }
}

/// One put inside the caller's transaction, its vocabulary changes added to `vocabulary`.
fn put_in(
    tx: &Connection,
    vocabulary: &mut VocabularyChanges,
    draft: NoteDraft,
    mode: PutMode,
    stamps: Stamps<'_>,
) -> rusqlite::Result<PutOutcome> {
    let old = stored_row(tx, &draft.id)?;
    let replaceable = |old: &StoredRow| match mode {
        PutMode::CreateOnly => false,
        PutMode::Replace => true,
        PutMode::ReplaceTagged(tag) => serde_json::from_str::<Vec<String>>(&old.tags_json)
            .is_ok_and(|tags| tags.iter().any(|t| t == tag)),
    };
    match old {
        Some(old) if !replaceable(&old) => Ok(PutOutcome::Exists),
        Some(old) => {
            unindex_row(tx, vocabulary, &old)?;
            let tags_json = tags_to_json(draft.tags.iter().map(String::as_str));
            let created_at = stamps.created.map_or(old.created_at, str::to_owned);
            tx.prepare_cached(
                "UPDATE notes SET title = ?2, tags = ?3, body = ?4, created_at = ?5, updated_at = ?6 WHERE seq = ?1",
            )?
            .execute(params![
                old.seq,
                draft.title,
                tags_json,
                draft.body,
                created_at,
                stamps.updated
            ])?;
            index_row(
                tx,
                vocabulary,
                old.seq,
                &draft.title,
                &tags_json,
                &draft.body,
                &draft.tags,
            )?;
            Ok(PutOutcome::Replaced(Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at,
                updated_at: stamps.updated.to_owned(),
            }))
        }
        None => {
            insert_row(
                tx,
                vocabulary,
                &draft.id,
                &draft.title,
                &draft.tags,
                &draft.body,
                stamps,
            )?;
            Ok(PutOutcome::Created(Note {
                id: draft.id,
                title: draft.title,
                tags: draft.tags,
                body: draft.body,
                created_at: stamps.created.unwrap_or(stamps.updated).to_owned(),
                updated_at: stamps.updated.to_owned(),
            }))
        }
    }
}

/// Up to `limit` values from a sorted `query` (bound to `prefix`) that start with `prefix`.
/// Comparing in Rust rather than with LIKE or GLOB keeps `%`, `_`, `*`, `?` and `[` literal.
fn sorted_with_prefix(
    conn: &Connection,
    sql: &str,
    prefix: &str,
    limit: usize,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([prefix])?;
    let mut out = Vec::new();
    while out.len() < limit.min(MAX_LIMIT) {
        let Some(row) = rows.next()? else { break };
        let value: String = row.get(0)?;
        // Values >= prefix that start with it come first in sort order, so the first one
        // that does not ends the run.
        if !value.starts_with(prefix) {
            break;
        }
        out.push(value);
    }
    Ok(out)
}

const SEARCH_NOTES: &str = "search notes";
const SAVE_A_NOTE: &str = "save a note";
const SAVE_NOTES: &str = "save notes";
const DELETE_A_NOTE: &str = "delete a note";

/// The write of `put`; it may run twice (see [`group_commit`]), hence the clone.
fn put_write(
    draft: NoteDraft,
    mode: PutMode,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<PutOutcome> + Send + 'static
{
    move |tx, vocabulary| {
        put_in(
            tx,
            vocabulary,
            draft.clone(),
            mode,
            Stamps::now(&now_rfc3339()),
        )
    }
}

/// The write of `put_dated`.
fn put_dated_write(
    notes: Vec<(NoteDraft, NoteDates)>,
    mode: PutMode,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<Vec<PutOutcome>>
+ Send
+ 'static {
    move |tx, vocabulary| {
        let now = now_rfc3339();
        notes
            .iter()
            .map(|(draft, dates)| {
                let stamps = Stamps {
                    created: dates.created_at.as_deref(),
                    updated: dates.updated_at.as_deref().unwrap_or(&now),
                };
                put_in(tx, vocabulary, draft.clone(), mode, stamps)
            })
            .collect()
    }
}

/// The write of `delete`.
fn delete_write(
    id: String,
) -> impl Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<bool> + Send + 'static {
    move |tx, vocabulary| {
        let Some(old) = stored_row(tx, &id)? else {
            return Ok(false);
        };
        unindex_row(tx, vocabulary, &old)?;
        tx.prepare_cached("DELETE FROM notes WHERE seq = ?1")?
            .execute([old.seq])?;
        Ok(true)
    }
}

impl QueuedWrites for SqliteBackend {
    fn queue_put(&self, draft: NoteDraft, mode: PutMode) -> QueuedWrite<'_, PutOutcome> {
        self.queued(SAVE_A_NOTE, put_write(draft, mode))
    }

    fn queue_put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> QueuedWrite<'_, Vec<PutOutcome>> {
        self.queued(SAVE_NOTES, put_dated_write(notes, mode))
    }

    fn queue_delete(&self, id: &str) -> QueuedWrite<'_, bool> {
        self.queued(DELETE_A_NOTE, delete_write(id.to_owned()))
    }

    fn can_queue(&self) -> bool {
        // While damage is on record each write looks at the file again when due, which reads
        // all of it: that must happen on a blocking thread, as unqueued writes run.
        self.damage().is_none()
    }

    fn commit_queued(&self) {
        let mut writer = lock(&self.writer);
        while self.commit_next_group(&mut writer) {}
    }

    fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }
}

impl NoteBackend for SqliteBackend {
    fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        self.read_and_keep(|| {
            self.read("read a note", |conn| {
                conn.prepare_cached(
                    "SELECT id, title, tags, body, created_at, updated_at FROM notes WHERE id = ?1",
                )?
                .query_row([id], note_from_row)
                .optional()
            })
        })
    }

    fn get_cached(&self, id: &str) -> Option<Note> {
        if self.damage().is_some() {
            return None;
        }
        let note = self.cache.get(id, self.changes.stamp()?)?;
        self.requests.fetch_add(1, Ordering::Relaxed);
        Some(note)
    }

    fn put(&self, draft: NoteDraft, mode: PutMode) -> Result<PutOutcome, StoreError> {
        self.write(SAVE_A_NOTE, put_write(draft, mode))
    }

    fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        self.write(SAVE_NOTES, put_dated_write(notes, mode))
    }

    fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.write(DELETE_A_NOTE, delete_write(id.to_owned()))
    }

    fn queued_writes(&self) -> Option<&dyn QueuedWrites> {
        Some(self)
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<NoteSummary>, StoreError> {
        self.read("list notes", |conn| {
            conn.prepare_cached(
                "SELECT id, title, tags, updated_at FROM notes WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?
            .query_map(params![after.unwrap_or(""), sql_limit(limit)], |row| {
                Ok(NoteSummary {
                    id: row.get(0)?,
                    title: row.get(1)?,
                    tags: tags_from_json(row, 2)?,
                    updated_at: row.get(3)?,
                })
            })?
            .collect()
        })
    }

    fn list_with_bodies(&self, after: Option<&str>, limit: usize) -> Result<Vec<Note>, StoreError> {
        self.read("list notes", |conn| {
            conn.prepare_cached(
                "SELECT id, title, tags, body, created_at, updated_at FROM notes WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?
            .query_map(params![after.unwrap_or(""), sql_limit(limit)], note_from_row)?
            .collect()
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.read("count notes", |conn| {
            conn.prepare_cached("SELECT count(*) FROM notes")?
                .query_row([], |r| r.get::<_, i64>(0))
        })
        .map(|n| u64::try_from(n).unwrap_or(0))
    }

    fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        // Its words are folded as the index holds the notes (`query::folded_words`).
        let Some(expr) = query::match_expression(query).filter(|_| limit > 0) else {
            return Ok(Vec::new());
        };
        self.read(SEARCH_NOTES, |conn| {
            // One snapshot for the planner's several statements, and one set of file locks
            // instead of one per statement.
            in_snapshot(conn, || {
                let size = StoreSize::read(conn)?;
                self.small_enough_to_search_at_once(size);
                search_on(conn, query, &expr, tags, limit, size)
            })
        })
    }

    fn search_at_once(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Option<Result<Vec<SearchHit>, StoreError>> {
        if !self.small_when_searched.load(Ordering::Relaxed) {
            return None;
        }
        let Some(expr) = query::match_expression(query).filter(|_| limit > 0) else {
            return Some(Ok(Vec::new()));
        };
        // The size is read again in the search's own snapshot: another process may have
        // written many notes since.
        let found = self.read_at_once(SEARCH_NOTES, |conn| {
            in_snapshot(conn, || {
                let size = StoreSize::read(conn)?;
                if !self.small_enough_to_search_at_once(size) {
                    return Ok(None);
                }
                search_on(conn, query, &expr, tags, limit, size).map(Some)
            })
        })?;
        found.transpose()
    }

    fn ids_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.read("list note ids", |conn| {
            sorted_with_prefix(
                conn,
                "SELECT id FROM notes WHERE id >= ?1 ORDER BY id",
                prefix,
                limit,
            )
        })
    }

    fn tags_with_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.read("list tags", |conn| {
            sorted_with_prefix(
                conn,
                "SELECT DISTINCT tag FROM note_tags WHERE tag >= ?1 ORDER BY tag",
                prefix,
                limit,
            )
        })
    }

    fn damage_checked(&self) -> Result<(), StoreError> {
        self.pages.wait();
        self.refuse_if_damaged()
    }

    fn requests_made(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn merge_index_step(&self) -> Result<MergeProgress, StoreError> {
        let start = !self.merging.load(Ordering::Relaxed);
        // Counting on a reader leaves the write lock, and the file, alone when there is
        // nothing to merge.
        if start
            && self.read_quietly("count the search index's segments", index_merge::segments)?
                <= index_merge::MAX_SEGMENTS
        {
            return Ok(MergeProgress::Done);
        }
        let progress =
            self.write_quietly("merge the search index", |tx| index_merge::step(tx, start))?;
        self.merging
            .store(progress == MergeProgress::More, Ordering::Relaxed);
        Ok(progress)
    }

    fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        self.write_alone("rebuild the indexes", |tx| {
            tx.execute_batch(
                "DELETE FROM note_tags;
                 INSERT OR IGNORE INTO note_tags (tag, note)
                     SELECT json_each.value, notes.seq FROM notes, json_each(notes.tags);",
            )?;
            schema::rebuild_search_index(tx)?;
            tx.query_row("SELECT count(*) FROM notes", [], |r| r.get(0))
        })
    }

    fn verify(&self) -> Result<(), StoreError> {
        let integrity = |conn: &Connection| {
            let mut stmt = conn.prepare("PRAGMA integrity_check(5)")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        };
        // On a connection of its own: FTS5's part of this check runs on whatever it cached
        // of its index, and a reader that checked before a rebuild reports the rebuilt index
        // as malformed.
        let problems = match &self.path {
            Some(path) => open_reader(path)
                .and_then(|conn| integrity(&conn))
                .map_err(self.fail("check the store"))?,
            None => self.read("check the store", integrity)?,
        };
        let mut problems: Vec<String> = problems.into_iter().filter(|p| p != "ok").collect();
        // The search vocabulary must hold the counts of every note and of nothing else, and
        // its statistics must count the notes.
        let (uncounted, orphaned, notes, counted): (i64, i64, i64, i64) =
            self.read("check the store", |conn| {
                conn.query_row(
                    "SELECT (SELECT count(*) FROM notes
                             WHERE NOT EXISTS (SELECT 1 FROM note_terms WHERE note = seq)),
                            (SELECT count(*) FROM note_terms
                             WHERE NOT EXISTS (SELECT 1 FROM notes WHERE seq = note)),
                            (SELECT count(*) FROM notes),
                            (SELECT notes FROM search_stats WHERE id = 1)",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
            })?;
        if uncounted != 0 || orphaned != 0 || notes != counted {
            problems.push(format!(
                "search vocabulary out of step: {uncounted} notes without term counts, \
                 {orphaned} term counts without a note, {counted} notes counted of {notes}"
            ));
        }
        // FTS5 compares its index with the notes table; it is an INSERT, so it needs the
        // writer, and it changes nothing.
        let fts = self.write_alone("check the search index", |tx| {
            tx.execute(
                "INSERT INTO notes_fts (notes_fts, rank) VALUES ('integrity-check', 1)",
                [],
            )
        });
        match fts {
            // Not getting the lock says nothing of the index.
            Err(busy @ StoreError::Busy { .. }) => return Err(busy),
            Err(e) => problems.push(format!("search index: {e}")),
            Ok(_) => {}
        }
        if problems.is_empty() {
            return Ok(());
        }
        let reason = problems.join("; ").replace('\n', " ");
        match &self.path {
            Some(path) => Err(StoreError::Corrupt {
                path: path.clone(),
                reason,
            }),
            None => Err(StoreError::Backend {
                context: "the in-memory store failed its check".to_owned(),
                source: reason.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
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
        backend.put(long, PutMode::CreateOnly).unwrap();
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
        backend.put_many(grown, PutMode::CreateOnly).unwrap();
        assert!(
            other.search_at_once("deploy", &[], 10).is_none(),
            "the size is read again in the search's snapshot"
        );
        assert!(!other.small_when_searched.load(Ordering::Relaxed));
        let on_a_thread = other.search("deploy", &[], 100).unwrap();
        assert_eq!(on_a_thread.len(), 65);
        assert!(backend.search_at_once("deploy", &[], 10).is_none());
    }
}
