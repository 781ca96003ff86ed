//! The sessions the gate keeps: who owns each and when its client last spoke, the places
//! under the session limit held by `initialize`s on their way, and the sweep that ends idle
//! sessions, sessions whose token failed, and sessions whose `initialize` never came back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::transport::streamable_http_server::session::SessionManager;

use super::BearerAuth;
use super::direct_calls::DirectSession;
use super::stateless_streams::StatelessStreams;
use crate::identity::User;
use crate::locks::lock;

/// The sessions of one server, as rmcp keeps them and as the gate knows their owners.
pub(super) struct Sessions {
    /// rmcp's sessions.
    pub(super) manager: Arc<super::session_manager::RoutedSessions>,
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
    /// The session's server, answering its plain tool calls without rmcp (see
    /// [`direct_calls`]).
    pub(super) calls: Option<DirectSession>,
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
    /// No sessions yet, of rmcp's `manager`, at most `max`, ended after `idle_timeout`.
    pub(super) fn new(
        manager: Arc<super::session_manager::RoutedSessions>,
        max: usize,
        idle_timeout: Duration,
    ) -> Self {
        Self {
            manager,
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
    /// `auth` no longer takes, and the `streams` whose token it no longer takes, and forgets
    /// the owners of sessions that ended. rmcp's own idle timer is reset by what the server
    /// sends too, so a session that only receives notifications would never end by it.
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
        for id in ending {
            let _ = self.manager.close_session(&id.as_str().into()).await;
            lock(&self.owners).remove(&id);
        }
        for id in self.sessions_without_owner().await {
            tracing::debug!(session = %id, "ending a session whose initialize never came back");
            let _ = self.manager.close_session(&id.as_str().into()).await;
        }
        let open = self.manager.local.sessions.read().await;
        lock(&self.owners).retain(|id, _| open.contains_key(id.as_str()));
    }

    /// The sessions rmcp opened that no owner holds and none will: their `initialize` was
    /// dropped on its way back through the gate (its client went away), so no request will
    /// ever reach them, and only this sweep can end them. rmcp's map is read first, then the
    /// owners: a session whose `initialize` is still on its way holds a place under
    /// `max` ([`SessionPlace`]) until it is among the owners, so while any place is
    /// held, nothing is taken for an orphan.
    async fn sessions_without_owner(&self) -> Vec<String> {
        let open: Vec<String> = self
            .manager
            .local
            .sessions
            .read()
            .await
            .keys()
            .map(|id| id.to_string())
            .collect();
        let owners = lock(&self.owners);
        if self.opening.load(Ordering::SeqCst) > 0 {
            return Vec::new();
        }
        open.into_iter()
            .filter(|id| !owners.contains_key(id))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_whose_initialize_never_came_back_is_ended_once_no_place_is_held() {
        let sessions = Sessions::new(Arc::default(), 10, Duration::from_secs(60));
        let streams = StatelessStreams::default();
        // What rmcp leaves when the gate's `initialize` is dropped after rmcp opened the
        // session and before the gate made it an owner's.
        let (orphan, transport) = sessions.manager.create_session().await.unwrap();
        let on_its_way = sessions.reserve().unwrap();
        sessions.sweep(None, &streams).await;
        assert!(
            sessions.manager.has_session(&orphan).await.unwrap(),
            "kept while an initialize on its way may still own it"
        );
        drop(on_its_way);
        sessions.sweep(None, &streams).await;
        assert!(!sessions.manager.has_session(&orphan).await.unwrap());
        drop(transport);
    }
}
