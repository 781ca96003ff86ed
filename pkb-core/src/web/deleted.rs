//! The notes deleted lately, newest first: each with its last version (the note as it was)
//! and a restore button. A note restored or made again since is not listed.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use maud::html;

use super::changes::PAGE;
use super::layout::{self, Section, when};
use super::{Web, parameters, paths};
use crate::store::{ChangeFilter, ChangeKind, Store, StoreError, VersionLookup};

/// How many characters of a deleted note's body the list shows.
const EXCERPT_CHARS: usize = 280;

/// A deleted note as the list shows it.
struct Deleted {
    id: String,
    version: u64,
    title: String,
    at: String,
    by: String,
    excerpt: String,
}

/// `GET /deleted`; `before` in the query for older deletions.
pub async fn page(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let (viewer, store) = match web.looking(&headers).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let before = parameters(query.unwrap_or_default().as_bytes())
        .get("before")
        .and_then(|b| b.parse().ok());
    let (deleted, older) = match still_deleted(&store, before).await {
        Ok(found) => found,
        Err(error) => return layout::store_failed(&viewer, &error),
    };
    let main = html! {
        h1 { "Deleted notes" }
        p.muted { "Notes deleted lately, newest first. Each keeps its last version: restore brings it back as it was." }
        @if deleted.is_empty() {
            p { "No deleted notes." }
        } @else {
            ol.list {
                @for note in &deleted {
                    li {
                        a href=(paths::note(&note.id)) { strong { (note.title) } }
                        " " span.meta { "(" (note.id) ")" }
                        div.meta { "Deleted " (when(&note.at)) " by " (note.by) }
                        @if !note.excerpt.is_empty() { p { (note.excerpt) } }
                        form method="get" action=(paths::restore(&note.id, note.version)) {
                            button type="submit" aria-label=(format!("Restore {}", note.title)) { "Restore…" }
                        }
                    }
                }
            }
        }
        @if let Some(older) = older {
            nav.pages aria-label="Pages" { a href=(format!("{}?before={older}", paths::DELETED)) rel="next" { "Older deletions →" } }
        }
    };
    layout::page(
        Some(&viewer),
        StatusCode::OK,
        Section::Deleted,
        "Deleted notes",
        main,
    )
}

/// A page of deletions whose note is still deleted, and where the next page starts.
async fn still_deleted(
    store: &Store,
    before: Option<u64>,
) -> Result<(Vec<Deleted>, Option<u64>), StoreError> {
    let filter = ChangeFilter {
        before,
        change: Some(ChangeKind::Deleted),
        limit: PAGE + 1,
        ..ChangeFilter::default()
    };
    let mut deletions = store.changes(&filter).await?;
    let older = (deletions.len() > PAGE)
        .then(|| deletions.get(PAGE - 1).map(|entry| entry.position))
        .flatten();
    deletions.truncate(PAGE);
    let mut shown = Vec::new();
    for entry in deletions {
        let change = entry.change;
        // Deleted still, by this deletion: not restored or made again since.
        let newest = store.history(&change.id, 1).await?;
        let still = store.get(&change.id).await?.is_none()
            && newest.is_some_and(|v| v.first().is_some_and(|v| v.version == change.version));
        if !still || shown.iter().any(|d: &Deleted| d.id == change.id) {
            continue;
        }
        let excerpt = match store.version(&change.id, change.version).await? {
            VersionLookup::Found(version) => excerpt(&version.note.body),
            _ => String::new(),
        };
        shown.push(Deleted {
            id: change.id,
            version: change.version,
            title: change.title,
            at: change.at,
            by: change.by,
            excerpt,
        });
    }
    Ok((shown, older))
}

/// The start of `body`, cut on a character boundary.
fn excerpt(body: &str) -> String {
    match body.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", body[..end].trim_end()),
        None => body.trim_end().to_owned(),
    }
}
