//! Changes, the first page: the latest changes across the person's notes, newest first,
//! [`PAGE`] at a time, filtered by client and by note.

use axum::response::Response;
use http::StatusCode;
use maud::{Markup, html};

use super::layout::{self, Section, when};
use super::{Looking, paths};
use crate::store::{ChangeEntry, ChangeFilter, ChangeKind};

/// Changes on a page.
pub const PAGE: usize = 50;

/// `GET /`: `client`, `note` and `before` (where the page starts) in the query.
pub async fn page(Looking(viewer, store, query): Looking) -> Response {
    let given = |name: &str| {
        query
            .get(name)
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    };
    let client = given("client");
    let note = given("note");
    let filter = ChangeFilter {
        before: given("before").and_then(|before| before.parse().ok()),
        id: note.clone(),
        by: client.clone(),
        limit: PAGE + 1,
        ..ChangeFilter::default()
    };
    let mut changes = match store.changes(&filter).await {
        Ok(changes) => changes,
        Err(error) => return layout::store_failed(&viewer, &error),
    };
    let more = changes.len() > PAGE;
    changes.truncate(PAGE);
    let older = more
        .then(|| changes.last())
        .flatten()
        .map(|last| changes_url(client.as_deref(), note.as_deref(), Some(last.position)));
    let filtered = client.is_some() || note.is_some();
    let main = html! {
        h1 { "Changes" }
        p.muted { "What changed in your notes lately, newest first, and which client changed it." }
        form.filters method="get" action=(paths::CHANGES) {
            label for="client" { "Client" input #client type="text" name="client" value=[client.as_deref()] placeholder="e.g. claude-code 2.1"; }
            label for="note" { "Note ID" input #note type="text" name="note" value=[note.as_deref()] placeholder="e.g. deploy-checklist"; }
            button type="submit" { "Filter" }
            @if filtered { a href=(paths::CHANGES) { "Show every change" } }
        }
        @if changes.is_empty() {
            p { @if filtered { "No change matches." } @else { "No changes yet." } }
        } @else {
            ol.list.changes { @for entry in &changes { (change_item(entry)) } }
        }
        @if let Some(older) = older {
            nav.pages aria-label="Pages" { a href=(older) rel="next" { "Older changes →" } }
        }
    };
    layout::page(
        Some(&viewer),
        StatusCode::OK,
        Section::Changes,
        "Changes",
        main,
    )
}

/// One change in the list.
fn change_item(entry: &ChangeEntry) -> Markup {
    let change = &entry.change;
    html! {
        li {
            a href=(paths::note(&change.id)) { strong { (change.title) } }
            " " span.meta { "(" (change.id) ")" }
            div.meta {
                (kind(change.change)) " " (when(&change.at)) " by "
                a href=(changes_url(Some(&change.by), None, None)) title="Only this client's changes" { (change.by) }
            }
            div { a href=(paths::version(&change.id, change.version)) { "Version " (change.version) ": see what changed" } }
        }
    }
}

/// A change's kind, as a badge that reads as a word.
pub fn kind(kind: ChangeKind) -> Markup {
    html! { span class=(format!("kind kind-{}", kind.as_str())) { (kind.as_str()) } }
}

/// The Changes page with these filters, from `before`.
pub fn changes_url(client: Option<&str>, note: Option<&str>, before: Option<u64>) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(client) = client {
        query.append_pair("client", client);
    }
    if let Some(note) = note {
        query.append_pair("note", note);
    }
    if let Some(before) = before {
        query.append_pair("before", &before.to_string());
    }
    let query = query.finish();
    if query.is_empty() {
        paths::CHANGES.to_owned()
    } else {
        format!("{}?{query}", paths::CHANGES)
    }
}
