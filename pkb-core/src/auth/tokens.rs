//! Bearer tokens for self-hosting: made at a terminal, kept only as SHA-256 hashes in
//! `tokens.json` in the data directory, which every server on that directory watches.
//!
//! A token is 256 random bits, so a plain hash is enough to keep it: there is nothing to
//! guess by brute force that a slow hash would protect. Comparisons are constant-time, and
//! revocation reaches running servers within a quarter second, and a token made while a
//! server runs works at once (a token it does not know makes it look at the file again).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::data_file::{self, Watched, hex_sha256, random_secret, valid_user_name};
use crate::framework::access::{Principal, ScopeNames, Scopes};
use crate::identity::User;
use crate::locks::lock;

/// The file, in the data directory, that holds the tokens' hashes.
pub const TOKENS_FILE: &str = "tokens.json";

/// What the tokens prefix says: the text before the random part, so a leaked token is easy
/// to recognise in a secret scanner.
const TOKEN_PREFIX: &str = "pkb_";

/// Why a token command failed.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The name is not 1 to 64 characters of `A-Z a-z 0-9 . _ -`.
    #[error(
        "invalid token name `{0}`: use 1 to 64 characters of letters, digits, `.`, `_` and `-`"
    )]
    InvalidName(String),
    /// A token with this name exists.
    #[error("a token named `{0}` exists; revoke it first to make a new one")]
    Exists(String),
    /// No token has this name.
    #[error("no token named `{0}`")]
    NotFound(String),
    /// The tokens file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The tokens file is not what this PKB writes.
    #[error("{} is not a PKB tokens file: {reason}", .path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

/// One token as `token list` shows it: never the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInfo {
    /// The token's name, which is also its user.
    pub name: String,
    /// The scope names it carries: PKB's are `notes:read`, or `notes:read notes:write`.
    pub scope: String,
    /// When it was made (RFC 3339, UTC).
    pub created_at: String,
    /// Hex SHA-256 of the token.
    sha256: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokensDocument {
    version: u32,
    tokens: Vec<TokenInfo>,
}

/// The tokens file of one data directory, for the `token` commands.
#[derive(Debug, Clone)]
pub struct TokenFile {
    dir: PathBuf,
    scopes: ScopeNames,
}

impl TokenFile {
    /// The tokens of the data directory `dir` (which need not exist yet), carrying the
    /// application's `scopes`.
    pub fn new(dir: impl Into<PathBuf>, scopes: ScopeNames) -> Self {
        Self {
            dir: dir.into(),
            scopes,
        }
    }

    /// The tokens file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(TOKENS_FILE)
    }

    /// Makes a token for a new user `name`; returns the token, which is kept nowhere.
    pub fn create(&self, name: &str, read_only: bool) -> Result<String, TokenError> {
        check_name(name)?;
        let _lock = self.lock()?;
        let mut document = read_document(&self.path())?;
        if document.tokens.iter().any(|t| t.name == name) {
            return Err(TokenError::Exists(name.to_owned()));
        }
        let secret = random_secret(32).map_err(|source| TokenError::Io {
            path: self.path(),
            source,
        })?;
        let token = format!("{TOKEN_PREFIX}{secret}");
        let scopes = if read_only {
            Scopes::READ_ONLY
        } else {
            Scopes::ALL
        };
        document.tokens.push(TokenInfo {
            name: name.to_owned(),
            scope: self.scopes.names_of(scopes),
            created_at: crate::timestamp::now_rfc3339(),
            sha256: hex_sha256(&token),
        });
        self.write_document(&document)?;
        Ok(token)
    }

    /// Every token's name, scope and date, sorted by name.
    pub fn list(&self) -> Result<Vec<TokenInfo>, TokenError> {
        let mut tokens = read_document(&self.path())?.tokens;
        tokens.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(tokens)
    }

    /// Removes the token `name`, which then fails at once, in running servers too.
    pub fn revoke(&self, name: &str) -> Result<(), TokenError> {
        let _lock = self.lock()?;
        let mut document = read_document(&self.path())?;
        let before = document.tokens.len();
        document.tokens.retain(|t| t.name != name);
        if document.tokens.len() == before {
            return Err(TokenError::NotFound(name.to_owned()));
        }
        self.write_document(&document)
    }

    /// Serialises the token commands of several terminals: each reads, changes and replaces
    /// the file under this lock, so none loses another's change.
    fn lock(&self) -> Result<File, TokenError> {
        data_file::lock(&self.dir, "tokens.lock").map_err(|source| TokenError::Io {
            path: self.dir.join("tokens.lock"),
            source,
        })
    }

    /// Replaces the file atomically, readable by its owner only.
    fn write_document(&self, document: &TokensDocument) -> Result<(), TokenError> {
        let io = |source| TokenError::Io {
            path: self.path(),
            source,
        };
        let mut text = serde_json::to_string_pretty(document)
            .map_err(std::io::Error::other)
            .map_err(io)?;
        text.push('\n');
        data_file::replace(&self.dir, TOKENS_FILE, &text).map_err(io)
    }
}

