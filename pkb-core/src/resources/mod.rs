//! The note resources: the index `pkb://notes` and each note at `pkb://notes/{id}`.

mod index;
mod note;

pub use index::notes_index;
pub use note::note_resource;

use crate::Context;

/// The URI of the index of all notes.
pub const NOTES_URI: &str = "pkb://notes";

/// The URI of one note.
pub fn note_uri(id: &str) -> String {
    format!("{NOTES_URI}/{id}")
}

/// Tells subscribed clients that a note changed, and every client when the list of notes
/// changed (a note was created or deleted).
pub async fn announce_change(ctx: &Context, id: &str, list_changed: bool) {
    ctx.resource_updated(&note_uri(id)).await;
    ctx.resource_updated(NOTES_URI).await;
    if list_changed {
        ctx.resource_list_changed().await;
    }
}
