//! Group commit: writes that arrive while another is committing wait for the writer, and the
//! first of them to get it commits them all in one transaction: one fsync for the group
//! (`synchronous=FULL` unchanged), and each write answered only once its own data is durable.
//!
//! The group runs without savepoints, since FTS5 writes its pending index data out at every
//! savepoint (one index segment per write otherwise). Should a write fail, the transaction is
//! rolled back and the group run again with each write in a savepoint of its own: the failing
//! one is undone alone and the others commit. A commit that fails fails every write of the
//! group, none of which is then on disk; so does a write whose failure ended the transaction
//! (SQLite ends it at some disk-full and I/O errors), with that write's error.
//!
//! The writes of a group share one [`VocabularyChanges`], applied just before COMMIT, so a
//! term in many of the group's notes has its count written once. A write undone alone takes
//! its vocabulary changes with it. The term ids a group finds are kept for the next
//! ([`KnownTermIds`]) once it has committed; a group that fails forgets them all.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::Notify;

use super::terms::{KnownTermIds, VocabularyChanges};
use crate::locks::lock;

/// A write waiting for its group. Writes can run twice (see the module's notes), so they
/// are `Fn`.
pub(super) trait PendingWrite: Send {
    /// Runs the write in the group's transaction; its error if it failed.
    fn run(
        &mut self,
        tx: &Transaction<'_>,
        vocabulary: &mut VocabularyChanges,
    ) -> rusqlite::Result<()>;
    /// Runs the write in a savepoint of its own, undone alone if it fails; an error only if
    /// the transaction could not go on after it.
    fn run_isolated(
        &mut self,
        tx: &Transaction<'_>,
        vocabulary: &mut VocabularyChanges,
    ) -> rusqlite::Result<()>;
    /// Tells the writer's thread how its group ended: with the commit's outcome.
    fn settle(self: Box<Self>, commit: &rusqlite::Result<()>);
}

/// The writes waiting for the next group.
#[derive(Default)]
pub(super) struct WriteQueue {
    pending: Mutex<Vec<Box<dyn PendingWrite>>>,
}

impl WriteQueue {
    /// Adds a write; its result arrives in `slot`.
    pub(super) fn push<T, F>(&self, write: F) -> Arc<ResultSlot<T>>
    where
        T: Send + 'static,
        F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T> + Send + 'static,
    {
        let slot = Arc::new(ResultSlot::default());
        lock(&self.pending).push(Box::new(Write {
            write,
            outcome: None,
            slot: Arc::clone(&slot),
        }));
        slot
    }

    /// Whether a write is waiting.
    pub(super) fn is_empty(&self) -> bool {
        lock(&self.pending).is_empty()
    }

    /// Every write waiting now, for one group.
    pub(super) fn take_group(&self) -> Vec<Box<dyn PendingWrite>> {
        std::mem::take(&mut *lock(&self.pending))
    }
}

/// Commits `group` on `conn`, after `prepare`, and settles every write of it; the commit's
/// outcome. A commit counts only when `durable` confirms it after. `known` holds the term ids
/// the connection's earlier groups found.
pub(super) fn commit_group(
    conn: &mut Connection,
    known: &mut KnownTermIds,
    mut group: Vec<Box<dyn PendingWrite>>,
    prepare: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    durable: impl Fn() -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let commit = (|| {
        prepare(conn)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut vocabulary = known.changes(&tx)?;
        let failure = group
            .iter_mut()
            .find_map(|write| write.run(&tx, &mut vocabulary).err());
        let Some(failure) = failure else {
            let learned = vocabulary.apply(&tx)?;
            // Nothing is kept until `learn`: a commit that unwound before it would leave the
            // ids of terms the group dropped.
            known.forget();
            tx.commit().and_then(|()| durable())?;
            return Ok(learned);
        };
        if tx.is_autocommit() {
            return Err(failure);
        }
        drop(vocabulary);
        tx.rollback()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut vocabulary = known.changes(&tx)?;
        for write in &mut group {
            write.run_isolated(&tx, &mut vocabulary)?;
        }
        let learned = vocabulary.apply(&tx)?;
        known.forget();
        tx.commit().and_then(|()| durable())?;
        Ok(learned)
    })();
    if commit.is_err() {
        known.forget();
    }
    let commit = commit.map(|learned| known.learn(learned));
    let outcome = commit.as_ref().map(|_| ()).map_err(copy_error);
    for write in group {
        write.settle(&commit);
    }
    outcome
}

