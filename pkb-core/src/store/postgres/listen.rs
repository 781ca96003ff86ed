//! Writes made through other PKB processes on the same database, heard through
//! `LISTEN`/`NOTIFY`: every write sends a notification in its own transaction, so it is
//! heard once committed, and only then.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::{AsyncMessage, Client, Connection, NoTls};

use super::PgDatabase;

/// The channel PKB's writes notify on.
pub(super) const CHANNEL: &str = "pkb_changes";

/// How long to wait before listening again after the connection was lost.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// A note written or deleted through some PKB process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteChange {
    /// The process that wrote: each process ignores its own, which it announced already.
    #[serde(rename = "i")]
    pub(super) instance: String,
    /// The storage key of the user whose note it is.
    #[serde(rename = "u")]
    pub user_key: String,
    /// The note's id.
    pub id: String,
    /// Whether the list of notes changed: the note was created or deleted.
    #[serde(rename = "l")]
    pub list_changed: bool,
}

/// Listens until the database handle is dropped, reconnecting after each loss, and hands
/// every other process's change to `on_change`.
pub(super) async fn listen(
    database: std::sync::Weak<PgDatabase>,
    on_change: Arc<dyn Fn(NoteChange) + Send + Sync>,
) {
    loop {
        let Some((config, tls, instance, location)) = database.upgrade().map(|db| {
            (
                db.config.clone(),
                db.tls.clone(),
                db.instance.clone(),
                db.location.clone(),
            )
        }) else {
            return;
        };
        let heard = Heard {
            instance: &instance,
            location: &location,
            on_change: on_change.as_ref(),
        };
        match tls {
            Some(tls) => heard.until_lost(config.connect(tls).await).await,
            None => heard.until_lost(config.connect(NoTls).await).await,
        }
        if database.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

/// What one listening connection hands on, and to whom.
struct Heard<'a> {
    instance: &'a str,
    location: &'a str,
    on_change: &'a (dyn Fn(NoteChange) + Send + Sync),
}

impl Heard<'_> {
    /// LISTENs on the connection `connected` and hands on what it hears until it is lost.
    async fn until_lost<S, T>(
        &self,
        connected: Result<(Client, Connection<S, T>), tokio_postgres::Error>,
    ) where
        S: AsyncRead + AsyncWrite + Unpin,
        T: AsyncRead + AsyncWrite + Unpin,
    {
        let location = self.location;
        let (client, mut connection) = match connected {
            Ok(connected) => connected,
            Err(error) => {
                let error = super::describe(&error);
                tracing::warn!(location, %error, "cannot connect to hear other processes' writes; trying again");
                return;
            }
        };
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx)).fuse();
        let listen = format!("LISTEN {CHANNEL}");
        let mut listening = std::pin::pin!(client.batch_execute(&listen));
        // The connection makes progress only while its messages are read.
        let mut ready = false;
        loop {
            tokio::select! {
                done = &mut listening, if !ready => match done {
                    Ok(()) => {
                        ready = true;
                        tracing::debug!(location, "listening for other processes' writes");
                    }
                    Err(error) => {
                        let error = super::describe(&error);
                        tracing::warn!(location, %error, "cannot listen for other processes' writes");
                        return;
                    }
                },
                message = messages.next() => match message {
                    Some(Ok(AsyncMessage::Notification(note))) => {
                        match serde_json::from_str::<NoteChange>(note.payload()) {
                            Ok(change) if change.instance != self.instance => (self.on_change)(change),
                            Ok(_) => {}
                            Err(error) => tracing::debug!(%error, "ignored a notification that is not PKB's"),
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        let error = super::describe(&error);
                        tracing::warn!(location, %error, "lost the connection that hears other processes' writes; listening again");
                        return;
                    }
                    None => return,
                },
            }
        }
    }
}
