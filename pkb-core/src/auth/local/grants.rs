//! What PKB's authorization server remembers on disk, in the data directory: the grants in
//! `oauth-grants.json`, one for each approval a person gave a client, with the hash of its
//! current refresh token; and apart from them, in `oauth-clients.json`, the clients that
//! registered themselves (RFC 7591). Registration is open to anyone: kept apart, it never makes
//! the file that every server reads again at each change, and at each unknown grant, larger.
//!
//! A grant is a family of tokens: its access tokens carry its id (claim `grant`) and every
//! running server checks, at each request, that the grant still exists, so that ending one at
//! a terminal (`account revoke`), by revocation (RFC 7009), by a refresh token used twice or
//! a code used twice ends its tokens everywhere within a second.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::accounts::{AccountError, read_json};
use crate::auth::data_file::{self, Watched, hex_sha256, random_secret};
use crate::locks::lock;

/// The file, in the data directory, of the clients and grants.
pub const GRANTS_FILE: &str = "oauth-grants.json";

/// How long a refresh token lasts.
pub const REFRESH_TOKEN_LIFETIME_SECS: u64 = 30 * 24 * 60 * 60;

/// The file, in the data directory, of the clients that registered themselves.
pub const CLIENTS_FILE: &str = "oauth-clients.json";

/// The most clients kept registered: registration is open to anyone, so past it the oldest
/// that no person has approved give way. A client with a grant never does.
pub const MAX_REGISTERED_CLIENTS: usize = 1000;

/// The most spent refresh tokens a grant remembers, to tell a reuse from a forgery.
const SPENT_REMEMBERED: usize = 64;

const REFRESH_PREFIX: &str = "pkbr.";

/// A client that registered itself (RFC 7591).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredClient {
    /// The id PKB gave it.
    pub client_id: String,
    /// The name it gave itself, if any.
    #[serde(default)]
    pub client_name: Option<String>,
    /// Where it may be sent back to.
    pub redirect_uris: Vec<String>,
    /// When it registered (RFC 3339, UTC).
    pub registered_at: String,
}

