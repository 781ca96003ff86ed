//! `edit`: change part of a note (its title, tags, or one part of its body) without sending
//! it whole, as one new version.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::note_edit::{BodyChange, NoteEdit, TagChange};
use crate::store::{EditOutcome, Store};
use crate::tools::fetch::not_found;
use crate::tools::write::stale;
use crate::{Context, NotesContext, ToolError, pkb_tool};

/// What `edit` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EditOutput {
    /// The note's ID (it never changes).
    pub id: String,
    /// The note's title now.
    pub title: String,
    /// The note's version now.
    pub version: u64,
    /// When it was edited (RFC 3339, UTC).
    pub updated_at: String,
}

/// An exact text to replace.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// The exact, case-sensitive text to find.
    #[schemars(length(min = 1, max = 10_000))]
    pub old: String,
    /// What it becomes (may be empty, to remove it).
    #[schemars(length(max = 10_000))]
    pub new: String,
    /// Replace every occurrence; otherwise `old` must occur exactly once.
    #[serde(default)]
    pub all: bool,
}

/// The section under a heading, to replace.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SectionChange {
    /// The heading's text, without its `#`s, for example `Tasks` for `## Tasks`.
    #[schemars(length(min = 1, max = 200))]
    pub heading: String,
    /// The new lines under the heading, up to the next heading of the same or a higher level.
    #[schemars(length(max = 10_000))]
    pub content: String,
}

/// Changes part of a note, by its exact ID, as one new version (the earlier one stays in its
/// history): a new title (the ID stays), the tags (`tags`, or `add_tags` / `remove_tags`), and
/// at most one change of the body: `append`, `prepend`, `replace` an exact text (once, or
/// everywhere with `all`), or the `section` under a Markdown heading. With `expect_version`
/// nothing changes unless the note is still at that version. Cheaper than `write` for a small
/// change: the rest of the note is not sent.
#[pkb_tool(
    collect = false,
    destructive,
    text = edited_text,
    extend_schema = one_change_at_a_time
)]
#[allow(clippy::too_many_arguments)]
pub async fn edit(
    ctx: &Context,
    #[state] store: &Store,
    /// The note's ID, for example `deploy-checklist`.
    #[arg(trim, min_len = 1, max_len = 100)]
    id: String,
    /// A new title: one line, 1 to 120 characters.
    #[arg(default, trim, single_line, min_len = 1, max_len = 120)]
    title: Option<String>,
    /// The new tags, replacing all of them (at most 20).
    #[arg(
        default,
        trim,
        single_line,
        max_items = 20,
        item_min_len = 1,
        item_max_len = 40
    )]
    tags: Option<Vec<String>>,
    /// Tags to add; one already there is no error.
    #[arg(
        default,
        trim,
        single_line,
        max_items = 20,
        item_min_len = 1,
        item_max_len = 40
    )]
    add_tags: Option<Vec<String>>,
    /// Tags to remove; one not there is no error.
    #[arg(
        default,
        trim,
        single_line,
        max_items = 20,
        item_min_len = 1,
        item_max_len = 40
    )]
    remove_tags: Option<Vec<String>>,
    /// Text to add at the end of the body (on a line of its own).
    #[arg(default, min_len = 1, max_len = 10_000)]
    append: Option<String>,
    /// Text to add at the start of the body (on a line of its own).
    #[arg(default, min_len = 1, max_len = 10_000)]
    prepend: Option<String>,
    /// An exact text of the body to replace.
    #[arg(default)]
    replace: Option<Replacement>,
    /// The section under a heading to replace.
    #[arg(default)]
    section: Option<SectionChange>,
    /// Change the note only if it is at this version (as `fetch` gave it).
    #[arg(default, min = 1)]
    expect_version: Option<u64>,
) -> Result<EditOutput, ToolError> {
    let tags = match (tags, add_tags, remove_tags) {
        (Some(tags), _, _) => TagChange::Set(tags),
        (None, None, None) => TagChange::Keep,
        (None, add, remove) => TagChange::AddRemove {
            add: add.unwrap_or_default(),
            remove: remove.unwrap_or_default(),
        },
    };
    let body = match (append, prepend, replace, section) {
        (Some(text), ..) => Some(BodyChange::Append(text)),
        (_, Some(text), ..) => Some(BodyChange::Prepend(text)),
        (_, _, Some(Replacement { old, new, all }), _) => {
            Some(BodyChange::Replace { old, new, all })
        }
        (_, _, _, Some(SectionChange { heading, content })) => {
            Some(BodyChange::Section { heading, content })
        }
        _ => None,
    };
    let change = NoteEdit { title, tags, body };
    let store = store.changed_by(ctx.client_label());
    match store.edit(&id, &change, expect_version).await? {
        EditOutcome::Edited {
            note,
            title_changed,
        } => {
            crate::resources::announce_change(ctx, &note.id, title_changed).await;
            Ok(EditOutput {
                id: note.id,
                title: note.title,
                version: note.version,
                updated_at: note.updated_at,
            })
        }
        EditOutcome::NotFound => Err(not_found(&id)),
        EditOutcome::Stale { current } => {
            Err(stale(&id, current, expect_version.unwrap_or_default()))
        }
        EditOutcome::Refused(refusal) => Err(ToolError::new(refusal.message(&id))),
    }
}

fn edited_text(output: &EditOutput) -> String {
    format!("edited: {} (version {})", output.id, output.version)
}

/// The body changes, of which one at most may be given.
const BODY_CHANGES: [&str; 4] = ["append", "prepend", "replace", "section"];

/// The schema no value meets, as an object: a bare `false` is refused by clients that map
/// schemas onto a single-type dialect (the MCP Inspector's `--strict` check).
fn never() -> Value {
    json!({"not": {}})
}

/// The rules across `edit`'s arguments, in its input schema: at least one change, at most one
/// change of the body, and `tags` without `add_tags` or `remove_tags`.
fn one_change_at_a_time() -> Value {
    let changes = ["title", "tags", "add_tags", "remove_tags"]
        .into_iter()
        .chain(BODY_CHANGES);
    let mut excluded = serde_json::Map::new();
    excluded.insert(
        "tags".to_owned(),
        json!({"properties": {"add_tags": never(), "remove_tags": never()}}),
    );
    for change in BODY_CHANGES {
        let others: serde_json::Map<String, Value> = BODY_CHANGES
            .into_iter()
            .filter(|other| *other != change)
            .map(|other| (other.to_owned(), never()))
            .collect();
        excluded.insert(change.to_owned(), json!({ "properties": others }));
    }
    json!({
        "anyOf": changes.map(|change| json!({"required": [change]})).collect::<Vec<_>>(),
        "dependentSchemas": excluded,
    })
}