/// Where a write's result waits for whoever asked for it. A thread waits for the writer's
/// lock, not for the slot: whoever holds the lock settles every write it took before letting
/// go, so a thread that gets the lock finds its result, or its write still queued. A task
/// (see [`ResultSlot::wait`]) waits for the slot to be filled by the thread committing it.
pub(super) struct ResultSlot<T> {
    result: Mutex<Option<rusqlite::Result<T>>>,
    settled: AtomicBool,
    filled: Notify,
}

impl<T> Default for ResultSlot<T> {
    fn default() -> Self {
        Self {
            result: Mutex::new(None),
            settled: AtomicBool::new(false),
            filled: Notify::new(),
        }
    }
}

impl<T> ResultSlot<T> {
    /// The result, if the write's group has ended.
    pub(super) fn take(&self) -> Option<rusqlite::Result<T>> {
        lock(&self.result).take()
    }

    /// The result, once the write's group has ended.
    pub(super) async fn wait(&self) -> rusqlite::Result<T> {
        loop {
            if let Some(result) = self.take() {
                return result;
            }
            // `notify_one` leaves a permit when no one waits yet: a fill between the take and
            // this wait is not missed.
            self.filled.notified().await;
        }
    }

    /// Gives the write its result; only the first result given counts.
    fn fill(&self, result: rusqlite::Result<T>) {
        if self.settled.swap(true, Ordering::SeqCst) {
            return;
        }
        *lock(&self.result) = Some(result);
        self.filled.notify_one();
    }
}

struct Write<T, F> {
    write: F,
    outcome: Option<rusqlite::Result<T>>,
    slot: Arc<ResultSlot<T>>,
}

impl<T, F> Write<T, F>
where
    F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T>,
{
    /// The write's result; a panic in it (a bug) must not take the others' answers along.
    fn attempt(
        &self,
        tx: &Transaction<'_>,
        vocabulary: &mut VocabularyChanges,
    ) -> rusqlite::Result<T> {
        std::panic::catch_unwind(AssertUnwindSafe(|| (self.write)(tx, vocabulary)))
            .unwrap_or_else(|_| Err(aborted("the write failed unexpectedly")))
    }
}

impl<T, F> PendingWrite for Write<T, F>
where
    T: Send + 'static,
    F: Fn(&Transaction<'_>, &mut VocabularyChanges) -> rusqlite::Result<T> + Send + 'static,
{
    fn run(
        &mut self,
        tx: &Transaction<'_>,
        vocabulary: &mut VocabularyChanges,
    ) -> rusqlite::Result<()> {
        let outcome = self.attempt(tx, vocabulary);
        let failure = outcome.as_ref().err().map(copy_error);
        self.outcome = Some(outcome);
        failure.map_or(Ok(()), Err)
    }

    fn run_isolated(
        &mut self,
        tx: &Transaction<'_>,
        vocabulary: &mut VocabularyChanges,
    ) -> rusqlite::Result<()> {
        // Undone with the savepoint: the write's counts, and the ids of terms it added.
        let before = vocabulary.clone();
        tx.execute_batch("SAVEPOINT pkb_write")?;
        let outcome = match self.attempt(tx, vocabulary) {
            Ok(value) => tx.execute_batch("RELEASE pkb_write").map(|()| value),
            Err(error) => Err(error),
        };
        let failure = outcome.as_ref().err().map(copy_error);
        self.outcome = Some(outcome);
        let Some(failure) = failure else {
            return Ok(());
        };
        // Had SQLite ended the transaction, the savepoint would be gone with it, and what
        // runs next would commit on its own.
        if tx.is_autocommit() {
            return Err(failure);
        }
        *vocabulary = before;
        tx.execute_batch("ROLLBACK TO pkb_write; RELEASE pkb_write")
    }

    fn settle(mut self: Box<Self>, commit: &rusqlite::Result<()>) {
        let result = match (commit, self.outcome.take()) {
            (Ok(()), Some(outcome)) => outcome,
            // The commit failed (or the transaction never began): nothing of it is on disk.
            (Err(error), _) => Err(copy_error(error)),
            (Ok(()), None) => Err(aborted("the write was not run")),
        };
        self.slot.fill(result);
    }
}

impl<T, F> Drop for Write<T, F> {
    /// A write dropped before its group settled it (the thread committing it panicked) is
    /// answered all the same: whoever waits for it must not wait for ever.
    fn drop(&mut self) {
        self.slot.fill(Err(aborted("the write was lost")));
    }
}

/// An error for a write that did not run to its end.
pub(super) fn aborted(why: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some(why.to_owned()),
    )
}

