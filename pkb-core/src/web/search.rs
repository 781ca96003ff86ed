//! Search: the search tool's default mode, through the tool's own store call, each result
//! linking to its note's page.

use axum::response::Response;
use http::StatusCode;
use maud::html;

use super::layout::{self, Section};
use super::{Looking, paths};
use crate::tools::search::{SearchMode, search_in};

/// Results shown.
const RESULTS: usize = 30;

/// The longest query taken, as the tool's `query` argument allows.
const MAX_QUERY_CHARS: usize = 200;

/// `GET /search?q=...`.
pub async fn page(Looking(viewer, store, mut query): Looking) -> Response {
    let asked = query.remove("q").unwrap_or_default();
    let asked: String = asked.trim().chars().take(MAX_QUERY_CHARS).collect();
    let hits = if asked.is_empty() {
        None
    } else {
        match search_in(&store, &asked, &[], RESULTS, SearchMode::default()).await {
            Ok(hits) => Some(hits),
            Err(error) => return layout::store_failed(&viewer, &error),
        }
    };
    let main = html! {
        h1 { "Search" }
        @match &hits {
            None => { p.muted { "Type words in the search box above." } },
            Some(hits) if hits.is_empty() => { p { "No note matches “" (asked) "”." } },
            Some(hits) => {
                p.muted { (hits.len()) " notes match “" (asked) "”, best first." }
                ol.list {
                    @for hit in hits {
                        li {
                            a href=(paths::note(&hit.id)) { strong { (hit.title) } }
                            " " span.meta { "(" (hit.id) ")" }
                            @if !hit.tags.is_empty() {
                                ul.tags aria-label="Tags" { @for tag in &hit.tags { li { (tag) } } }
                            }
                        }
                    }
                }
            },
        }
    };
    layout::page_with_query(
        Some(&viewer),
        StatusCode::OK,
        Section::Search,
        "Search",
        &asked,
        main,
    )
}
