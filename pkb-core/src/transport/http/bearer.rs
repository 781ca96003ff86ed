//! What the HTTP transport asks of an authenticator: who a bearer token stands for, what the
//! application calls its scopes, and which authorization server issues its tokens. The `auth`
//! feature brings PKB's two (a token file and OAuth); an application may bring its own.

use futures::future::BoxFuture;

use crate::framework::access::{Principal, ScopeNames};

/// Tells who the bearer token of an HTTP request stands for.
pub trait BearerAuth: Send + Sync + 'static {
    /// The principal `token` stands for; `None` for a token that is unknown, revoked,
    /// expired or otherwise invalid (which one is told neither to the client nor the log).
    /// Asked again for every request, and for open sessions' tokens every half second.
    fn authenticate<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Option<Principal>>;

    /// The application's scope names, which a refusal for want of access names.
    fn scope_names(&self) -> &ScopeNames;

    /// Told the resource this server is (`<public URL>/mcp`) once it is bound; answers the
    /// authorization server that issues tokens for it, which the server then advertises in
    /// its RFC 9728 metadata and names in its challenges. `None`, the default, advertises
    /// none.
    fn authorization_server(&self, resource: &str) -> Option<String> {
        let _ = resource;
        None
    }

    /// Endpoints and pages of its own to serve beside `/mcp` (an authorization server's),
    /// asked once the server is bound, after [`BearerAuth::authorization_server`]. They pass
    /// the same Host and Origin checks as `/mcp`. `None`, the default, serves none.
    fn routes(&self) -> Option<axum::Router> {
        None
    }
}
