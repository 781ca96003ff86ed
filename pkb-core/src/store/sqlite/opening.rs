//! Opening a store: the file inspected and refused or accepted as it is, WAL switched on, the
//! connections configured, a new store seeded; and the in-memory store.

use super::*;

/// How long a connection waits for another one's lock before giving up with "busy"
/// ([`lock_wait`]).
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Prepared statements kept per connection; the store uses fewer than this.
pub(super) const STATEMENT_CACHE: usize = 32;
/// The WAL file is cut back to this size after a checkpoint instead of staying at its peak.
pub(super) const WAL_SIZE_LIMIT: i64 = 32 * 1024 * 1024;
/// SQLite's default: the writer copies the WAL into the main file once it holds this many pages.
pub(super) const WAL_AUTOCHECKPOINT_PAGES: i64 = 1000;

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
                let file = path.to_owned();
                PageCheck::start(
                    move || open_reader(&file),
                    path.display().to_string(),
                    Arc::clone(&requests),
                )
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
            linked: NoteCache::new(),
            vector_cache: Default::default(),
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
            linked: NoteCache::new(),
            vector_cache: Default::default(),
            small_when_searched: AtomicBool::new(true),
            wal: wal_watch::WalWatch::none(),
        })
    }
}

/// Turns an inspection into the state to act on, or the error that refuses the file.
pub(super) fn accept(
    path: &Path,
    state: Result<FileState, InspectError>,
) -> Result<FileState, StoreError> {
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
pub(super) fn enable_wal(conn: &Connection) -> rusqlite::Result<String> {
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
pub(super) fn configure_writer(conn: &Connection) -> rusqlite::Result<()> {
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
pub(super) fn keep_temp_tables_in_memory(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "temp_store", "MEMORY")
}

/// What a connection that searches needs: temporary data in memory, `pkb_rank`, and
/// `pkb_fold`, through which the index reads the notes; and plans that stay put.
pub(super) fn prepare_for_search(conn: &Connection) -> rusqlite::Result<()> {
    keep_temp_tables_in_memory(conn)?;
    // Without the planner's stability guarantee, a statement whose plan could use a bound
    // value (a `LIMIT ?`, with STAT4 a compared column) is compiled again each time that
    // value is bound: most of the store's statements, every call, about a third of a
    // search's time on a small store.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    fold_function::register(conn)?;
    bm25_rank::register(conn)
}

/// Whether a read of the whole file at `path`, on a connection of its own, finds every page
/// and the search index sound: `PRAGMA quick_check`, which runs FTS5's own check too.
pub(super) fn file_reads_sound(path: &Path) -> bool {
    let problems = open_reader(path).and_then(|conn| {
        let mut check = conn.prepare("PRAGMA quick_check(1)")?;
        check
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()
    });
    matches!(problems.as_deref(), Ok([ok]) if ok == "ok")
}

pub(super) fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
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
