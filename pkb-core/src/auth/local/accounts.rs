//! The accounts people sign in with on PKB's own authorization server: made at a terminal,
//! kept in `accounts.json` in the data directory with argon2id hashes of their passwords
//! (the `argon2` crate's, with its default parameters), read by every running server.
//! An account's name is the same user as a token's name: the same notes.

use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

use argon2::{Argon2, PasswordHasher};
use serde::{Deserialize, Serialize};

use super::grants::GrantFile;
use super::password_checks::PasswordMemory;
use crate::auth::data_file::{self, Watched, hex_sha256, valid_user_name};
use crate::locks::lock;

/// The file, in the data directory, that holds the accounts.
pub const ACCOUNTS_FILE: &str = "accounts.json";

/// The fewest characters a password may have.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// The most characters a password may have: argon2 hashes any length, but a sign-in form
/// must not become a way to make the server hash megabytes.
pub const MAX_PASSWORD_CHARS: usize = 1024;

/// Why an account command failed.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The name is not 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    #[error(
        "invalid account name `{0}`: use 1 to 64 characters of letters, digits, `.`, `_` and `-`"
    )]
    InvalidName(String),
    /// An account with this name exists.
    #[error("an account named `{0}` exists")]
    Exists(String),
    /// No account has this name.
    #[error("no account named `{0}`")]
    NotFound(String),
    /// The password is too short or too long.
    #[error(
        "the password must have at least {MIN_PASSWORD_CHARS} characters (and at most {MAX_PASSWORD_CHARS})"
    )]
    BadPassword,
    /// The account never authorized this client.
    #[error("`{account}` has authorized no client `{client_id}`")]
    NoSuchClient {
        /// The account.
        account: String,
        /// The client.
        client_id: String,
    },
    /// A file of the data directory could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A file of the data directory is not what this PKB writes.
    #[error("{} is not a PKB {what} file: {reason}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Which file it should be.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The password could not be hashed.
    #[error("cannot hash the password: {0}")]
    Hash(String),
}

/// One account as `account list` shows it: never its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountInfo {
    /// The account's name, which is also its user.
    pub name: String,
    /// When it was made (RFC 3339, UTC).
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredAccount {
    name: String,
    /// The argon2id PHC string of the password.
    password: String,
    created_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct AccountsDocument {
    version: u32,
    accounts: Vec<StoredAccount>,
}

/// The accounts of one data directory, for the `account` commands.
#[derive(Debug, Clone)]
pub struct AccountFile {
    dir: PathBuf,
}

impl AccountFile {
    /// The accounts of the data directory `dir` (which need not exist yet).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The accounts file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(ACCOUNTS_FILE)
    }

    /// Makes the account `name` with `password`.
    pub fn create(&self, name: &str, password: &str) -> Result<(), AccountError> {
        if !valid_user_name(name) {
            return Err(AccountError::InvalidName(name.to_owned()));
        }
        let password = hash_password(password)?;
        self.change(|document| {
            if document.accounts.iter().any(|a| a.name == name) {
                return Err(AccountError::Exists(name.to_owned()));
            }
            document.accounts.push(StoredAccount {
                name: name.to_owned(),
                password,
                created_at: crate::timestamp::now_rfc3339(),
            });
            Ok(())
        })
    }

    /// Every account's name and date, sorted by name.
    pub fn list(&self) -> Result<Vec<AccountInfo>, AccountError> {
        let mut accounts: Vec<AccountInfo> = read_document(&self.path())?
            .accounts
            .into_iter()
            .map(|a| AccountInfo {
                name: a.name,
                created_at: a.created_at,
            })
            .collect();
        accounts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(accounts)
    }

    /// Removes the account `name` and ends every client's tokens of it, in running servers
    /// too. Its notes stay (they are the user's, whom a token may still name).
    pub fn delete(&self, name: &str) -> Result<(), AccountError> {
        self.change(|document| {
            let before = document.accounts.len();
            document.accounts.retain(|a| a.name != name);
            if document.accounts.len() == before {
                return Err(AccountError::NotFound(name.to_owned()));
            }
            Ok(())
        })?;
        GrantFile::new(&self.dir).remove_account(name)
    }

    /// Gives the account `name` a new password and ends every grant of it, in running
    /// servers too: a new password is what a person does when the old one may be known, and
    /// the tokens signed in with it must not outlive it.
    pub fn set_password(&self, name: &str, password: &str) -> Result<(), AccountError> {
        let password = hash_password(password)?;
        self.change(|document| {
            let account = document
                .accounts
                .iter_mut()
                .find(|a| a.name == name)
                .ok_or_else(|| AccountError::NotFound(name.to_owned()))?;
            account.password = password;
            Ok(())
        })?;
        // After the change, not before: a code redeemed meanwhile checks the password it was
        // signed in with under the grants file's lock, so it either sees the new password
        // and opens nothing, or opens its grant before this ends it.
        GrantFile::new(&self.dir).remove_account(name)
    }

    /// Reads, changes and replaces the file under its lock.
    fn change(
        &self,
        change: impl FnOnce(&mut AccountsDocument) -> Result<(), AccountError>,
    ) -> Result<(), AccountError> {
        let io = |source| AccountError::Io {
            path: self.path(),
            source,
        };
        let _lock = data_file::lock(&self.dir, "accounts.lock").map_err(io)?;
        let mut document = read_document(&self.path())?;
        change(&mut document)?;
        let mut text = serde_json::to_string_pretty(&document)
            .map_err(std::io::Error::other)
            .map_err(io)?;
        text.push('\n');
        data_file::replace(&self.dir, ACCOUNTS_FILE, &text).map_err(io)
    }
}

