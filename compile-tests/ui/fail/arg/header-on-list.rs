use pkb_core::{Contents, ToolError, pkb_tool};

/// Lists servers.
#[pkb_tool(read_only)]
async fn servers(
    /// The regions: a list cannot travel in a header.
    #[arg(header = "Regions")]
    regions: Vec<String>,
    /// A ratio: numbers that are not integers cannot either.
    #[arg(header = "Ratio")]
    ratio: f64,
) -> Result<Contents, ToolError> {
    Ok(Contents::text(format!("{regions:?}{ratio}")))
}

fn main() {}
