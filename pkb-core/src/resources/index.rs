//! `pkb://notes`: every note's ID, title, tags and update time, as JSON sorted by ID.

use serde::Serialize;

use crate::store::NoteSummary;
use crate::store::Store;
use crate::{ResourceError, pkb_resource};

/// Notes read per store round trip while building the index.
const PAGE: usize = 500;

#[derive(Serialize)]
struct Index {
    notes: Vec<NoteSummary>,
}

/// Every note's ID, title, tags and last update, sorted by ID.
#[pkb_resource(
    collect = false,
    uri = "pkb://notes",
    name = "notes",
    title = "All notes",
    mime_type = "application/json"
)]
pub async fn notes_index(#[state] store: &Store) -> Result<String, ResourceError> {
    let mut notes = Vec::new();
    loop {
        let after = notes.last().map(|n: &NoteSummary| n.id.clone());
        let page = store.list(after.as_deref(), PAGE).await?;
        let done = page.len() < PAGE;
        notes.extend(page);
        if done {
            break;
        }
    }
    serde_json::to_string_pretty(&Index { notes })
        .map_err(|error| ResourceError::Failed(error.to_string()))
}
