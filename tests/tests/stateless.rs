//! The stateless 2026-07-28 revision: discover, multi-round sampling, removed methods, and
//! the older revisions beside it on one binary. What every revision shares runs at 2026 too,
//! in tools.rs and resources.rs.

// Sampling's types are deprecated by 2026-07-28 as server-to-client requests; its
// multi-round form still carries them.
#![allow(deprecated)]

mod support;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CreateMessageResult, InputRequests,
    InputRequiredResult, InputResponses, SamplingMessage,
};
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use support::{
    HttpServerProcess, RecordingClient, Sampling, call, connect, connect_http, structured,
};

fn summarize_params(tool: &str, id: &str) -> CallToolRequestParams {
    CallToolRequestParams::new(tool.to_owned())
        .with_arguments(json!({ "id": id }).as_object().expect("an object").clone())
}

/// The first round of a call that must ask for input.
async fn first_round(client: &support::Client, tool: &str, id: &str) -> InputRequiredResult {
    match client.call_tool_once(summarize_params(tool, id)).await {
        Ok(CallToolResponse::InputRequired(input)) => input,
        other => panic!("expected an InputRequiredResult, got {other:?}"),
    }
}

/// The answer a client's model gives to every request of `asked`.
fn answers(asked: &InputRequests, text: &str) -> InputResponses {
    asked
        .keys()
        .map(|key| {
            let answer = CreateMessageResult::new(
                SamplingMessage::assistant_text(text.to_owned()),
                "test-model".into(),
            );
            (key.clone(), serde_json::to_value(answer).unwrap())
        })
        .collect()
}

