//! `history`: the versions of one note, or the latest changes across all notes.

use schemars::JsonSchema;
use serde::Serialize;

use crate::store::{RecentChange, Store, VersionSummary};
use crate::tools::fetch::not_found;
use crate::{ToolError, pkb_tool};

/// What `history` returns: `id` and `versions` for one note, `changes` across notes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryOutput {
    /// The note's ID, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// That note's versions, newest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<VersionSummary>>,
    /// Without an ID: the latest changes across every note, newest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changes: Option<Vec<RecentChange>>,
}

/// Lists what changed, newest first: with `id`, that note's versions (also after it was
/// deleted), each with what changed it (created, replaced, edited, deleted, restored,
/// imported, file), when, by which client, and its title and length; without `id`, the
/// latest changes across all notes. `fetch` reads a version whole; `restore` brings it back.
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn history(
    #[state] store: &Store,
    /// A note's ID; leave it out for the latest changes across all notes.
    #[arg(default, trim, min_len = 1, max_len = 100)]
    id: Option<String>,
    /// The most versions or changes to list.
    #[arg(default = 20, min = 1, max = 100)]
    limit: u32,
) -> Result<HistoryOutput, ToolError> {
    let limit = limit as usize;
    match id {
        Some(id) => match store.history(&id, limit).await? {
            Some(versions) => Ok(HistoryOutput {
                id: Some(id),
                versions: Some(versions),
                changes: None,
            }),
            None => Err(not_found(&id)),
        },
        None => Ok(HistoryOutput {
            id: None,
            versions: None,
            changes: Some(store.recent_changes(limit).await?),
        }),
    }
}
