//! `summarize` and `summarize_and_save`.

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::{BODY_MAX_CHARS, ID_MAX_CHARS, Note, TAGS_MAX, TITLE_MAX_CHARS, normalize_tags};
use crate::store::{NoteDraft, PutMode, Store};
use crate::summary::{SummarySource, summarize as summarize_note};
use crate::tools::fetch::not_found;
use crate::tools::write::{Put, put_and_announce};
use crate::{Context, ToolError, pkb_tool};

/// What `summarize` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummarizeOutput {
    /// The note's ID.
    pub id: String,
    /// The summary.
    pub summary: String,
    /// `sampling` when the client's model wrote it, `extractive` for the note's first sentences.
    pub source: SummarySource,
}

/// Summarizes one note. Asks the client's model through sampling when the client supports it;
/// otherwise returns the note's first sentences (source `extractive`).
#[pkb_tool(collect = false, read_only)]
pub async fn summarize(
    ctx: &Context,
    #[state] store: &Store,
    /// The ID of the note to summarize.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
) -> Result<SummarizeOutput, ToolError> {
    let note = source_note(store, &id).await?;
    let (summary, source) = summary_of(ctx, &note).await?;
    Ok(SummarizeOutput {
        id,
        summary,
        source,
    })
}

/// What `summarize_and_save` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SummarizeAndSaveOutput {
    /// The ID of the saved summary note, `<id>-summary`.
    pub id: String,
    /// `sampling` or `extractive`, as for `summarize`.
    pub source: SummarySource,
}

/// Summarizes one note as `summarize` does, then saves the summary as the note
/// `<id>-summary` (title "Summary of <title>", the source's tags plus `summary`). This replaces
/// an earlier summary of the same note. When summarizing fails, nothing is saved. A note of
/// that ID without the `summary` tag was not written by this tool and is never replaced.
#[pkb_tool(collect = false, destructive, text = saved_summary_text)]
pub async fn summarize_and_save(
    ctx: &Context,
    #[state] store: &Store,
    /// The ID of the note to summarize.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
) -> Result<SummarizeAndSaveOutput, ToolError> {
    // A missing source is reported first, as `fetch` reports it: no other note is named.
    let note = source_note(store, &id).await?;
    // Refused before the client's model is asked, when it can be seen already; the write
    // itself checks again.
    let summary_note_id = summary_id(&note.id)?;
    if let Some(existing) = store.get(&summary_note_id).await?
        && !existing.tags.iter().any(|t| t == SUMMARY_TAG)
    {
        return Err(not_a_summary(&summary_note_id));
    }
    let (summary, source) = summary_of(ctx, &note).await?;
    let mut tags = note.tags.clone();
    tags.truncate(TAGS_MAX - 1);
    tags.push(SUMMARY_TAG.into());
    let draft = NoteDraft {
        id: summary_note_id.clone(),
        title: summary_title(&note.title),
        tags: normalize_tags(tags),
        body: summary.chars().take(BODY_MAX_CHARS).collect(),
    };
    let Put::Saved(saved) =
        put_and_announce(ctx, store, draft, PutMode::ReplaceTagged(SUMMARY_TAG)).await?
    else {
        return Err(not_a_summary(&summary_note_id));
    };
    Ok(SummarizeAndSaveOutput {
        id: saved.id,
        source,
    })
}

/// The tag every summary note carries, by which an earlier summary is known.
const SUMMARY_TAG: &str = "summary";

fn not_a_summary(id: &str) -> ToolError {
    ToolError::new(format!(
        "note exists: {id}; it has no \"{SUMMARY_TAG}\" tag, so it is not a summary and is left alone"
    ))
}

fn saved_summary_text(output: &SummarizeAndSaveOutput) -> String {
    format!("saved: {}", output.id)
}

/// `Summary of <title>`, cut to the title limit. Cut at the character rather than at a word: a
/// long title with no space in reach would otherwise lose all of itself.
fn summary_title(title: &str) -> String {
    let full = format!("Summary of {title}");
    let cut: String = full.chars().take(TITLE_MAX_CHARS).collect();
    cut.trim_end().to_string()
}

/// `<id>-summary`, or an error when that passes the ID limit. Shortening the source ID instead
/// would give two long IDs one summary, and could give a summary its source's own ID.
fn summary_id(id: &str) -> Result<String, ToolError> {
    let summary = format!("{id}-summary");
    if summary.chars().count() > ID_MAX_CHARS {
        return Err(ToolError::new(format!(
            "cannot save a summary of {id}: its ID, {summary}, would be longer than \
             {ID_MAX_CHARS} characters"
        )));
    }
    Ok(summary)
}

/// The note `id`, or the contract's not-found error.
async fn source_note(store: &Store, id: &str) -> Result<Note, ToolError> {
    store.get(id).await?.ok_or_else(|| not_found(id))
}

/// A summary of `note` by the client's model, or the extractive one.
async fn summary_of(ctx: &Context, note: &Note) -> Result<(String, SummarySource), ToolError> {
    summarize_note(ctx, note)
        .await
        .map_err(|reason| ToolError::new(format!("summarize failed: {reason}")))
}

#[cfg(test)]
mod tests {
    use super::{summary_id, summary_title};

    #[test]
    fn summary_ids_stay_within_the_limit() {
        assert_eq!(summary_id("todo").unwrap(), "todo-summary");
        let longest = "a".repeat(92);
        assert_eq!(summary_id(&longest).unwrap().chars().count(), 100);
        let error = summary_id(&"a".repeat(93)).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("would be longer than 100 characters"),
            "{error}"
        );
    }

    #[test]
    fn summary_titles_are_cut_to_the_limit_at_a_character() {
        assert_eq!(summary_title("Todo"), "Summary of Todo");
        let unbroken = "q".repeat(120);
        assert_eq!(
            summary_title(&unbroken),
            format!("Summary of {}", "q".repeat(109))
        );
        // No trailing space where the cut falls right after one.
        let spaced = format!("{} tail", "w".repeat(108));
        assert_eq!(
            summary_title(&spaced),
            format!("Summary of {}", "w".repeat(108))
        );
    }
}
