//! Who a request acts for: a user's identity and the key their data is kept under. A leaf that
//! the framework, authorization and the stores all use, so none of them imports another for it.

use std::sync::Arc;

use sha2::{Digest, Sha256};

/// A user whose data is kept apart from everyone else's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct User {
    identity: Arc<str>,
    /// Made once: every request asks for it, and hashing and hex-formatting it each time was
    /// a tenth of a fetch's time in the server.
    storage_key: Arc<str>,
}

impl User {
    /// The user with this identity: `token:<name>` for a token's user, the issuer and the
    /// subject for an OAuth user.
    pub fn new(identity: impl Into<Arc<str>>) -> Self {
        let identity = identity.into();
        let digest = Sha256::digest(identity.as_bytes());
        let storage_key = digest[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
            .into();
        Self {
            identity,
            storage_key,
        }
    }

    /// The one user of a server without authorization (stdio, or HTTP with `--auth none`).
    pub fn local() -> &'static User {
        static LOCAL: std::sync::LazyLock<User> = std::sync::LazyLock::new(|| User::new("local"));
        &LOCAL
    }

    /// The user named by a token of `pkb-server token create NAME`.
    pub fn token_user(name: &str) -> Self {
        Self::new(format!("token:{name}"))
    }

    /// The user an OAuth access token names: the pair (`iss`, `sub`). The newline cannot
    /// appear in either part of a valid token, so no two pairs give one identity.
    pub fn oauth_user(issuer: &str, subject: &str) -> Self {
        Self::new(format!("oauth:{issuer}\n{subject}"))
    }

    /// The identity, as given.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// A name for this user's data that reveals nothing of the identity: 32 hex characters of
    /// its SHA-256, safe as a file name on every system.
    pub fn storage_key(&self) -> &Arc<str> {
        &self.storage_key
    }
}

#[cfg(test)]
mod tests {
    use super::User;

    #[test]
    fn storage_keys_differ_by_identity_and_hide_it() {
        let alice = User::token_user("alice");
        let bob = User::token_user("bob");
        assert_ne!(alice.storage_key(), bob.storage_key());
        assert_eq!(alice.storage_key().len(), 32);
        assert!(!alice.storage_key().contains("alice"));
        assert_ne!(
            User::oauth_user("https://a", "x").storage_key(),
            User::oauth_user("https://a/", "x").storage_key()
        );
    }
}
