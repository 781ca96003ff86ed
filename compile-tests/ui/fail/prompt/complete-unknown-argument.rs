use pkb_core::{Context, PromptError, pkb_prompt};
use rmcp::model::{PromptMessage, Role};

/// Asks for a summary.
#[pkb_prompt(complete(style = complete_style))]
async fn summarize(
    /// The text to summarize.
    text: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    Ok(vec![PromptMessage::new_text(Role::User, text)])
}

async fn complete_style(_ctx: &Context, prefix: String) -> Vec<String> {
    vec![prefix]
}

fn main() {}
