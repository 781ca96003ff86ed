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
    /// Every word must match, as a word or a word's start: for names, terms and exact words.
    #[default]
    Words,
    /// Notes nearest in meaning, whatever their words: for a question or a description.
    Meaning,
    /// Both, fused; a note may match only some of the words: the best default for a question.
    Hybrid,
}

/// Searches notes. `words` (the default): every word must match (as a word or a word's start,
/// ignoring case and accents) in the title, tags or body, title matches first: use it for
/// names and exact terms. `meaning`: the notes closest in meaning to the query, with no word
/// needing to match: use it for a description in other words than the note's ("car repairs"
/// finds "the mechanic replaced the brakes"). `hybrid`: both fused, where some of the words
/// matching is enough: use it for a question. Returns IDs and titles only: use `fetch` to read
/// a note.
#[pkb_tool(collect = false, read_only, idempotent)]
pub async fn search(
    #[state] store: &Store,
    /// Words to look for, for example `deploy check`.
    #[arg(trim, min_len = 1, max_len = 200)]
    query: String,
    /// Only notes that carry all of these tags.
    #[arg(default, trim, max_items = 20, item_min_len = 1, item_max_len = 40)]
    tags: Vec<String>,
    /// The most results to return.
    #[arg(default = 10, min = 1, max = 50)]
    limit: u32,
    /// `words` (default), `meaning` or `hybrid`.
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
