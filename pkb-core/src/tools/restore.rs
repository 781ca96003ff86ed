//! `restore`: make an earlier version of a note its current state again.

use schemars::JsonSchema;
use serde::Serialize;

use crate::store::{RestoreOutcome, Store};
use crate::tools::fetch::{no_such_version, not_found};
use crate::{Context, NotesContext, ToolError, pkb_tool};

/// What `restore` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RestoreOutput {
    /// The note's ID.
    pub id: String,
    /// The note's new version, which holds what the old one held.
    pub version: u64,
    /// The version it was restored from.
    pub restored_from: u64,
}

/// Makes an earlier version of a note (its title, tags and body, as `history` lists them)
/// the note's current state again, as a new version: nothing is lost, and the restore can be
/// undone the same way. Brings a deleted note back.
#[pkb_tool(collect = false, destructive, text = restored_text)]
pub async fn restore(
    ctx: &Context,
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
    /// The version to bring back, as `history` lists it.
    #[arg(min = 1)]
    version: u64,
) -> Result<RestoreOutput, ToolError> {
    let store = store.changed_by(ctx.client_label());
    match store.restore(&id, version).await? {
        RestoreOutcome::Restored {
            note,
            from,
            created,
        } => {
            crate::resources::announce_change(ctx, &note.id, created).await;
            Ok(RestoreOutput {
                id: note.id,
                version: note.version,
                restored_from: from,
            })
        }
        RestoreOutcome::NoSuchVersion => Err(no_such_version(&id, version)),
        RestoreOutcome::NoSuchNote => Err(not_found(&id)),
    }
}

fn restored_text(output: &RestoreOutput) -> String {
    format!(
        "restored: {} (version {} as version {})",
        output.id, output.restored_from, output.version
    )
}
