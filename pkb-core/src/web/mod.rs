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

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Response;
use axum::routing::get;
use http::HeaderMap;

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

    /// Who asks, and their note store: the start of every page.
    async fn looking(&self, headers: &HeaderMap) -> Result<(Viewer, Arc<Store>), Response> {
        let viewer = self.viewer(headers)?;
        let store = self.store_for(&viewer).await?;
        Ok((viewer, store))
    }

    /// The note store of the person looking: their own, as their MCP clients reach it.
    async fn store_for(&self, viewer: &Viewer) -> Result<Arc<Store>, Response> {
        self.app
            .state_for(&viewer.user)
            .await
            .map_err(|error| layout::failed(viewer, &error))
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
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .with_state(web)
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