/// A client an account authorized, as `account clients` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedClient {
    /// The client's id.
    pub client_id: String,
    /// Its name, as it gave it.
    pub client_name: String,
    /// When the account last approved it (RFC 3339, UTC).
    pub authorized_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Grant {
    id: String,
    account: String,
    client_id: String,
    client_name: String,
    scope: String,
    created_at: String,
    refresh_sha256: String,
    /// Seconds since the epoch when the current refresh token expires.
    refresh_expires: u64,
    #[serde(default)]
    spent: Vec<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct GrantsDocument {
    version: u32,
    /// Clients registered before they had a file of their own: still found, never added to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    clients: Vec<RegisteredClient>,
    #[serde(default)]
    grants: Vec<Grant>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ClientsDocument {
    version: u32,
    #[serde(default)]
    clients: Vec<RegisteredClient>,
}

/// Tokens issued for a grant.
#[derive(Debug, Clone)]
pub struct Issued {
    /// The grant's id, which its access tokens carry.
    pub grant: String,
    /// The account.
    pub account: String,
    /// The scope granted, space-separated.
    pub scope: String,
    /// The new refresh token.
    pub refresh_token: String,
}

/// Why a refresh token was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum RefreshRefusal {
    /// Unknown, expired, of another client, or of an ended grant.
    Invalid,
    /// Spent already: its grant has been ended.
    Reused,
}

/// The grants file of one data directory; every change is made under its lock.
#[derive(Debug, Clone)]
pub struct GrantFile {
    dir: PathBuf,
}

impl GrantFile {
    /// The grants of the data directory `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(GRANTS_FILE)
    }

    /// Registers `client`; past [`MAX_REGISTERED_CLIENTS`], the oldest that have no grant
    /// give way.
    pub fn register(&self, client: RegisteredClient) -> Result<(), AccountError> {
        let path = self.dir.join(CLIENTS_FILE);
        let io = |source| AccountError::Io {
            path: path.clone(),
            source,
        };
        let _lock = data_file::lock(&self.dir, "oauth-clients.lock").map_err(io)?;
        let mut document = read_clients(&path)?;
        document.clients.push(client);
        let mut excess = document
            .clients
            .len()
            .saturating_sub(MAX_REGISTERED_CLIENTS);
        if excess > 0 {
            // Read without the grants' lock: the file is replaced whole, and a grant opened
            // meanwhile is of a client the person just approved, which is among the newest.
            let approved: HashSet<String> = read_document(&self.path())?
                .grants
                .into_iter()
                .map(|g| g.client_id)
                .collect();
            document.clients.retain(|c| {
                let gives_way = excess > 0 && !approved.contains(&c.client_id);
                excess -= usize::from(gives_way);
                !gives_way
            });
        }
        let mut text = serde_json::to_string_pretty(&document)
            .map_err(std::io::Error::other)
            .map_err(io)?;
        text.push('\n');
        data_file::replace(&self.dir, CLIENTS_FILE, &text).map_err(io)
    }

    /// Starts a grant of `account` to a client, when `signed_in` still holds under the file's
    /// lock; its first refresh token. The check runs under the lock because `account delete`
    /// and `account password` end the account's grants under it: a grant opened on a
    /// password that has just changed would otherwise outlive it.
    pub fn open(
        &self,
        account: &str,
        client_id: &str,
        client_name: &str,
        scope: &str,
        signed_in: impl FnOnce() -> bool,
    ) -> Result<Option<Issued>, AccountError> {
        let id = random_secret(16).map_err(|e| self.io(e))?;
        let refresh_token = refresh_token(&id).map_err(|e| self.io(e))?;
        let mut opened = false;
        self.change(|document| {
            if !signed_in() {
                return Ok(());
            }
            opened = true;
            document.grants.push(Grant {
                id: id.clone(),
                account: account.to_owned(),
                client_id: client_id.to_owned(),
                client_name: client_name.to_owned(),
                scope: scope.to_owned(),
                created_at: crate::timestamp::now_rfc3339(),
                refresh_sha256: hex_sha256(&refresh_token),
                refresh_expires: unix_now() + REFRESH_TOKEN_LIFETIME_SECS,
                spent: Vec::new(),
            });
            Ok(())
        })?;
        Ok(opened.then(|| Issued {
            grant: id,
            account: account.to_owned(),
            scope: scope.to_owned(),
            refresh_token,
        }))
    }

    /// Spends `token` for `client_id` and gives the grant's next refresh token. A token spent
    /// before ends its grant.
    pub fn rotate(
        &self,
        token: &str,
        client_id: &str,
    ) -> Result<Result<Issued, RefreshRefusal>, AccountError> {
        let Some(grant_id) = grant_of_refresh_token(token) else {
            return Ok(Err(RefreshRefusal::Invalid));
        };
        let next = refresh_token(grant_id).map_err(|e| self.io(e))?;
        let hash = hex_sha256(token);
        let mut outcome = Err(RefreshRefusal::Invalid);
        self.change(|document| {
            let Some(index) = document.grants.iter().position(|g| g.id == grant_id) else {
                return Ok(());
            };
            let grant = &mut document.grants[index];
            let current = bool::from(grant.refresh_sha256.as_bytes().ct_eq(hash.as_bytes()));
            if !current {
                if grant.spent.contains(&hash) {
                    tracing::warn!(
                        client_id = grant.client_id,
                        "a refresh token was used twice; ending its grant"
                    );
                    document.grants.remove(index);
                    outcome = Err(RefreshRefusal::Reused);
                }
                return Ok(());
            }
            if grant.client_id != client_id || grant.refresh_expires <= unix_now() {
                return Ok(());
            }
            let spent = std::mem::replace(&mut grant.refresh_sha256, hex_sha256(&next));
            grant.spent.push(spent);
            let excess = grant.spent.len().saturating_sub(SPENT_REMEMBERED);
            grant.spent.drain(..excess);
            grant.refresh_expires = unix_now() + REFRESH_TOKEN_LIFETIME_SECS;
            outcome = Ok(Issued {
                grant: grant.id.clone(),
                account: grant.account.clone(),
                scope: grant.scope.clone(),
                refresh_token: next.clone(),
            });
            Ok(())
        })?;
        Ok(outcome)
    }

    /// Ends the grant `id`, if it exists; whether it did.
    pub fn end(&self, id: &str) -> Result<bool, AccountError> {
        let mut ended = false;
        self.change(|document| {
            let before = document.grants.len();
            document.grants.retain(|g| g.id != id);
            ended = document.grants.len() != before;
            Ok(())
        })?;
        Ok(ended)
    }

    /// Ends the grant that the refresh token `token` belongs to, if it is that grant's.
    pub fn end_by_refresh_token(&self, token: &str) -> Result<(), AccountError> {
        let Some(grant_id) = grant_of_refresh_token(token) else {
            return Ok(());
        };
        let hash = hex_sha256(token);
        self.change(|document| {
            document.grants.retain(|g| {
                g.id != grant_id || (g.refresh_sha256 != hash && !g.spent.contains(&hash))
            });
            Ok(())
        })
    }

    /// The clients `account` authorized, with the latest approval of each, by client id.
    pub fn clients_of(&self, account: &str) -> Result<Vec<AuthorizedClient>, AccountError> {
        let document = read_document(&self.path())?;
        let mut clients: Vec<AuthorizedClient> = Vec::new();
        for grant in document.grants.iter().filter(|g| g.account == account) {
            match clients.iter_mut().find(|c| c.client_id == grant.client_id) {
                Some(known) if known.authorized_at < grant.created_at => {
                    known.authorized_at.clone_from(&grant.created_at);
                }
                Some(_) => {}
                None => clients.push(AuthorizedClient {
                    client_id: grant.client_id.clone(),
                    client_name: grant.client_name.clone(),
                    authorized_at: grant.created_at.clone(),
                }),
            }
        }
        clients.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        Ok(clients)
    }

    /// Ends every grant of `account` to `client_id`.
    pub fn revoke_client(&self, account: &str, client_id: &str) -> Result<(), AccountError> {
        self.change(|document| {
            let before = document.grants.len();
            document
                .grants
                .retain(|g| g.account != account || g.client_id != client_id);
            if document.grants.len() == before {
                return Err(AccountError::NoSuchClient {
                    account: account.to_owned(),
                    client_id: client_id.to_owned(),
                });
            }
            Ok(())
        })
    }

    /// Ends every grant of `account`.
    pub fn remove_account(&self, account: &str) -> Result<(), AccountError> {
        self.change(|document| {
            document.grants.retain(|g| g.account != account);
            Ok(())
        })
    }

    fn io(&self, source: std::io::Error) -> AccountError {
        AccountError::Io {
            path: self.path(),
            source,
        }
    }

    /// Reads, changes and replaces the file under its lock, dropping expired grants.
    fn change(
        &self,
        change: impl FnOnce(&mut GrantsDocument) -> Result<(), AccountError>,
    ) -> Result<(), AccountError> {
        let _lock = data_file::lock(&self.dir, "oauth-grants.lock").map_err(|e| self.io(e))?;
        let mut document = read_document(&self.path())?;
        change(&mut document)?;
        let now = unix_now();
        document.grants.retain(|g| g.refresh_expires > now);
        let mut text = serde_json::to_string_pretty(&document)
            .map_err(std::io::Error::other)
            .map_err(|e| self.io(e))?;
        text.push('\n');
        data_file::replace(&self.dir, GRANTS_FILE, &text).map_err(|e| self.io(e))
    }
}

