//! Reading every table and index of an existing store for damage, in the background after it
//! opens.
//!
//! The check reads the whole file: about a quarter of a second at 100,000 notes, which every
//! client window would otherwise wait for before its first answer. Opening does only the cheap
//! checks (ids, version, tables, a length of whole pages, and SQLite's own comparison of the
//! length with the header) and leaves this one to a thread. Until it passes, the writer copies
//! nothing from the WAL into the main file, so a damaged file stays byte-for-byte as it was;
//! once it fails, every call is refused with what it found. A file not in WAL mode is checked
//! before open returns instead.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long after opening the check starts at the earliest: a client's first requests
/// (initialize, a listing, a first search) then do not share the CPU with it.
const START_DELAY: Duration = Duration::from_millis(250);

/// How long the store must go without a request before the check starts: even at the lowest
/// priority, a check running under a stream of searches on one CPU made their slowest 1% a
/// third slower.
const QUIET: Duration = Duration::from_millis(500);

/// How long after opening the check starts at the latest, quiet or not: until it has passed,
/// the WAL is not copied into the main file.
const LONGEST_WAIT: Duration = Duration::from_secs(30);

use rusqlite::{Connection, ErrorCode, InterruptHandle};

/// How the page check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every page read back sound.
    Sound,
    /// Damage was found; the text says what.
    Damaged(String),
    /// The check could not run to the end for another reason (I/O, memory). Nothing is known
    /// to be wrong, but nothing is known to be right: the WAL stays out of the main file.
    Unfinished,
    /// The store closed before the check ended.
    Cancelled,
}

/// The page check of one open store: not yet run, running, or done.
pub(super) struct PageCheck {
    verdict: Arc<OnceLock<Verdict>>,
    cancel: Arc<AtomicBool>,
    /// Start now rather than after [`START_DELAY`]: someone is waiting for the verdict.
    hurry: Arc<AtomicBool>,
    running: Mutex<Option<Running>>,
}

/// The thread of a check under way, and the handle that interrupts its connection once the
/// thread has opened it.
struct Running {
    thread: JoinHandle<()>,
    interrupt: Arc<Mutex<Option<InterruptHandle>>>,
}

impl Drop for PageCheck {
    fn drop(&mut self) {
        self.stop();
    }
}

impl PageCheck {
    /// A check that has already ended with `verdict` (a new store, or one checked at open).
    pub(super) fn done(verdict: Verdict) -> Self {
        PageCheck {
            verdict: Arc::new(OnceLock::from(verdict)),
            cancel: Arc::new(AtomicBool::new(false)),
            hurry: Arc::new(AtomicBool::new(false)),
            running: Mutex::new(None),
        }
    }

