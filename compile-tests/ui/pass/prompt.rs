use pkb_core::{Context, PromptError, Registry, pkb_prompt};
use rmcp::model::{PromptMessage, Role};

/// Asks for a summary of a text.
#[pkb_prompt(title = "Summarize", complete(style = complete_style))]
async fn summarize(
    /// The text to summarize.
    #[arg(max_len = 10_000)]
    text: String,
    /// How to write it (optional).
    #[arg(default)]
    style: String,
) -> Result<Vec<PromptMessage>, PromptError> {
    let message = format!("Summarize this {style}:\n\n{text}");
    Ok(vec![PromptMessage::new_text(Role::User, message)])
}

async fn complete_style(_ctx: &Context, prefix: String) -> Vec<String> {
    vec![prefix]
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    assert_eq!(registry.prompt("summarize").unwrap().args.len(), 2);
}
