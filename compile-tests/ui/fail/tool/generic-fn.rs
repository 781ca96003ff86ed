use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Looks something up.
#[pkb_tool]
async fn lookup<T: Into<String>>(
    /// What to look for.
    query: T,
) -> Result<Output, ToolError> {
    let _ = query.into();
    Ok(Output {})
}

fn main() {}
