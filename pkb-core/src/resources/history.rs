//! `pkb://notes/{id}/history`: every version of one note, as `history(id)` lists them.

use serde::Serialize;

use crate::resources::note::complete_note_id;
use crate::store::{Store, VersionSummary};
use crate::{ResourceError, pkb_resource};

/// Versions read for the resource: all of them, bounded as every store call is.
const EVERY_VERSION: usize = usize::MAX;

#[derive(Serialize)]
struct History {
    id: String,
    versions: Vec<VersionSummary>,
}

/// Every version of one note, newest first: what changed it, when, by which client, and its
/// title and length after the change.
#[pkb_resource(
    collect = false,
    uri = "pkb://notes/{id}/history",
    name = "note-history",
    title = "Note history",
    mime_type = "application/json",
    complete(id = complete_note_id)
)]
pub async fn note_history(#[state] store: &Store, id: String) -> Result<String, ResourceError> {
    let versions = store
        .history(&id, EVERY_VERSION)
        .await?
        .ok_or(ResourceError::NotFound)?;
    serde_json::to_string_pretty(&History { id, versions })
        .map_err(|error| ResourceError::Failed(error.to_string()))
}
