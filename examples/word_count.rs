//! A small MCP server of its own on stdio: `word_count` from this crate, with PKB's `search`
//! and `fetch` to find the notes it counts, and nothing else.
//!
//! `cargo run -p pkb-examples --example word_count -- --memory` (or `-- path/to/store.db`).

use pkb_core::store::sqlite;
use pkb_core::transport::{self, stdio};
use pkb_core::{McpServer, NotesApp, Registry, declarations};

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
    // Until stdin ends: no other reason to stop.
    let stop = std::future::pending();
    let (input, output) = transport::standard_streams();
    stdio::serve(&server, input, output, stop).await?;
    Ok(())
}
