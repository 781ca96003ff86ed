//! Who a request acts for, and what it may do: the user and scopes behind a bearer token.
//!
//! Two ways to tell: [`TokenFile`], tokens made at a terminal and kept as hashes in the data
//! directory, and [`JwtVerifier`], an OAuth 2.1 resource server checking signed access tokens
//! against its issuer's keys. Either gives a [`Principal`]; the HTTP transport puts it in the
//! request's extensions, and the server picks that user's notes from it.

#[cfg(feature = "http")]
mod oauth;
mod tokens;

use std::sync::Arc;

use sha2::{Digest, Sha256};

#[cfg(feature = "http")]
pub use oauth::{JwtVerifier, OAuthSettings};
pub use tokens::{TokenError, TokenFile, TokenInfo, TokenVerifier};

use crate::framework::access::Access;

/// The scope that lets a token read notes.
pub const READ_SCOPE: &str = "notes:read";
/// The scope that lets a token change notes (and read them).
pub const WRITE_SCOPE: &str = "notes:write";

/// A user whose notes are kept apart from everyone else's.
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

/// What a token allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Scopes {
    /// `notes:read`.
    pub read: bool,
    /// `notes:write`.
    pub write: bool,
}

impl Scopes {
    /// Read and write.
    pub const ALL: Scopes = Scopes {
        read: true,
        write: true,
    };
    /// Read only.
    pub const READ_ONLY: Scopes = Scopes {
        read: true,
        write: false,
    };

    /// The scopes named in a list of scope names; unknown names are ignored.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut scopes = Scopes::default();
        for name in names {
            match name {
                READ_SCOPE => scopes.read = true,
                WRITE_SCOPE => scopes.write = true,
                _ => {}
            }
        }
        scopes
    }

    /// Whether these scopes allow `access`. Writing implies reading.
    pub fn allows(self, access: Access) -> bool {
        match access {
            Access::Open => true,
            Access::Read => self.read || self.write,
            Access::Write => self.write,
        }
    }

    /// The scope a request of `access` needs, as `WWW-Authenticate` names it.
    pub fn needed_for(access: Access) -> Option<&'static str> {
        match access {
            Access::Open => None,
            Access::Read => Some(READ_SCOPE),
            Access::Write => Some(WRITE_SCOPE),
        }
    }

    /// The space-separated scope names, as a token's `scope` claim spells them.
    pub fn names(self) -> String {
        match (self.read, self.write) {
            (_, true) => format!("{READ_SCOPE} {WRITE_SCOPE}"),
            (true, false) => READ_SCOPE.to_owned(),
            (false, false) => String::new(),
        }
    }
}

/// The user a request acts for and what it may do. Put into the HTTP request's extensions
/// by the transport once the token checked out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Whose notes.
    pub user: User,
    /// What the token allows.
    pub scopes: Scopes,
}

/// How requests are authenticated.
#[cfg(feature = "http")]
pub enum Authenticator {
    /// No authentication: one user, allowed on loopback addresses only.
    None,
    /// Tokens made with `pkb-server token create`.
    Tokens(TokenVerifier),
    /// OAuth 2.1 access tokens (JWT) from an authorization server.
    OAuth(JwtVerifier),
}

#[cfg(feature = "http")]
impl Authenticator {
    /// The principal a bearer token stands for; `None` for a token that is unknown, revoked,
    /// expired or otherwise invalid (which one is not told, to the client or the log).
    pub async fn authenticate(&self, token: &str) -> Option<Principal> {
        match self {
            Authenticator::None => None,
            Authenticator::Tokens(tokens) => tokens.verify(token),
            Authenticator::OAuth(jwt) => jwt.verify(token).await,
        }
    }

    /// Whether requests must carry a bearer token.
    pub fn required(&self) -> bool {
        !matches!(self, Authenticator::None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn write_implies_read_and_read_is_not_write() {
        assert!(Scopes::READ_ONLY.allows(Access::Read));
        assert!(!Scopes::READ_ONLY.allows(Access::Write));
        let write_only = Scopes::from_names(["notes:write"]);
        assert!(write_only.allows(Access::Read));
        let nothing = Scopes::from_names(["openid", "profile"]);
        assert!(!nothing.allows(Access::Read));
        assert!(nothing.allows(Access::Open));
    }
}
