use pkb_core::{Contents, ToolError, pkb_tool};

/// Lists a region's servers.
#[pkb_tool(read_only)]
async fn servers(
    /// The region.
    #[arg(header = "Region")]
    region: String,
    /// A header name with a space.
    #[arg(header = "Zone Name")]
    zone: String,
    /// An empty header name.
    #[arg(header = "")]
    rack: String,
    /// A header taken already, in another case.
    #[arg(header = "region")]
    other: String,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(format!("{region}{zone}{rack}{other}")))
}

fn main() {}
