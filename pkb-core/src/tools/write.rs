//! `write`: create a note, or replace one when asked.

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::{derive_id, normalize_tags};
use crate::store::{NoteDraft, PutMode, PutOutcome, Store};
use crate::tools::fetch::not_found;
use crate::{Context, NotesContext, ToolError, pkb_tool};

/// What `write` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// The note's ID, derived from the title.
    pub id: String,
    /// The note's title.
    pub title: String,
    /// True when a new note was created, false when one was replaced.
    pub created: bool,
    /// The note's version now: 1 when new, one more at every change.
    pub version: u64,
}

/// Saves a note. Its ID is derived from the title ("Deploy checklist" -> `deploy-checklist`).
/// When a note with that ID exists, nothing changes and an error says so, unless
/// `overwrite` is true, which replaces it (its earlier version stays in its history; with
/// `expect_version`, only if it is still at that version). Idempotent only when
/// overwrite=false. To change part of a note, `edit` it instead.
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
    /// With overwrite=true: replace the note only if it is at this version (as `fetch` gave
    /// it), so that a change made meanwhile is not lost.
    #[arg(default, min = 1)]
    expect_version: Option<u64>,
) -> Result<WriteOutput, ToolError> {
    let draft = NoteDraft {
        id: derive_id(&title),
        title,
        tags: normalize_tags(tags),
        body,
    };
    let mode = match (overwrite, expect_version) {
        (false, _) => PutMode::CreateOnly,
        (true, None) => PutMode::Replace,
        (true, Some(version)) => PutMode::ReplaceAtVersion(version),
    };
    let id = draft.id.clone();
    let saved = match put_and_announce(ctx, store, draft, mode).await? {
        Put::Saved(saved) => saved,
        Put::Exists => {
            return Err(ToolError::new(format!(
                "note exists: {id}; pass overwrite=true to replace"
            )));
        }
        Put::Stale { current } => {
            return Err(stale(&id, current, expect_version.unwrap_or_default()));
        }
        Put::Missing => return Err(not_found(&id)),
    };
    Ok(WriteOutput {
        id: saved.id,
        title: saved.title,
        created: saved.created,
        version: saved.version,
    })
}

fn saved_text(output: &WriteOutput) -> String {
    format!("saved: {}", output.id)
}

/// The contract's text for a note that is not at the version a call expected.
pub fn stale(id: &str, current: u64, expected: u64) -> ToolError {
    ToolError::new(format!(
        "note {id} is at version {current}, not {expected}; fetch it again"
    ))
}

/// A note that was saved.
pub struct Saved {
    /// Its ID.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Whether it is new.
    pub created: bool,
    /// Its version now.
    pub version: u64,
}

/// What a put of [`put_and_announce`] did.
pub enum Put {
    /// The note was saved.
    Saved(Saved),
    /// The mode left an existing note alone.
    Exists,
    /// The note is at another version than the mode named.
    Stale {
        /// The version it is at.
        current: u64,
    },
    /// The mode replaces only, and there is no such note.
    Missing,
}

/// Puts `draft` in `mode`, recorded as made by the calling client, and tells subscribed
/// clients. Shared by every tool that writes a note.
pub async fn put_and_announce(
    ctx: &Context,
    store: &Store,
    draft: NoteDraft,
    mode: PutMode,
) -> Result<Put, ToolError> {
    let store = store.changed_by(ctx.client_label());
    let (note, created) = match store.put(draft, mode).await? {
        PutOutcome::Created(note) => (note, true),
        PutOutcome::Replaced(note) => (note, false),
        PutOutcome::Exists => return Ok(Put::Exists),
        PutOutcome::Stale { current } => return Ok(Put::Stale { current }),
        PutOutcome::Missing => return Ok(Put::Missing),
    };
    crate::resources::announce_change(ctx, &note.id, created).await;
    Ok(Put::Saved(Saved {
        id: note.id,
        title: note.title,
        created,
        version: note.version,
    }))
}
