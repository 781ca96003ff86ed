//! Resource changes shared between the sessions of one user: a write through one session
//! reaches the subscribers of every other session of the same user, and no one else's.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::broadcast;

use crate::locks::lock;

/// How many changes a slow session may fall behind before it misses some.
const BACKLOG: usize = 256;

/// What changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The resource at this URI changed.
    Updated(String),
    /// Resources were added or removed.
    ListChanged,
}

/// One change, and the session that made it (which told its own client already).
#[derive(Clone, Debug)]
pub struct Change {
    /// The session whose request made the change.
    pub origin: u64,
    /// What changed.
    pub kind: ChangeKind,
}

impl Change {
    /// The origin of a change made through another process: no session here has it.
    pub const ELSEWHERE: u64 = 0;
}

/// One channel of changes per user, kept while someone listens, and the latest changes of
/// every user, numbered, for a listener that must hear what came while it was being set up.
#[derive(Debug, Default)]
pub struct ChangeHub {
    inner: Mutex<Hub>,
}

#[derive(Debug, Default)]
struct Hub {
    channels: HashMap<String, broadcast::Sender<Change>>,
    /// The latest changes with their numbers, of any user, oldest first.
    recent: VecDeque<(u64, String, Change)>,
    /// The number of the latest change.
    last: u64,
}

impl ChangeHub {
    /// Tells every listener of `user_key` about `change`.
    pub fn publish(&self, user_key: &str, change: Change) {
        let mut hub = lock(&self.inner);
        hub.last += 1;
        let number = hub.last;
        if hub.recent.len() == BACKLOG {
            hub.recent.pop_front();
        }
        hub.recent
            .push_back((number, user_key.to_owned(), change.clone()));
        if let Some(sender) = hub.channels.get(user_key)
            && sender.send(change).is_err()
        {
            // Nobody listens any more.
            hub.channels.remove(user_key);
        }
    }

    /// Listens to the changes of `user_key`.
    pub fn subscribe(&self, user_key: &str) -> broadcast::Receiver<Change> {
        self.subscribe_since(user_key, u64::MAX).1
    }

    /// Where the changes are now: [`ChangeHub::subscribe_since`] gives what comes after.
    pub fn position(&self) -> u64 {
        lock(&self.inner).last
    }

    /// Listens to the changes of `user_key`, with those made after `position` and before
    /// now (at most the latest [`BACKLOG`] changes of all users): a listener acknowledged to
    /// its client before it subscribed hears of the writes the client made in between.
    pub fn subscribe_since(
        &self,
        user_key: &str,
        position: u64,
    ) -> (Vec<Change>, broadcast::Receiver<Change>) {
        let mut hub = lock(&self.inner);
        hub.channels.retain(|_, sender| sender.receiver_count() > 0);
        let missed = hub
            .recent
            .iter()
            .filter(|(number, user, _)| *number > position && user == user_key)
            .map(|(_, _, change)| change.clone())
            .collect();
        let receiver = hub
            .channels
            .entry(user_key.to_owned())
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe();
        (missed, receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_reach_the_same_user_only() {
        let hub = ChangeHub::default();
        let mut alice = hub.subscribe("alice");
        let mut bob = hub.subscribe("bob");
        hub.publish(
            "alice",
            Change {
                origin: 1,
                kind: ChangeKind::ListChanged,
            },
        );
        assert_eq!(alice.recv().await.unwrap().kind, ChangeKind::ListChanged);
        assert!(bob.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_late_listener_hears_what_came_since_its_position_and_no_more() {
        let hub = ChangeHub::default();
        let change = |uri: &str| Change {
            origin: 1,
            kind: ChangeKind::Updated(uri.to_owned()),
        };
        hub.publish("alice", change("pkb://notes/before"));
        let position = hub.position();
        hub.publish("alice", change("pkb://notes/between"));
        hub.publish("bob", change("pkb://notes/bobs"));
        let (missed, mut alice) = hub.subscribe_since("alice", position);
        assert_eq!(
            missed.iter().map(|c| c.kind.clone()).collect::<Vec<_>>(),
            [ChangeKind::Updated("pkb://notes/between".into())]
        );
        hub.publish("alice", change("pkb://notes/after"));
        assert_eq!(
            alice.recv().await.unwrap().kind,
            ChangeKind::Updated("pkb://notes/after".into())
        );
        assert!(alice.try_recv().is_err(), "nothing twice");
    }
}
