//! A handler that panics gives an `isError` result; the registry keeps serving.

use pkb_core::store::Store;
use pkb_core::{Context, Registry, ToolError, pkb_tool};
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
    let registry = Registry::collect().unwrap();
    let ctx = Context::detached(Store::open_in_memory(true).unwrap());
    let arguments = serde_json::json!({"really": true}).as_object().cloned();
    let result = registry
        .call_tool(ctx.clone(), "explode", arguments)
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].clone();
    assert_eq!(
        text,
        "internal error: the `explode` tool failed unexpectedly"
    );
    // The next call is served normally.
    let fine = registry.call_tool(ctx, "explode", None).await.unwrap();
    assert_ne!(fine.is_error, Some(true));
}
