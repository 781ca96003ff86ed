use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Looks something up.
#[pkb_tool]
async fn lookup(
    /// What to look for.
    #[arg(min = 1)]
    query: String,
) -> Result<Output, ToolError> {
    let _ = query;
    Ok(Output {})
}

fn main() {}
