use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Looks something up.
#[pkb_tool]
async fn lookup(
    /// What to look for, and where.
    (query, place): (String, String),
) -> Result<Output, ToolError> {
    let _ = (query, place);
    Ok(Output {})
}

fn main() {}
