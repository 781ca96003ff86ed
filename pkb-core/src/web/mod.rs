//! The web page for the person whose notes they are: what models changed lately, a note as it
//! reads, any version beside the one before it, restore with a click, search, and the notes
//! deleted lately. Rendered on the server (maud, so every template is checked when PKB is
//! compiled and every text escaped once), with PKB's own stylesheet and one small optional
//! script; every page reads and every form works with JavaScript off.
//!
//! Served beside `/mcp` by `pkb-server --http` under `--auth none` and `--auth local`, and
//! alone by `pkb-server web` ([`serve_alone`]). One file a job: [`session`] (who is looking,
//! the cookie and the CSRF tokens), [`layout`] (the page around every page, the headers),
//! [`markdown`] and [`diff`] (what a note and a change look like), and one file per page.

// A page that cannot go on answers with another page (the sign-in, a refusal, a 404): the
// `Err` of these results is that answer, built once per request, not an error carried far.
#![allow(clippy::result_large_err)]

mod changes;
mod deleted;
mod diff;
mod layout;
mod markdown;
mod note;
mod restore;
mod search;
mod serve;
mod session;
mod sign_in;
mod version;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRequestParts, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use http::request::Parts;
use http::{HeaderMap, Method, StatusCode};

pub use serve::{WebServer, serve_alone};

use crate::App;
use crate::auth::local::LocalAuthority;
use crate::framework::changes::ChangeHub;
use crate::notes_app::NotesApp;
use crate::store::Store;

use self::session::{Sessions, Viewer};

/// The pages' paths.
pub mod paths {
    /// Changes, the first page.
    pub const CHANGES: &str = "/";
    /// The notes deleted lately.
    pub const DELETED: &str = "/deleted";
    /// Search.
    pub const SEARCH: &str = "/search";
    /// Sign-in (under `--auth local`).
    pub const SIGN_IN: &str = "/sign-in";
    /// Sign-out (under `--auth local`).
    pub const SIGN_OUT: &str = "/sign-out";
    /// The stylesheet.
    pub const STYLESHEET: &str = "/web/style.css";
    /// The script that shows times in the browser's time zone.
    pub const TIME_SCRIPT: &str = "/web/time.js";

    /// A note's page.
    pub fn note(id: &str) -> String {
        format!("/notes/{id}")
    }

    /// A version's page: that version beside the one before it.
    pub fn version(id: &str, version: u64) -> String {
        format!("/notes/{id}/versions/{version}")
    }

    /// The confirmation of a restore, and where it is posted.
    pub fn restore(id: &str, version: u64) -> String {
        format!("/notes/{id}/versions/{version}/restore")
    }
}

/// Who may look, and how they say who they are.
#[derive(Clone)]
pub enum People {
    /// One person, the local user of a loopback server (`--auth none`, `pkb-server web`):
    /// no sign-in.
    One,
    /// People with accounts of `--auth local`, each signing in and seeing their own notes.
    Accounts(Arc<LocalAuthority>),
}

/// What the pages are served over.
pub struct WebSettings {
    /// Whose notes a user reaches: the same per-user stores the MCP side uses.
    pub app: NotesApp,
    /// Where a restore is announced to the user's MCP sessions, as a tool's change is.
    pub hub: Arc<ChangeHub>,
    /// Who may look.
    pub people: People,
    /// Whether the pages are reached over https (then the cookie is `__Host-` and `Secure`).
    pub https: bool,
}

/// The pages' shared state.
pub(crate) struct Web {
    app: NotesApp,
    hub: Arc<ChangeHub>,
    people: People,
    sessions: Sessions,
}

impl Web {
    /// Who asks, from the request's cookie; under `--auth local` without a session, the
    /// answer is the way to the sign-in page.
    fn viewer(&self, headers: &HeaderMap) -> Result<Viewer, Response> {
        self.sessions.viewer(&self.people, headers)
    }

    /// The note store of the person looking: their own, as their MCP clients reach it.
    async fn store_for(&self, viewer: &Viewer) -> Result<Arc<Store>, Response> {
        self.app
            .state_for(&viewer.user)
            .await
            .map_err(|error| layout::failed(viewer, &error))
    }
}

