//! `pkb://notes/{id}`: one note as markdown.

use crate::note::Note;
use crate::store::Store;
use crate::{Context, NotesContext, ResourceError, pkb_resource};

/// One note as markdown: its title as a heading, its tags, then its body.
#[pkb_resource(
    collect = false,
    uri = "pkb://notes/{id}",
    name = "note",
    title = "Note",
    mime_type = "text/markdown",
    complete(id = complete_note_id)
)]
pub async fn note_resource(#[state] store: &Store, id: String) -> Result<String, ResourceError> {
    let note = store.get(&id).await?.ok_or(ResourceError::NotFound)?;
    Ok(markdown(&note))
}

/// `# <title>`, a blank line, `Tags: a, b` when there are tags, a blank line, the body.
pub fn markdown(note: &Note) -> String {
    let mut text = format!("# {}\n\n", note.title);
    if !note.tags.is_empty() {
        text.push_str(&format!("Tags: {}\n\n", note.tags.join(", ")));
    }
    text.push_str(&note.body);
    text
}

/// Note IDs starting with what was typed.
pub async fn complete_note_id(ctx: &Context, prefix: String) -> Vec<String> {
    ctx.store()
        .ids_with_prefix(
            prefix.trim(),
            crate::framework::completion::MAX_COMPLETIONS + 1,
        )
        .await
        .unwrap_or_default()
}
