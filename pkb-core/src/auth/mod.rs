//! Who a request acts for, and what it may do: the user and scopes behind a bearer token.
//!
//! Three ways to tell: [`TokenFile`], tokens made at a terminal and kept as hashes in the data
//! directory; [`JwtVerifier`], an OAuth 2.1 resource server checking signed access tokens
//! against its issuer's keys; and [`local`], PKB as its own authorization server. Either gives a [`Principal`](crate::framework::access::Principal);
//! the HTTP transport, through [`BearerAuth`], puts it in the request's extensions, and the
//! server picks that user's state from it. The scope names are the application's
//! ([`ScopeNames`]).

pub(crate) mod data_file;
pub mod local;
mod oauth;
mod tokens;

use std::sync::Arc;

use futures::future::BoxFuture;

pub use oauth::{JwtVerifier, OAuthSettings, OAuthStartError};
pub use tokens::{TokenError, TokenFile, TokenInfo, TokenVerifier};

use crate::framework::access::{Principal, ScopeNames};
use crate::transport::http::BearerAuth;

/// How an HTTP server's requests are authenticated.
pub enum Authenticator {
    /// Tokens made at a terminal and kept in a [`TokenFile`].
    Tokens(TokenVerifier),
    /// OAuth 2.1 access tokens (JWT) from an authorization server.
    OAuth(JwtVerifier),
    /// PKB's own authorization server's access tokens, and the tokens of a [`TokenFile`].
    Local(Arc<local::LocalAuthority>),
}

impl BearerAuth for Authenticator {
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Option<Principal>> {
        Box::pin(async move {
            match self {
                Authenticator::Tokens(tokens) => tokens.verify(token),
                Authenticator::OAuth(jwt) => jwt.verify(token).await,
                Authenticator::Local(authority) => authority.authenticate(token).await,
            }
        })
    }

    fn scope_names(&self) -> &ScopeNames {
        match self {
            Authenticator::Tokens(tokens) => tokens.scope_names(),
            Authenticator::OAuth(jwt) => &jwt.settings().scopes,
            Authenticator::Local(authority) => authority.scope_names(),
        }
    }

    fn authorization_server(&self, resource: &str) -> Option<String> {
        match self {
            Authenticator::Tokens(_) => None,
            Authenticator::OAuth(jwt) => {
                jwt.default_audience(resource);
                Some(jwt.settings().issuer.clone())
            }
            Authenticator::Local(authority) => Some(authority.bind(resource)),
        }
    }

    fn routes(&self) -> Option<axum::Router> {
        match self {
            Authenticator::Local(authority) => Some(authority.routes()),
            _ => None,
        }
    }
}
