//! A note's page: its title, tags and body as it reads, its links and backlinks, and its
//! versions; a deleted note's page says so, with its last version and a restore button.

use axum::extract::Path;
use axum::response::Response;
use http::StatusCode;
use maud::{Markup, html};

use super::changes::kind;
use super::layout::{self, Section, when};
use super::session::Viewer;
use super::{Looking, markdown, paths};
use crate::links::{LinkedNote, NoteWithLinks};
use crate::note::is_valid_id;
use crate::store::VersionSummary;

/// The most versions a note's page lists.
const VERSIONS_SHOWN: usize = 100;

/// `GET /notes/{id}`; `restored=N` in the query says a restore of version N just happened.
pub async fn page(Looking(viewer, store, query): Looking, Path(id): Path<String>) -> Response {
    if !is_valid_id(&id) {
        return layout::not_found(&viewer);
    }
    let restored = query.get("restored").and_then(|n| n.parse::<u64>().ok());
    let (note, versions) = match tokio::try_join!(
        store.get_with_links(&id),
        store.history(&id, VERSIONS_SHOWN)
    ) {
        Ok(found) => found,
        Err(error) => return layout::store_failed(&viewer, &error),
    };
    match (note, versions) {
        (Some(note), versions) => {
            let resolved = match store.resolve_links(&note.note.body).await {
                Ok(resolved) => resolved,
                Err(error) => return layout::store_failed(&viewer, &error),
            };
            let versions = versions.unwrap_or_default();
            shown(&viewer, &note, &resolved, &versions, restored)
        }
        (None, Some(versions)) if !versions.is_empty() => deleted(&viewer, &id, &versions),
        _ => layout::not_found(&viewer),
    }
}

fn shown(
    viewer: &Viewer,
    found: &NoteWithLinks,
    resolved: &[(String, Option<LinkedNote>)],
    versions: &[VersionSummary],
    restored: Option<u64>,
) -> Response {
    let note = &found.note;
    let main = html! {
        @if let Some(from) = restored {
            p.notice role="status" { "Version " (from) " was restored: it is now version " (note.version) "." }
        }
        h1 { (note.title) }
        p.meta { (note.id) " · version " (note.version) " · changed " (when(&note.updated_at)) }
        @if !note.tags.is_empty() {
            ul.tags aria-label="Tags" { @for tag in &note.tags { li { (tag) } } }
        }
        article.body { (markdown::render(&note.body, resolved)) }
        @if !found.links.is_empty() {
            h2 { "Links" }
            ul {
                @for link in &found.links {
                    li {
                        @match (&link.id, &link.title) {
                            (Some(id), Some(title)) => { a href=(paths::note(id)) { (title) } },
                            _ => { (link.target) " " span.muted { "(no such note yet)" } },
                        }
                    }
                }
            }
        }
        h2 { "Backlinks" }
        @if found.backlinks.is_empty() {
            p.muted { "No note links here." }
        } @else {
            ul { @for back in &found.backlinks { li { a href=(paths::note(&back.id)) { (back.title) } } } }
        }
        h2 { "Versions" }
        (version_list(&note.id, versions))
    };
    layout::page(
        Some(viewer),
        StatusCode::OK,
        Section::Notes,
        &note.title,
        main,
    )
}

fn deleted(viewer: &Viewer, id: &str, versions: &[VersionSummary]) -> Response {
    let last = &versions[0];
    let main = html! {
        h1 { (last.title) " " span.muted { "(deleted)" } }
        p.notice { "This note was deleted " (when(&last.at)) " by " (last.by) ". Its last version keeps it as it was." }
        div.actions {
            a.button href=(paths::version(id, last.version)) { "See its last version" }
            form method="get" action=(paths::restore(id, last.version)) {
                button type="submit" { "Restore it…" }
            }
        }
        h2 { "Versions" }
        (version_list(id, versions))
    };
    layout::page(
        Some(viewer),
        StatusCode::OK,
        Section::Notes,
        &last.title,
        main,
    )
}

/// A note's versions, newest first, each linking to its page.
pub fn version_list(id: &str, versions: &[VersionSummary]) -> Markup {
    html! {
        ol.list {
            @for v in versions {
                li {
                    a href=(paths::version(id, v.version)) { "Version " (v.version) }
                    " " (kind(v.change))
                    div.meta { (when(&v.at)) " by " (v.by) " · “" (v.title) "”, " (v.chars) " characters" }
                }
            }
        }
    }
}
