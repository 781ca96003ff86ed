use pkb_core::{ToolError, pkb_tool};

struct Counter;

/// Takes the state twice.
#[pkb_tool(read_only)]
async fn count(#[state] a: &Counter, #[state] b: &Counter) -> Result<String, ToolError> {
    let _ = (a, b);
    Ok(String::new())
}

fn main() {}
