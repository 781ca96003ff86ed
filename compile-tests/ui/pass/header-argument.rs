use pkb_core::{Contents, Registry, ToolError, pkb_tool};

/// Lists a region's servers.
#[pkb_tool(read_only)]
async fn servers(
    /// The region.
    #[arg(header = "Region", max_len = 100)]
    region: String,
    /// How many to list.
    #[arg(header = "Limit", default = 10)]
    limit: u32,
    /// Whether to list stopped ones.
    #[arg(header = "X-Stopped", default)]
    stopped: bool,
    /// Not in a header.
    #[arg(default)]
    note: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(format!("{region}{limit}{stopped}{note}")))
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let schema = &registry.tool_description("servers").unwrap().input_schema;
    let properties = &schema["properties"];
    assert_eq!(properties["region"]["x-mcp-header"], "Region");
    assert_eq!(properties["limit"]["x-mcp-header"], "Limit");
    assert_eq!(properties["stopped"]["x-mcp-header"], "X-Stopped");
    assert!(properties["note"].get("x-mcp-header").is_none());
}
