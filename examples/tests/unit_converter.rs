//! The framework-only example, driven over stdio by rmcp's client: it serves its two tools and
//! nothing of PKB's, validates them by their declarations, and converts.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

mod support;

async fn call(
    client: &RunningService<rmcp::RoleClient, ()>,
    tool: &str,
    arguments: Value,
) -> (bool, Value) {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = arguments.as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    let failed = result.is_error == Some(true);
    let answer = match result.structured_content {
        Some(structured) => structured,
        None => serde_json::to_value(&result.content).unwrap()[0]["text"].clone(),
    };
    (failed, answer)
}

#[tokio::test]
async fn the_unit_converter_serves_its_own_tools_only() {
    let command = tokio::process::Command::new(support::example_binary("unit_converter"));
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "unit-converter");
    assert!(info.capabilities.resources.is_none() && info.capabilities.prompts.is_none());
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<_> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(names, ["convert", "list_units"]);

    let (failed, answer) = call(
        &client,
        "convert",
        json!({"value": 5, "from": "km", "to": "m"}),
    )
    .await;
    assert!(!failed);
    assert_eq!(
        answer,
        json!({"value": 5000.0, "unit": "m", "quantity": "length"})
    );
    let (_, boiling) = call(
        &client,
        "convert",
        json!({"value": 100, "from": "C", "to": "F"}),
    )
    .await;
    assert!(
        (boiling["value"].as_f64().unwrap() - 212.0).abs() < 1e-9,
        "{boiling}"
    );

    let (failed, answer) = call(
        &client,
        "convert",
        json!({"value": 1, "from": "kg", "to": "m"}),
    )
    .await;
    assert!(failed);
    assert_eq!(answer, "cannot convert Mass (kg) to Length (m)");
    let (failed, answer) = call(
        &client,
        "convert",
        json!({"value": 1, "from": "parsec", "to": "m"}),
    )
    .await;
    assert!(failed);
    assert!(
        answer
            .as_str()
            .unwrap()
            .starts_with("unknown unit `parsec`; known units: mm, cm, m"),
        "{answer}"
    );
    let (failed, answer) = call(
        &client,
        "convert",
        json!({"value": 1e13, "from": "", "to": "m", "extra": 1}),
    )
    .await;
    assert!(failed);
    assert_eq!(
        answer,
        "invalid arguments: value: must be at most 1000000000000; from: must be at least 1 character; extra: unknown field"
    );

    let (failed, answer) = call(&client, "list_units", json!({"quantity": "mass"})).await;
    assert!(!failed);
    assert_eq!(answer, json!({"units": ["g", "kg", "oz", "lb"]}));
    // PKB's tools are linked into this binary's crate, and still not served.
    let mut fetch = CallToolRequestParams::new("fetch");
    fetch.arguments = json!({"id": "todo"}).as_object().cloned();
    assert!(
        client.call_tool(fetch).await.is_err(),
        "an unknown tool is a protocol error"
    );
    client.cancel().await.unwrap();
}
