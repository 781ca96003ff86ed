//! Search by meaning and hybrid search through a real MCP client, on every transport,
//! revision and backend, with the encoder bundled in the binary.

#[macro_use]
mod support;

use serde_json::{Value, json};
use support::{Client, assert_error, call, connect_memory, structured};

async fn ids(client: &Client, arguments: Value) -> Vec<String> {
    let found = structured(&call(client, "search", arguments).await);
    found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The results once the server's background indexer has read the notes (it starts at the
/// first search by meaning).
async fn settled(client: &Client, arguments: Value, first: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = ids(client, arguments.clone()).await;
        if found.first().map(String::as_str) == Some(first) || std::time::Instant::now() > deadline
        {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

every_revision! {
#[tokio::test]
async fn meaning_finds_a_paraphrase_and_hybrid_fuses_both() {
    let client = connect_memory().await;
    for (title, body, tags) in [
        ("Fixing the car", "The mechanic replaced the engine's timing belt and the brakes.", json!(["garage"])),
        ("Grocery list", "Milk, eggs, bread and apples for the week.", json!(["home"])),
    ] {
        structured(&call(&client, "write", json!({"title": title, "body": body, "tags": tags})).await);
    }
    assert!(ids(&client, json!({"query": "automobile repair", "mode": "words"})).await.is_empty(), "no word matches");
    let found = settled(&client, json!({"query": "automobile repair", "mode": "meaning"}), "fixing-the-car").await;
    assert_eq!(found.first().map(String::as_str), Some("fixing-the-car"), "{found:?}");
    let found = settled(&client, json!({"query": "food shopping", "mode": "meaning"}), "grocery-list").await;
    assert_eq!(found.first().map(String::as_str), Some("grocery-list"), "{found:?}");
    let hybrid = ids(&client, json!({"query": "brakes shopping", "mode": "hybrid"})).await;
    assert!(hybrid.contains(&"fixing-the-car".to_owned()) && hybrid.contains(&"grocery-list".to_owned()), "{hybrid:?}");
    assert_eq!(ids(&client, json!({"query": "brakes shopping"})).await, hybrid, "a search without mode is hybrid");
    let found = ids(&client, json!({"query": "automobile repair"})).await;
    assert_eq!(found.first().map(String::as_str), Some("fixing-the-car"), "the default finds a paraphrase: {found:?}");
    let tagged = ids(&client, json!({"query": "automobile repair", "mode": "meaning", "tags": ["home"]})).await;
    assert_eq!(tagged, ["grocery-list"]);
    let limited = ids(&client, json!({"query": "anything at all", "mode": "meaning", "limit": 1})).await;
    assert_eq!(limited.len(), 1);
    assert_error(
        &call(&client, "search", json!({"query": "x", "mode": "vibes"})).await,
        "invalid arguments: mode: must be one of \"words\", \"meaning\", \"hybrid\"",
    );
    client.cancel().await.unwrap();
}
}
