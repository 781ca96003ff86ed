//! `quick_capture`: turn loose text into a saved note.

use rmcp::model::{PromptMessage, Role};

use crate::framework::completion::MAX_COMPLETIONS;
use crate::{Context, NotesContext, PromptError, pkb_prompt};

/// Turns a piece of text into a note: the model picks a concise title and 1 to 3 tags, then
/// saves it with the `write` tool.
#[pkb_prompt(
    collect = false,
    name = "quick_capture",
    title = "Quick capture",
    complete(tags = complete_tags)
)]
pub async fn quick_capture(
    /// The text to capture.
    #[arg(max_len = 10_000)]
    text: String,
    /// Tags to use, comma-separated (optional).
    #[arg(default)]
    tags: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    let tags: Vec<&str> = tags
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let tag_line = if tags.is_empty() {
        "Choose 1 to 3 short, lowercase tags.".to_string()
    } else {
        format!("Use these tags: {}.", tags.join(", "))
    };
    let message = format!(
        "Turn the following text into a note. Give it a concise title. {tag_line} \
         Then save it with the `write` tool, with overwrite=false.\n\n{text}"
    );
    Ok(vec![PromptMessage::new_text(Role::User, message)])
}

/// Existing tags starting with the last comma-separated part typed, each completing the
/// whole value (`deploy, re` -> `deploy, release`).
pub async fn complete_tags(ctx: &Context, typed: String) -> Vec<String> {
    let (done, partial) = match typed.rfind(',') {
        Some(comma) => (typed[..=comma].to_string() + " ", typed[comma + 1..].trim()),
        None => (String::new(), typed.trim()),
    };
    ctx.store()
        .tags_with_prefix(partial, MAX_COMPLETIONS + 1)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|tag| format!("{done}{tag}"))
        .collect()
}