fn refresh_token(grant: &str) -> std::io::Result<String> {
    Ok(format!("{REFRESH_PREFIX}{grant}.{}", random_secret(32)?))
}

fn grant_of_refresh_token(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(REFRESH_PREFIX)?;
    let (grant, secret) = rest.split_once('.')?;
    (!grant.is_empty() && !secret.is_empty()).then_some(grant)
}

fn read_clients(path: &Path) -> Result<ClientsDocument, AccountError> {
    read_json(
        path,
        "clients",
        |d: &ClientsDocument| d.version,
        || ClientsDocument {
            version: 1,
            ..ClientsDocument::default()
        },
    )
}

fn read_document(path: &Path) -> Result<GrantsDocument, AccountError> {
    read_json(
        path,
        "grants",
        |d: &GrantsDocument| d.version,
        || GrantsDocument {
            version: 1,
            ..GrantsDocument::default()
        },
    )
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A running server's view of the grants file: read again when it changes.
pub struct GrantBook {
    document: Mutex<Watched<GrantsDocument>>,
    clients: Mutex<Watched<ClientsDocument>>,
}

impl GrantBook {
    /// Reads the grants of the data directory `dir`.
    pub fn open(dir: &Path) -> Result<Self, AccountError> {
        let document = Watched::open(dir.join(GRANTS_FILE), read_document)?;
        let clients = Watched::open(dir.join(CLIENTS_FILE), read_clients)?;
        Ok(Self {
            document: Mutex::new(document),
            clients: Mutex::new(clients),
        })
    }

    /// Whether the grant `id` of `account` is alive (as of the last quarter second). A grant
    /// it does not know makes it look at the file again first: it may have just been opened,
    /// by this server or another.
    pub fn is_alive(&self, id: &str, account: &str) -> bool {
        let mut document = lock(&self.document);
        let holds = |document: &GrantsDocument| {
            document
                .grants
                .iter()
                .any(|g| g.id == id && g.account == account)
        };
        holds(document.current(false, read_document, GrantsDocument::default))
            || holds(document.current(true, read_document, GrantsDocument::default))
    }

    /// Whether a person has approved the client `client_id`: one of its grants is alive.
    /// A client not found is looked for again in the file as it is now: an approval made a
    /// moment ago (by this process or another) counts at once.
    pub fn approved(&self, client_id: &str) -> bool {
        let mut document = lock(&self.document);
        let holds =
            |document: &GrantsDocument| document.grants.iter().any(|g| g.client_id == client_id);
        holds(document.current(false, read_document, GrantsDocument::default))
            || holds(document.current(true, read_document, GrantsDocument::default))
    }

    /// The registered client `client_id`, read afresh when the file changed.
    pub fn client(&self, client_id: &str) -> Option<RegisteredClient> {
        let find = |clients: &[RegisteredClient]| {
            clients.iter().find(|c| c.client_id == client_id).cloned()
        };
        find(
            &lock(&self.clients)
                .current(true, read_clients, ClientsDocument::default)
                .clients,
        )
        .or_else(|| {
            find(
                &lock(&self.document)
                    .current(false, read_document, GrantsDocument::default)
                    .clients,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(n: usize) -> RegisteredClient {
        RegisteredClient {
            client_id: format!("pkbc_{n}"),
            client_name: None,
            redirect_uris: vec!["http://127.0.0.1/cb".into()],
            registered_at: String::new(),
        }
    }

    #[test]
    fn registrations_are_kept_apart_and_never_push_out_an_approved_client() {
        let dir = tempfile::tempdir().unwrap();
        let file = GrantFile::new(dir.path());
        file.register(client(0)).unwrap();
        file.open("alice", "pkbc_0", "Client", "notes:read", || true)
            .unwrap()
            .unwrap();
        for n in 1..=MAX_REGISTERED_CLIENTS + 5 {
            file.register(client(n)).unwrap();
        }
        let book = GrantBook::open(dir.path()).unwrap();
        assert!(book.client("pkbc_0").is_some(), "approved: kept");
        assert!(
            book.client("pkbc_1").is_none(),
            "the oldest unapproved gave way"
        );
        assert!(
            book.client(&format!("pkbc_{}", MAX_REGISTERED_CLIENTS + 5))
                .is_some()
        );
        let grants = std::fs::read_to_string(dir.path().join(GRANTS_FILE)).unwrap();
        assert!(
            !grants.contains("pkbc_1\""),
            "no registration in the grants file"
        );
        assert!(grants.len() < 2000, "{} bytes", grants.len());
    }

    #[test]
    fn refresh_tokens_rotate_and_a_reuse_ends_the_grant() {
        let dir = tempfile::tempdir().unwrap();
        let file = GrantFile::new(dir.path());
        let book = GrantBook::open(dir.path()).unwrap();
        let first = file
            .open("alice", "client", "Client", "notes:read", || true)
            .unwrap()
            .unwrap();
        assert!(
            book.is_alive(&first.grant, "alice") || {
                std::thread::sleep(data_file::RELOAD_INTERVAL);
                book.is_alive(&first.grant, "alice")
            }
        );
        assert_eq!(
            file.rotate(&first.refresh_token, "other")
                .unwrap()
                .unwrap_err(),
            RefreshRefusal::Invalid
        );
        let second = file
            .rotate(&first.refresh_token, "client")
            .unwrap()
            .unwrap();
        assert_eq!(second.grant, first.grant);
        assert_eq!(
            file.rotate(&first.refresh_token, "client")
                .unwrap()
                .unwrap_err(),
            RefreshRefusal::Reused
        );
        assert_eq!(
            file.rotate(&second.refresh_token, "client")
                .unwrap()
                .unwrap_err(),
            RefreshRefusal::Invalid,
            "the family is gone"
        );
        assert!(file.clients_of("alice").unwrap().is_empty());
    }
}
