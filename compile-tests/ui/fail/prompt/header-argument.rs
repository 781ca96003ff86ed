use pkb_core::{PromptError, pkb_prompt};
use rmcp::model::PromptMessage;

/// Drafts a note.
#[pkb_prompt]
async fn draft(
    /// The topic.
    #[arg(header = "Topic")]
    topic: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(rmcp::model::Role::User, topic)])
}

fn main() {}
