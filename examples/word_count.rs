//! A small MCP server of its own on stdio: `word_count` from this crate, with PKB's `search`
//! and `fetch` to find the notes it counts, and nothing else.
//!
//! `cargo run -p pkb-examples --example word_count -- --memory` (or `-- path/to/store.db`).

use pkb_core::store::sqlite;
use pkb_core::transport::{InlineToolCalls, LineTransport};
use pkb_core::{McpServer, NotesApp, Registry, declarations};
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = match std::env::args().nth(1).as_deref() {
        None | Some("--memory") => sqlite::open_in_memory(true)?,
        Some(path) => sqlite::open(path.as_ref(), true)?,
    };
    // Exactly the tools named here: PKB's own are served only when asked for.
    let tools = declarations![
        pkb_examples::word_count,
        pkb_core::tools::search::search,
        pkb_core::tools::fetch::fetch,
    ];
    let registry = Registry::new(tools)?;
    let server = McpServer::new(registry, NotesApp::Shared(store));
    // Tool calls answered in the transport, once the client has initialized, skip a task and a
    // channel hop each in rmcp's service loop.
    let inline_tool_calls = InlineToolCalls::new(server.clone());
    let transport = LineTransport::new(tokio::io::stdin(), tokio::io::stdout())
        .with_inline_tool_calls(inline_tool_calls);
    server.serve(transport).await?.waiting().await?;
    Ok(())
}
