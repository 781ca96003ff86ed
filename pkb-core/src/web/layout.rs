//! The page around every page (navigation, search box, who is signed in), the headers every
//! answer carries, the stylesheet, and the one optional script.
//!
//! Nothing is loaded from elsewhere and nothing runs inline: the Content Security Policy allows
//! PKB's own stylesheet and script only, and no framing. Colours follow the system's light or
//! dark preference; the layout is one column that reads at 360 px.

use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, SET_COOKIE};
use http::{HeaderMap, HeaderValue, StatusCode};
use maud::{DOCTYPE, Markup, html};

use super::paths;
use super::session::Viewer;
use crate::auth::local::add_security_headers;

/// The policy every answer carries: PKB's own stylesheet and script, nothing inline, nothing
/// from elsewhere, forms posted only here, never in a frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The headers every answer of the pages carries: the sign-in pages' own (no framing, no
/// sniffing, no caching, since pages show one person's notes, and no Referer beyond PKB's
/// origin), with the pages' stricter policy; and no page of another origin may load an answer
/// (CORP) or keep a hold on a window of the pages it opened (COOP).
pub fn add_headers(headers: &mut HeaderMap) {
    add_security_headers(headers);
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
}

/// `response` with [`add_headers`]' headers where it has none of its own (the stylesheet
/// keeps its caching): every answer of the pages passes here, axum's own included.
pub async fn with_headers(mut response: Response) -> Response {
    let mut wanted = HeaderMap::new();
    add_headers(&mut wanted);
    for (name, value) in wanted {
        if let Some(name) = name {
            response.headers_mut().entry(name).or_insert(value);
        }
    }
    response
}

/// Which part of the navigation a page belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Changes.
    Changes,
    /// Deleted notes.
    Deleted,
    /// Search.
    Search,
    /// A note or a version.
    Notes,
    /// Sign-in.
    SignIn,
}

/// The whole page of `title` around `main`, for `viewer`.
pub fn page(
    viewer: Option<&Viewer>,
    status: StatusCode,
    section: Section,
    title: &str,
    main: Markup,
) -> Response {
    page_with_query(viewer, status, section, title, "", main)
}

/// [`page`] with `query` in the search box.
pub fn page_with_query(
    viewer: Option<&Viewer>,
    status: StatusCode,
    section: Section,
    title: &str,
    query: &str,
    main: Markup,
) -> Response {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · PKB" }
                link rel="stylesheet" href=(paths::STYLESHEET);
                script src=(paths::TIME_SCRIPT) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="Main" {
                        a.brand href=(paths::CHANGES) { "PKB" }
                        @if let Some(viewer) = viewer {
                            ul {
                                li { a href=(paths::CHANGES) aria-current=[current(section, Section::Changes)] { "Changes" } }
                                li { a href=(paths::DELETED) aria-current=[current(section, Section::Deleted)] { "Deleted" } }
                            }
                            form.search role="search" method="get" action=(paths::SEARCH) {
                                label.hidden for="q" { "Search notes" }
                                input #q type="search" name="q" value=(query) placeholder="Search notes";
                                button type="submit" { "Search" }
                            }
                            @if let Some(account) = &viewer.account {
                                form.account method="post" action=(paths::SIGN_OUT) {
                                    span { "Signed in as " strong { (account) } }
                                    input type="hidden" name="csrf" value=(viewer.csrf);
                                    button type="submit" { "Sign out" }
                                }
                            }
                        }
                    }
                }
                main #main tabindex="-1" { (main) }
            }
        }
    };
    let mut response = (status, markup.into_string()).into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Some(cookie) = viewer.and_then(|v| v.set_cookie.clone()) {
        response.headers_mut().insert(SET_COOKIE, cookie);
    }
    response
}

fn current(section: Section, link: Section) -> Option<&'static str> {
    (section == link).then_some("page")
}

/// The page for a note, version or page that is not there, or not the person's: the same
/// whichever, so that no page tells whether another user's note exists.
pub fn not_found(viewer: &Viewer) -> Response {
    page(
        Some(viewer),
        StatusCode::NOT_FOUND,
        Section::Notes,
        "Not found",
        html! {
            h1 { "Not found" }
            p { "There is no such note or version among your notes." }
            p { a href=(paths::CHANGES) { "See the latest changes" } }
        },
    )
}

/// A page saying why a request was refused, and that nothing changed.
pub fn refused(status: StatusCode, message: &str) -> Response {
    page(
        None,
        status,
        Section::Notes,
        "Refused",
        html! {
            h1 { "Refused" }
            p.error role="alert" { (message) }
            p { a href=(paths::CHANGES) { "Back to the latest changes" } }
        },
    )
}

/// A page saying the store failed; the whole error is logged, the person told without paths.
pub fn failed(viewer: &Viewer, error: &str) -> Response {
    tracing::error!(%error, "the web page could not reach the notes");
    page(
        Some(viewer),
        StatusCode::INTERNAL_SERVER_ERROR,
        Section::Notes,
        "Something went wrong",
        html! {
            h1 { "Something went wrong" }
            p.error role="alert" { "The notes could not be read or changed just now. Try again in a moment." }
        },
    )
}

/// A store's failure as [`failed`] shows it, with what the person is told of it.
pub fn store_failed(viewer: &Viewer, error: &crate::store::StoreError) -> Response {
    tracing::error!(%error, "store error in the web page");
    failed(viewer, &error.told_to_clients())
}

/// A time as the page shows it: UTC in the text, which the optional script writes in the
/// browser's own time zone.
pub fn when(at: &str) -> Markup {
    let shown = match at.get(..16) {
        Some(minute) if at.len() > 16 => format!("{} UTC", minute.replacen('T', " ", 1)),
        _ => at.to_owned(),
    };
    html! { time datetime=(at) { (shown) } }
}

const STYLESHEET: &str = include_str!("style.css");

const TIME_SCRIPT: &str = include_str!("time.js");

/// The stylesheet.
pub async fn stylesheet() -> Response {
    asset(STYLESHEET, "text/css; charset=utf-8")
}

/// The script that writes times in the browser's time zone.
pub async fn time_script() -> Response {
    asset(TIME_SCRIPT, "text/javascript; charset=utf-8")
}

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("max-age=3600"));
    response
}