fn check_name(name: &str) -> Result<(), TokenError> {
    if valid_user_name(name) {
        Ok(())
    } else {
        Err(TokenError::InvalidName(name.to_owned()))
    }
}

fn read_document(path: &Path) -> Result<TokensDocument, TokenError> {
    let text = match data_file::read_if_exists(path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Ok(TokensDocument {
                version: 1,
                tokens: Vec::new(),
            });
        }
        Err(source) => {
            return Err(TokenError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let document: TokensDocument =
        serde_json::from_str(&text).map_err(|error| TokenError::Malformed {
            path: path.to_owned(),
            reason: error.to_string(),
        })?;
    if document.version != 1 {
        return Err(TokenError::Malformed {
            path: path.to_owned(),
            reason: format!("version {} is not 1", document.version),
        });
    }
    Ok(document)
}

/// A running server's view of the tokens file: reloaded when the file changes.
pub struct TokenVerifier {
    scopes: ScopeNames,
    state: Mutex<Watched<Loaded>>,
}

/// (hash, name, scopes) of every token.
type Loaded = Vec<([u8; 32], String, Scopes)>;

impl TokenVerifier {
    /// Reads the tokens of the data directory `dir`, whose scope names are `scopes`. A
    /// missing file is no tokens yet.
    pub fn open(dir: &Path, scopes: ScopeNames) -> Result<Self, TokenError> {
        let names = scopes.clone();
        let state = Watched::open(dir.join(TOKENS_FILE), |path| load(path, &names))?;
        Ok(Self {
            scopes,
            state: Mutex::new(state),
        })
    }

    /// The scope names its tokens carry.
    pub fn scope_names(&self) -> &ScopeNames {
        &self.scopes
    }

    /// The principal of `token`, or `None`. A token it does not know makes it look at the
    /// file again first (a `stat`, and a read only when the file changed), so a token made
    /// while the server runs works at its first request.
    pub fn verify(&self, token: &str) -> Option<Principal> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut state = lock(&self.state);
        let load = |path: &Path| load(path, &self.scopes);
        let found = match find(state.current(false, load, Vec::new), &hash) {
            Some(found) => Some(found),
            None => find(state.current(true, load, Vec::new), &hash),
        };
        found.map(|(name, scopes)| Principal {
            user: User::token_user(&name),
            scopes,
        })
    }
}

/// The name and scopes of the token whose hash is `hash`. Every entry is compared, in constant
/// time, so the time taken tells nothing of which token, or how much of one, matched.
fn find(tokens: &Loaded, hash: &[u8; 32]) -> Option<(String, Scopes)> {
    let mut found = None;
    for (known, name, scopes) in tokens {
        if bool::from(known.ct_eq(hash)) {
            found = Some((name.clone(), *scopes));
        }
    }
    found
}

fn load(path: &Path, names: &ScopeNames) -> Result<Loaded, TokenError> {
    let document = read_document(path)?;
    let mut tokens = Vec::with_capacity(document.tokens.len());
    for info in document.tokens {
        let hash = decode_hex(&info.sha256).ok_or_else(|| TokenError::Malformed {
            path: path.to_owned(),
            reason: format!("the hash of `{}` is not 64 hex digits", info.name),
        })?;
        let scopes = names.scopes_of(info.scope.split_whitespace());
        tokens.push((hash, info.name, scopes));
    }
    Ok(tokens)
}

fn decode_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::data_file::RELOAD_INTERVAL;

    const SCOPES: ScopeNames = ScopeNames::new("notes:read", "notes:write");

    #[test]
    fn create_verify_list_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let file = TokenFile::new(dir.path(), SCOPES);
        let alice = file.create("alice", false).unwrap();
        let reader = file.create("reader", true).unwrap();
        assert!(alice.starts_with("pkb_") && alice.len() >= 40);
        assert!(matches!(
            file.create("alice", true),
            Err(TokenError::Exists(_))
        ));
        assert!(matches!(
            file.create("bad name", true),
            Err(TokenError::InvalidName(_))
        ));
        let stored = std::fs::read_to_string(file.path()).unwrap();
        assert!(!stored.contains(&alice), "the token itself is never stored");

        let verifier = TokenVerifier::open(dir.path(), SCOPES).unwrap();
        let principal = verifier.verify(&alice).unwrap();
        assert_eq!(principal.user, User::token_user("alice"));
        assert_eq!(principal.scopes, Scopes::ALL);
        assert_eq!(verifier.verify(&reader).unwrap().scopes, Scopes::READ_ONLY);
        assert_eq!(verifier.verify("pkb_nothing"), None);

        let names: Vec<_> = file.list().unwrap().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["alice", "reader"]);

        file.revoke("alice").unwrap();
        assert!(matches!(file.revoke("alice"), Err(TokenError::NotFound(_))));
        std::thread::sleep(RELOAD_INTERVAL + Duration::from_millis(20));
        assert_eq!(verifier.verify(&alice), None, "revocation is seen");
        assert!(verifier.verify(&reader).is_some());
    }
}
