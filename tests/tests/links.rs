//! Links between notes through a real MCP client on every transport, revision and backend:
//! `fetch` answers a note's links and backlinks, which follow every write, edit, delete and
//! restore, and words inside `[[...]]` stay searchable.

#[macro_use]
mod support;

use serde_json::{Map, Value, json};
use support::{Client, call, connect_memory, structured};

async fn write(client: &Client, title: &str, body: &str) {
    let saved = call(
        client,
        "write",
        json!({"title": title, "body": body, "overwrite": true}),
    )
    .await;
    structured(&saved);
}

async fn fetched(client: &Client, arguments: Value) -> Map<String, Value> {
    structured(&call(client, "fetch", arguments).await)
}

every_revision! {
#[tokio::test]
async fn fetch_answers_links_in_order_and_backlinks_by_id() {
    let client = connect_memory().await;
    write(&client, "Release plan", "Follow [[Deploy checklist|the checklist]], then \
        [[Meeting notes#Decisions]], [the todo](pkb://notes/todo), [[deploy-checklist]] again, \
        and [[Retro]] once it exists. Not `[[code]]`.").await;
    let plan = fetched(&client, json!({"id": "release-plan"})).await;
    assert_eq!(plan["links"], json!([
        {"target": "Deploy checklist", "id": "deploy-checklist", "title": "Deploy checklist"},
        {"target": "Meeting notes", "id": "meeting-notes", "title": "Meeting notes"},
        {"target": "todo", "id": "todo", "title": "Todo"},
        {"target": "Retro", "id": null, "title": null},
    ]));
    assert_eq!(plan["backlinks"], json!([]));
    write(&client, "Zeta", "also [[release plan]]").await;
    write(&client, "Alpha", "and [[Release Plan]] and [[Release plan#Top]]").await;
    let plan = fetched(&client, json!({"id": "release-plan"})).await;
    assert_eq!(plan["backlinks"], json!([
        {"id": "alpha", "title": "Alpha"},
        {"id": "zeta", "title": "Zeta"},
    ]), "sorted by id, each once");
    let checklist = fetched(&client, json!({"id": "deploy-checklist"})).await;
    assert_eq!(checklist["backlinks"], json!([{"id": "release-plan", "title": "Release plan"}]));

    // A link resolves once its note exists, and no longer once it is deleted.
    write(&client, "Retro", "lessons").await;
    let plan = fetched(&client, json!({"id": "release-plan"})).await;
    assert_eq!(plan["links"][3], json!({"target": "Retro", "id": "retro", "title": "Retro"}));
    call(&client, "delete", json!({"id": "retro"})).await;
    let plan = fetched(&client, json!({"id": "release-plan"})).await;
    assert_eq!(plan["links"][3]["id"], Value::Null);

    // An edit that drops a link drops the backlink; a version keeps its own links.
    call(&client, "edit", json!({"id": "zeta", "replace": {"old": "[[release plan]]", "new": "nothing"}})).await;
    let plan = fetched(&client, json!({"id": "release-plan"})).await;
    assert_eq!(plan["backlinks"], json!([{"id": "alpha", "title": "Alpha"}]));
    let old = fetched(&client, json!({"id": "zeta", "version": 1})).await;
    assert_eq!(old["links"], json!([{"target": "release plan", "id": "release-plan", "title": "Release plan"}]));
    assert_eq!(old["backlinks"], json!([]));
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn words_inside_links_stay_searchable() {
    let client = connect_memory().await;
    write(&client, "Weekly", "Check the [[Deploy checklist]] before the [[Quarterly roadmap|roadmap]].").await;
    for query in ["checklist", "quarterly", "roadmap"] {
        let found = structured(&call(&client, "search", json!({"query": query, "mode": "words"})).await);
        let ids: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert!(ids.contains(&"weekly"), "{query}: {ids:?}");
    }
    client.cancel().await.unwrap();
}
}
