use pkb_core::{PromptError, pkb_prompt};
use rmcp::model::{PromptMessage, Role};

/// Asks for a summary.
#[pkb_prompt]
async fn summarize(
    /// The most words to use.
    words: u32,
) -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(
        Role::User,
        format!("Summarize in {words} words."),
    )])
}

fn main() {}