stateless_revision! {
#[tokio::test]
async fn discover_names_every_revision_and_the_capabilities() {
    let client = connect(&["--memory"], Sampling::Unsupported).await;
    let info = client.peer_info().expect("discovered");
    assert_eq!(info.protocol_version.as_str(), "2026-07-28");
    let server = info.server_info.clone().expect("server info");
    assert_eq!(server.name, "pkb");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    let resources = info.capabilities.resources.clone().expect("resources");
    assert_eq!(resources.subscribe, Some(true));
    assert!(info.capabilities.tools.is_some() && info.capabilities.prompts.is_some());
    let discovered = client
        .peer()
        .discover(rmcp::model::RequestMetaObject::new())
        .await
        .expect("server/discover");
    let versions: Vec<&str> = discovered
        .supported_versions
        .iter()
        .map(|v| v.as_str())
        .collect();
    assert_eq!(
        versions,
        ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn summarize_asks_the_clients_model_in_a_second_round() {
    let handler = RecordingClient::new(Sampling::Reply("A short summary.".into()));
    let client = support::connect_with(handler.clone(), &["--memory"]).await;
    // rmcp's client answers the InputRequiredResult with its own sampling handler and retries.
    let result = call(&client, "summarize", json!({"id": "deploy-checklist"})).await;
    assert_eq!(
        Value::Object(structured(&result)),
        json!({"id": "deploy-checklist", "summary": "A short summary.", "source": "sampling"})
    );
    let asked = handler.sampling_requests.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "one sampling request, as on the older revisions");
    assert_eq!(asked[0].max_tokens, 400);
    assert!(format!("{:?}", asked[0].messages).contains("Run tests, build the app"));

    let saved = call(&client, "summarize_and_save", json!({"id": "todo"})).await;
    assert_eq!(structured(&saved)["id"], "todo-summary");
    let note = call(&client, "fetch", json!({"id": "todo-summary"})).await;
    assert_eq!(structured(&note)["note"]["body"], "A short summary.");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_sampling_the_summary_is_extractive_at_once() {
    let client = connect(&["--memory"], Sampling::Unsupported).await;
    let response = client
        .call_tool_once(summarize_params("summarize", "deploy-checklist"))
        .await
        .unwrap();
    let CallToolResponse::Complete(result) = response else {
        panic!("no round for a client without sampling: {response:?}")
    };
    assert_eq!(structured(&result)["source"], "extractive");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_round_saves_nothing_until_it_completes() {
    let client = connect(&["--memory"], Sampling::Reply("Summary.".into())).await;
    let input = first_round(&client, "summarize_and_save", "todo").await;
    let asked = input.input_requests.clone().expect("input requests");
    assert_eq!(asked.len(), 1);
    let state = input.request_state.clone().expect("a sealed state");
    let missing = call(&client, "fetch", json!({"id": "todo-summary"})).await;
    support::assert_error(&missing, "No note found with ID: todo-summary");

    // A retry without the answer is asked again.
    let again = client
        .call_tool_once(summarize_params("summarize_and_save", "todo").with_request_state(state.clone()))
        .await
        .unwrap();
    assert!(matches!(again, CallToolResponse::InputRequired(_)), "{again:?}");

    let done = client
        .call_tool_once(
            summarize_params("summarize_and_save", "todo")
                .with_request_state(state)
                .with_input_responses(answers(&asked, "Summary.")),
        )
        .await
        .unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("{done:?}")
    };
    assert_eq!(support::text(&done), "saved: todo-summary");
    let saved = call(&client, "fetch", json!({"id": "todo-summary"})).await;
    assert_eq!(structured(&saved)["note"]["body"], "Summary.");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_state_that_was_altered_or_names_another_call_is_refused() {
    let client = connect(&["--memory"], Sampling::Reply("x".into())).await;
    let input = first_round(&client, "summarize", "todo").await;
    let asked = input.input_requests.clone().unwrap();
    let state = input.request_state.clone().unwrap();
    let mut altered: Vec<char> = state.chars().collect();
    let middle = altered.len() / 2;
    altered[middle] = if altered[middle] == 'A' { 'B' } else { 'A' };
    let altered: String = altered.into_iter().collect();
    for (tool, id, state) in [
        ("summarize", "todo", altered.as_str()),
        ("summarize", "meeting-notes", state.as_str()),
        ("summarize_and_save", "todo", state.as_str()),
        ("summarize", "todo", "rs1.not-a-state"),
    ] {
        let retry = client
            .call_tool_once(
                summarize_params(tool, id)
                    .with_request_state(state)
                    .with_input_responses(answers(&asked, "x")),
            )
            .await;
        let Err(ServiceError::McpError(error)) = retry else {
            panic!("{tool} {id}: {retry:?}")
        };
        assert_eq!(error.code.0, -32602, "{tool} {id}");
        assert!(error.message.contains("requestState"), "{}", error.message);
    }
    let missing = call(&client, "fetch", json!({"id": "todo-summary"})).await;
    assert!(missing.is_error == Some(true), "nothing was saved");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_state_expires_with_the_sampling_timeout() {
    let client = connect(&["--memory", "--sampling-timeout", "1"], Sampling::Reply("x".into())).await;
    let input = first_round(&client, "summarize", "todo").await;
    tokio::time::sleep(std::time::Duration::from_millis(1_300)).await;
    let retry = client
        .call_tool_once(
            summarize_params("summarize", "todo")
                .with_request_state(input.request_state.clone().unwrap())
                .with_input_responses(answers(input.input_requests.as_ref().unwrap(), "x")),
        )
        .await;
    let Err(ServiceError::McpError(error)) = retry else {
        panic!("{retry:?}")
    };
    assert_eq!(error.code.0, -32602);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_write_through_another_request_reaches_a_listen_stream() {
    let handler = RecordingClient::new(Sampling::Unsupported);
    let client = support::connect_with(handler.clone(), &["--memory"]).await;
    let watch = support::watch(&client, &handler, &["pkb://notes/todo"]).await;
    call(&client, "write", json!({"title": "Todo", "body": "changed", "overwrite": true})).await;
    call(&client, "delete", json!({"id": "todo"})).await;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let updated = handler.updated.lock().unwrap().clone();
        let lists = *handler.list_changed.lock().unwrap();
        if updated.iter().filter(|u| *u == "pkb://notes/todo").count() == 2 && lists == 1 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{updated:?} {lists}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    drop(watch);
    client.cancel().await.unwrap();
}
}

/// `method` sent as a 2026-07-28 request over stdio, and its answer.
async fn stdio_request(method: &str, params: Value) -> Value {
    let message = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let seen = stdio_exchange(&[&[message]]).await;
    seen.into_iter()
        .find(|m| m["id"] == json!(7))
        .expect("an answer")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
    })
}

/// The methods 2026-07-28 removed, with params that would be valid on older revisions, and
/// with only `_meta` (params those methods could not read): the method is gone either way.
fn removed_methods() -> Vec<(&'static str, Value)> {
    let only_meta = [
        "ping",
        "initialize",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ]
    .map(|method| (method, json!({"_meta": meta()})));
    let mut methods = vec![
        ("ping", json!({"_meta": meta()})),
        (
            "initialize",
            json!({"_meta": meta(), "protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        ),
        (
            "logging/setLevel",
            json!({"_meta": meta(), "level": "info"}),
        ),
        (
            "resources/subscribe",
            json!({"_meta": meta(), "uri": "pkb://notes/todo"}),
        ),
        (
            "resources/unsubscribe",
            json!({"_meta": meta(), "uri": "pkb://notes/todo"}),
        ),
    ];
    methods.extend(only_meta);
    methods
}

#[tokio::test]
async fn removed_methods_are_not_found_on_stdio() {
    for (method, params) in removed_methods() {
        let answer = stdio_request(method, params).await;
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
}

#[tokio::test]
async fn removed_methods_are_404_over_http() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let http = support::http_client();
    for (method, params) in removed_methods() {
        let mut request = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .json(&json!({"jsonrpc": "2.0", "id": 500, "method": method, "params": params}));
        if let Some(uri) = params.get("uri").and_then(Value::as_str) {
            request = request.header("mcp-name", uri);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(answer.status(), 404, "{method}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], -32601, "{method}: {body}");
        assert_eq!(body["id"], 500, "{method}: {body}");
    }
}

#[tokio::test]
async fn a_notification_without_its_method_header_is_taken_over_http() {
    // The official client sends `notifications/cancelled` so; the revision asks the header of
    // requests only.
    let server = HttpServerProcess::start(&["--memory"]).await;
    let cancelled = support::http_client()
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 202);
}

/// An rmcp client over HTTP at `revision`, whatever the test's own revision.
async fn client_at(
    revision: support::Revision,
    sampling: Sampling,
    url: &str,
    token: Option<&str>,
) -> rmcp::service::RunningService<rmcp::RoleClient, RecordingClient> {
    support::REVISION
        .scope(
            revision,
            connect_http(RecordingClient::new(sampling), url, token),
        )
        .await
}

#[tokio::test]
async fn every_revision_is_served_side_by_side_by_one_server() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let old = client_at(
        support::Revision::Sessions,
        Sampling::Unsupported,
        &server.url,
        None,
    )
    .await;
    let new = client_at(
        support::Revision::Stateless,
        Sampling::Unsupported,
        &server.url,
        None,
    )
    .await;
    assert_eq!(
        old.peer_info().unwrap().protocol_version.as_str(),
        "2025-11-25"
    );
    assert_eq!(
        new.peer_info().unwrap().protocol_version.as_str(),
        "2026-07-28"
    );
    call(
        &old,
        "write",
        json!({"title": "From the old client", "body": "hello"}),
    )
    .await;
    let fetched = call(&new, "fetch", json!({"id": "from-the-old-client"})).await;
    assert_eq!(structured(&fetched)["note"]["body"], "hello");
    // Each older revision's initialize is answered with that revision.
    let raw = support::RawHttp::new(&server.url, None);
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let answer = raw
            .request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
            )
            .await;
        assert_eq!(answer.result()["protocolVersion"], version);
    }
    old.cancel().await.unwrap();
    new.cancel().await.unwrap();
}

#[tokio::test]
async fn servers_sharing_a_state_key_accept_each_others_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "0123456789abcdef0123456789abcdef-shared\n").unwrap();
    let other_key = dir.path().join("other.key");
    std::fs::write(&other_key, "another key of at least thirty-two bytes").unwrap();
    let key_args = |file: &std::path::Path| {
        vec![
            "--memory".to_owned(),
            "--state-key-file".to_owned(),
            file.display().to_string(),
        ]
    };
    let start = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        HttpServerProcess::start(&args).await
    };
    let first = start(key_args(&key)).await;
    let second = start(key_args(&key)).await;
    let stranger = start(key_args(&other_key)).await;
    let client = |url: String| async move {
        client_at(
            support::Revision::Stateless,
            Sampling::Reply("s".into()),
            &url,
            None,
        )
        .await
    };
    let on_first = client(first.url.clone()).await;
    let input = match on_first
        .call_tool_once(summarize_params("summarize", "todo"))
        .await
    {
        Ok(CallToolResponse::InputRequired(input)) => input,
        other => panic!("{other:?}"),
    };
    let retry = summarize_params("summarize", "todo")
        .with_request_state(input.request_state.clone().unwrap())
        .with_input_responses(answers(
            input.input_requests.as_ref().unwrap(),
            "From the balancer.",
        ));
    let on_second = client(second.url.clone()).await;
    let done = on_second.call_tool_once(retry.clone()).await.unwrap();
    let CallToolResponse::Complete(done) = done else {
        panic!("{done:?}")
    };
    assert_eq!(structured(&done)["summary"], "From the balancer.");
    let on_stranger = client(stranger.url.clone()).await;
    let refused = on_stranger.call_tool_once(retry).await;
    assert!(
        matches!(&refused, Err(ServiceError::McpError(e)) if e.code.0 == -32602),
        "{refused:?}"
    );

    let short = dir.path().join("short.key");
    std::fs::write(&short, "too short").unwrap();
    let (status, _, stderr) = support::run_command(&[
        "--memory",
        "--state-key-file",
        short.to_str().unwrap(),
        "tools",
    ]);
    assert!(status.success(), "tools does not read the key: {stderr}");
    let mut bad = tokio::process::Command::new(support::server_binary())
        .args(["--memory", "--state-key-file", short.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!bad.status.success());
    bad.stderr.truncate(400);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("needs at least 32"), "{stderr}");
}

#[tokio::test]
async fn another_users_state_is_refused() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let token = |name: &str| {
        let (status, stdout, stderr) =
            support::run_command(&["--data-dir", dir, "token", "create", name]);
        assert!(status.success(), "{stderr}");
        stdout.trim().to_owned()
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", dir]).await;
    let as_user = |token: String| {
        let url = server.url.clone();
        async move {
            client_at(
                support::Revision::Stateless,
                Sampling::Reply("s".into()),
                &url,
                Some(&token),
            )
            .await
        }
    };
    let alice_client = as_user(alice).await;
    let input = match alice_client
        .call_tool_once(summarize_params("summarize", "todo"))
        .await
    {
        Ok(CallToolResponse::InputRequired(input)) => input,
        other => panic!("{other:?}"),
    };
    let bob_client = as_user(bob).await;
    let stolen = bob_client
        .call_tool_once(
            summarize_params("summarize", "todo")
                .with_request_state(input.request_state.clone().unwrap())
                .with_input_responses(answers(input.input_requests.as_ref().unwrap(), "x")),
        )
        .await;
    assert!(
        matches!(&stolen, Err(ServiceError::McpError(e)) if e.code.0 == -32602),
        "{stolen:?}"
    );
}

#[tokio::test]
async fn a_cursor_from_one_server_pages_on_another_that_shares_the_key() {
    // Two servers behind one balancer: one store, one state key.
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("state.key");
    std::fs::write(&key, "a key shared by every server of the pool, 32+").unwrap();
    let db = dir.path().join("pkb.db");
    let (db, key) = (db.to_str().unwrap(), key.to_str().unwrap());
    let first = HttpServerProcess::start(&["--db", db, "--state-key-file", key]).await;
    let second = HttpServerProcess::start(&["--db", db, "--state-key-file", key]).await;
    let stranger = HttpServerProcess::start(&["--db", db]).await;
    let client = |url: String| async move {
        client_at(
            support::Revision::Stateless,
            Sampling::Unsupported,
            &url,
            None,
        )
        .await
    };
    let on_first = client(first.url.clone()).await;
    for n in 0..110 {
        call(
            &on_first,
            "write",
            json!({"title": format!("Paged {n:03}"), "body": ""}),
        )
        .await;
    }
    let page = on_first.list_resources(None).await.unwrap();
    assert_eq!(page.resources.len(), 100);
    let cursor = page.next_cursor.clone().expect("a second page");
    let next = rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor));
    let on_second = client(second.url.clone()).await;
    let rest = on_second.list_resources(Some(next.clone())).await.unwrap();
    assert_eq!(
        rest.resources.len(),
        1 + 3 + 110 - 100,
        "the index, the seeds, the notes"
    );
    assert!(rest.next_cursor.is_none());
    let on_stranger = client(stranger.url.clone()).await;
    let refused = on_stranger.list_resources(Some(next)).await;
    assert!(
        matches!(&refused, Err(ServiceError::McpError(e)) if e.code.0 == -32602),
        "{refused:?}"
    );
}

