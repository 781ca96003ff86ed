//! How a connection waits for another's lock: it looks again every millisecond, for up to
//! [`BUSY_TIMEOUT`].
//!
//! SQLite's own wait (`busy_timeout`) sleeps longer and longer between looks, up to 100 ms.
//! With sixteen processes writing to one file, a writer that had waited a while mostly looked
//! while another held the lock: one waited 3.9 s where a fair turn was about 0.15 s, and one
//! write in 800 gave up at the 5 s limit. Looking often gives every waiting writer about the
//! same chance at each release, however long it has waited.

use std::cell::Cell;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::opening::BUSY_TIMEOUT;

/// The pause between two looks at a lock.
const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(1);

/// Makes `conn` wait for other connections' locks as this module says.
pub(super) fn wait_for_locks(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_handler(Some(look_again))
}

thread_local! {
    /// Whether calls on this thread give up at once where they would wait for a lock.
    static NO_WAITING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every lock wait on this thread given up at once: SQLite answers "busy"
/// where its busy handler would wait. For calls made on the async runtime's threads. (A
/// read that starts while another connection rewrites the WAL index still retries briefly
/// inside SQLite, without the handler; that takes microseconds unless the index is
/// being recovered after a crash.)
pub(super) fn without_waiting<T>(f: impl FnOnce() -> T) -> T {
    /// Puts the thread's setting back however `f` ends.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            NO_WAITING.set(self.0);
        }
    }
    let _restore = Restore(NO_WAITING.replace(true));
    f()
}

/// SQLite's busy handler: `attempts` counts the looks of this wait so far, and SQLite calls
/// it on the thread that waits. SQLite does not always reset the count before a wait (a
/// statement's preparation starts from the last one's), so a wait is new unless `attempts`
/// follows the last look's.
fn look_again(attempts: i32) -> bool {
    thread_local! {
        static WAIT: Cell<Option<(i32, Instant)>> = const { Cell::new(None) };
    }
    if NO_WAITING.get() {
        return false;
    }
    let since = WAIT.with(|wait| {
        let since = match wait.get() {
            Some((last, since)) if attempts > 0 && attempts == last.saturating_add(1) => since,
            _ => Instant::now(),
        };
        wait.set(Some((attempts, since)));
        since
    });
    if since.elapsed() >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(LOOK_AGAIN_AFTER);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection holding the write lock of a new file in `dir`, and one that waits for locks.
    fn held_lock(dir: &tempfile::TempDir) -> (Connection, Connection) {
        let path = dir.path().join("locked.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t (x); BEGIN IMMEDIATE;")
            .unwrap();
        let waiter = Connection::open(&path).unwrap();
        wait_for_locks(&waiter).unwrap();
        (holder, waiter)
    }

    #[test]
    fn a_held_lock_is_waited_for_and_taken_when_it_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let (holder, waiter) = held_lock(&dir);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            holder.execute_batch("COMMIT;").unwrap();
        });
        let started = Instant::now();
        waiter
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT;")
            .expect("the lock is taken once let go");
        assert!(
            started.elapsed() >= Duration::from_millis(50),
            "it was waited for"
        );
        release.join().unwrap();
    }

    #[test]
    fn without_waiting_a_held_lock_is_busy_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (_holder, waiter) = held_lock(&dir);
        let started = Instant::now();
        let busy = without_waiting(|| waiter.execute_batch("BEGIN IMMEDIATE;")).unwrap_err();
        assert_eq!(
            busy.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        assert!(started.elapsed() < BUSY_TIMEOUT, "it did not wait");
        assert!(!NO_WAITING.get(), "the thread waits again afterwards");
    }
}
