//! The note resources: the index `pkb://notes`, each note at `pkb://notes/{id}`, and each
//! note's history at `pkb://notes/{id}/history`.

pub mod history;
pub mod index;
pub mod note;

pub use index::notes_index;
pub use note::note_resource;

use crate::Context;
use crate::framework::changes::{Change, ChangeHub, ChangeKind};

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

/// Tells the sessions and listen streams of the user with `user_key` that a note changed
/// through another process (sharing a PostgreSQL database): what [`announce_change`] tells
/// them of a change made here.
pub fn announce_change_from_elsewhere(
    hub: &ChangeHub,
    user_key: &str,
    id: &str,
    list_changed: bool,
) {
    let mut kinds = vec![
        ChangeKind::Updated(note_uri(id)),
        ChangeKind::Updated(NOTES_URI.to_owned()),
    ];
    if list_changed {
        kinds.push(ChangeKind::ListChanged);
    }
    for kind in kinds {
        hub.publish(
            user_key,
            Change {
                origin: Change::ELSEWHERE,
                kind,
            },
        );
    }
}
