use pkb_core::{McpServer, Registry, Stateless, ToolError, declarations, pkb_tool};

struct Counter;

/// Needs a counter.
#[pkb_tool(read_only)]
async fn count(#[state] counter: &Counter) -> Result<String, ToolError> {
    let _ = counter;
    Ok(String::new())
}

fn main() {
    let registry = Registry::new(declarations![count]).unwrap();
    let _server = McpServer::new(registry, Stateless::new("no-state", "1"));
}
