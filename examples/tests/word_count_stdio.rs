//! The example's own server, driven over stdio by rmcp's client like any MCP client would.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

mod support;

#[tokio::test]
async fn the_example_server_serves_word_count_over_stdio() {
    let mut command = tokio::process::Command::new(support::example_binary("word_count"));
    command.arg("--memory");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["fetch", "search", "word_count"],
        "exactly the tools it names"
    );
    let mut params = CallToolRequestParams::new("word_count");
    params.arguments = json!({"id": "deploy-checklist"}).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    assert_eq!(result.structured_content.unwrap()["words"], 10);
    let mut params = CallToolRequestParams::new("word_count");
    params.arguments = json!({"id": "", "x": 1}).as_object().cloned();
    let invalid = client.call_tool(params).await.unwrap();
    assert_eq!(invalid.is_error, Some(true));
    let text = serde_json::to_value(&invalid.content).unwrap()[0]["text"].clone();
    assert_eq!(
        text,
        "invalid arguments: id: must be at least 1 character; x: unknown field"
    );
    client.cancel().await.unwrap();
}
