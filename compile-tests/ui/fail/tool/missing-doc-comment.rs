use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

#[pkb_tool]
async fn noop() -> Result<Output, ToolError> {
    Ok(Output {})
}

fn main() {}
