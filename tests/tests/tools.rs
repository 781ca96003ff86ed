//! Every tool of the contract through a real MCP client, over stdio and over Streamable HTTP: happy paths, exact error
//! texts, and every limit at the boundary and one past it.

#[macro_use]
mod support;

use serde_json::json;
use support::{assert_error, call, connect_memory, structured, text};

every_revision! {
#[tokio::test]
async fn echo_returns_the_text_as_is() {
    let client = connect_memory().await;
    let result = call(&client, "echo", json!({"text": "héllo 🌍"})).await;
    assert_eq!(structured(&result)["text"], "héllo 🌍");
    assert_eq!(text(&result), "héllo 🌍");
    let at_limit = "é".repeat(10_000);
    let result = call(&client, "echo", json!({ "text": at_limit })).await;
    assert_eq!(structured(&result)["text"], at_limit.as_str());
    let past = "é".repeat(10_001);
    assert_error(
        &call(&client, "echo", json!({ "text": past })).await,
        "invalid arguments: text: must be at most 10000 characters",
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn inflected_forms_find_the_word_with_no_mode_and_in_words() {
    let client = connect_memory().await;
    structured(&call(&client, "write", json!({"title": "Release day", "body": "We deploy on Fridays."})).await);
    for query in ["deploying", "deployment", "deployed", "deploys"] {
        for arguments in [json!({"query": query}), json!({"query": query, "mode": "words"})] {
            let found = structured(&call(&client, "search", arguments.clone()).await);
            let ids: Vec<&str> = found["results"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
            assert!(ids.contains(&"release-day"), "{arguments}: {ids:?}");
        }
    }
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn search_finds_by_prefix_and_tags_without_bodies() {
    let client = connect_memory().await;
    let found = structured(&call(&client, "search", json!({"query": "  dep  ", "mode": "words"})).await);
    let results = found["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["id"], "deploy-checklist");
    assert_eq!(results[0]["uri"], "pkb://notes/deploy-checklist");
    assert_eq!(results[0]["tags"], json!(["deploy", "release"]));
    assert!(results[0].get("body").is_none());
    assert!(results[0]["score"].as_f64().unwrap() > 0.0);

    let none = structured(
        &call(
            &client,
            "search",
            json!({"query": "deploy", "tags": ["todo"], "mode": "words"}),
        )
        .await,
    );
    assert_eq!(none["results"], json!([]));
    let syntax = structured(
        &call(
            &client,
            "search",
            json!({"query": "\"deploy\" AND (x* OR NEAR:", "mode": "words"}),
        )
        .await,
    );
    assert_eq!(syntax["results"], json!([]));
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn search_limits_are_enforced() {
    let client = connect_memory().await;
    for (args, expected) in [
        (json!({}), "invalid arguments: query: required"),
        (
            json!({"query": "   "}),
            "invalid arguments: query: must be at least 1 character",
        ),
        (
            json!({"query": "a".repeat(201)}),
            "invalid arguments: query: must be at most 200 characters",
        ),
        (
            json!({"query": "a", "limit": 0}),
            "invalid arguments: limit: must be at least 1",
        ),
        (
            json!({"query": "a", "limit": 51}),
            "invalid arguments: limit: must be at most 50",
        ),
        (
            json!({"query": "a", "limit": "5"}),
            "invalid arguments: limit: must be a non-negative integer",
        ),
        // Past what the argument's type holds, the bound is still the rule broken.
        (
            json!({"query": "a", "limit": 4_294_967_297_u64}),
            "invalid arguments: limit: must be at most 50",
        ),
        (
            json!({"query": "a", "limit": 1e30}),
            "invalid arguments: limit: must be at most 50",
        ),
        (
            json!({"query": "a", "limit": -1}),
            "invalid arguments: limit: must be at least 1",
        ),
        (
            json!({"query": "a", "limit": 1.5}),
            "invalid arguments: limit: must be a non-negative integer",
        ),
        (
            json!({"query": 5}),
            "invalid arguments: query: must be a string",
        ),
        (
            json!({"query": "a", "extra": 1}),
            "invalid arguments: extra: unknown field",
        ),
        (
            json!({"query": "a", "tags": vec!["t"; 21]}),
            "invalid arguments: tags: must have at most 20 items",
        ),
        // The schema gives optional arguments a default, not a null type.
        (
            json!({"query": "a", "limit": null, "tags": null}),
            "invalid arguments: tags: must be an array of strings; limit: must be a non-negative integer",
        ),
        (
            json!({"query": null}),
            "invalid arguments: query: must be a string",
        ),
    ] {
        assert_error(&call(&client, "search", args.clone()).await, expected);
    }
    let at_limits = call(
        &client,
        "search",
        json!({"query": "é".repeat(200), "limit": 50, "tags": vec!["t"; 20], "mode": "words"}),
    )
    .await;
    assert_eq!(structured(&at_limits)["results"], json!([]));
    // `1.0` is an integer to JSON Schema.
    let whole = call(&client, "search", json!({"query": "deploy", "limit": 1.0, "mode": "words"})).await;
    assert_eq!(structured(&whole)["results"].as_array().unwrap().len(), 1);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn every_offending_field_is_named_at_once() {
    let client = connect_memory().await;
    let result = call(
        &client,
        "write",
        json!({"title": "", "tags": ["ok", "x".repeat(41)], "overwrite": "yes", "bogus": true}),
    )
    .await;
    assert_error(
        &result,
        "invalid arguments: title: must be at least 1 character; body: required; \
         tags[1]: must be at most 40 characters; overwrite: must be a boolean; bogus: unknown field",
    );
    let control = call(
        &client,
        "write",
        json!({"title": "Tagged", "body": "", "tags": ["ok", "two\nlines", "nul\u{0}"]}),
    )
    .await;
    assert_error(
        &control,
        "invalid arguments: tags[1]: must be one line without control characters; \
         tags[2]: must be one line without control characters",
    );
    let null_overwrite = call(
        &client,
        "write",
        json!({"title": "Null overwrite", "body": "", "overwrite": null}),
    )
    .await;
    assert_error(
        &null_overwrite,
        "invalid arguments: overwrite: must be a boolean",
    );
    assert_error(
        &call(&client, "fetch", json!({"id": "null-overwrite"})).await,
        "No note found with ID: null-overwrite",
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn fetch_returns_the_note_or_the_exact_not_found_text() {
    let client = connect_memory().await;
    let note = structured(&call(&client, "fetch", json!({"id": " deploy-checklist "})).await);
    assert_eq!(note["note"]["title"], "Deploy checklist");
    assert_eq!(
        note["note"]["body"],
        "Run tests, build the app, then verify the health check."
    );
    assert!(note["note"]["created_at"].as_str().unwrap().ends_with('Z'));
    assert_error(
        &call(&client, "fetch", json!({"id": "deploy"})).await,
        "No note found with ID: deploy",
    );
    assert_error(
        &call(&client, "fetch", json!({"id": "a".repeat(101)})).await,
        "invalid arguments: id: must be at most 100 characters",
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn write_creates_conflicts_and_replaces() {
    let client = connect_memory().await;
    let created = call(
        &client,
        "write",
        json!({"title": "  Café Notes ", "body": "Body", "tags": [" Work ", "work", "IDEAS"]}),
    )
    .await;
    assert_eq!(text(&created), "saved: cafe-notes");
    assert_eq!(
        structured(&created),
        json!({"id": "cafe-notes", "title": "Café Notes", "created": true, "version": 1})
            .as_object()
            .unwrap()
            .clone()
    );
    let fetched = structured(&call(&client, "fetch", json!({"id": "cafe-notes"})).await);
    assert_eq!(fetched["note"]["tags"], json!(["work", "ideas"]));

    let conflict = call(
        &client,
        "write",
        json!({"title": "Café notes", "body": "other"}),
    )
    .await;
    assert_error(
        &conflict,
        "note exists: cafe-notes; pass overwrite=true to replace",
    );
    let unchanged = structured(&call(&client, "fetch", json!({"id": "cafe-notes"})).await);
    assert_eq!(unchanged["note"]["body"], "Body");

    let replaced = call(
        &client,
        "write",
        json!({"title": "Café notes", "body": "new", "overwrite": true}),
    )
    .await;
    assert_eq!(structured(&replaced)["created"], false);
    assert_eq!(structured(&replaced)["version"], 2);
    let after = structured(&call(&client, "fetch", json!({"id": "cafe-notes"})).await);
    assert_eq!(after["note"]["body"], "new");
    assert_eq!(after["note"]["version"], 2);
    assert_eq!(after["note"]["created_at"], fetched["note"]["created_at"]);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn write_limits_count_characters_not_bytes() {
    let client = connect_memory().await;
    let ok = call(&client, "write", json!({"title": "é".repeat(120), "body": "😀".repeat(10_000), "tags": (0..20).map(|i| format!("{}{i:02}", "é".repeat(38))).collect::<Vec<_>>()})).await;
    assert_eq!(structured(&ok)["created"], true);
    for (args, expected) in [
        (
            json!({"title": "é".repeat(121), "body": ""}),
            "invalid arguments: title: must be at most 120 characters",
        ),
        (
            json!({"title": "t", "body": "😀".repeat(10_001)}),
            "invalid arguments: body: must be at most 10000 characters",
        ),
        (
            json!({"title": "a\nb", "body": ""}),
            "invalid arguments: title: must be one line without control characters",
        ),
        (
            json!({"title": "a\u{0}b", "body": ""}),
            "invalid arguments: title: must be one line without control characters",
        ),
        (
            json!({"title": "t", "body": "", "tags": [" "]}),
            "invalid arguments: tags[0]: must be at least 1 character",
        ),
        (
            json!({"title": "t", "body": "", "tags": ["x".repeat(41)]}),
            "invalid arguments: tags[0]: must be at most 40 characters",
        ),
        (
            json!({"title": "t", "body": "", "tags": vec!["t"; 21]}),
            "invalid arguments: tags: must have at most 20 items",
        ),
    ] {
        assert_error(&call(&client, "write", args).await, expected);
    }
    // Nothing was written by the rejected calls.
    let found = structured(&call(&client, "search", json!({"query": "t", "limit": 50, "mode": "words"})).await);
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["id"] != "t")
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn punctuation_only_titles_get_a_hash_id() {
    let client = connect_memory().await;
    let saved = structured(&call(&client, "write", json!({"title": "!!!", "body": ""})).await);
    let id = saved["id"].as_str().unwrap();
    assert!(id.starts_with("note-") && id.len() == 13, "{id}");
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn unknown_tool_is_a_protocol_error() {
    let client = connect_memory().await;
    let mut params = rmcp::model::CallToolRequestParams::new("nope");
    params.arguments = None;
    let error = client.call_tool(params).await.unwrap_err();
    let rmcp::service::ServiceError::McpError(error) = error else {
        panic!("{error:?}")
    };
    assert_eq!(error.code.0, -32602);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn right_to_left_marks_and_four_byte_characters_count_as_one_each() {
    let client = connect_memory().await;
    // U+200F (right-to-left mark) is a format character, not a control: titles may hold it.
    let title = format!("\u{200F}{}", "𝄞".repeat(119));
    let ok = call(&client, "write", json!({"title": title, "body": "b"})).await;
    assert_eq!(structured(&ok)["created"], true);
    let long = format!("\u{200F}{}", "𝄞".repeat(120));
    assert_error(
        &call(&client, "write", json!({"title": long, "body": "b"})).await,
        "invalid arguments: title: must be at most 120 characters",
    );
    let nul = call(
        &client,
        "write",
        json!({"title": "nul\u{0}here", "body": "b"}),
    )
    .await;
    assert_error(
        &nul,
        "invalid arguments: title: must be one line without control characters",
    );
    let found = structured(&call(&client, "search", json!({"query": "nul", "mode": "words"})).await);
    assert_eq!(found["results"], json!([]), "nothing was written");
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn separators_bidi_overrides_and_invisible_titles_are_refused() {
    let client = connect_memory().await;
    for (title, rule) in [
        ("one\u{2028}two", "must be one line without control characters"),
        ("one\u{2029}two", "must be one line without control characters"),
        ("\u{202e}gpj.exe", "must not hold bidirectional overrides or isolates (U+202A to U+202E, U+2066 to U+2069)"),
        ("a\u{2066}b\u{2069}", "must not hold bidirectional overrides or isolates (U+202A to U+202E, U+2066 to U+2069)"),
        ("\u{200B}", "must hold a visible character"),
        ("\u{FEFF}\u{200B}\u{2060}", "must hold a visible character"),
    ] {
        let result = call(&client, "write", json!({"title": title, "body": ""})).await;
        assert_error(&result, &format!("invalid arguments: title: {rule}"));
    }
    // Every tool's single_line arguments get the rules: each tag too.
    let tagged = call(
        &client,
        "write",
        json!({"title": "Tagged", "body": "", "tags": ["ok", "\u{200B}"]}),
    )
    .await;
    assert_error(&tagged, "invalid arguments: tags[1]: must hold a visible character");
    let listed = structured(&call(&client, "search", json!({"query": "gpj", "mode": "words"})).await);
    assert_eq!(listed["results"], json!([]), "nothing was written");
    client.cancel().await.unwrap();
}
}
