use pkb_core::{ToolError, pkb_tool};

struct Counter;

/// Gives `#[state]` an argument.
#[pkb_tool(read_only)]
async fn count(#[state(shared)] counter: &Counter) -> Result<String, ToolError> {
    let _ = counter;
    Ok(String::new())
}

fn main() {}
