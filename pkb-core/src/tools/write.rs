//! `write`: create a note, or replace one when asked.

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::{derive_id, normalize_tags};
use crate::store::{NoteDraft, PutMode, PutOutcome, Store};
use crate::{Context, ToolError, pkb_tool};

/// What `write` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// The note's ID, derived from the title.
    pub id: String,
    /// The note's title.
    pub title: String,
    /// True when a new note was created, false when one was replaced.
    pub created: bool,
}

/// Saves a note. Its ID is derived from the title ("Deploy checklist" -> `deploy-checklist`).
/// When a note with that ID exists, nothing changes and an error says so, unless
/// `overwrite` is true, which replaces it. Idempotent only when overwrite=false.
#[pkb_tool(collect = false, destructive, text = saved_text)]
pub async fn write(
    ctx: &Context,
    #[state] store: &Store,
    /// The title: one line, 1 to 120 characters.
    #[arg(trim, single_line, min_len = 1, max_len = 120)]
    title: String,
    /// The body, up to 10,000 characters.
    #[arg(max_len = 10_000)]
    body: String,
    /// Up to 20 tags of 1 to 40 characters; stored lowercased, without duplicates.
    #[arg(
        default,
        trim,
        single_line,
        max_items = 20,
        item_min_len = 1,
        item_max_len = 40
    )]
    tags: Vec<String>,
    /// Replace an existing note with the same ID.
    #[arg(default)]
    overwrite: bool,
) -> Result<WriteOutput, ToolError> {
    let draft = NoteDraft {
        id: derive_id(&title),
        title,
        tags: normalize_tags(tags),
        body,
    };
    let saved = save(ctx, store, draft, overwrite).await?;
    Ok(WriteOutput {
        id: saved.id,
        title: saved.title,
        created: saved.created,
    })
}

fn saved_text(output: &WriteOutput) -> String {
    format!("saved: {}", output.id)
}

/// A note that was saved.
pub struct Saved {
    /// Its ID.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Whether it is new.
    pub created: bool,
}

/// Saves `draft` as `write` does, answering a conflict with the contract's text.
pub async fn save(
    ctx: &Context,
    store: &Store,
    draft: NoteDraft,
    overwrite: bool,
) -> Result<Saved, ToolError> {
    let mode = if overwrite {
        PutMode::Replace
    } else {
        PutMode::CreateOnly
    };
    let id = draft.id.clone();
    put_and_announce(ctx, store, draft, mode)
        .await?
        .ok_or_else(|| ToolError::new(format!("note exists: {id}; pass overwrite=true to replace")))
}

/// Puts `draft` in `mode` and tells subscribed clients; `None` when `mode` left an existing
/// note alone. Shared by every tool that writes a note.
pub async fn put_and_announce(
    ctx: &Context,
    store: &Store,
    draft: NoteDraft,
    mode: PutMode,
) -> Result<Option<Saved>, ToolError> {
    let (note, created) = match store.put(draft, mode).await? {
        PutOutcome::Created(note) => (note, true),
        PutOutcome::Replaced(note) => (note, false),
        PutOutcome::Exists => return Ok(None),
    };
    crate::resources::announce_change(ctx, &note.id, created).await;
    Ok(Some(Saved {
        id: note.id,
        title: note.title,
        created,
    }))
}
