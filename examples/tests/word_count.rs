//! The example tool is collected by linking (PKB's own tools are not), validated by its
//! declaration, and answers.

use pkb_core::store::Store;
use pkb_core::store::sqlite;
use pkb_core::{Context, Registry};
use serde_json::json;

// Linking the example crate is what registers its tool.
use pkb_examples as _;

fn arguments(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

#[tokio::test]
async fn linking_collects_word_count_and_none_of_pkbs_tools() {
    let registry: Registry<Store> = Registry::collect().unwrap();
    let names: Vec<&str> = registry.tools().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["word_count"]);
    assert_eq!(registry.prompts().count(), 0);
    assert_eq!(registry.resource_templates().count(), 0);
    let tool = registry.tool_description("word_count").unwrap();
    assert_eq!(tool.title.as_deref(), Some("Word count"));
    assert_eq!(tool.input_schema["properties"]["id"]["maxLength"], 100);
    assert_eq!(
        tool.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
}

#[tokio::test]
async fn word_count_counts_and_validates() {
    let registry: Registry<Store> = Registry::collect().unwrap();
    let ctx = Context::detached(sqlite::open_in_memory(true).unwrap());
    let result = registry
        .call_tool(
            ctx.clone(),
            "word_count",
            arguments(json!({"id": " deploy-checklist "})),
        )
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    assert_eq!(
        result.structured_content,
        Some(json!({"id": "deploy-checklist", "words": 10, "characters": 55}))
    );
    let invalid = registry
        .call_tool(ctx.clone(), "word_count", arguments(json!({"id": ""})))
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    assert_eq!(invalid.is_error, Some(true));
    let missing = registry
        .call_tool(ctx, "word_count", arguments(json!({"id": "nope"})))
        .await
        .expect("the tool exists")
        .expect("the call is not refused");
    assert_eq!(missing.is_error, Some(true));
}
