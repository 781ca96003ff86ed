//! The encoder's background work at the idle scheduling class (Linux's `SCHED_IDLE`), on its
//! own threads: a request that wakes takes the CPU from it at once, where at nice 19 it waited
//! for the encoder's time slice to end (a write while notes were being embedded took 1.5x its
//! time, with the benchmark and the server on one CPU).

#![allow(unsafe_code)]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::framework::activity::CALLS;

/// How long no tool call must have started or ended before the encoder's next passage.
const QUIET: Duration = Duration::from_millis(5);
/// The longest the encoder waits for that before a passage, so that a server that is never
/// quiet still makes its vectors (a passage takes 12-20 ms on one core).
const MOST: Duration = Duration::from_millis(40);

/// Waits until calls have stopped for [`QUIET`], for at most [`MOST`]. The idle scheduling
/// class gives a call the CPU at once, but an encoder run in the gaps between a client's
/// calls, or on the other CPU, shares the caches with them.
pub(super) fn give_way() {
    let started = Instant::now();
    while let Some(quiet) = CALLS.quiet_for()
        && quiet < QUIET
        && started.elapsed() < MOST
    {
        std::thread::sleep(QUIET - quiet);
    }
}

/// Gives the free memory of the allocator's arenas back to the system, after a note's
/// passages: glibc keeps what the encoder's threads freed in their own arenas, where the
/// server's other work rarely reuses it (3,000 notes: peak RSS 150.6-152.7 MiB against
/// 158.3-159.2 without, the vectors 3% slower).
pub(super) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Puts the calling thread in the idle scheduling class, or at nice 19 where that is refused.
pub(super) fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `param` is a valid `sched_param` for the duration of the call, which only
        // reads it; pid 0 names the calling thread.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
            return;
        }
        // Best effort: without it the encoder merely competes at normal priority.
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
    }
}

/// Runs `job` (the encoder's) on an idle thread: a pool of its own, as many threads as this
/// process may use CPUs, each lowered, and any work a job spreads over the pool (rayon's
/// `join`) stays on them rather than on rayon's global threads, made at normal priority.
pub(super) fn spawn(job: impl FnOnce() + Send + 'static) {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|n| format!("pkb-encoder-{n}"))
            .start_handler(|_| lower_this_thread())
            .build()
            .inspect_err(|error| tracing::warn!(%error, "cannot start the encoder's threads"))
            .ok()
    });
    match pool {
        Some(pool) => pool.spawn(job),
        None => {
            let started = std::thread::Builder::new()
                .name("pkb-encoder".into())
                .spawn(move || {
                    lower_this_thread();
                    job();
                });
            if let Err(error) = started {
                tracing::warn!(%error, "cannot start the encoder's thread");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_encoder_waits_for_calls_to_stop_but_not_for_ever() {
        CALLS.mark();
        let started = Instant::now();
        give_way();
        assert!(
            started.elapsed() >= QUIET - Duration::from_millis(1),
            "waits after a call: {:?}",
            started.elapsed()
        );
        // A server never quiet: calls marked every millisecond for two seconds.
        let busy = std::thread::spawn(|| {
            let until = Instant::now() + Duration::from_secs(2);
            while Instant::now() < until {
                CALLS.mark();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        let started = Instant::now();
        give_way();
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_secs(1),
            "waits at most about {MOST:?}: {waited:?}"
        );
        busy.join().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_encoders_threads_are_idle_ones() {
        // SAFETY: `sched_getscheduler` takes no pointers; pid 0 names the calling thread.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let (told, heard) = std::sync::mpsc::channel();
        spawn(move || {
            let outer = policy();
            // The pool the encoder's matrix products would spread over.
            let inner = rayon::join(policy, policy);
            told.send((outer, inner)).unwrap();
        });
        let (outer, (a, b)) = heard.recv().unwrap();
        assert_eq!([outer, a, b], [libc::SCHED_IDLE; 3]);
        assert_ne!(
            policy(),
            libc::SCHED_IDLE,
            "the caller's own thread is left alone"
        );
    }
}
