use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Lists notes.
#[pkb_tool]
async fn list(
    /// The most notes to return.
    #[arg(single_line)]
    limit: u32,
) -> Result<Output, ToolError> {
    let _ = limit;
    Ok(Output {})
}

fn main() {}
