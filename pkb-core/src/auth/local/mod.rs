//! `--auth local`: PKB as its own OAuth 2.1 authorization server, for people who run it for
//! themselves and want to reach it from clients that connect only through OAuth.
//!
//! Accounts are made at a terminal ([`AccountFile`]); a client registers itself
//! ([`registration`]) or is described by a metadata document at its `client_id` URL
//! ([`client_metadata`]); the person signs in and approves on PKB's pages ([`authorize`],
//! [`pages`]); the token endpoint ([`token_endpoint`]) trades the code for an access token
//! signed with PKB's own key ([`signing_key`]) and a refresh token of a grant ([`grants`]).
//!
//! The resource server's side is unchanged: PKB's own access tokens pass the same checks as
//! any issuer's ([`JwtVerifier`]), and then one more: their grant and account must still
//! exist, so that a revocation takes effect at once. Tokens of `pkb-server token create` keep
//! working, for clients that send a header.

pub mod accounts;
mod authorize;
pub mod client_metadata;
pub mod grants;
mod metadata;
mod pages;
mod password_checks;
pub mod redirect_uri;
mod registration;
mod sign_in_limits;
pub mod signing_key;
mod token_endpoint;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};

pub use accounts::{AccountBook, AccountError, AccountFile, AccountInfo, PasswordStamp};
pub use grants::{AuthorizedClient, GrantBook, GrantFile};
pub(crate) use pages::{add_security_headers, secret_cookie};

use self::authorize::Flows;
use self::password_checks::PasswordChecks;
use self::registration::RegistrationLimits;
use self::sign_in_limits::SignInLimits;
use self::signing_key::SigningKey;
use super::oauth::JwtVerifier;
use super::{OAuthSettings, TokenVerifier};
use crate::framework::access::{Principal, ScopeNames};

/// How long PKB's access tokens last.
pub const ACCESS_TOKEN_LIFETIME_SECS: u64 = 60 * 60;

/// The largest request body the authorization server's endpoints read.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The endpoints' paths, under the public URL.
pub mod paths {
    /// RFC 8414 metadata.
    pub const METADATA: &str = "/.well-known/oauth-authorization-server";
    /// The authorization endpoint.
    pub const AUTHORIZE: &str = "/oauth/authorize";
    /// The token endpoint.
    pub const TOKEN: &str = "/oauth/token";
    /// RFC 7591 dynamic registration.
    pub const REGISTER: &str = "/oauth/register";
    /// RFC 7009 revocation.
    pub const REVOKE: &str = "/oauth/revoke";
    /// The key set.
    pub const JWKS: &str = "/oauth/jwks";
}

/// How the authorization server is set up.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    /// The data directory: accounts, grants, the signing key, and the tokens.
    pub data_dir: PathBuf,
    /// The application's scope names.
    pub scopes: ScopeNames,
    /// Fetch client metadata documents from private and loopback addresses too (for tests,
    /// and clients on the same network).
    pub allow_local_clients: bool,
}

/// What the server learns once bound: its public URL, and the verifier of its own tokens.
struct Bound {
    issuer: String,
    resource: String,
    verifier: JwtVerifier,
}

/// The authorization server and the checks of the tokens it issues.
pub struct LocalAuthority {
    settings: LocalSettings,
    key: SigningKey,
    accounts: Arc<AccountBook>,
    grants: GrantBook,
    grant_file: GrantFile,
    tokens: TokenVerifier,
    bound: OnceLock<Bound>,
    flows: Flows,
    sign_ins: SignInLimits,
    registrations: RegistrationLimits,
    /// The threads that check passwords (argon2id: 19 MiB each).
    password_checks: PasswordChecks,
}

impl LocalAuthority {
    /// Opens the accounts, grants and tokens of the data directory and its signing key (made
    /// there on first use).
    pub fn open(settings: LocalSettings) -> Result<Arc<Self>, String> {
        let dir = &settings.data_dir;
        let key = SigningKey::load_or_create(dir)?;
        let accounts = AccountBook::open(dir).map_err(|e| e.to_string())?;
        let grants = GrantBook::open(dir).map_err(|e| e.to_string())?;
        let tokens =
            TokenVerifier::open(dir, settings.scopes.clone()).map_err(|e| e.to_string())?;
        Ok(Arc::new(Self {
            grant_file: GrantFile::new(dir),
            key,
            accounts: Arc::new(accounts),
            grants,
            tokens,
            bound: OnceLock::new(),
            flows: Flows::new()?,
            sign_ins: SignInLimits::default(),
            registrations: RegistrationLimits::default(),
            password_checks: PasswordChecks::start()?,
            settings,
        }))
    }

