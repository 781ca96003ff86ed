//! `fetch`: one note by its exact id.

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::Note;
use crate::store::Store;
use crate::{ToolError, pkb_tool};

/// What `fetch` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchOutput {
    /// The note, with its body.
    pub note: Note,
}

/// Fetches one note, with its full body, by its exact ID (as `search` returns it).
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn fetch(
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
) -> Result<FetchOutput, ToolError> {
    match store.get(&id).await? {
        Some(note) => Ok(FetchOutput { note }),
        None => Err(not_found(&id)),
    }
}

/// The contract's text for a missing note, shared by every tool that looks one up.
pub fn not_found(id: &str) -> ToolError {
    ToolError::new(format!("No note found with ID: {id}"))
}
