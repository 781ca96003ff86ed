//! `search`: full-text search over titles, tags and bodies.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resources::note_uri;
use crate::store::{SearchHit, Store, StoreError};
use crate::{ToolError, pkb_tool};

/// What `search` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// The matching notes, best first.
    pub results: Vec<SearchResult>,
}

/// One matching note, without its body: `fetch` it to read it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// The note's ID.
    pub id: String,
    /// The note's title.
    pub title: String,
    /// The note's tags.
    pub tags: Vec<String>,
    /// The note's resource URI.
    pub uri: String,
    /// Relevance, higher is better.
    pub score: f64,
}

/// How `search` finds notes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// Every word must match, as a word, its start or an inflected form: names, exact terms.
    Words,
    /// Notes nearest in meaning, whatever their words.
    Meaning,
    /// Both fused, a note matching only some of the words: questions, descriptions; default.
    #[default]
    Hybrid,
}

/// Searches notes. `hybrid` (the default) fits a question or a description: it fuses the notes
/// nearest in meaning with those holding the most of the query's words, so a note saying it in
/// other words, or holding only some of them, is found. `words` fits names and
/// exact terms: every word must match (as a word, a word's start or an inflected form,
/// ignoring case and accents: `deploying` finds "deploy") in the title, tags or body, title
/// matches first. `meaning`: only the notes closest in meaning, with no word needing to match
/// ("car repairs" finds "the mechanic replaced the brakes"). Returns IDs and titles only: use
/// `fetch` to read a note.
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn search(
    #[state] store: &Store,
    /// What to look for: a question, a description, or words, for example `deploy check`.
    #[arg(trim, min_len = 1, max_len = 200)]
    query: String,
    /// Only notes that carry all of these tags.
    #[arg(default, trim, max_items = 20, item_min_len = 1, item_max_len = 40)]
    tags: Vec<String>,
    /// The most results to return.
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    /// `hybrid` (default), `words` or `meaning`.
    #[arg(default)]
    mode: SearchMode,
) -> Result<SearchOutput, ToolError> {
    let hits = search_in(store, &query, &tags, limit as usize, mode).await?;
    let results = hits
        .into_iter()
        .map(|hit| SearchResult {
            uri: note_uri(&hit.id),
            id: hit.id,
            title: hit.title,
            tags: hit.tags,
            score: hit.score,
        })
        .collect();
    Ok(SearchOutput { results })
}

/// The notes a search in `mode` finds, best first: what the tool answers, and what the web
/// page's search box shows (in the default mode).
pub async fn search_in(
    store: &Store,
    query: &str,
    tags: &[String],
    limit: usize,
    mode: SearchMode,
) -> Result<Vec<SearchHit>, StoreError> {
    match mode {
        SearchMode::Words => store.search(query, tags, limit).await,
        SearchMode::Meaning => store.search_by_meaning(query, tags, limit).await,
        SearchMode::Hybrid => store.search_hybrid(query, tags, limit).await,
    }
}