/// Sends each batch of `batches` to a fresh stdio server, one line a message, waiting for the
/// answers of one batch (in any order: they run concurrently) before the next; every line
/// the server wrote.
async fn stdio_exchange(batches: &[&[Value]]) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(support::server_binary())
        .args(["--memory"])
        .env_remove("PKB_DB")
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn pkb-server");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen: Vec<Value> = Vec::new();
    let mut expected = 0;
    for batch in batches {
        for message in *batch {
            stdin
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
        }
        expected += batch.len();
        while seen.iter().filter(|m| !m["id"].is_null()).count() < expected {
            let line = lines.next_line().await.unwrap().expect("a line");
            seen.push(serde_json::from_str(&line).unwrap());
        }
    }
    seen
}

#[tokio::test]
async fn the_log_level_comes_with_each_request() {
    let summarize = |id: u64, level: Option<&str>| {
        let mut meta = meta();
        if let Some(level) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"_meta": meta, "name": "summarize", "arguments": {"id": "todo"}}})
    };
    let logs = |seen: &[Value]| {
        seen.iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| m["params"]["data"].clone())
            .collect::<Vec<_>>()
    };
    let seen = stdio_exchange(&[&[
        summarize(1, Some("info")),
        summarize(2, None),
        summarize(3, Some("warning")),
    ]])
    .await;
    assert_eq!(
        logs(&seen),
        [json!({"summarized": "todo", "source": "extractive"})],
        "one log, for the request that asked for info: {seen:?}"
    );

    // The older revisions keep logging/setLevel for the session.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let set_level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}});
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "summarize", "arguments": {"id": "todo"}}});
    let seen = stdio_exchange(&[&[initialize], &[set_level], &[call]]).await;
    assert_eq!(
        logs(&seen),
        [json!({"summarized": "todo", "source": "extractive"})]
    );
}

