//! `fetch`: one note by its exact id, as it is or as one of its versions was.

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::Note;
use crate::store::{Store, VersionLookup};
use crate::{ToolError, pkb_tool};

/// What `fetch` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchOutput {
    /// The note, with its body.
    pub note: Note,
}

/// Fetches one note, with its full body, by its exact ID (as `search` returns it). With
/// `version`, that version of it as `history` lists it (also of a deleted note).
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn fetch(
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
    /// A version of the note to read instead of its current state.
    #[arg(default, min = 1)]
    version: Option<u64>,
) -> Result<FetchOutput, ToolError> {
    let note = match version {
        None => store.get(&id).await?.ok_or_else(|| not_found(&id))?,
        Some(version) => match store.version(&id, version).await? {
            VersionLookup::Found(found) => found.note,
            VersionLookup::NoSuchVersion => return Err(no_such_version(&id, version)),
            VersionLookup::NoSuchNote => return Err(not_found(&id)),
        },
    };
    Ok(FetchOutput { note })
}

/// The contract's text for a missing note, shared by every tool that looks one up.
pub fn not_found(id: &str) -> ToolError {
    ToolError::new(format!("No note found with ID: {id}"))
}

/// The contract's text for a version a note never had.
pub fn no_such_version(id: &str, version: u64) -> ToolError {
    ToolError::new(format!("{id} has no version {version}"))
}
