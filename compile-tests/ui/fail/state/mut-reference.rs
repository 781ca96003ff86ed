use pkb_core::{ToolError, pkb_tool};

struct Counter;

/// Takes the state mutably.
#[pkb_tool(read_only)]
async fn count(#[state] counter: &mut Counter) -> Result<String, ToolError> {
    let _ = counter;
    Ok(String::new())
}

fn main() {}
