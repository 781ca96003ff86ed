use pkb_core::{ToolError, pkb_tool};

struct Counter;

/// Takes the state by value.
#[pkb_tool(read_only)]
async fn count(#[state] counter: Counter) -> Result<String, ToolError> {
    let _ = counter;
    Ok(String::new())
}

fn main() {}
