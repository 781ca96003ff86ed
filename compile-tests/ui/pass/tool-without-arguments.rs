use pkb_core::{Registry, ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Does nothing.
#[pkb_tool(read_only)]
async fn noop() -> Result<Output, ToolError> {
    Ok(Output {})
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    assert!(registry.tool("noop").unwrap().args.is_empty());
}
