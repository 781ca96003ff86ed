//! Bearer tokens for self-hosting: made at a terminal, kept only as SHA-256 hashes in
//! `tokens.json` in the data directory, which every server on that directory watches.
//!
//! A token is 256 random bits, so a plain hash is enough to keep it: there is nothing to
//! guess by brute force that a slow hash would protect. Comparisons are constant-time, and
//! revocation reaches running servers within [`RELOAD_INTERVAL`], and a token made while a
//! server runs works at once (a token it does not know makes it look at the file again).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::framework::access::{Principal, ScopeNames, Scopes};
use crate::identity::User;
use crate::locks::lock;

/// The file, in the data directory, that holds the tokens' hashes.
pub const TOKENS_FILE: &str = "tokens.json";

/// How often a running server looks whether the tokens file changed. Well under the 1 s
/// within which a revoked token must fail.
pub const RELOAD_INTERVAL: Duration = Duration::from_millis(250);

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
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|error| TokenError::Io {
            path: self.path(),
            source: std::io::Error::other(format!("no randomness from the system: {error}")),
        })?;
        let token = format!("{TOKEN_PREFIX}{}", URL_SAFE_NO_PAD.encode(secret));
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
        let path = self.dir.join("tokens.lock");
        let io = |source| TokenError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    /// Replaces the file atomically (a new file renamed over it), readable by its owner only.
    fn write_document(&self, document: &TokensDocument) -> Result<(), TokenError> {
        let path = self.path();
        let temporary = self.dir.join(format!("{TOKENS_FILE}.new"));
        let io = |source| TokenError::Io {
            path: path.clone(),
            source,
        };
        let mut text = serde_json::to_string_pretty(document)
            .map_err(std::io::Error::other)
            .map_err(io)?;
        text.push('\n');
        let mut options = OpenOptions::new();
        options.create(true).truncate(true).write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&temporary).map_err(io)?;
        #[cfg(unix)]
        {
            // `mode` applies only to a file it creates; one left by a crash keeps its own.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(io)?;
        }
        file.write_all(text.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&temporary, &path).map_err(io)?;
        if let Ok(dir) = File::open(&self.dir) {
            // The rename is durable once the folder is: a crash must not bring a revoked
            // token back.
            let _ = dir.sync_all();
        }
        Ok(())
    }
}

fn check_name(name: &str) -> Result<(), TokenError> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(TokenError::InvalidName(name.to_owned()))
    }
}

fn hex_sha256(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read_document(path: &Path) -> Result<TokensDocument, TokenError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
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
    path: PathBuf,
    scopes: ScopeNames,
    state: Mutex<Loaded>,
}

struct Loaded {
    /// (hash, name, scopes) of every token.
    tokens: Vec<([u8; 32], String, Scopes)>,
    /// What the file looked like when read, to tell when it changed.
    signature: Option<FileSignature>,
    checked: Instant,
}

/// Enough of a file's metadata to see that it was replaced or rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileSignature {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

fn signature_of(path: &Path) -> Option<FileSignature> {
    let metadata = std::fs::metadata(path).ok()?;
    Some(FileSignature {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        #[cfg(unix)]
        inode: std::os::unix::fs::MetadataExt::ino(&metadata),
    })
}

impl TokenVerifier {
    /// Reads the tokens of the data directory `dir`, whose scope names are `scopes`. A
    /// missing file is no tokens yet.
    pub fn open(dir: &Path, scopes: ScopeNames) -> Result<Self, TokenError> {
        let path = dir.join(TOKENS_FILE);
        let loaded = load(&path, &scopes)?;
        Ok(Self {
            path,
            scopes,
            state: Mutex::new(loaded),
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
        if state.checked.elapsed() >= RELOAD_INTERVAL {
            self.reload(&mut state);
        }
        let found = match find(&state, &hash) {
            Some(found) => Some(found),
            None => {
                self.reload(&mut state);
                find(&state, &hash)
            }
        };
        found.map(|(name, scopes)| Principal {
            user: User::token_user(&name),
            scopes,
        })
    }

    fn reload(&self, state: &mut Loaded) {
        state.checked = Instant::now();
        if signature_of(&self.path) == state.signature {
            return;
        }
        match load(&self.path, &self.scopes) {
            Ok(loaded) => *state = loaded,
            Err(error) => {
                // Refuse every token rather than keep serving ones that may be revoked.
                tracing::error!(%error, "cannot read the tokens file; refusing every token until it can be read");
                state.tokens.clear();
                state.signature = None;
            }
        }
    }
}

/// The name and scopes of the token whose hash is `hash`. Every entry is compared, in constant
/// time, so the time taken tells nothing of which token, or how much of one, matched.
fn find(state: &Loaded, hash: &[u8; 32]) -> Option<(String, Scopes)> {
    let mut found = None;
    for (known, name, scopes) in &state.tokens {
        if bool::from(known.ct_eq(hash)) {
            found = Some((name.clone(), *scopes));
        }
    }
    found
}

fn load(path: &Path, names: &ScopeNames) -> Result<Loaded, TokenError> {
    let signature = signature_of(path);
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
    Ok(Loaded {
        tokens,
        signature,
        checked: Instant::now(),
    })
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
    use super::*;

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
