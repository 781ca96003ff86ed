//! `summarize` and `summarize_and_save` with a sampling client, without one, and refused.

#![allow(deprecated)] // sampling is deprecated only for the stateless 2026-07-28 revision

#[macro_use]
mod support;

use serde_json::json;
use support::{
    RecordingClient, Sampling, assert_error, call, connect, connect_with, structured, text,
};

both_transports! {
#[tokio::test]
async fn summarize_asks_the_client_model_with_bounded_tokens() {
    let handler = RecordingClient::new(Sampling::Reply("A short summary.".into()));
    let client = connect_with(handler.clone(), &["--memory"]).await;
    let result = structured(&call(&client, "summarize", json!({"id": "deploy-checklist"})).await);
    assert_eq!(result["summary"], "A short summary.");
    assert_eq!(result["source"], "sampling");
    assert_eq!(result["id"], "deploy-checklist");
    let requests = handler.sampling_requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 1);
    assert!(requests[0].max_tokens > 0 && requests[0].max_tokens <= 1000);
    let asked = serde_json::to_string(&requests[0].messages).unwrap();
    assert!(
        asked.contains("verify the health check"),
        "the body is sent: {asked}"
    );
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn summarize_falls_back_to_extractive_without_sampling() {
    let client = connect(&["--memory"], Sampling::Unsupported).await;
    let result = structured(&call(&client, "summarize", json!({"id": "deploy-checklist"})).await);
    assert_eq!(result["source"], "extractive");
    assert_eq!(
        result["summary"],
        "Run tests, build the app, then verify the health check."
    );
    assert_error(
        &call(&client, "summarize", json!({"id": "missing"})).await,
        "No note found with ID: missing",
    );
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn a_refused_sampling_request_fails_and_saves_nothing() {
    let client = connect(&["--memory"], Sampling::Refuse).await;
    let result = call(&client, "summarize", json!({"id": "todo"})).await;
    assert_eq!(result.is_error, Some(true));
    assert!(result.structured_content.is_none());
    assert!(
        text(&result).starts_with("summarize failed:"),
        "{}",
        text(&result)
    );

    let result = call(&client, "summarize_and_save", json!({"id": "todo"})).await;
    assert!(text(&result).starts_with("summarize failed:"));
    assert_error(
        &call(&client, "fetch", json!({"id": "todo-summary"})).await,
        "No note found with ID: todo-summary",
    );
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn summarize_and_save_writes_and_replaces_the_summary_note() {
    let client = connect(&["--memory"], Sampling::Reply("First.".into())).await;
    let saved = call(
        &client,
        "summarize_and_save",
        json!({"id": "deploy-checklist"}),
    )
    .await;
    assert_eq!(text(&saved), "saved: deploy-checklist-summary");
    assert_eq!(
        structured(&saved),
        json!({"id": "deploy-checklist-summary", "source": "sampling"})
            .as_object()
            .unwrap()
            .clone()
    );
    let note = structured(&call(&client, "fetch", json!({"id": "deploy-checklist-summary"})).await);
    assert_eq!(note["note"]["title"], "Summary of Deploy checklist");
    assert_eq!(
        note["note"]["tags"],
        json!(["deploy", "release", "summary"])
    );
    assert_eq!(note["note"]["body"], "First.");
    // A second run replaces the summary rather than failing on the existing note.
    let again = call(
        &client,
        "summarize_and_save",
        json!({"id": "deploy-checklist"}),
    )
    .await;
    assert_eq!(text(&again), "saved: deploy-checklist-summary");
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn a_note_that_is_not_a_summary_is_never_replaced_by_one() {
    let handler = RecordingClient::new(Sampling::Reply("Summary.".into()));
    let client = connect_with(handler.clone(), &["--memory"]).await;
    // The user's own note happens to have the ID a summary of `todo` would take.
    let mine = call(
        &client,
        "write",
        json!({"title": "Todo summary", "body": "My own words.", "tags": ["mine"]}),
    )
    .await;
    assert_eq!(structured(&mine)["id"], "todo-summary");
    assert_error(
        &call(&client, "summarize_and_save", json!({"id": "todo"})).await,
        "note exists: todo-summary; it has no \"summary\" tag, so it is not a summary and is left alone",
    );
    assert!(
        handler.sampling_requests.lock().unwrap().is_empty(),
        "the client's model is not asked for a summary that cannot be saved"
    );
    let kept = structured(&call(&client, "fetch", json!({"id": "todo-summary"})).await);
    assert_eq!(kept["note"]["body"], "My own words.");
    // Once it is tagged as a summary, it is one.
    call(
        &client,
        "write",
        json!({"title": "Todo summary", "body": "Old.", "tags": ["summary"], "overwrite": true}),
    )
    .await;
    let saved = call(&client, "summarize_and_save", json!({"id": "todo"})).await;
    assert_eq!(text(&saved), "saved: todo-summary");
    // A missing source is not found, whatever holds its summary's ID: no other note is named.
    call(
        &client,
        "write",
        json!({"title": "Ghost summary", "body": "Mine.", "tags": ["mine"]}),
    )
    .await;
    assert_error(
        &call(&client, "summarize_and_save", json!({"id": "ghost"})).await,
        "No note found with ID: ghost",
    );
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn a_summary_whose_id_would_pass_the_limit_is_refused() {
    let client = connect(&["--memory"], Sampling::Reply("Short.".into())).await;
    let saved = call(
        &client,
        "write",
        json!({"title": "a".repeat(80), "body": "Body."}),
    )
    .await;
    let mut id = structured(&saved)["id"].as_str().unwrap().to_owned();
    // 80 characters, then 88 and 96 with their summaries'.
    for _ in 0..2 {
        let saved = call(&client, "summarize_and_save", json!({"id": id})).await;
        id = structured(&saved)["id"].as_str().unwrap().to_owned();
    }
    assert_eq!(id.len(), 96);
    let before = structured(&call(&client, "fetch", json!({"id": id})).await);
    assert_error(
        &call(&client, "summarize_and_save", json!({"id": id})).await,
        &format!(
            "cannot save a summary of {id}: its ID, {id}-summary, would be longer than 100 characters"
        ),
    );
    let after = structured(&call(&client, "fetch", json!({"id": id})).await);
    assert_eq!(before, after, "the source is left alone");
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn a_summary_title_is_cut_to_120_characters() {
    let client = connect(&["--memory"], Sampling::Reply("Short.".into())).await;
    // 120 characters with its only space 5 from the end: cutting at a word would leave
    // "Summary of" alone.
    let title = format!("{} tail", "q".repeat(115));
    let saved = call(&client, "write", json!({"title": title, "body": "Body."})).await;
    let id = structured(&saved)["id"].as_str().unwrap().to_owned();
    let saved = call(&client, "summarize_and_save", json!({"id": id})).await;
    let summary_id = structured(&saved)["id"].as_str().unwrap().to_owned();
    let note = structured(&call(&client, "fetch", json!({"id": summary_id})).await);
    assert_eq!(
        note["note"]["title"],
        format!("Summary of {}", "q".repeat(109)),
    );
    client.cancel().await.unwrap();
}
}

both_transports! {
#[tokio::test]
async fn a_silent_client_cannot_hang_summarize() {
    let handler = RecordingClient::new(Sampling::Silent);
    let client = connect_with(handler.clone(), &["--memory", "--sampling-timeout", "1"]).await;
    let result = call(&client, "summarize_and_save", json!({"id": "todo"})).await;
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        text(&result),
        "summarize failed: the client did not answer within 1s"
    );
    // The request given up is cancelled on the client too, which stops waiting on it.
    let started = std::time::Instant::now();
    while *handler.sampling_cancelled.lock().unwrap() == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "no notifications/cancelled for the sampling request"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_error(
        &call(&client, "fetch", json!({"id": "todo-summary"})).await,
        "No note found with ID: todo-summary",
    );
    client.cancel().await.unwrap();
}
}