/// The same error for another write of the group, keeping SQLite's code, which decides how
/// the store reports it (damage, busy, full disk).
fn copy_error(error: &rusqlite::Error) -> rusqlite::Error {
    match error {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_group(conn: &mut Connection, queue: &WriteQueue) -> rusqlite::Result<()> {
        let mut known = KnownTermIds::default();
        commit_group(conn, &mut known, queue.take_group(), |_| Ok(()), || Ok(()))
    }

    fn rows(conn: &Connection) -> Vec<i64> {
        let mut stmt = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_failing_write_is_undone_alone_and_the_group_commits() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (n INTEGER UNIQUE)")
            .unwrap();
        let queue = WriteQueue::default();
        let first = queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (1)", []));
        let failing = queue.push(|tx, _| {
            tx.execute("INSERT INTO t VALUES (2)", [])?;
            tx.execute("INSERT INTO t VALUES (1)", []) // breaks UNIQUE: all of it is undone
        });
        let panicking = queue.push(|tx, _| -> rusqlite::Result<usize> {
            tx.execute("INSERT INTO t VALUES (4)", [])?;
            panic!("a bug in one write")
        });
        let last = queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (3)", []));
        run_group(&mut conn, &queue).unwrap();
        assert_eq!(first.take().unwrap().unwrap(), 1);
        assert!(failing.take().unwrap().is_err());
        assert!(panicking.take().unwrap().is_err());
        assert_eq!(last.take().unwrap().unwrap(), 1);
        assert_eq!(rows(&conn), [1, 3]);
        assert!(first.take().is_none(), "a result is taken once");
    }

    /// As SQLite ends the whole transaction at some disk-full and I/O errors.
    fn fails_and_ends_the_transaction(tx: &Transaction<'_>) -> rusqlite::Result<usize> {
        tx.execute("INSERT INTO t VALUES (7)", [])?;
        tx.execute_batch("ROLLBACK")?;
        Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        ))
    }

    #[test]
    fn a_write_that_ends_the_transaction_fails_the_group_with_its_error() {
        for retried in [false, true] {
            let mut conn = Connection::open_in_memory().unwrap();
            conn.execute_batch("CREATE TABLE t (n INTEGER UNIQUE)")
                .unwrap();
            let queue = WriteQueue::default();
            let first = queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (1)", []));
            let mut slots = vec![first];
            if retried {
                // An ordinary failure first: the group runs again, each write alone.
                slots.push(queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (1)", [])));
            }
            slots.push(queue.push(|tx, _| fails_and_ends_the_transaction(tx)));
            slots.push(queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (3)", [])));
            let group = run_group(&mut conn, &queue);
            assert_eq!(
                group.unwrap_err().sqlite_error_code(),
                Some(rusqlite::ErrorCode::DiskFull),
                "retried: {retried}"
            );
            for slot in slots {
                let error = slot.take().unwrap().unwrap_err();
                assert_eq!(
                    error.sqlite_error_code(),
                    Some(rusqlite::ErrorCode::DiskFull)
                );
            }
            assert!(rows(&conn).is_empty(), "nothing of the group is stored");
            assert!(conn.is_autocommit());
        }
    }

    #[test]
    fn a_failed_commit_fails_every_write_of_the_group() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (n INTEGER PRIMARY KEY);
             CREATE TABLE r (n INTEGER REFERENCES t(n) DEFERRABLE INITIALLY DEFERRED);
             PRAGMA foreign_keys = ON;",
        )
        .unwrap();
        let queue = WriteQueue::default();
        let fine = queue.push(|tx, _| tx.execute("INSERT INTO t VALUES (1)", []));
        // A deferred constraint fails only at COMMIT, for the whole group.
        let dangling = queue.push(|tx, _| tx.execute("INSERT INTO r VALUES (9)", []));
        assert!(run_group(&mut conn, &queue).is_err());
        let fine = fine.take().unwrap().unwrap_err();
        assert_eq!(
            fine.sqlite_error_code(),
            Some(rusqlite::ErrorCode::ConstraintViolation),
            "the commit's own error, code kept"
        );
        assert!(dangling.take().unwrap().is_err());
        assert!(rows(&conn).is_empty(), "nothing of the group is stored");
    }
}
