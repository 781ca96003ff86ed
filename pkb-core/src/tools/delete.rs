//! `delete`: remove one note by its exact id.

use schemars::JsonSchema;
use serde::Serialize;

use crate::store::Store;
use crate::tools::fetch::not_found;
use crate::{Context, NotesContext, ToolError, pkb_tool};

/// What `delete` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteOutput {
    /// The ID of the note that was deleted.
    pub id: String,
    /// Always true: a note that does not exist is an error.
    pub deleted: bool,
}

/// Deletes the note with this exact ID, at once: it leaves search, fetch, the resources and
/// completions, and stays in its history, from which `restore` brings it back. Nothing else
/// is deleted (its summary, `<id>-summary`, stays). Writing the same title again afterwards
/// creates a new note.
#[pkb_tool(collect = false, destructive, idempotent, text = deleted_text)]
pub async fn delete(
    ctx: &Context,
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
) -> Result<DeleteOutput, ToolError> {
    if !store.changed_by(ctx.client_label()).delete(&id).await? {
        return Err(not_found(&id));
    }
    crate::resources::announce_change(ctx, &id, true).await;
    Ok(DeleteOutput { id, deleted: true })
}

fn deleted_text(output: &DeleteOutput) -> String {
    format!("deleted: {}", output.id)
}