fn hash_password(password: &str) -> Result<String, AccountError> {
    let chars = password.chars().count();
    if !(MIN_PASSWORD_CHARS..=MAX_PASSWORD_CHARS).contains(&chars) {
        return Err(AccountError::BadPassword);
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|error| AccountError::Hash(error.to_string()))
}

fn read_document(path: &Path) -> Result<AccountsDocument, AccountError> {
    read_json(
        path,
        "accounts",
        |d: &AccountsDocument| d.version,
        || AccountsDocument {
            version: 1,
            accounts: Vec::new(),
        },
    )
}

/// The JSON document at `path`, a PKB `what` file of version 1 (`version` reads it), or
/// `empty` when there is no file yet.
pub(super) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &'static str,
    version: impl Fn(&T) -> u32,
    empty: impl FnOnce() -> T,
) -> Result<T, AccountError> {
    let malformed = |reason: String| AccountError::Malformed {
        path: path.to_owned(),
        what,
        reason,
    };
    let text = data_file::read_if_exists(path).map_err(|source| AccountError::Io {
        path: path.to_owned(),
        source,
    })?;
    let Some(text) = text else {
        return Ok(empty());
    };
    let document: T = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
    match version(&document) {
        1 => Ok(document),
        other => Err(malformed(format!("version {other} is not 1"))),
    }
}

/// A running server's view of the accounts: read again when the file changes.
pub struct AccountBook {
    accounts: Mutex<Watched<Vec<StoredAccount>>>,
}

/// A hash no password matches in practice, checked for names that have no account so that a
/// sign-in takes as long whether or not the account exists.
static DECOY_HASH: LazyLock<Option<String>> = LazyLock::new(|| {
    Argon2::default()
        .hash_password(b"no account has this password")
        .ok()
        .map(|hash| hash.to_string())
});

impl AccountBook {
    /// Reads the accounts of the data directory `dir`.
    pub fn open(dir: &Path) -> Result<Self, AccountError> {
        let accounts = Watched::open(dir.join(ACCOUNTS_FILE), load)?;
        Ok(Self {
            accounts: Mutex::new(accounts),
        })
    }

    /// Whether the account `name` exists (as of the last quarter second).
    pub fn exists(&self, name: &str) -> bool {
        lock(&self.accounts)
            .current(false, load, Vec::new)
            .iter()
            .any(|a| a.name == name)
    }