#[tokio::test]
async fn each_change_is_recorded_as_made_by_the_client_its_request_names() {
    let call = |id: u64, client: Option<(&str, &str)>, tool: &str, arguments: Value| {
        let mut meta = meta();
        match client {
            Some((name, version)) => {
                meta["io.modelcontextprotocol/clientInfo"] =
                    json!({"name": name, "version": version});
            }
            None => {
                meta.as_object_mut()
                    .unwrap()
                    .remove("io.modelcontextprotocol/clientInfo");
            }
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"_meta": meta, "name": tool, "arguments": arguments}})
    };
    let seen = stdio_exchange(&[
        &[call(
            1,
            Some(("ChatGPT", "1.2")),
            "write",
            json!({"title": "Shared", "body": "a"}),
        )],
        &[call(
            2,
            Some(("claude-ai", "0.9")),
            "edit",
            json!({"id": "shared", "append": "b"}),
        )],
        &[call(
            3,
            None,
            "edit",
            json!({"id": "shared", "append": "c"}),
        )],
        &[call(
            4,
            Some(("raw", "1")),
            "history",
            json!({"id": "shared"}),
        )],
    ])
    .await;
    let history = seen
        .iter()
        .find(|m| m["id"] == json!(4))
        .expect("the history's answer");
    let by: Vec<&str> = history["result"]["structuredContent"]["versions"]
        .as_array()
        .unwrap_or_else(|| panic!("{history}"))
        .iter()
        .map(|v| v["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, ["unknown client", "claude-ai 0.9", "ChatGPT 1.2"]);
}
