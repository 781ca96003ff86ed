//! A handler that panics gives an `isError` result; the server keeps serving. The tool below
//! exists only in this test binary, so this is a test-only server.

use pkb_core::store::Store;
use pkb_core::store::sqlite;
use pkb_core::{Context, Declarations, Registry, ToolError, pkb_tool};
use schemars::JsonSchema;
use serde::Serialize;

/// Output of the test-only tool.
#[derive(Serialize, JsonSchema)]
pub struct Nothing {}

/// Panics on purpose, to prove a panic never reaches the protocol.
#[pkb_tool(read_only)]
pub async fn explode(
    /// When true, the handler panics.
    #[arg(default)]
    really: bool,
) -> Result<Nothing, ToolError> {
    assert!(!really, "deliberate panic in a test-only tool");
    Ok(Nothing {})
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let registry: Registry<Store> = Registry::new(Declarations::collected()).unwrap();
    let ctx = Context::detached(sqlite::open_in_memory(true).unwrap());
    let arguments = serde_json::json!({"really": true}).as_object().cloned();
    let result = registry
        .call_tool(ctx.clone(), "explode", arguments)
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(
        text,
        "internal error: the `explode` tool failed unexpectedly"
    );
    // The next call is served normally.
    let fine = registry
        .call_tool(ctx, "explode", None)
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    assert_ne!(fine.is_error, Some(true));
}

/// Calls the panicking tool, then `fetch`, through a real client over stdio's transport.
#[tokio::test]
async fn a_server_survives_a_panicking_tool() {
    use pkb_core::transport::stdio;
    use pkb_core::{Declarations, McpServer, NotesApp};
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;

    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    // The test's own tool, collected, beside PKB's, named.
    let declarations = Declarations::collected() + pkb_core::notes_declarations();
    let server = McpServer::new(
        Registry::new(declarations).unwrap(),
        NotesApp::Shared(sqlite::open_in_memory(true).unwrap()),
    );
    tokio::spawn(async move {
        let stop = std::future::pending();
        stdio::serve(&server, server_read, server_write, stop).await
    });
    let client = ().serve(tokio::io::split(client_side)).await.unwrap();
    let mut boom = CallToolRequestParams::new("explode");
    boom.arguments = serde_json::json!({"really": true}).as_object().cloned();
    let result = client.call_tool(boom).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let mut fetch = CallToolRequestParams::new("fetch");
    fetch.arguments = serde_json::json!({"id": "todo"}).as_object().cloned();
    let fetched = client.call_tool(fetch).await.unwrap();
    assert_eq!(fetched.structured_content.unwrap()["note"]["id"], "todo");
    client.cancel().await.unwrap();
}
