//! When the server last served a tool call, for background work that yields to calls: the
//! encoder's threads run in the idle scheduling class and give the CPU up at once, but while
//! they run between a client's calls they take the caches and the core's clock with them.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When calls last started or ended.
pub struct Activity {
    epoch: Instant,
    /// Milliseconds since `epoch` at the last mark, plus one; 0 before any.
    last: AtomicU64,
}

/// The tool calls of this process.
pub static CALLS: LazyLock<Activity> = LazyLock::new(Activity::new);

impl Activity {
    fn new() -> Self {
        Activity {
            epoch: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Notes that a call starts or ends now.
    pub fn mark(&self) {
        self.last.store(self.now_ms() + 1, Ordering::Relaxed);
    }

    /// How long no call has started or ended; `None` if none ever did.
    pub fn quiet_for(&self) -> Option<Duration> {
        match self.last.load(Ordering::Relaxed) {
            0 => None,
            last => Some(Duration::from_millis(
                (self.now_ms() + 1).saturating_sub(last),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_counts_from_the_last_mark() {
        let calls = Activity::new();
        assert_eq!(calls.quiet_for(), None, "no call yet");
        calls.mark();
        std::thread::sleep(Duration::from_millis(30));
        let slept = calls.quiet_for().expect("marked");
        assert!(slept >= Duration::from_millis(30), "{slept:?}");
        calls.mark();
        assert!(calls.quiet_for().expect("marked") < slept);
    }
}