    /// Told the resource (`<public URL>/mcp`) once the server is bound; answers the issuer,
    /// the public URL itself.
    pub fn bind(&self, resource: &str) -> String {
        let bound = self.bound.get_or_init(|| {
            let issuer = resource
                .strip_suffix(crate::transport::http::MCP_PATH)
                .unwrap_or(resource)
                .to_owned();
            let settings = OAuthSettings {
                issuer: issuer.clone(),
                jwks_url: None,
                audience: Some(resource.to_owned()),
                scopes: self.settings.scopes.clone(),
            };
            Bound {
                verifier: JwtVerifier::own(settings, self.key.key_set()),
                issuer,
                resource: resource.to_owned(),
            }
        });
        bound.issuer.clone()
    }

    /// The application's scope names.
    pub fn scope_names(&self) -> &ScopeNames {
        &self.settings.scopes
    }

    /// The principal of a bearer token: a token of `pkb-server token create`, or an access
    /// token of this server whose grant and account still exist.
    pub async fn authenticate(&self, token: &str) -> Option<Principal> {
        if let Some(principal) = self.tokens.verify(token) {
            return Some(principal);
        }
        let verified = self.bound.get()?.verifier.verify_claims(token).await?;
        let grant = verified.grant.as_deref()?;
        (self.grants.is_alive(grant, &verified.subject) && self.accounts.exists(&verified.subject))
            .then_some(verified.principal)
    }

    /// Checks a person's account name and password as the sign-in page does: within the
    /// lockout's limits ([`sign_in_limits`]), on the password-check threads, taking as long
    /// whether or not the account exists. The web page signs people in with it too.
    pub async fn check_sign_in(&self, account: &str, password: String) -> SignIn {
        if !crate::auth::data_file::valid_user_name(account) {
            return SignIn::Wrong;
        }
        // Each check of a password costs 19 MiB and a thread for tens of milliseconds: a few at
        // a time, and no queue that a flood of posts could grow.
        let Some(place) = self.password_checks.place() else {
            return SignIn::Busy;
        };
        if !self.sign_ins.begin(account) {
            return SignIn::Locked;
        }
        let accounts = Arc::clone(&self.accounts);
        let name = account.to_owned();
        let signed_in = self
            .password_checks
            .run(place, move |memory| {
                accounts.check_password(&name, &password, memory)
            })
            .await
            .flatten();
        let Some(stamp) = signed_in else {
            return if self.sign_ins.failed(account) {
                SignIn::Locked
            } else {
                SignIn::Wrong
            };
        };
        if !self.sign_ins.succeeded(account) {
            return SignIn::Locked;
        }
        SignIn::Accepted(stamp)
    }

    /// Whether the account `name` still exists with the password of `stamp`: a session
    /// begun with it lasts only as long as that password does.
    pub fn still_signed_in(&self, name: &str, stamp: &PasswordStamp) -> bool {
        self.accounts.still_has(name, stamp)
    }

    /// The authorization server's endpoints and pages, to serve beside `/mcp`.
    pub fn routes(self: &Arc<Self>) -> Router {
        Router::new()
            .route(paths::METADATA, get(metadata::authorization_server))
            .route(paths::JWKS, get(metadata::key_set))
            .route(paths::REGISTER, post(registration::register))
            .route(paths::AUTHORIZE, get(authorize::start))
            .route(pages::SIGN_IN_PATH, post(authorize::sign_in))
            .route(pages::CONSENT_PATH, post(authorize::consent))
            .route(paths::TOKEN, post(token_endpoint::token))
            .route(paths::REVOKE, post(token_endpoint::revoke))
            .route(pages::STYLESHEET_PATH, get(pages::stylesheet))
            // Forms, token requests and registrations are small; nothing here reads more.
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(self))
    }

    /// The public URL and resource; before the server is bound, none (and every endpoint
    /// answers as an unknown page would).
    fn bound(&self) -> Option<&Bound> {
        self.bound.get()
    }
}

/// What checking a sign-in found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignIn {
    /// The password is the account's: the stamp of that password.
    Accepted(PasswordStamp),
    /// The account name or the password is wrong (which one is not said).
    Wrong,
    /// Too many failed sign-ins for this account name lately.
    Locked,
    /// Too many password checks under way: try again in a moment.
    Busy,
}

/// The parameters of a query or form body; a parameter given twice is refused (RFC 6749
/// section 3.1), as is a body that is not form encoding.
fn parameters(encoded: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut parameters = HashMap::new();
    for (name, value) in form_urlencoded::parse(encoded) {
        if parameters
            .insert(name.clone().into_owned(), value.into_owned())
            .is_some()
        {
            return Err(format!("the parameter `{name}` is given more than once"));
        }
    }
    Ok(parameters)
}
