//! A small MCP server of its own: PKB's tools plus `word_count` from this crate, on stdio.
//!
//! `cargo run -p pkb-examples --example word_count -- --memory` (or `-- path/to/store.db`).

use std::sync::Arc;

use pkb_core::store::Store;
use pkb_core::transport::{InlineToolCalls, LineTransport};
use pkb_core::{McpServer, NotesApp, Registry};
use rmcp::ServiceExt;

// Linking the library registers `word_count`.
use pkb_examples as _;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = match std::env::args().nth(1).as_deref() {
        None | Some("--memory") => Store::open_in_memory(true)?,
        Some(path) => Store::open(path.as_ref(), true)?,
    };
    let registry = Arc::new(Registry::collect()?);
    let server = McpServer::new(registry, NotesApp::Shared(store));
    // Tool calls answered in the transport, once the client has initialized, skip a task and a
    // channel hop each in rmcp's service loop.
    let inline_tool_calls = InlineToolCalls::new(server.clone());
    let transport = LineTransport::new(tokio::io::stdin(), tokio::io::stdout())
        .with_inline_tool_calls(inline_tool_calls);
    server.serve(transport).await?.waiting().await?;
    Ok(())
}
