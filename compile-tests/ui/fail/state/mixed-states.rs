use pkb_core::{Declarations, ToolError, declarations, pkb_tool};

struct Counter;
struct Clock;

/// Needs a counter.
#[pkb_tool(read_only)]
async fn count(#[state] counter: &Counter) -> Result<String, ToolError> {
    let _ = counter;
    Ok(String::new())
}

/// Needs a clock.
#[pkb_tool(read_only)]
async fn tick(#[state] clock: &Clock) -> Result<String, ToolError> {
    let _ = clock;
    Ok(String::new())
}

fn main() {
    let _set: Declarations<Counter> = declarations![count, tick];
}
