//! Restore from the page: a confirmation that shows what would change, then the post that
//! restores. The restore is the `restore` tool's own store call, recorded as made by the web
//! page (`web page`, or `web page (alice)` under `--auth local`), and announced to the
//! person's MCP sessions as the tool announces it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use http::{HeaderMap, StatusCode};
use maud::html;

use super::layout::{self, Section};
use super::session::see_other;
use super::version::{compared, valid_version};
use super::{Looking, Web, parameters, paths};
use crate::resources::announce_change_from_elsewhere;
use crate::store::{RestoreOutcome, VersionLookup};

/// `GET /notes/{id}/versions/{version}/restore`: are you sure?
pub async fn confirm(
    Looking(viewer, store, _): Looking,
    Path((id, number)): Path<(String, String)>,
) -> Response {
    let Some(number) = valid_version(&id, &number) else {
        return layout::not_found(&viewer);
    };
    let (version, current) = match tokio::try_join!(store.version(&id, number), store.get(&id)) {
        Ok((VersionLookup::Found(version), current)) => (version, current),
        Ok(_) => return layout::not_found(&viewer),
        Err(error) => return layout::store_failed(&viewer, &error),
    };
    let restored = &version.note;
    let title = format!("Restore version {number} of {}", restored.title);
    let main = html! {
        h1 { "Restore version " (number) " of “" (restored.title) "”?" }
        @match &current {
            Some(now) => {
                p { "The note's title, tags and body become those of version " (number) " again, as a new version (" (now.version + 1) ") recorded as made by " strong { (viewer.changes_by()) } ". Nothing is lost: the note as it is now stays in its history." }
                (compared(now, restored, "What restoring changes"))
            },
            None => {
                p { "The note was deleted. Restoring brings it back as version " (number) " held it, as a new version recorded as made by " strong { (viewer.changes_by()) } "." }
            },
        }
        div.actions {
            form method="post" action=(paths::restore(&id, number)) {
                input type="hidden" name="csrf" value=(viewer.csrf);
                button type="submit" { "Restore version " (number) }
            }
            a.button.quiet href=(paths::version(&id, number)) { "Cancel" }
        }
    };
    layout::page(Some(&viewer), StatusCode::OK, Section::Notes, &title, main)
}

/// `POST /notes/{id}/versions/{version}/restore`, with the page's CSRF token.
pub async fn restore(
    State(web): State<Arc<Web>>,
    headers: HeaderMap,
    Path((id, number)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let form = parameters(&body);
    let viewer = match web.sessions.changer(&web.people, &headers, &form) {
        Ok(viewer) => viewer,
        Err(response) => return response,
    };
    let Some(number) = valid_version(&id, &number) else {
        return layout::not_found(&viewer);
    };
    let store = match web.store_for(&viewer).await {
        Ok(store) => store,
        Err(response) => return response,
    };
    let store = store.changed_by(viewer.changes_by());
    match store.restore(&id, number).await {
        Ok(RestoreOutcome::Restored {
            note,
            from,
            created,
        }) => {
            // What the tool tells the client's own session, every session of the person's
            // hears: none of them made this change.
            announce_change_from_elsewhere(&web.hub, viewer.user.storage_key(), &note.id, created);
            see_other(&format!("{}?restored={from}", paths::note(&note.id)))
        }
        Ok(RestoreOutcome::NoSuchVersion | RestoreOutcome::NoSuchNote) => {
            layout::not_found(&viewer)
        }
        Err(error) => layout::store_failed(&viewer, &error),
    }
}
