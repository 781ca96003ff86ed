//! A further tool written with `#[pkb_tool]`, exactly as a user of `pkb-core` would write one.
//! `examples/word_count.rs` serves it by name, beside two of PKB's tools; a server that
//! serves everything it links (`Registry::collect()`) gets it too.

use pkb_core::store::Store;
use pkb_core::{ToolError, pkb_tool};
use schemars::JsonSchema;
use serde::Serialize;

/// What `word_count` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WordCount {
    /// The note's ID.
    pub id: String,
    /// How many words its body has.
    pub words: usize,
    /// How many characters its body has.
    pub characters: usize,
}

/// Counts the words and characters in a note's body.
#[pkb_tool(read_only, idempotent, title = "Word count")]
pub async fn word_count(
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
) -> Result<WordCount, ToolError> {
    let note = store
        .get(&id)
        .await?
        .ok_or_else(|| ToolError::new(format!("No note found with ID: {id}")))?;
    Ok(WordCount {
        words: note.body.split_whitespace().count(),
        characters: note.body.chars().count(),
        id,
    })
}
