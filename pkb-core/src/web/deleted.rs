//! The notes deleted lately, newest first: each with its last version (the note as it was)
//! and a restore button. A note restored or made again since is not listed.

use axum::response::Response;
use http::StatusCode;
use maud::html;

use super::changes::PAGE;
use super::layout::{self, Section, when};
use super::{Looking, paths};
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
pub async fn page(Looking(viewer, store, query): Looking) -> Response {
    let before = query.get("before").and_then(|b| b.parse().ok());
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
    // Deleted still, by this deletion: the note's newest version, not restored or made again
    // since. The store finds them in one statement, through its index of changes by kind.
    let filter = ChangeFilter {
        before,
        change: Some(ChangeKind::Deleted),
        newest: true,
        limit: PAGE + 1,
        ..ChangeFilter::default()
    };
    let mut deletions = store.changes(&filter).await?;
    let older = (deletions.len() > PAGE)
        .then(|| deletions.get(PAGE - 1).map(|entry| entry.position))
        .flatten();
    deletions.truncate(PAGE);
    // Each note as it was: the versions read together, not one after another.
    let kept = futures::future::try_join_all(
        deletions
            .iter()
            .map(|entry| store.version(&entry.change.id, entry.change.version)),
    )
    .await?;
    let shown = deletions
        .into_iter()
        .zip(kept)
        .map(|(entry, kept)| {
            let change = entry.change;
            let excerpt = match kept {
                VersionLookup::Found(version) => excerpt(&version.note.body),
                _ => String::new(),
            };
            Deleted {
                id: change.id,
                version: change.version,
                title: change.title,
                at: change.at,
                by: change.by,
                excerpt,
            }
        })
        .collect();
    Ok((shown, older))
}

/// The start of `body`, cut on a character boundary.
fn excerpt(body: &str) -> String {
    match body.char_indices().nth(EXCERPT_CHARS) {
        Some((end, _)) => format!("{}…", body[..end].trim_end()),
        None => body.trim_end().to_owned(),
    }
}
