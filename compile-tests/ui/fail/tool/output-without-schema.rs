use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize)]
struct Output {}

/// Does nothing.
#[pkb_tool]
async fn noop() -> Result<Output, ToolError> {
    Ok(Output {})
}

fn main() {}
