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
    locked_until: Option<Instant>,
}

/// Failed sign-ins by account name.
#[derive(Default)]
pub struct SignInLimits {
    names: Mutex<HashMap<String, Tries>>,
}

impl SignInLimits {
    /// Whether `name` is locked now.
    pub fn is_locked(&self, name: &str) -> bool {
        lock(&self.names)
            .get(name)
            .and_then(|tries| tries.locked_until)
            .is_some_and(|until| until > Instant::now())
    }

    /// Counts a failed sign-in of `name`; whether that locked it.
    pub fn failed(&self, name: &str) -> bool {
        let now = Instant::now();
        let mut names = lock(&self.names);
        if names.len() >= MAX_NAMES {
            names.retain(|_, tries| {
                tries.locked_until.is_some_and(|until| until > now)
                    || tries.failures.iter().any(|at| now - *at < LOCK_WINDOW)
            });
        }
        let tries = names.entry(name.to_owned()).or_default();
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

    /// Forgets `name`'s failures after a successful sign-in.
    pub fn succeeded(&self, name: &str) {
        lock(&self.names).remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tenth_failure_locks_that_name_only_and_success_forgets() {
        let limits = SignInLimits::default();
        for _ in 1..MAX_FAILURES {
            assert!(!limits.failed("alice"));
        }
        assert!(!limits.is_locked("alice"));
        limits.succeeded("alice");
        for _ in 1..MAX_FAILURES {
            assert!(!limits.failed("alice"), "a success starts the count again");
        }
        assert!(limits.failed("alice"));
        assert!(limits.is_locked("alice"));
        assert!(!limits.is_locked("bob"));
    }
}
