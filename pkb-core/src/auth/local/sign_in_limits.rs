//! Lockout: ten failed sign-ins for one account name within fifteen minutes lock that name
//! for fifteen minutes, correct password or not. Names are counted whether or not an account
//! has them, so a lockout tells nothing of which accounts exist. Kept in the memory of the
//! server process that saw the tries.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::locks::lock;

/// Failed sign-ins that lock an account name.
pub const MAX_FAILURES: usize = 10;

/// The window they are counted in, and how long the lock lasts.
pub const LOCK_WINDOW: Duration = Duration::from_secs(15 * 60);

/// The most names tracked: past it, names without a lock or a recent failure are forgotten.
const MAX_NAMES: usize = 10_000;

#[derive(Default)]
struct Tries {
    failures: Vec<Instant>,
    /// Sign-ins of this name whose password is being checked: each counts as a failure until
    /// it is known not to be one, so that many tries sent at once cannot pass the limit.
    checking: usize,
    locked_until: Option<Instant>,
}

/// Failed sign-ins by account name.
#[derive(Default)]
pub struct SignInLimits {
    names: Mutex<HashMap<String, Tries>>,
}

impl SignInLimits {
    /// Whether `name` is locked now.
    #[cfg(test)]
    pub fn is_locked(&self, name: &str) -> bool {
        lock(&self.names)
            .get(name)
            .and_then(|tries| tries.locked_until)
            .is_some_and(|until| until > Instant::now())
    }

    /// Takes a place for one sign-in of `name` before its password is checked; `false` when
    /// `name` is locked, or its recent failures and the checks under way reach the limit.
    /// Each place taken is given back by [`SignInLimits::failed`] or
    /// [`SignInLimits::succeeded`].
    pub fn begin(&self, name: &str) -> bool {
        let now = Instant::now();
        let mut names = lock(&self.names);
        if names.len() >= MAX_NAMES {
            names.retain(|_, tries| {
                tries.checking > 0
                    || tries.locked_until.is_some_and(|until| until > now)
                    || tries.failures.iter().any(|at| now - *at < LOCK_WINDOW)
            });
        }
        let tries = names.entry(name.to_owned()).or_default();
        if tries.locked_until.is_some_and(|until| until > now) {
            return false;
        }
        tries.failures.retain(|at| now - *at < LOCK_WINDOW);
        if tries.failures.len() + tries.checking >= MAX_FAILURES {
            return false;
        }
        tries.checking += 1;
        true
    }

    /// Counts a failed sign-in of `name` begun with [`SignInLimits::begin`]; whether that
    /// locked it.
    pub fn failed(&self, name: &str) -> bool {
        let now = Instant::now();
        let mut names = lock(&self.names);
        let tries = names.entry(name.to_owned()).or_default();
        tries.checking = tries.checking.saturating_sub(1);
        tries.failures.retain(|at| now - *at < LOCK_WINDOW);
        tries.failures.push(now);
        if tries.failures.len() >= MAX_FAILURES {
            tries.failures.clear();
            tries.locked_until = Some(now + LOCK_WINDOW);
            tracing::warn!(
                "{MAX_FAILURES} failed sign-ins for one account name; locked for 15 minutes"
            );
            return true;
        }
        false
    }

    /// A correct password for `name`, begun with [`SignInLimits::begin`]: whether it may sign
    /// in (not if tries made meanwhile locked the name), forgetting its failures if so.
    pub fn succeeded(&self, name: &str) -> bool {
        let mut names = lock(&self.names);
        let Some(tries) = names.get_mut(name) else {
            return true;
        };
        tries.checking = tries.checking.saturating_sub(1);
        if tries
            .locked_until
            .is_some_and(|until| until > Instant::now())
        {
            return false;
        }
        if tries.checking == 0 {
            names.remove(name);
        } else {
            tries.failures.clear();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_failure_locks_that_name_only_and_success_forgets() {
        let limits = SignInLimits::default();
        for _ in 1..MAX_FAILURES {
            assert!(limits.begin("alice"));
            assert!(!limits.failed("alice"));
        }
        assert!(!limits.is_locked("alice"));
        assert!(limits.begin("alice"));
        assert!(limits.succeeded("alice"));
        for _ in 1..MAX_FAILURES {
            assert!(limits.begin("alice"));
            assert!(!limits.failed("alice"), "a success starts the count again");
        }
        assert!(limits.begin("alice"));
        assert!(limits.failed("alice"));
        assert!(limits.is_locked("alice"));
        assert!(!limits.begin("alice"), "locked");
        assert!(!limits.is_locked("bob"));
    }

    #[test]
    fn tries_sent_at_once_count_before_their_passwords_are_checked() {
        let limits = SignInLimits::default();
        for _ in 0..MAX_FAILURES {
            assert!(limits.begin("alice"));
        }
        assert!(
            !limits.begin("alice"),
            "ten under way: an eleventh is not checked"
        );
        assert!(limits.begin("bob"), "other names are not held up");
        for _ in 1..MAX_FAILURES {
            assert!(!limits.failed("alice"));
        }
        assert!(!limits.begin("alice"), "nine failed, one still under way");
        assert!(limits.succeeded("alice"), "the tenth was right");
        assert!(limits.begin("alice"), "and the count starts again");
    }
}
