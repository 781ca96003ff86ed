use pkb_core::{Context, ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Does nothing.
#[pkb_tool]
async fn noop(ctx: &mut Context) -> Result<Output, ToolError> {
    let _ = ctx;
    Ok(Output {})
}

fn main() {}