    /// When `password` is the account `name`'s, the [`PasswordStamp`] of the password it
    /// matched, checked in `memory`. Slow by design (argon2id): run it off the async threads.
    pub fn check_password(
        &self,
        name: &str,
        password: &str,
        memory: &mut PasswordMemory,
    ) -> Option<PasswordStamp> {
        let stored = lock(&self.accounts)
            .current(true, load, Vec::new)
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.password.clone());
        let chars = password.chars().count();
        let hash = match (&stored, DECOY_HASH.as_ref()) {
            (Some(hash), _) => hash.as_str(),
            (None, Some(decoy)) => decoy.as_str(),
            (None, None) => return None,
        };
        let matches = chars <= MAX_PASSWORD_CHARS && memory.verify(password.as_bytes(), hash);
        stored
            .filter(|_| matches)
            .map(|hash| PasswordStamp(hex_sha256(&hash)))
    }

    /// Whether the account `name` still has the password of `stamp`, read from the file now:
    /// neither deleted nor given a new password since.
    pub fn still_has(&self, name: &str, stamp: &PasswordStamp) -> bool {
        lock(&self.accounts)
            .current(true, load, Vec::new)
            .iter()
            .any(|a| a.name == name && hex_sha256(&a.password) == stamp.0)
    }
}

/// Which password of an account a person signed in with (a hash of its stored hash): what
/// they were given lasts only as long as that password does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasswordStamp(pub(super) String);

#[cfg(test)]
impl PasswordStamp {
    /// A stamp of no stored password, for the tests of what keeps one.
    pub(crate) fn for_tests(stamp: &str) -> Self {
        Self(stamp.to_owned())
    }
}

fn load(path: &Path) -> Result<Vec<StoredAccount>, AccountError> {
    Ok(read_document(path)?.accounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_password_ends_every_grant_of_the_account_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = AccountFile::new(dir.path());
        file.create("alice", "correct horse battery").unwrap();
        file.create("bob", "correct horse battery").unwrap();
        let grants = GrantFile::new(dir.path());
        for (account, client) in [("alice", "one"), ("alice", "two"), ("bob", "one")] {
            grants
                .open(account, client, "Client", "notes:read", || true)
                .unwrap()
                .unwrap();
        }
        assert_eq!(grants.clients_of("alice").unwrap().len(), 2);
        file.set_password("alice", "another long password").unwrap();
        assert!(grants.clients_of("alice").unwrap().is_empty());
        assert_eq!(grants.clients_of("bob").unwrap().len(), 1, "bob's stay");
    }

    #[test]
    fn accounts_keep_argon2id_hashes_and_check_passwords() {
        let dir = tempfile::tempdir().unwrap();
        let file = AccountFile::new(dir.path());
        assert!(matches!(
            file.create("alice", "short"),
            Err(AccountError::BadPassword)
        ));
        file.create("alice", "correct horse battery").unwrap();
        assert!(matches!(
            file.create("alice", "correct horse battery"),
            Err(AccountError::Exists(_))
        ));
        let stored = std::fs::read_to_string(file.path()).unwrap();
        assert!(stored.contains("$argon2id$"), "{stored}");
        assert!(!stored.contains("correct horse"));
        let book = AccountBook::open(dir.path()).unwrap();
        let memory = &mut PasswordMemory::default();
        let stamp = book
            .check_password("alice", "correct horse battery", memory)
            .unwrap();
        assert!(book.still_has("alice", &stamp));
        assert!(
            book.check_password("alice", "correct horse battery!", memory)
                .is_none()
        );
        assert!(
            book.check_password("nobody", "correct horse battery", memory)
                .is_none()
        );
        file.set_password("alice", "another long password").unwrap();
        assert!(!book.still_has("alice", &stamp), "the old password is gone");
        let stamp = book
            .check_password("alice", "another long password", memory)
            .unwrap();
        file.delete("alice").unwrap();
        assert!(
            book.check_password("alice", "another long password", memory)
                .is_none()
        );
        assert!(!book.still_has("alice", &stamp));
        assert!(matches!(
            file.delete("alice"),
            Err(AccountError::NotFound(_))
        ));
    }
}
