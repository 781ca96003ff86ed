//! Editing in place, and nothing lost: `edit`, `history`, `restore`, `fetch` of a version,
//! `write` with `expect_version`, and the history resource, through a real MCP client on
//! every transport, revision and backend. Every error text is the contract's, and a refused
//! change changes nothing.

#[macro_use]
mod support;

use rmcp::model::{Implementation, ReadResourceRequestParams, ResourceContents};
use rmcp::service::ServiceError;
use serde_json::{Map, Value, json};
use support::{
    Client, RecordingClient, Sampling, assert_error, call, connect_memory, connect_with,
    structured, text, watch,
};

/// How the test client is recorded as the author of its changes.
fn test_client() -> String {
    format!("pkb-tests {}", Implementation::from_build_env().version)
}

async fn write(client: &Client, title: &str, body: &str) -> Map<String, Value> {
    structured(&call(client, "write", json!({"title": title, "body": body})).await)
}

async fn edit(client: &Client, arguments: Value) -> rmcp::model::CallToolResult {
    call(client, "edit", arguments).await
}

async fn note(client: &Client, id: &str) -> Map<String, Value> {
    let fetched = structured(&call(client, "fetch", json!({ "id": id })).await);
    fetched["note"].as_object().unwrap().clone()
}

async fn versions(client: &Client, id: &str) -> Vec<Value> {
    let history = structured(&call(client, "history", json!({ "id": id })).await);
    assert_eq!(history["id"], id);
    history["versions"].as_array().unwrap().clone()
}

