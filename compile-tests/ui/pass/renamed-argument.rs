use pkb_core::{Contents, Registry, ToolError, pkb_tool};

/// Opens a resource.
#[pkb_tool(read_only)]
async fn open(
    /// The resource's URI.
    #[arg(name = "resourceUri", max_len = 2_000)]
    resource_uri: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(resource_uri))
}

fn main() {
    let registry: Registry = Registry::collect().unwrap();
    let schema = &registry.tool_description("open").unwrap().input_schema;
    assert!(schema["properties"].get("resourceUri").is_some());
    assert!(schema["properties"].get("resource_uri").is_none());
    assert_eq!(registry.tool("open").unwrap().args[0].name, "resourceUri");
}
