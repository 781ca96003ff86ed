//! The reader connections: opened on demand up to a bound, reused, and given back even when
//! a read panics.

use super::opening::open_reader;
use super::*;

/// Reader connections, opened on demand up to `max` and reused.
pub(super) struct ReaderPool {
    path: PathBuf,
    max: usize,
    state: Mutex<PoolState>,
    returned: Condvar,
}

pub(super) struct PoolState {
    idle: Vec<Connection>,
    open: usize,
}

impl ReaderPool {
    pub(super) fn new(path: PathBuf, max: usize) -> Self {
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

    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        let conn = self.checkout()?;
        self.run(conn, f)
    }

    /// [`Self::with`] on an idle connection, or `None` if none is idle: it neither waits nor
    /// opens one.
    pub(super) fn try_with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Option<rusqlite::Result<T>> {
        let conn = lock(&self.state).idle.pop()?;
        Some(self.run(conn, f))
    }

    /// Runs `f` on `conn`, checked out of this pool, and gives it back.
    pub(super) fn run<T>(
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

    pub(super) fn checkout(&self) -> rusqlite::Result<Connection> {
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
pub(super) struct Slot<'a> {
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