every_revision! {
#[tokio::test]
async fn edit_changes_one_part_of_a_note_as_one_new_version() {
    let client = connect_memory().await;
    let body = "# Plan\nintro\n## Tasks\n- old task\n### Detail\nd\n## Done\nshipped";
    write(&client, "Release plan", body).await;

    let appended = edit(&client, json!({"id": "release-plan", "append": "- note"})).await;
    assert_eq!(text(&appended), "edited: release-plan (version 2)");
    let out = structured(&appended);
    assert_eq!((out["id"].clone(), out["version"].clone()), (json!("release-plan"), json!(2)));
    assert_eq!(out["title"], "Release plan");
    assert_eq!(note(&client, "release-plan").await["body"], format!("{body}\n- note"));

    edit(&client, json!({"id": "release-plan", "prepend": "Owner: me"})).await;
    let replaced = edit(
        &client,
        json!({"id": "release-plan", "replace": {"old": "old task", "new": "new task"}}),
    )
    .await;
    assert_eq!(structured(&replaced)["version"], 4);
    let sectioned = edit(
        &client,
        json!({"id": "release-plan", "section": {"heading": "Tasks", "content": "- only task"}}),
    )
    .await;
    assert_eq!(structured(&sectioned)["version"], 5);
    assert_eq!(
        note(&client, "release-plan").await["body"],
        "Owner: me\n# Plan\nintro\n## Tasks\n- only task\n## Done\nshipped\n- note"
    );

    let renamed = edit(
        &client,
        json!({"id": "release-plan", "title": "Launch plan", "add_tags": ["Launch", "q3"], "remove_tags": ["none"]}),
    )
    .await;
    assert_eq!(structured(&renamed)["title"], "Launch plan");
    let now = note(&client, "release-plan").await;
    assert_eq!(now["title"], "Launch plan", "the id stays");
    assert_eq!(now["tags"], json!(["launch", "q3"]));
    assert_eq!(now["version"], 6);
    let retagged = edit(&client, json!({"id": "release-plan", "tags": ["one"], "replace": {"old": "- ", "new": "* ", "all": true}})).await;
    assert_eq!(structured(&retagged)["version"], 7);
    let now = note(&client, "release-plan").await;
    assert_eq!(now["tags"], json!(["one"]));
    assert_eq!(now["body"], "Owner: me\n# Plan\nintro\n## Tasks\n* only task\n## Done\nshipped\n* note");
    assert_eq!(now["updated_at"], structured(&retagged)["updated_at"]);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn edit_refusals_have_the_contract_texts_and_change_nothing() {
    let client = connect_memory().await;
    write(&client, "Tasks", "## Tasks\na\n## Notes\nb\n## Notes\nc\nrepeat repeat\n```\n## Fenced\n```").await;
    let refusals = [
        (json!({"id": "nope", "append": "x"}), "No note found with ID: nope".to_owned()),
        (json!({"id": "tasks", "append": "x", "expect_version": 3}),
            "note tasks is at version 1, not 3; fetch it again".to_owned()),
        (json!({"id": "tasks", "replace": {"old": "absent", "new": "x"}}),
            "text to replace not found in tasks".to_owned()),
        (json!({"id": "tasks", "replace": {"old": "repeat", "new": "x"}}),
            "text to replace occurs 2 times in tasks; include more of the text around it, or pass all=true".to_owned()),
        (json!({"id": "tasks", "replace": {"old": "Repeat", "new": "x", "all": true}}),
            "text to replace not found in tasks".to_owned()),
        (json!({"id": "tasks", "section": {"heading": "Fenced", "content": "x"}}),
            "no heading \"Fenced\" in tasks".to_owned()),
        (json!({"id": "tasks", "section": {"heading": "Notes", "content": "x"}}),
            "heading \"Notes\" occurs 2 times in tasks".to_owned()),
        (json!({"id": "tasks", "append": "é".repeat(10_000)}),
            "the edit would make the body of tasks 10065 characters; the limit is 10000".to_owned()),
        (json!({"id": "tasks", "replace": {"old": "a", "new": "ü".repeat(2600), "all": true}}),
            "the edit would make the body of tasks 10460 characters; the limit is 10000".to_owned()),
        (json!({"id": "tasks", "add_tags": (0..21).map(|n| format!("t{n}")).collect::<Vec<_>>()}),
            "invalid arguments: add_tags: must have at most 20 items".to_owned()),
    ];
    for (arguments, expected) in refusals {
        assert_error(&edit(&client, arguments.clone()).await, &expected);
    }
    // The tags' limit is the note's, counting those it has.
    edit(&client, json!({"id": "tasks", "tags": (0..15).map(|n| format!("a{n}")).collect::<Vec<_>>()})).await;
    assert_error(
        &edit(&client, json!({"id": "tasks", "add_tags": (0..6).map(|n| format!("b{n}")).collect::<Vec<_>>()})).await,
        "the edit would give tasks 21 tags; the limit is 20",
    );
    let after = note(&client, "tasks").await;
    assert_eq!(after["version"], 2, "no refused edit made a version");
    assert_eq!(versions(&client, "tasks").await.len(), 2);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn edit_rules_across_arguments_are_in_the_schema_and_enforced_first() {
    let client = connect_memory().await;
    let tools = client.list_all_tools().await.unwrap();
    let schema = &tools.iter().find(|t| t.name == "edit").unwrap().input_schema;
    assert!(schema.contains_key("anyOf") && schema.contains_key("dependentSchemas"), "{schema:?}");
    let refusals = [
        (json!({"id": "todo"}),
            "invalid arguments: arguments: give at least one of title, tags, add_tags, remove_tags, append, prepend, replace, section"),
        (json!({"id": "todo", "append": null, "title": null}),
            "invalid arguments: arguments: give at least one of title, tags, add_tags, remove_tags, append, prepend, replace, section"),
        (json!({"id": "todo", "append": "a", "prepend": "b"}),
            "invalid arguments: prepend: cannot be given with append; append: cannot be given with prepend"),
        (json!({"id": "todo", "tags": ["a"], "add_tags": ["b"]}),
            "invalid arguments: add_tags: cannot be given with tags"),
        (json!({"id": "todo", "replace": {"old": "", "new": "x"}}),
            "invalid arguments: replace.old: must be at least 1 character"),
        (json!({"id": "todo", "replace": {"new": "x", "extra": 1}}),
            "invalid arguments: replace.old: required; replace.extra: unknown field"),
        (json!({"id": "todo", "section": {"heading": "H", "content": 5}}),
            "invalid arguments: section.content: must be of type string"),
    ];
    for (arguments, expected) in refusals {
        let result = edit(&client, arguments.clone()).await;
        let told = text(&result);
        // The order of the rules' findings is jsonschema's; each must be named.
        let mut got: Vec<&str> = told.trim_start_matches("invalid arguments: ").split("; ").collect();
        let mut want: Vec<&str> = expected.trim_start_matches("invalid arguments: ").split("; ").collect();
        got.sort_unstable();
        want.sort_unstable();
        assert!(told.starts_with("invalid arguments: "), "{arguments}: {told}");
        assert_eq!(got, want, "{arguments}");
        assert_eq!(result.is_error, Some(true));
    }
    // null is leaving an optional argument out.
    let fine = edit(&client, json!({"id": "todo", "append": "x", "prepend": null})).await;
    assert_eq!(structured(&fine)["version"], 2);
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn a_crlf_body_is_edited_in_crlf() {
    let client = connect_memory().await;
    write(&client, "Windows", "# A\r\none\r\n# B\r\ntwo\r\n").await;
    edit(&client, json!({"id": "windows", "section": {"heading": "A", "content": "uno\ndos"}})).await;
    edit(&client, json!({"id": "windows", "replace": {"old": "two\n", "new": "three\n"}})).await;
    edit(&client, json!({"id": "windows", "append": "end"})).await;
    assert_eq!(
        note(&client, "windows").await["body"],
        "# A\r\nuno\r\ndos\r\n# B\r\nthree\r\nend"
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn history_keeps_every_change_with_its_client_and_survives_delete() {
    let client = connect_memory().await;
    write(&client, "Diary", "first").await;
    call(&client, "write", json!({"title": "Diary", "body": "second", "overwrite": true})).await;
    edit(&client, json!({"id": "diary", "title": "My diary"})).await;
    let deleted = call(&client, "delete", json!({"id": "diary"})).await;
    assert_eq!(text(&deleted), "deleted: diary");

    let listed = versions(&client, "diary").await;
    let kinds: Vec<(u64, &str, &str, u64)> = listed
        .iter()
        .map(|v| (v["version"].as_u64().unwrap(), v["change"].as_str().unwrap(), v["title"].as_str().unwrap(), v["chars"].as_u64().unwrap()))
        .collect();
    assert_eq!(kinds, [
        (4, "deleted", "My diary", 6),
        (3, "edited", "My diary", 6),
        (2, "replaced", "Diary", 6),
        (1, "created", "Diary", 5),
    ]);
    let by = test_client();
    assert!(listed.iter().all(|v| v["by"] == by.as_str()), "{listed:?} by {by}");
    assert!(listed.windows(2).all(|pair| pair[0]["at"].as_str() >= pair[1]["at"].as_str()));
    let limited = structured(&call(&client, "history", json!({"id": "diary", "limit": 2})).await);
    assert_eq!(limited["versions"].as_array().unwrap().len(), 2);

    // Any version reads whole, also once the note is gone.
    let first = structured(&call(&client, "fetch", json!({"id": "diary", "version": 1})).await);
    assert_eq!(first["note"]["body"], "first");
    assert_eq!(first["note"]["version"], 1);
    let gone = structured(&call(&client, "fetch", json!({"id": "diary", "version": 4})).await);
    assert_eq!(gone["note"]["title"], "My diary");
    assert_error(&call(&client, "fetch", json!({"id": "diary"})).await, "No note found with ID: diary");
    assert_error(&call(&client, "fetch", json!({"id": "diary", "version": 9})).await, "diary has no version 9");
    for tool in ["history", "fetch", "restore"] {
        let arguments = match tool {
            "history" => json!({"id": "never"}),
            _ => json!({"id": "never", "version": 1}),
        };
        assert_error(&call(&client, tool, arguments).await, "No note found with ID: never");
    }
    assert_error(&call(&client, "restore", json!({"id": "diary", "version": 7})).await, "diary has no version 7");

    // The latest changes across notes.
    write(&client, "Other", "x").await;
    let changes = structured(&call(&client, "history", json!({"limit": 3})).await);
    let recent: Vec<(String, u64, String)> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["version"].as_u64().unwrap(), c["change"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(recent, [
        ("other".to_owned(), 1, "created".to_owned()),
        ("diary".to_owned(), 4, "deleted".to_owned()),
        ("diary".to_owned(), 3, "edited".to_owned()),
    ]);
    assert_eq!(changes["changes"][0]["by"], by.as_str());
    assert_eq!(changes["changes"][0]["title"], "Other");
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn restore_brings_back_an_old_title_and_a_deleted_note() {
    let handler = RecordingClient::new(Sampling::Unsupported);
    let client = connect_with(handler.clone(), &["--memory"]).await;
    let _watch = watch(&client, &handler, &["pkb://notes"]).await;
    write(&client, "Recipe", "flour").await;
    edit(&client, json!({"id": "recipe", "title": "Bread", "append": "water"})).await;
    let restored = call(&client, "restore", json!({"id": "recipe", "version": 1})).await;
    assert_eq!(text(&restored), "restored: recipe (version 1 as version 3)");
    assert_eq!(structured(&restored), json!({"id": "recipe", "version": 3, "restored_from": 1}).as_object().unwrap().clone());
    let now = note(&client, "recipe").await;
    assert_eq!((now["title"].clone(), now["body"].clone()), (json!("Recipe"), json!("flour")));

    let created_at = now["created_at"].clone();
    call(&client, "delete", json!({"id": "recipe"})).await;
    let changed_before = *handler.list_changed.lock().unwrap();
    let back = call(&client, "restore", json!({"id": "recipe", "version": 2})).await;
    assert_eq!(text(&back), "restored: recipe (version 2 as version 5)");
    let now = note(&client, "recipe").await;
    assert_eq!(now["title"], "Bread");
    assert_eq!(now["created_at"], created_at, "it is the same note, made when it was");
    let found = structured(&call(&client, "search", json!({"query": "water", "mode": "words"})).await);
    assert_eq!(found["results"][0]["id"], "recipe");
    for _ in 0..100 {
        if *handler.list_changed.lock().unwrap() > changed_before {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(*handler.list_changed.lock().unwrap() > changed_before, "list_changed on the note's return");
    let kinds: Vec<String> = versions(&client, "recipe").await.iter().map(|v| v["change"].as_str().unwrap().to_owned()).collect();
    assert_eq!(kinds, ["restored", "deleted", "restored", "edited", "created"]);

    // Made again after a delete, a note goes on counting its id's versions.
    call(&client, "delete", json!({"id": "recipe"})).await;
    let again = write(&client, "Recipe", "new").await;
    assert_eq!((again["created"].clone(), again["version"].clone()), (json!(true), json!(7)));
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn write_with_expect_version_replaces_only_that_version() {
    let client = connect_memory().await;
    write(&client, "Shared", "one").await;
    let stale = call(&client, "write", json!({"title": "Shared", "body": "two", "overwrite": true, "expect_version": 2})).await;
    assert_error(&stale, "note shared is at version 1, not 2; fetch it again");
    assert_eq!(note(&client, "shared").await["body"], "one");
    let done = structured(&call(&client, "write", json!({"title": "Shared", "body": "two", "overwrite": true, "expect_version": 1})).await);
    assert_eq!((done["created"].clone(), done["version"].clone()), (json!(false), json!(2)));
    assert_error(
        &call(&client, "write", json!({"title": "Missing", "body": "x", "overwrite": true, "expect_version": 1})).await,
        "No note found with ID: missing",
    );
    assert_error(
        &call(&client, "write", json!({"title": "Shared", "body": "x", "expect_version": 0})).await,
        "invalid arguments: expect_version: must be at least 1",
    );
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn the_history_resource_lists_every_version() {
    let client = connect_memory().await;
    for n in 0..25 {
        edit(&client, json!({"id": "todo", "append": format!("item {n}")})).await;
    }
    let read = client
        .read_resource(ReadResourceRequestParams::new("pkb://notes/todo/history"))
        .await
        .unwrap();
    let ResourceContents::TextResourceContents { text, mime_type, .. } = &read.contents[0] else {
        panic!("not text");
    };
    assert_eq!(mime_type.as_deref(), Some("application/json"));
    let history: Value = serde_json::from_str(text).unwrap();
    assert_eq!(history["id"], "todo");
    let listed = history["versions"].as_array().unwrap();
    assert_eq!(listed.len(), 26, "every version, not the tool's default 20");
    assert_eq!(listed[0]["version"], 26);
    assert_eq!(listed[25]["change"], "created");
    let Err(ServiceError::McpError(error)) = client
        .read_resource(ReadResourceRequestParams::new("pkb://notes/never/history"))
        .await
    else {
        panic!("an unknown note's history was read");
    };
    assert_eq!(error.code.0, support::resource_not_found_code());
    client.cancel().await.unwrap();
}
}

every_revision! {
#[tokio::test]
async fn two_clients_editing_at_once_lose_nothing() {
    // Two servers on one store, as two clients' windows run them.
    let (_dir, path) = support::temp_store();
    let path = match support::current_backend() {
        support::Backend::Sqlite => path,
        support::Backend::Postgres => support::postgres_database().await.unwrap(),
    };
    let store = ["--db", path.as_str()];
    let first = connect_with(RecordingClient::new(Sampling::Unsupported), &store).await;
    let second = connect_with(RecordingClient::new(Sampling::Unsupported), &store).await;
    const EACH: usize = 12;
    let appends = |client: &Client, who: &'static str| {
        let client = client.peer().clone();
        async move {
            for n in 0..EACH {
                let mut params = rmcp::model::CallToolRequestParams::new("edit");
                params.arguments = json!({"id": "todo", "append": format!("{who} {n}")}).as_object().cloned();
                let result = client.call_tool(params).await.unwrap();
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
        }
    };
    tokio::join!(appends(&first, "first"), appends(&second, "second"));
    let body = note(&first, "todo").await["body"].as_str().unwrap().to_owned();
    for who in ["first", "second"] {
        for n in 0..EACH {
            assert!(body.lines().any(|line| line == format!("{who} {n}")), "{who} {n} lost: {body}");
        }
    }
    assert_eq!(note(&first, "todo").await["version"], 1 + 2 * EACH as u64);

    // With expect_version, of two edits of one version one wins and the other is told.
    let version = note(&first, "todo").await["version"].as_u64().unwrap();
    let at = |client: &Client, text: &'static str| {
        let client = client.peer().clone();
        async move {
            let mut params = rmcp::model::CallToolRequestParams::new("edit");
            params.arguments = json!({"id": "todo", "append": text, "expect_version": version}).as_object().cloned();
            client.call_tool(params).await.unwrap()
        }
    };
    let (a, b) = tokio::join!(at(&first, "from a"), at(&second, "from b"));
    let outcomes = [a.is_error == Some(true), b.is_error == Some(true)];
    assert_eq!(outcomes.iter().filter(|failed| **failed).count(), 1, "{a:?} {b:?}");
    let loser = if outcomes[0] { &a } else { &b };
    assert_eq!(text(loser), format!("note todo is at version {}, not {version}; fetch it again", version + 1));
    second.cancel().await.unwrap();
    first.cancel().await.unwrap();
}
}
