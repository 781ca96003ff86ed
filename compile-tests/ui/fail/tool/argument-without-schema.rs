use pkb_core::{ToolError, pkb_tool};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Output {}

struct Filter {
    tag: String,
}

/// Looks something up.
#[pkb_tool]
async fn lookup(
    /// What to keep.
    filter: Filter,
) -> Result<Output, ToolError> {
    let _ = filter.tag;
    Ok(Output {})
}

fn main() {}