/// Who asks, their note store, and the query's parameters: the start of every page that
/// reads. Under `--auth local` without a session, the answer is the way to the sign-in page.
pub(crate) struct Looking(Viewer, Arc<Store>, HashMap<String, String>);

impl FromRequestParts<Arc<Web>> for Looking {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Arc<Web>) -> Result<Self, Response> {
        let viewer = web.viewer(&parts.headers)?;
        let store = web.store_for(&viewer).await?;
        let query = parameters(parts.uri.query().unwrap_or_default().as_bytes());
        Ok(Self(viewer, store, query))
    }
}

/// The largest form a page posts: a CSRF token and a few short fields.
const MAX_FORM_BYTES: usize = 16 * 1024;

/// The pages, to serve at `/` (beside `/mcp`, or alone).
pub fn router(settings: WebSettings) -> Router {
    let web = Arc::new(Web {
        sessions: Sessions::new(settings.https),
        app: settings.app,
        hub: settings.hub,
        people: settings.people,
    });
    Router::new()
        .route(paths::CHANGES, get(changes::page))
        .route(paths::DELETED, get(deleted::page))
        .route(paths::SEARCH, get(search::page))
        .route("/notes/{id}", get(note::page))
        .route("/notes/{id}/versions/{version}", get(version::page))
        .route(
            "/notes/{id}/versions/{version}/restore",
            get(restore::confirm).post(restore::restore),
        )
        .route(paths::SIGN_IN, get(sign_in::page).post(sign_in::sign_in))
        .route(paths::SIGN_OUT, axum::routing::post(sign_in::sign_out))
        .route(paths::STYLESHEET, get(layout::stylesheet))
        .route(paths::TIME_SCRIPT, get(layout::time_script))
        .fallback(no_such_page)
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(middleware::from_fn(same_site_only))
        // Outermost, so that every answer carries them: axum's own (405, 413, a path it
        // cannot read) and the refusals above as much as the pages.
        .layer(middleware::map_response(layout::with_headers))
        .with_state(web)
}

/// Any other path: the pages' 404, the same as a note's that is not there.
async fn no_such_page(State(web): State<Arc<Web>>, headers: HeaderMap) -> Response {
    match web.viewer(&headers) {
        Ok(viewer) => layout::not_found(&viewer),
        Err(response) => response,
    }
}

/// Refuses (403) what a page of another site makes the browser ask for, by the Fetch
/// Metadata the browser sends, unless it is a link followed to a page. Under `--auth none`
/// and `pkb-server web` no cookie is needed to read a page, so an `<img>` or a no-cors
/// `fetch` of another site could otherwise run any page: it could not read the answer, but
/// it could time it (does the person have a note `divorce-lawyer`?) or load the server with
/// searches. Another loopback port is the same site, and refused too. A browser that sends
/// no Fetch Metadata is not refused: the origin checks and the CSRF tokens still hold.
async fn same_site_only(request: Request, next: Next) -> Response {
    let headers = request.headers();
    let fetch = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    let elsewhere = !matches!(fetch("sec-fetch-site"), None | Some("same-origin" | "none"));
    let followed_link = matches!(*request.method(), Method::GET | Method::HEAD)
        && fetch("sec-fetch-mode") == Some("navigate")
        && fetch("sec-fetch-dest") == Some("document");
    if elsewhere && !followed_link {
        return layout::refused(
            StatusCode::FORBIDDEN,
            "Another site asked for this page: only PKB's own pages and links followed to them are answered.",
        );
    }
    next.run(request).await
}

/// What is served at `/` where the pages are not (`--auth tokens` and `oauth`, whose users
/// have no password to sign in with): 404 for every path the other routes do not take,
/// rather than the bearer challenge the MCP endpoint would answer.
pub fn not_served() -> Router {
    Router::new().fallback(|| async { (http::StatusCode::NOT_FOUND, "not found") })
}

/// The parameters of a query string or a form body, the last of a name given twice winning.
fn parameters(encoded: &[u8]) -> std::collections::HashMap<String, String> {
    form_urlencoded::parse(encoded).into_owned().collect()
}
