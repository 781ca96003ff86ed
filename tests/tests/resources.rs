//! Resources, subscriptions, the prompt and completions through a real MCP client.

#![allow(deprecated)] // subscribe is deprecated only for the stateless 2026-07-28 revision

#[macro_use]
mod support;

use std::time::Duration;

use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, PaginatedRequestParams,
    ReadResourceRequestParams, Reference, ResourceContents, SubscribeRequestParams,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use support::{RecordingClient, Sampling, call, connect_memory, connect_with, structured};

async fn read(
    client: &support::Client,
    uri: &str,
) -> Result<(String, Option<String>), ServiceError> {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await?;
    match &result.contents[0] {
        ResourceContents::TextResourceContents {
            text,
            mime_type,
            uri: got,
            ..
        } => {
            assert_eq!(got, uri);
            Ok((text.clone(), mime_type.clone()))
        }
        other => panic!("not text: {other:?}"),
    }
}

every_revision! {
#[tokio::test]
async fn notes_index_is_json_sorted_by_id() {
    let client = connect_memory().await;
    let (text, mime) = read(&client, "pkb://notes").await.unwrap();
    assert_eq!(mime.as_deref(), Some("application/json"));
    let index: Value = serde_json::from_str(&text).unwrap();
    let ids: Vec<&str> = index["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["deploy-checklist", "meeting-notes", "todo"]);
    let first = &index["notes"][0];
    assert_eq!(first["title"], "Deploy checklist");
    assert_eq!(first["tags"], json!(["deploy", "release"]));
    assert!(first["updated_at"].is_string());
    assert!(first.get("body").is_none());
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn a_note_reads_as_markdown() {
    let client = connect_memory().await;
    let (text, mime) = read(&client, "pkb://notes/deploy-checklist").await.unwrap();
    assert_eq!(mime.as_deref(), Some("text/markdown"));
    assert_eq!(
        text,
        "# Deploy checklist\n\nTags: deploy, release\n\nRun tests, build the app, then verify the health check."
    );
    call(
        &client,
        "write",
        json!({"title": "Untagged", "body": "plain"}),
    )
    .await;
    let (text, _) = read(&client, "pkb://notes/untagged").await.unwrap();
    assert_eq!(text, "# Untagged\n\nplain");
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn unknown_uris_get_32002_with_the_uri() {
    let client = connect_memory().await;
    for uri in ["pkb://notes/missing", "pkb://other", "file:///etc/passwd"] {
        let Err(ServiceError::McpError(error)) = read(&client, uri).await else {
            panic!("{uri} read")
        };
        assert_eq!(error.code.0, support::resource_not_found_code(), "{uri}");
        assert_eq!(error.data, Some(json!({"uri": uri})));
    }
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn resources_list_pages_through_every_note() {
    let client = connect_memory().await;
    for i in 0..150 {
        call(
            &client,
            "write",
            json!({"title": format!("Bulk note {i:03}"), "body": "b"}),
        )
        .await;
    }
    let mut cursor = None;
    let mut uris = Vec::new();
    let mut pages = 0;
    loop {
        let params = PaginatedRequestParams::default().with_cursor(cursor.clone());
        let page = client.list_resources(Some(params)).await.unwrap();
        assert!(page.resources.len() <= 100);
        pages += 1;
        uris.extend(page.resources.iter().map(|r| r.uri.clone()));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(pages, 2);
    assert_eq!(uris.len(), 1 + 153);
    assert_eq!(uris[0], "pkb://notes");
    let notes = &uris[1..];
    assert!(
        notes.windows(2).all(|w| w[0] < w[1]),
        "sorted, no duplicates"
    );
    let first = client.list_resources(None).await.unwrap();
    let bulk = first
        .resources
        .iter()
        .find(|r| r.uri == "pkb://notes/bulk-note-000")
        .unwrap();
    assert_eq!(bulk.name, "bulk-note-000");
    assert_eq!(bulk.title.as_deref(), Some("Bulk note 000"));
    assert_eq!(bulk.mime_type.as_deref(), Some("text/markdown"));

    let bad = PaginatedRequestParams::default().with_cursor(Some("not-a-cursor".into()));
    let Err(ServiceError::McpError(error)) = client.list_resources(Some(bad)).await else {
        panic!()
    };
    assert_eq!(error.code.0, -32602);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn templates_are_listed() {
    let client = connect_memory().await;
    let templates = client.list_resource_templates(None).await.unwrap();
    let listed: Vec<(&str, Option<&str>)> = templates
        .resource_templates
        .iter()
        .map(|t| (t.uri_template.as_str(), t.mime_type.as_deref()))
        .collect();
    assert_eq!(
        listed,
        [
            ("pkb://notes/{id}", Some("text/markdown")),
            ("pkb://notes/{id}/history", Some("application/json")),
        ]
    );
    client.cancel().await.unwrap();
}
}

/// Waits for `check`; the bound is generous because a loaded 2-core CI machine once took
/// more than 2 s to deliver a notification here.
async fn eventually(check: impl Fn() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not met within 10 s");
}

every_revision! {
#[tokio::test]
async fn subscribers_hear_of_updates_and_creations() {
    let handler = RecordingClient::new(Sampling::Unsupported);
    let client = connect_with(handler.clone(), &["--memory"]).await;
    let _watch = support::watch(&client, &handler, &["pkb://notes/todo"]).await;
    call(
        &client,
        "write",
        json!({"title": "Todo", "body": "new", "overwrite": true}),
    )
    .await;
    eventually(|| {
        handler
            .updated
            .lock()
            .unwrap()
            .contains(&"pkb://notes/todo".to_string())
    })
    .await;
    assert_eq!(
        *handler.list_changed.lock().unwrap(),
        0,
        "a replacement creates nothing"
    );

    call(&client, "write", json!({"title": "Brand new", "body": ""})).await;
    eventually(|| *handler.list_changed.lock().unwrap() == 1).await;
    assert!(
        !handler
            .updated
            .lock()
            .unwrap()
            .iter()
            .any(|u| u.ends_with("brand-new")),
        "not subscribed"
    );

    if support::current_revision() == support::Revision::Sessions {
        let Err(ServiceError::McpError(error)) = client
            .subscribe(SubscribeRequestParams::new("nope://x"))
            .await
        else {
            panic!()
        };
        assert_eq!(error.code.0, -32002);
    }
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn quick_capture_prompt() {
    let client = connect_memory().await;
    let prompts = client.list_prompts(None).await.unwrap().prompts;
    assert_eq!(prompts.len(), 1);
    let args = prompts[0].arguments.clone().unwrap();
    assert_eq!(
        (args[0].name.as_str(), args[0].required),
        ("text", Some(true))
    );
    assert_eq!(
        (args[1].name.as_str(), args[1].required),
        ("tags", Some(false))
    );

    let mut params = GetPromptRequestParams::new("quick_capture");
    params.arguments = Some(
        json!({"text": "buy milk", "tags": "home, errands"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let prompt = client.get_prompt(params).await.unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    assert_eq!(message["role"], "user");
    let text = message["content"]["text"].as_str().unwrap();
    assert!(
        text.contains("buy milk")
            && text.contains("home, errands")
            && text.contains("overwrite=false")
    );
    assert!(text.contains("write"));

    let Err(ServiceError::McpError(error)) = client
        .get_prompt(GetPromptRequestParams::new("quick_capture"))
        .await
    else {
        panic!()
    };
    assert_eq!(error.code.0, -32602);
    assert!(
        error.message.contains("text: required"),
        "{}",
        error.message
    );
    let Err(ServiceError::McpError(error)) =
        client.get_prompt(GetPromptRequestParams::new("nope")).await
    else {
        panic!()
    };
    assert_eq!(error.code.0, -32602);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn a_completion_cut_at_100_values_says_there_are_more() {
    let client = connect_memory().await;
    for i in 0..101 {
        let title = format!("Bulk {i:03}");
        let saved = call(&client, "write", json!({"title": title, "body": ""})).await;
        assert_eq!(saved.is_error, Some(false));
    }
    let complete = |typed: &'static str| {
        client.complete(CompleteRequestParams::new(
            Reference::for_resource("pkb://notes/{id}"),
            ArgumentInfo::new("id", typed),
        ))
    };
    let cut = complete("bulk").await.unwrap().completion;
    assert_eq!(cut.values.len(), 100);
    assert_eq!(cut.values[0], "bulk-000");
    assert_eq!((cut.has_more, cut.total), (Some(true), None));
    let whole = complete("bulk-00").await.unwrap().completion;
    assert_eq!(whole.values.len(), 10);
    assert_eq!((whole.has_more, whole.total), (Some(false), Some(10)));
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn completions_for_ids_and_tags() {
    let client = connect_memory().await;
    let ids = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("pkb://notes/{id}"),
            ArgumentInfo::new("id", "d"),
        ))
        .await
        .unwrap();
    assert_eq!(ids.completion.values, ["deploy-checklist"]);
    let history_ids = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("pkb://notes/{id}/history"),
            ArgumentInfo::new("id", "m"),
        ))
        .await
        .unwrap();
    assert_eq!(history_ids.completion.values, ["meeting-notes"]);
    let tags = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("quick_capture"),
            ArgumentInfo::new("tags", "todo, me"),
        ))
        .await
        .unwrap();
    assert_eq!(tags.completion.values, ["todo, meetings"]);
    let all = client
        .complete(CompleteRequestParams::new(
            Reference::for_prompt("quick_capture"),
            ArgumentInfo::new("tags", ""),
        ))
        .await
        .unwrap();
    assert_eq!(
        all.completion.values,
        ["deploy", "meetings", "release", "todo"]
    );
    // A template the server does not have is an error, as an unknown prompt is.
    let Err(ServiceError::McpError(error)) = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("pkb://nowhere/{id}"),
            ArgumentInfo::new("id", "d"),
        ))
        .await
    else {
        panic!("an unknown template is refused")
    };
    assert_eq!(error.code.0, -32602);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn notes_persist_across_a_restart() {
    let (_dir, path) = support::temp_store();
    let client = support::connect(&["--db", &path], Sampling::Unsupported).await;
    call(
        &client,
        "write",
        json!({"title": "Survives", "body": "restart"}),
    )
    .await;
    client.cancel().await.unwrap();
    let client = support::connect(&["--db", &path], Sampling::Unsupported).await;
    let note = structured(&call(&client, "fetch", json!({"id": "survives"})).await);
    assert_eq!(note["note"]["body"], "restart");
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn delete_removes_a_note_from_every_surface_and_tells_subscribers() {
    let handler = RecordingClient::new(Sampling::Unsupported);
    let client = connect_with(handler.clone(), &["--memory"]).await;
    let _watch = support::watch(
        &client,
        &handler,
        &["pkb://notes/deploy-checklist", "pkb://notes"],
    )
    .await;
    let saved = call(&client, "summarize_and_save", json!({"id": "deploy-checklist"})).await;
    assert_eq!(structured(&saved)["id"], "deploy-checklist-summary");
    // The summary's own creation is announced first; on a listen stream it may arrive after
    // the call's answer.
    eventually(|| *handler.list_changed.lock().unwrap() >= 1).await;
    let lists_before = *handler.list_changed.lock().unwrap();

    let deleted = call(&client, "delete", json!({"id": "  deploy-checklist "})).await;
    assert_eq!(
        structured(&deleted),
        json!({"id": "deploy-checklist", "deleted": true})
            .as_object()
            .unwrap()
            .clone()
    );
    assert_eq!(support::text(&deleted), "deleted: deploy-checklist");
    eventually(|| *handler.list_changed.lock().unwrap() == lists_before + 1).await;
    eventually(|| {
        let updated = handler.updated.lock().unwrap();
        updated.iter().any(|u| u == "pkb://notes/deploy-checklist")
            && updated.iter().filter(|u| *u == "pkb://notes").count() >= 2
    })
    .await;

    let fetched = call(&client, "fetch", json!({"id": "deploy-checklist"})).await;
    support::assert_error(&fetched, "No note found with ID: deploy-checklist");
    let found = call(&client, "search", json!({"query": "verify health", "mode": "words"})).await;
    let ids: Vec<Value> = structured(&found)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(ids, [json!("deploy-checklist-summary")], "the summary stays");
    let listed = client.list_all_resources().await.unwrap();
    assert!(listed.iter().all(|r| r.uri != "pkb://notes/deploy-checklist"));
    let read = client
        .read_resource(ReadResourceRequestParams::new("pkb://notes/deploy-checklist"))
        .await;
    assert!(read.is_err(), "{read:?}");
    let completion = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("pkb://notes/{id}"),
            ArgumentInfo::new("id", "deploy"),
        ))
        .await
        .unwrap();
    assert_eq!(completion.completion.values, ["deploy-checklist-summary"]);

    let again = call(&client, "delete", json!({"id": "deploy-checklist"})).await;
    support::assert_error(&again, "No note found with ID: deploy-checklist");
    let invalid = call(&client, "delete", json!({"id": "  "})).await;
    assert!(support::text(&invalid).starts_with("invalid arguments: id:"));
    let rewritten = call(
        &client,
        "write",
        json!({"title": "Deploy checklist", "body": "again"}),
    )
    .await;
    assert_eq!(structured(&rewritten)["created"], true);
    client.cancel().await.unwrap();
}
}
