use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Looks something up.
#[pkb_tool]
async fn lookup(
    /// What to look for.
    #[arg(max_len = 100, max_len = 200)]
    query: String,
) -> Result<Output, ToolError> {
    let _ = query;
    Ok(Output {})
}

fn main() {}
