//! Event streams answered outside any session (the 2026-07-28 revision's
//! `subscriptions/listen`) hold what a session's own stream holds, for as long as their client
//! keeps them open. They are counted: at most as many as `--max-sessions` allows sessions, and
//! at most [`STREAMS_PER_USER`] for one user, so that neither one client nor many can open
//! them without end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::identity::User;
use crate::locks::lock;

/// The most streams outside any session one user may hold open at once.
pub const STREAMS_PER_USER: usize = 16;

/// The streams open outside any session, in all and by user (`None`: the one user of a
/// server without authentication).
pub(super) struct StreamPlaces {
    max: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_user: HashMap<Option<User>, usize>,
}

/// A place for one stream, given back when the stream's body is dropped.
pub(super) struct StreamPlace {
    places: Arc<StreamPlaces>,
    user: Option<User>,
}

impl StreamPlaces {
    /// Places for at most `max` streams.
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            open: Mutex::default(),
        }
    }

    /// A place for one more stream of `user`, if the limits leave one.
    pub(super) fn take(self: &Arc<Self>, user: Option<&User>) -> Option<StreamPlace> {
        let mut open = lock(&self.open);
        let users = open.by_user.get(&user.cloned()).copied().unwrap_or(0);
        if open.total >= self.max || users >= STREAMS_PER_USER {
            return None;
        }
        open.total += 1;
        *open.by_user.entry(user.cloned()).or_default() += 1;
        Some(StreamPlace {
            places: Arc::clone(self),
            user: user.cloned(),
        })
    }
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut open = lock(&self.places.open);
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.by_user.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                open.by_user.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_counted_in_all_and_by_user() {
        let places = Arc::new(StreamPlaces::new(STREAMS_PER_USER + 2));
        let alice = User::token_user("alice");
        let bob = User::token_user("bob");
        let mut held: Vec<StreamPlace> = (0..STREAMS_PER_USER)
            .map(|_| places.take(Some(&alice)).unwrap())
            .collect();
        assert!(places.take(Some(&alice)).is_none(), "alice's own limit");
        held.push(places.take(Some(&bob)).unwrap());
        held.push(places.take(None).unwrap());
        assert!(places.take(Some(&bob)).is_none(), "the limit in all");
        held.pop();
        assert!(
            places.take(Some(&bob)).is_some(),
            "a place given back is free again"
        );
    }
}
