//! Damage SQLite reports during a call, and the second look that can take the report back.
//!
//! SQLite says "database disk image is malformed" of whatever page it could not make sense
//! of, and a disk that fails mid-read can give it such a page while the file itself is whole.
//! A report refuses every call at once, so that nothing is written on top of real damage; but
//! a report alone is not proof. While one is on record, the store reads its whole file again
//! now and then, and when that read finds every page and the search index sound, the report is
//! dropped and the store serves again: a disk that came back does not need a restart.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::locks::lock;

/// The shortest wait between two looks at a file reported damaged.
const LOOK_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// How many times its own length a look waits before the next: a store whose whole read
/// takes a second is read again every ten at most, so that a damaged store does not spend
/// its CPU on looking.
const LOOK_COST_SHARE: u32 = 10;

/// The report on record, if any.
#[derive(Default)]
pub(super) struct ReportedDamage {
    /// Whether a report is on record; read on every write, without the lock.
    known: AtomicBool,
    report: Mutex<Option<Report>>,
}

struct Report {
    /// SQLite's words, for the refusals.
    reason: String,
    /// When a look may start next; a look under way pushes it on, so that one looks at a time.
    next_look: Instant,
    /// Reported again since the last look began: that look cannot vouch for it.
    again: bool,
}

impl ReportedDamage {
    /// Puts a report of damage on record; the first one's words are kept.
    pub(super) fn record(&self, reason: String) {
        let mut report = lock(&self.report);
        match report.as_mut() {
            Some(report) => report.again = true,
            None => {
                tracing::error!(%reason, "damage found; refusing every call until a read of the whole file finds it sound");
                *report = Some(Report {
                    reason,
                    next_look: Instant::now() + LOOK_AGAIN_AFTER,
                    again: false,
                });
            }
        }
        self.known.store(true, Ordering::Release);
    }

    /// Whether a report is on record.
    pub(super) fn is_known(&self) -> bool {
        self.known.load(Ordering::Acquire)
    }

    /// The report's words, if one is on record.
    pub(super) fn reason(&self) -> Option<String> {
        if !self.is_known() {
            return None;
        }
        lock(&self.report).as_ref().map(|r| r.reason.clone())
    }

    /// When a report is on record and due for another look, runs `file_is_sound` (a read of
    /// the whole file) in the calling thread, and drops the report when it says yes; returns
    /// whether it did. Calls that find a look under way or not yet due return at once.
    pub(super) fn look_again(&self, file_is_sound: impl FnOnce() -> bool) -> bool {
        if !self.is_known() {
            return false;
        }
        {
            let mut report = lock(&self.report);
            let Some(report) = report.as_mut() else {
                return false;
            };
            let now = Instant::now();
            if now < report.next_look {
                return false;
            }
            // Far enough that no other call starts a look while this one runs.
            report.next_look = now + Duration::from_secs(24 * 60 * 60);
            report.again = false;
        }
        let started = Instant::now();
        let sound = file_is_sound();
        let took = started.elapsed();
        let mut report = lock(&self.report);
        let Some(current) = report.as_mut() else {
            return false;
        };
        if sound && !current.again {
            tracing::warn!(
                reason = %current.reason,
                "the damage SQLite reported is not in the file: a read of all of it finds it sound, so the disk misread; serving again"
            );
            *report = None;
            self.known.store(false, Ordering::Release);
            true
        } else {
            current.next_look = Instant::now() + LOOK_AGAIN_AFTER.max(took * LOOK_COST_SHARE);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_stays_until_a_look_due_finds_the_file_sound() {
        let damage = ReportedDamage::default();
        assert!(!damage.is_known() && damage.reason().is_none());
        damage.record("database disk image is malformed".to_owned());
        damage.record("a later report".to_owned());
        assert_eq!(
            damage.reason().as_deref(),
            Some("database disk image is malformed")
        );
        assert!(!damage.look_again(|| panic!("no look before one is due")));
        std::thread::sleep(LOOK_AGAIN_AFTER);
        assert!(!damage.look_again(|| false));
        assert!(
            damage.is_known(),
            "a look that finds damage keeps the report"
        );
        assert!(!damage.look_again(|| panic!("the next look waits again")));
        std::thread::sleep(LOOK_AGAIN_AFTER);
        assert!(damage.look_again(|| true));
        assert!(!damage.is_known() && damage.reason().is_none());
    }

    #[test]
    fn a_report_made_during_a_look_is_not_taken_back_by_it() {
        let damage = ReportedDamage::default();
        damage.record("first".to_owned());
        std::thread::sleep(LOOK_AGAIN_AFTER);
        let dropped = damage.look_again(|| {
            damage.record("while looking".to_owned());
            true
        });
        assert!(!dropped);
        assert!(damage.is_known());
    }
}
