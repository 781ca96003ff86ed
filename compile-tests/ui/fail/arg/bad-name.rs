use pkb_core::{Contents, ToolError, pkb_tool};

/// Opens a resource.
#[pkb_tool(read_only)]
async fn open(
    /// The resource's URI.
    #[arg(name = "resource uri")]
    resource_uri: String,
    /// Another argument under a name already taken.
    #[arg(name = "resource_uri")]
    other: String,
    /// A third, renamed to the first's given name.
    #[arg(name = "kind")]
    kind_of: String,
    /// A fourth, whose own name is now taken.
    kind: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(format!("{resource_uri}{other}{kind_of}{kind}")))
}

fn main() {}
