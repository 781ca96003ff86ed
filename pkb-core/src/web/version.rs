//! A version's page: what that change did, as a diff against the version before it (or, with
//! `?against=current`, from it to the note as it is now), with buttons to restore it or the
//! version before it.

use axum::extract::Path;
use axum::response::Response;
use http::StatusCode;
use maud::{Markup, html};

use super::changes::{changes_url, kind};
use super::layout::{self, Section, when};
use super::{Looking, diff, paths};
use crate::note::{Note, is_valid_id};
use crate::store::{NoteVersion, Store, StoreError, VersionLookup};

/// `GET /notes/{id}/versions/{version}`.
pub async fn page(
    Looking(viewer, store, query): Looking,
    Path((id, number)): Path<(String, String)>,
) -> Response {
    let Some(number) = valid_version(&id, &number) else {
        return layout::not_found(&viewer);
    };
    let against_current = query.get("against").is_some_and(|a| a == "current");
    let (this, before, current) = match tokio::try_join!(
        store.version(&id, number),
        previous(&store, &id, number),
        store.get(&id)
    ) {
        Ok((VersionLookup::Found(this), before, current)) => (this, before, current),
        Ok(_) => return layout::not_found(&viewer),
        Err(error) => return layout::store_failed(&viewer, &error),
    };
    let current_version = current.as_ref().map(|note| note.version);
    let shown = &this.note;
    let comparison = if against_current {
        match &current {
            Some(now) => compared(
                shown,
                now,
                &format!(
                    "From version {number} to the note as it is now (version {})",
                    now.version
                ),
            ),
            None => {
                html! { p { "The note is deleted: there is no current note to compare with." } }
            }
        }
    } else {
        match &before {
            Some(old) => compared(
                &old.note,
                shown,
                &format!("From version {} to version {number}", old.note.version),
            ),
            None => html! {
                p { "This is the first version kept: everything in it is new." }
                (compared(&empty_like(shown), shown, &format!("Version {number}")))
            },
        }
    };
    let title = format!("Version {number} of {}", shown.title);
    let main = html! {
        h1 { "Version " (number) " of “" (shown.title) "”" }
        dl.facts {
            dt { "Change" } dd { (kind(this.change)) }
            dt { "When" } dd { (when(&shown.updated_at)) }
            dt { "By" } dd { a href=(changes_url(Some(&this.by), None, None)) { (this.by) } }
            dt { "Note" } dd {
                a href=(paths::note(&id)) { (id) }
                @match current_version {
                    Some(now) if now == number => { " (this is its current version)" },
                    Some(now) => { " (now at version " (now) ")" },
                    None => { " (deleted)" },
                }
            }
        }
        nav.pages aria-label="Compare" {
            @if against_current {
                a href=(paths::version(&id, number)) { "Compare with the version before" }
            } @else if current_version.is_some_and(|now| now != number) {
                a href=(format!("{}?against=current", paths::version(&id, number))) { "Compare with the note as it is now" }
            }
        }
        (comparison)
        div.actions {
            @if current_version != Some(number) {
                form method="get" action=(paths::restore(&id, number)) {
                    button type="submit" { "Restore version " (number) "…" }
                }
            }
            @if let Some(old) = before.as_ref().filter(|old| Some(old.note.version) != current_version) {
                form method="get" action=(paths::restore(&id, old.note.version)) {
                    button.quiet type="submit" { "Restore version " (old.note.version) ", as before this change…" }
                }
            }
        }
    };
    layout::page(Some(&viewer), StatusCode::OK, Section::Notes, &title, main)
}

/// `number` as a version of the note `id`, when both can be. A store counts versions in
/// 64-bit signed integers: a number past them is no version, not a store's failure.
pub fn valid_version(id: &str, number: &str) -> Option<u64> {
    let number: u64 = number.parse().ok()?;
    (is_valid_id(id) && (1..=i64::MAX.unsigned_abs()).contains(&number)).then_some(number)
}

/// The version before `number`, if it is kept.
async fn previous(store: &Store, id: &str, number: u64) -> Result<Option<NoteVersion>, StoreError> {
    if number <= 1 {
        return Ok(None);
    }
    Ok(match store.version(id, number - 1).await? {
        VersionLookup::Found(before) => Some(*before),
        _ => None,
    })
}

/// A note with nothing in it, to compare a first version with.
fn empty_like(note: &Note) -> Note {
    Note {
        title: String::new(),
        tags: Vec::new(),
        body: String::new(),
        ..note.clone()
    }
}

/// What changed from `old` to `new`: title, tags and body.
pub fn compared(old: &Note, new: &Note, heading: &str) -> Markup {
    html! {
        section aria-label=(heading) {
            h2 { (heading) }
            @if old.title != new.title {
                h3 { "Title" }
                @if let Some(lines) = diff::lines(&old.title, &new.title) { (lines) }
            }
            @if old.tags != new.tags {
                h3 { "Tags" }
                (diff::tags(&old.tags, &new.tags))
            }
            h3 { "Body" }
            @match diff::lines(&old.body, &new.body) {
                Some(lines) => { (lines) },
                None => { p.muted { "The body did not change." } },
            }
        }
    }
}
