use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Does nothing.
#[pkb_tool(collect = "no")]
async fn noop() -> Result<Output, ToolError> {
    Ok(Output {})
}

fn main() {}