    /// Starts checking, once the store is quiet, through a read-only connection of its own
    /// that `open` makes when the check starts: opening one (its schema read and parsed) took
    /// a tenth of a cold start, for a check that waits at least [`START_DELAY`] anyway.
    /// `requests` counts the store's reads and writes.
    pub(super) fn start(
        open: impl FnOnce() -> rusqlite::Result<Connection> + Send + 'static,
        label: String,
        requests: Arc<AtomicU64>,
    ) -> std::io::Result<Self> {
        let verdict = Arc::new(OnceLock::new());
        let cancel = Arc::new(AtomicBool::new(false));
        let hurry = Arc::new(AtomicBool::new(false));
        let interrupt = Arc::new(Mutex::new(None));
        let thread = std::thread::Builder::new()
            .name("pkb-page-check".to_owned())
            .spawn({
                let verdict = Arc::clone(&verdict);
                let cancel = Arc::clone(&cancel);
                let hurry = Arc::clone(&hurry);
                let interrupt = Arc::clone(&interrupt);
                move || {
                    yield_to_requests();
                    wait_to_start(&requests, &hurry, &cancel);
                    tracing::debug!(store = %label, "page check starting");
                    // A panic inside the check leaves the verdict open-ended otherwise.
                    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let conn = match open() {
                            Ok(conn) => conn,
                            Err(error) if !cancel.load(Ordering::Relaxed) => {
                                tracing::warn!(%error, "page check cannot open the store");
                                return Verdict::Unfinished;
                            }
                            Err(_) => return Verdict::Cancelled,
                        };
                        // Published before `cancel` is looked at: `join` sets `cancel` before
                        // it takes the handle, so either it interrupts this connection or the
                        // check sees `cancel` and does not start.
                        *crate::locks::lock(&interrupt) = Some(conn.get_interrupt_handle());
                        if cancel.load(Ordering::Relaxed) {
                            return Verdict::Cancelled;
                        }
                        check(&conn, &cancel)
                    }))
                    .unwrap_or(Verdict::Unfinished);
                    match &found {
                        Verdict::Sound => tracing::debug!(store = %label, "page check passed"),
                        Verdict::Damaged(reason) => {
                            tracing::error!(store = %label, %reason, "store is damaged; refusing every call")
                        }
                        Verdict::Cancelled => {
                            tracing::debug!(store = %label, "page check cancelled")
                        }
                        Verdict::Unfinished => {}
                    }
                    let _ = verdict.set(found);
                }
            })?;
        Ok(PageCheck {
            verdict,
            cancel,
            hurry,
            running: Mutex::new(Some(Running { thread, interrupt })),
        })
    }

    /// What the check found, once it has ended.
    pub(super) fn verdict(&self) -> Option<&Verdict> {
        self.verdict.get()
    }

    /// Waits for the check to end and returns what it found.
    pub(super) fn wait(&self) -> Option<&Verdict> {
        self.join(false);
        self.verdict()
    }

    /// Stops a running check and waits for its thread, so its connection is closed on return.
    pub(super) fn stop(&self) {
        self.join(true);
    }

    fn join(&self, cancel: bool) {
        // Held until the thread has ended, so a second caller waits too.
        let mut running = crate::locks::lock(&self.running);
        if let Some(Running { thread, interrupt }) = running.take() {
            if cancel {
                self.cancel.store(true, Ordering::Relaxed);
                if let Some(interrupt) = crate::locks::lock(&interrupt).as_ref() {
                    interrupt.interrupt();
                }
            } else {
                self.hurry.store(true, Ordering::Relaxed);
            }
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Waits [`START_DELAY`], then until the store has gone [`QUIET`] without a request, at most
/// [`LONGEST_WAIT`] in all; at once when someone waits for the verdict or the store closes.
fn wait_to_start(requests: &AtomicU64, hurry: &AtomicBool, cancel: &AtomicBool) {
    let opened = Instant::now();
    let mut seen = requests.load(Ordering::Relaxed);
    let mut quiet_since = opened;
    while !cancel.load(Ordering::Relaxed) && !hurry.load(Ordering::Relaxed) {
        let now = Instant::now();
        let made = requests.load(Ordering::Relaxed);
        if made != seen {
            seen = made;
            quiet_since = now;
        }
        let ready = (opened + START_DELAY)
            .max(quiet_since + QUIET)
            .min(opened + LONGEST_WAIT);
        if now >= ready {
            break;
        }
        std::thread::park_timeout((ready - now).min(QUIET));
    }
}

/// Lowers the calling thread to the lowest CPU priority, so that requests sharing its CPU go
/// first and the check takes what they leave: on one CPU with a server's searches, the check
/// at normal priority made the slowest 1% of them two to three times slower. Only Linux gives
/// threads a priority of their own; elsewhere this would slow the whole process, so it does
/// nothing.
fn yield_to_requests() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::process::setpriority_process(None, 19) {
        tracing::debug!(%error, "cannot lower the page check's priority");
    }
}

/// Runs the check in the calling thread.
pub(super) fn check(conn: &Connection, cancel: &AtomicBool) -> Verdict {
    match damaged_pages(conn, cancel) {
        Ok(problems) if problems.is_empty() => Verdict::Sound,
        Ok(problems) => Verdict::Damaged(problems.join("; ").replace('\n', " ")),
        Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) => {
            Verdict::Damaged(e.to_string())
        }
        Err(_) if cancel.load(Ordering::Relaxed) => Verdict::Cancelled,
        Err(e) => {
            tracing::warn!(error = %e, "page check could not finish");
            Verdict::Unfinished
        }
    }
}

/// `PRAGMA quick_check` of every ordinary table and its indexes: reads every page of them, so
/// it catches truncation and torn or overwritten pages.
///
/// One table at a time, because a whole-database quick_check also runs FTS5's own consistency
/// check, which re-reads the index against every note: seven times slower (1.3 s against 0.18 s
/// at 100,000 notes). [`super::NoteBackend::verify`] runs that one.
fn damaged_pages(conn: &Connection, cancel: &AtomicBool) -> rusqlite::Result<Vec<String>> {
    let mut tables = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
    )?;
    let names = tables
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut problems = Vec::new();
    for name in names {
        if cancel.load(Ordering::Relaxed) {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
                None,
            ));
        }
        let sql = format!("PRAGMA quick_check('{}')", name.replace('\'', "''"));
        let mut check = conn.prepare(&sql)?;
        // An interrupt only stops a running statement: look again now that one is about to run.
        if cancel.load(Ordering::Relaxed) {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
                None,
            ));
        }
        let found = check
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        problems.extend(found.into_iter().filter(|p| p != "ok"));
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_waits_for_a_quiet_spell() {
        let requests = Arc::new(AtomicU64::new(0));
        let (hurry, cancel) = (AtomicBool::new(false), AtomicBool::new(false));
        let busy = Duration::from_millis(1_200);
        let started = Instant::now();
        let client = std::thread::spawn({
            let requests = Arc::clone(&requests);
            move || {
                while started.elapsed() < busy {
                    requests.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        wait_to_start(&requests, &hurry, &cancel);
        let waited = started.elapsed();
        client.join().unwrap();
        assert!(
            waited >= busy,
            "started {waited:?} after open, amid requests"
        );
        assert!(waited < LONGEST_WAIT, "{waited:?}");
    }

    #[test]
    fn a_quiet_store_is_checked_after_the_start_delay_and_a_waiting_caller_at_once() {
        let requests = AtomicU64::new(0);
        let (hurry, cancel) = (AtomicBool::new(false), AtomicBool::new(false));
        let started = Instant::now();
        wait_to_start(&requests, &hurry, &cancel);
        assert!(started.elapsed() >= START_DELAY.max(QUIET));
        assert!(started.elapsed() < LONGEST_WAIT);

        hurry.store(true, Ordering::Relaxed);
        let started = Instant::now();
        wait_to_start(&requests, &hurry, &cancel);
        assert!(started.elapsed() < START_DELAY);
    }
}
