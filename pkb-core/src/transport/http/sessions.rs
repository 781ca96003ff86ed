//! The sessions the gate keeps: who owns each and when its client last spoke, the places
//! under the session limit held by `initialize`s on their way, and the sweep that ends idle
//! sessions and sessions whose token failed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::BearerAuth;
use super::session::HttpSession;
use super::stateless_streams::StatelessStreams;
use crate::identity::User;
use crate::locks::lock;

/// The sessions of one server, and their owners.
pub(super) struct Sessions {
    /// At most this many at once.
    pub(super) max: usize,
    /// `initialize` requests let through and not yet answered: each holds a place under
    /// `max` until its session is among the owners, so concurrent ones cannot all take the
    /// last. Changed only under the owners' lock.
    pub(super) opening: AtomicUsize,
    /// Who opened each session, and when its client last sent a request in it.
    pub(super) owners: Mutex<HashMap<String, Owner>>,
    /// Sessions whose client sent nothing for this long are ended.
    pub(super) idle_timeout: Duration,
}

/// The user of a session, and when its client last spoke.
pub struct Owner {
    pub(super) user: Option<User>,
    /// The bearer token of the session's latest request: once it is revoked or expires, the
    /// session ends, and with it any event stream still carrying the user's note changes.
    pub(super) token: Option<Arc<str>>,
    pub(super) last_seen: Instant,
    /// The session itself.
    pub(super) session: Arc<HttpSession>,
}

/// A place under `--max-sessions` held for an `initialize` on its way. The count of places
/// changes only under the owners' lock, so a place becomes an owner in one step.
pub(super) struct SessionPlace<'a> {
    sessions: &'a Sessions,
    taken: bool,
}

impl SessionPlace<'_> {
    /// Turns the place into the session `id`, owned by `owner`.
    pub(super) fn open(mut self, id: String, owner: Owner) {
        let mut owners = lock(&self.sessions.owners);
        owners.insert(id, owner);
        self.sessions.opening.fetch_sub(1, Ordering::SeqCst);
        self.taken = true;
    }
}

impl Drop for SessionPlace<'_> {
    fn drop(&mut self) {
        if !self.taken {
            let _owners = lock(&self.sessions.owners);
            self.sessions.opening.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Sessions {
    /// No sessions yet, at most `max`, ended after `idle_timeout`.
    pub(super) fn new(max: usize, idle_timeout: Duration) -> Self {
        Self {
            max,
            opening: AtomicUsize::new(0),
            owners: Mutex::default(),
            idle_timeout,
        }
    }

    /// A place for one more session, if the sessions open and those being opened leave one.
    /// Counted under the owners' lock, so two requests racing for the last place cannot both
    /// get it.
    pub(super) fn reserve(&self) -> Option<SessionPlace<'_>> {
        let owners = lock(&self.owners);
        if owners.len() + self.opening.load(Ordering::SeqCst) >= self.max {
            return None;
        }
        self.opening.fetch_add(1, Ordering::SeqCst);
        Some(SessionPlace {
            sessions: self,
            taken: false,
        })
    }

    /// Ends the sessions whose client sent nothing for the idle timeout or whose latest token
    /// `auth` no longer takes, and the `streams` whose token it no longer takes. What the
    /// server sends does not count as the client speaking: a session that only receives
    /// notifications would never end.
    pub(super) async fn sweep(&self, auth: Option<&dyn BearerAuth>, streams: &StatelessStreams) {
        let mut ending: Vec<String> = Vec::new();
        let mut tokens: Vec<(String, Arc<str>)> = Vec::new();
        for (id, owner) in lock(&self.owners).iter() {
            if owner.last_seen.elapsed() >= self.idle_timeout {
                tracing::debug!(session = %id, "ending an idle session");
                ending.push(id.clone());
            } else if let Some(token) = &owner.token {
                tokens.push((id.clone(), Arc::clone(token)));
            }
        }
        for (id, token) in tokens {
            if let Some(auth) = auth
                && auth.authenticate(&token).await.is_none()
            {
                tracing::debug!(session = %id, "ending a session whose token was revoked or expired");
                ending.push(id);
            }
        }
        for (stream, token) in streams.tokens() {
            if let Some(auth) = auth
                && auth.authenticate(&token).await.is_none()
            {
                tracing::debug!(stream, "ending a stream whose token was revoked or expired");
                streams.end(stream);
            }
        }
        let mut owners = lock(&self.owners);
        for id in ending {
            if let Some(owner) = owners.remove(&id) {
                owner.session.close();
            }
        }
    }

    /// Ends every session: the server is stopping.
    pub(super) fn close_all(&self) {
        for (_, owner) in lock(&self.owners).drain() {
            owner.session.close();
        }
    }
}
