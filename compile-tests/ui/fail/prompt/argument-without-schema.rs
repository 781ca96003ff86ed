use pkb_core::{PromptError, pkb_prompt};
use rmcp::model::PromptMessage;

struct Style;

/// Asks for a summary.
#[pkb_prompt]
async fn summarize(
    /// How to write it.
    style: Style,
) -> Result<Vec<PromptMessage>, PromptError> {
    let _ = style;
    Ok(Vec::new())
}

fn main() {}
