//! Resource changes shared between the sessions of one user: a write through one session
//! reaches the subscribers of every other session of the same user, and no one else's.

use std::collections::HashMap;
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

/// One channel of changes per user, kept while someone listens.
#[derive(Debug, Default)]
pub struct ChangeHub {
    channels: Mutex<HashMap<String, broadcast::Sender<Change>>>,
}

impl ChangeHub {
    /// Tells every listener of `user_key` about `change`.
    pub fn publish(&self, user_key: &str, change: Change) {
        let mut channels = lock(&self.channels);
        if let Some(sender) = channels.get(user_key)
            && sender.send(change).is_err()
        {
            // Nobody listens any more.
            channels.remove(user_key);
        }
    }

    /// Listens to the changes of `user_key`.
    pub fn subscribe(&self, user_key: &str) -> broadcast::Receiver<Change> {
        let mut channels = lock(&self.channels);
        channels.retain(|_, sender| sender.receiver_count() > 0);
        channels
            .entry(user_key.to_owned())
            .or_insert_with(|| broadcast::channel(BACKLOG).0)
            .subscribe()
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
}
