use pkb_core::{PromptError, pkb_prompt};

/// Asks for a summary.
#[pkb_prompt]
async fn summarize(
    /// The text to summarize.
    text: String,
) -> Result<String, PromptError> {
    Ok(text)
}

fn main() {}
