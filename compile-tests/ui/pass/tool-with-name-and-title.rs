use pkb_core::{Registry, ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

/// Does nothing, under another name.
#[pkb_tool(name = "do-nothing", title = "Do nothing")]
async fn noop() -> Result<Output, ToolError> {
    Ok(Output {})
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let tool = registry.tool("do-nothing").unwrap();
    assert_eq!(tool.title, Some("Do nothing"));
    assert!(registry.tool("noop").is_none());
}
