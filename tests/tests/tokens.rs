//! `--auth tokens`: the token commands, bearer checks, read-only tokens, revocation seen by a
//! running server, and users who never see each other's notes on any surface.

#![allow(deprecated)] // subscribe is deprecated only for the stateless 2026-07-28 revision

#[macro_use]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{
    HttpServerProcess, RawHttp, RecordingClient, Sampling, call, connect_http,
    refused_before_its_body, run_command, structured, text,
};

/// A data directory with tokens `alice`, `bob` and the read-only `reader`.
fn data_dir_with_tokens() -> (tempfile::TempDir, String, String, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap().to_owned();
    let make = |name: &str, read_only: bool| {
        let mut args = vec!["--data-dir", &path, "token", "create", name];
        if read_only {
            args.push("--read-only");
        }
        let (status, stdout, stderr) = run_command(&args);
        assert!(status.success(), "{stderr}");
        let token = stdout.trim().to_owned();
        assert!(token.len() >= 32, "a token of at least 128 bits: {token}");
        token
    };
    let alice = make("alice", false);
    let bob = make("bob", false);
    let reader = make("reader", true);
    (dir, path, alice, bob, reader)
}

#[test]
fn token_commands_keep_hashes_only() {
    let (dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let (status, stdout, _) = run_command(&["--data-dir", &path, "token", "list"]);
    assert!(status.success());
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert!(
        lines[0].starts_with("alice\tnotes:read notes:write\t"),
        "{stdout}"
    );
    assert!(lines[2].starts_with("reader\tnotes:read\t"), "{stdout}");
    assert!(!stdout.contains(&alice));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let content = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&content).contains(&alice),
            "a token is never stored"
        );
    }
    let (status, _, stderr) = run_command(&["--data-dir", &path, "token", "create", "alice"]);
    assert!(!status.success());
    assert!(stderr.contains("exists"), "{stderr}");
    let (status, _, _) = run_command(&["--data-dir", &path, "token", "revoke", "alice"]);
    assert!(status.success());
    let (status, _, stderr) = run_command(&["--data-dir", &path, "token", "revoke", "alice"]);
    assert!(!status.success());
    assert!(stderr.contains("no token named"), "{stderr}");
}

#[tokio::test]
async fn requests_without_a_valid_bearer_token_get_401() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let missing = RawHttp::new(&server.url, None).initialize().await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate").as_deref(),
        Some("Bearer")
    );
    for bad in [
        "pkb_not-a-token",
        &format!("{alice}x"),
        &alice[..alice.len() - 1],
    ] {
        let answer = RawHttp::new(&server.url, Some(bad)).initialize().await;
        assert_eq!(answer.status, 401);
        assert_eq!(
            answer.header("www-authenticate").as_deref(),
            Some("Bearer error=\"invalid_token\"")
        );
    }
    // Another scheme, or the token in the query string, is no bearer token.
    let raw = RawHttp::new(&server.url, None);
    let basic = raw
        .post_builder(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .header("authorization", format!("Basic {alice}"));
    assert_eq!(RawHttp::send(basic).await.status, 401);
    let query = RawHttp::new(&format!("{}?access_token={alice}", server.url), None)
        .initialize()
        .await;
    assert_eq!(query.status, 401);
    // The answer never depends on whether a name exists.
    let (status, _, _) = run_command(&["--data-dir", &path, "token", "list"]);
    assert!(status.success());
    let ok = RawHttp::new(&server.url, Some(&alice)).initialize().await;
    assert!(ok.status.is_success(), "{ok:?}");
}

/// The official Python SDK's OAuth client posts its first request without a token and, after
/// the 401, goes on with a connection from its pool: one the server closed unsaid would lose
/// that next request ("Server disconnected without sending a response").
#[tokio::test]
async fn a_401_before_the_body_came_ends_its_connection_saying_so() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let address = server.origin().trim_start_matches("http://").to_owned();
    let status = refused_before_its_body(&address, "").await;
    assert!(status.starts_with("HTTP/1.1 401"), "{status}");
    let status =
        refused_before_its_body(&address, "Authorization: Bearer pkb_not-a-token\r\n").await;
    assert!(status.starts_with("HTTP/1.1 401"), "{status}");
    let ok = RawHttp::new(&server.url, Some(&alice)).initialize().await;
    assert!(ok.status.is_success(), "{ok:?}");
}

#[tokio::test]
async fn a_read_only_token_reads_and_every_write_gets_403() {
    let (_dir, path, _alice, _bob, reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let mut raw = RawHttp::new(&server.url, Some(&reader));
    assert!(raw.initialize().await.status.is_success());
    let fetched = raw.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(fetched.result()["structuredContent"]["note"]["id"], "todo");
    assert!(
        raw.request("resources/list", json!({}))
            .await
            .status
            .is_success()
    );
    for (tool, arguments) in [
        (
            "write",
            json!({"title": "Todo", "body": "overwritten", "overwrite": true}),
        ),
        ("write", json!({"title": "Sneaky", "body": ""})),
        ("summarize_and_save", json!({"id": "todo"})),
        ("delete", json!({"id": "todo"})),
        ("edit", json!({"id": "todo", "append": "x"})),
        ("restore", json!({"id": "todo", "version": 1})),
    ] {
        let answer = raw.call(tool, arguments).await;
        assert_eq!(answer.status, 403, "{tool}: {answer:?}");
        assert_eq!(
            answer.header("www-authenticate").as_deref(),
            Some("Bearer error=\"insufficient_scope\", scope=\"notes:write\"")
        );
    }
    // The gate reads the method and tool as rmcp does: escapes and duplicate keys do not
    // slip a write past it.
    for body in [
        r#"{"jsonrpc":"2.0","id":90,"method":"tools\/call","params":{"name":"writ\u0065","arguments":{"title":"Escaped","body":""}}}"#,
        r#"{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{"name":"fetch","name":"write","arguments":{"title":"Escaped","body":""}}}"#,
        r#"[{"jsonrpc":"2.0","id":92,"method":"tools/call","params":{"name":"write","arguments":{"title":"Escaped","body":""}}}]"#,
    ] {
        let answer = RawHttp::send(raw.post_builder(&json!({})).body(body)).await;
        // Refused for its scope, or as no message the server can read (as on stdio).
        assert!(
            answer.status == 403 || [-32600, -32602].contains(&answer.error_code()),
            "{body}: {answer:?}"
        );
    }
    let escaped = raw.call("fetch", json!({"id": "escaped"})).await;
    assert_eq!(escaped.result()["isError"], true, "nothing was written");
    let todo = raw.call("fetch", json!({"id": "todo"})).await;
    assert_ne!(
        todo.result()["structuredContent"]["note"]["body"],
        "overwritten"
    );
    let sneaky = raw.call("fetch", json!({"id": "sneaky"})).await;
    assert_eq!(sneaky.result()["isError"], true, "nothing was written");
    // The history is read, as notes are.
    let history = raw.call("history", json!({"id": "todo"})).await;
    assert_eq!(
        history.result()["structuredContent"]["versions"][0]["version"],
        1
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_a_parse_error_with_authorization_on() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    support::refuses_a_body_that_is_not_json(&mut RawHttp::new(&server.url, Some(&alice))).await;
}

#[tokio::test]
async fn json_that_is_no_readable_message_is_answered_as_on_stdio_with_authorization_on() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let mut raw = RawHttp::new(&server.url, Some(&alice));
    support::answers_unreadable_messages_as_on_stdio(&mut raw).await;
}

#[tokio::test]
async fn a_revoked_token_fails_within_a_second_in_a_running_server() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let mut raw = RawHttp::new(&server.url, Some(&alice));
    assert!(raw.initialize().await.status.is_success());
    assert!(
        raw.call("fetch", json!({"id": "todo"}))
            .await
            .status
            .is_success()
    );
    let (status, _, _) = run_command(&["--data-dir", &path, "token", "revoke", "alice"]);
    assert!(status.success());
    support::refused_within(&server.url, &alice, Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_token_made_while_the_server_runs_works_at_its_first_request() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    for attempt in 0..3 {
        // The server has just looked at the tokens file (for this request), so a token made
        // now is one it has not read yet.
        assert!(
            RawHttp::new(&server.url, Some(&alice))
                .initialize()
                .await
                .status
                .is_success()
        );
        let name = format!("carol{attempt}");
        let (status, stdout, stderr) =
            run_command(&["--data-dir", &path, "token", "create", &name]);
        assert!(status.success(), "{stderr}");
        let carol = stdout.trim().to_owned();
        let answer = RawHttp::new(&server.url, Some(&carol)).initialize().await;
        assert!(
            answer.status.is_success(),
            "a new token at its first request: {answer:?}"
        );
    }
}

#[tokio::test]
async fn a_revoked_token_s_sessions_end_with_their_event_streams() {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;
    let mut raw = RawHttp::new(&server.url, Some(&alice));
    assert!(raw.initialize().await.status.is_success());
    let mut stream = raw.event_stream().await;
    assert!(stream.status().is_success(), "{stream:?}");
    // The stream carried the user's note changes; it ends rather than outlive the token.
    ends_soon_after_revoking(&path, "alice", &mut stream).await;
}

/// Revokes `user`'s token and sees `stream` end within two seconds.
async fn ends_soon_after_revoking(path: &str, user: &str, stream: &mut reqwest::Response) {
    let (status, _, _) = run_command(&["--data-dir", path, "token", "revoke", user]);
    assert!(status.success());
    let revoked = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the stream still open 5 s after the revocation"
    );
    assert!(
        revoked.elapsed() < Duration::from_secs(2),
        "ended {:?} after the revocation",
        revoked.elapsed()
    );
}

#[tokio::test]
async fn a_revoked_token_s_stateless_listen_streams_end() {
    for session in [None, Some("made-up")] {
        a_revoked_token_s_stateless_listen_stream_ends(session).await;
    }
}

/// A listen stream opened with a token (and `session` as its session header, which the
/// stateless revision does not read) ends once the token is revoked.
async fn a_revoked_token_s_stateless_listen_stream_ends(session: Option<&str>) {
    let (_dir, path, alice, _bob, _reader) = data_dir_with_tokens();
    let server = HttpServerProcess::start(&["--auth", "tokens", "--data-dir", &path]).await;

    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
        },
        "notifications": {"resourcesListChanged": true, "resourceSubscriptions": ["pkb://notes"]}
    }});
    let mut request = support::http_client()
        .post(&server.url)
        .bearer_auth(&alice)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let mut stream = request.send().await.unwrap();
    if !stream.status().is_success() {
        panic!("{:?}: {}", stream.status(), stream.text().await.unwrap());
    }
    assert!(
        stream.headers().get("mcp-session-id").is_none(),
        "no session issued"
    );
    ends_soon_after_revoking(&path, "alice", &mut stream).await;
}

/// A `subscriptions/listen` of the stateless revision, as `token`'s user; the response (an
/// event stream while it is held) or the refusal.
async fn listen(url: &str, token: Option<&str>) -> reqwest::Response {
    listen_naming(url, token, "2026-07-28").await
}

/// [`listen`], naming `revision` in its header and its `_meta`.
async fn listen_naming(url: &str, token: Option<&str>, revision: &str) -> reqwest::Response {
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}
        },
        "notifications": {"resourcesListChanged": true}
    }});
    let mut request = support::http_client()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", revision)
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Streams outside any session are counted: against `--max-sessions` in all, and
/// `STREAMS_PER_USER` for one user, as sessions are counted.
#[tokio::test]
async fn listen_streams_outside_sessions_are_counted_in_all_and_by_user() {
    let (_dir, path, alice, bob, _reader) = data_dir_with_tokens();
    let per_user = pkb_core::transport::http::STREAMS_PER_USER;
    let max = (per_user + 2).to_string();
    let server = HttpServerProcess::start(&[
        "--auth",
        "tokens",
        "--data-dir",
        &path,
        "--max-sessions",
        &max,
    ])
    .await;
    let mut open = Vec::new();
    for _ in 0..per_user {
        let stream = listen(&server.url, Some(&alice)).await;
        assert!(stream.status().is_success(), "{:?}", stream.status());
        open.push(stream);
    }
    let refused = listen(&server.url, Some(&alice)).await;
    assert_eq!(refused.status(), 503, "one user's limit");
    // A request whose own `_meta` makes it stateless, whatever revision it names, counts too.
    let refused = listen_naming(&server.url, Some(&alice), "2025-11-25").await;
    assert_eq!(refused.status(), 503, "one user's limit, by any revision");
    for _ in 0..2 {
        let stream = listen(&server.url, Some(&bob)).await;
        assert!(stream.status().is_success(), "another user's streams");
        open.push(stream);
    }
    let refused = listen(&server.url, Some(&bob)).await;
    assert_eq!(refused.status(), 503, "the limit in all");
    // Other requests are not held back by it.
    let mut raw = RawHttp::new(&server.url, Some(&bob));
    assert!(raw.initialize().await.status.is_success());
    drop(open);
}

#[tokio::test]
async fn users_never_see_each_others_notes() {
    users_never_see_each_others_notes_in(&[]).await;
}

#[tokio::test]
async fn users_never_see_each_others_notes_in_one_postgresql_database() {
    let Some(url) = support::postgres_database().await else {
        return;
    };
    users_never_see_each_others_notes_in(&["--db", &url]).await;
}

/// The isolation test, with each user's notes where `store_args` puts them (by default a
/// file each under the data directory).
async fn users_never_see_each_others_notes_in(store_args: &[&str]) {
    let (_dir, path, alice, bob, _reader) = data_dir_with_tokens();
    let mut args = vec!["--auth", "tokens", "--data-dir", &path, "--no-seed"];
    args.extend_from_slice(store_args);
    let server = HttpServerProcess::start(&args).await;
    let unsupported = || RecordingClient::new(Sampling::Unsupported);
    let alice_client = connect_http(unsupported(), &server.url, Some(&alice)).await;
    let bob_watcher = unsupported();
    let bob_client = connect_http(bob_watcher.clone(), &server.url, Some(&bob)).await;
    bob_client
        .subscribe(rmcp::model::SubscribeRequestParams::new("pkb://notes"))
        .await
        .unwrap();
    bob_client
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "pkb://notes/secret-plan",
        ))
        .await
        .unwrap();
    let alice_watcher = unsupported();
    let alice_second = connect_http(alice_watcher.clone(), &server.url, Some(&alice)).await;
    alice_second
        .subscribe(rmcp::model::SubscribeRequestParams::new("pkb://notes"))
        .await
        .unwrap();

    let saved = call(
        &alice_client,
        "write",
        json!({"title": "Secret plan", "body": "alice only", "tags": ["hidden"]}),
    )
    .await;
    assert_eq!(text(&saved), "saved: secret-plan");
    for n in 0..101 {
        call(
            &alice_client,
            "write",
            json!({"title": format!("Alice note {n:03}"), "body": ""}),
        )
        .await;
    }

    // Search, fetch, resources, completions: nothing of alice's reaches bob.
    let found = call(
        &bob_client,
        "search",
        json!({"query": "secret", "mode": "words"}),
    )
    .await;
    assert_eq!(structured(&found)["results"], json!([]));
    let fetched = call(&bob_client, "fetch", json!({"id": "secret-plan"})).await;
    assert_eq!(text(&fetched), "No note found with ID: secret-plan");
    let listed = bob_client.list_all_resources().await.unwrap();
    assert!(
        listed.iter().all(|r| !r.uri.starts_with("pkb://notes/")),
        "{listed:?}"
    );
    let read = bob_client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "pkb://notes/secret-plan",
        ))
        .await;
    assert!(read.is_err(), "{read:?}");
    let index = bob_client
        .read_resource(rmcp::model::ReadResourceRequestParams::new("pkb://notes"))
        .await
        .unwrap();
    let index = serde_json::to_string(&index).unwrap();
    assert!(!index.contains("secret"), "{index}");
    let completion = bob_client
        .complete(rmcp::model::CompleteRequestParams::new(
            rmcp::model::Reference::for_resource("pkb://notes/{id}"),
            rmcp::model::ArgumentInfo::new("id", "sec"),
        ))
        .await
        .unwrap();
    assert!(completion.completion.values.is_empty());
    let tags = bob_client
        .complete(rmcp::model::CompleteRequestParams::new(
            rmcp::model::Reference::for_prompt("quick_capture"),
            rmcp::model::ArgumentInfo::new("tags", "hid"),
        ))
        .await
        .unwrap();
    assert!(tags.completion.values.is_empty());
    // Nor alice's history: her note's versions, her changes, her deleted notes.
    call(
        &alice_client,
        "edit",
        json!({"id": "secret-plan", "append": "more"}),
    )
    .await;
    call(
        &alice_client,
        "write",
        json!({"title": "Gone plan", "body": "deleted"}),
    )
    .await;
    call(&alice_client, "delete", json!({"id": "gone-plan"})).await;
    for (tool, arguments, told) in [
        (
            "history",
            json!({"id": "secret-plan"}),
            "No note found with ID: secret-plan",
        ),
        (
            "history",
            json!({"id": "gone-plan"}),
            "No note found with ID: gone-plan",
        ),
        (
            "fetch",
            json!({"id": "gone-plan", "version": 1}),
            "No note found with ID: gone-plan",
        ),
        (
            "restore",
            json!({"id": "gone-plan", "version": 1}),
            "No note found with ID: gone-plan",
        ),
        (
            "edit",
            json!({"id": "secret-plan", "append": "x"}),
            "No note found with ID: secret-plan",
        ),
    ] {
        assert_eq!(
            text(&call(&bob_client, tool, arguments).await),
            told,
            "{tool}"
        );
    }
    let changes = structured(&call(&bob_client, "history", json!({})).await);
    assert_eq!(changes["changes"], json!([]), "bob has made no change yet");
    let history = bob_client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "pkb://notes/secret-plan/history",
        ))
        .await;
    assert!(history.is_err(), "{history:?}");
    // Bob may write the same title: it is his own note.
    let his = call(
        &bob_client,
        "write",
        json!({"title": "Secret plan", "body": "bob's"}),
    )
    .await;
    assert_eq!(structured(&his)["created"], true);

    // Alice's other session heard of her writes; bob heard only of his own.
    let deadline = Instant::now() + Duration::from_secs(5);
    while *alice_watcher.list_changed.lock().unwrap() < 102 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(*alice_watcher.list_changed.lock().unwrap() >= 102);
    assert!(*bob_watcher.list_changed.lock().unwrap() <= 1);
    assert!(
        bob_watcher
            .updated
            .lock()
            .unwrap()
            .iter()
            .all(|uri| uri == "pkb://notes" || uri == "pkb://notes/secret-plan"),
    );
    assert!(
        bob_watcher.updated.lock().unwrap().len() <= 2,
        "only bob's own write"
    );

    // A session id or a cursor carried to the other user is refused.
    let mut alice_raw = RawHttp::new(&server.url, Some(&alice));
    alice_raw.initialize().await;
    let first_page = alice_raw
        .request("resources/list", json!({}))
        .await
        .result();
    let cursor = first_page["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let bob_in_alice_session = alice_raw.with_token(Some(&bob));
    let answer = bob_in_alice_session
        .call("fetch", json!({"id": "secret-plan"}))
        .await;
    assert_eq!(answer.status, 404, "{answer:?}");
    let mut bob_in_no_session = bob_in_alice_session.with_token(Some(&bob));
    bob_in_no_session.session = Some("no-such-session".into());
    let unknown = bob_in_no_session
        .call("fetch", json!({"id": "secret-plan"}))
        .await;
    let seen = |a: &support::RawAnswer| {
        (
            a.status,
            a.headers.get("content-type").cloned(),
            a.body.clone(),
        )
    };
    assert_eq!(
        seen(&answer),
        seen(&unknown),
        "another user's session reads as none at all"
    );
    // Nor can another user end it (Alice goes on using it below).
    assert_eq!(bob_in_alice_session.end_session().await, 404);
    assert_eq!(bob_in_no_session.end_session().await, 404);
    let mut bob_raw = RawHttp::new(&server.url, Some(&bob));
    bob_raw.initialize().await;
    let answer = bob_raw
        .request("resources/list", json!({ "cursor": cursor }))
        .await;
    assert_eq!(answer.error_code(), -32602);
    let second_page = alice_raw
        .request("resources/list", json!({ "cursor": cursor }))
        .await;
    assert!(second_page.result()["resources"].as_array().is_some());
    // Nor does a link of bob's reach alice's note.
    call(
        &bob_client,
        "write",
        json!({"title": "Bobs links", "body": "[[Secret plan]] [[secret-plan]]"}),
    )
    .await;
    let links = structured(&call(&bob_client, "fetch", json!({"id": "bobs-links"})).await);
    assert_eq!(
        links["links"],
        json!([
            {"target": "Secret plan", "id": "secret-plan", "title": "Secret plan"},
        ]),
        "bob's own secret-plan, written above, and never alice's"
    );
    let alices = structured(&call(&alice_client, "fetch", json!({"id": "secret-plan"})).await);
    assert_eq!(
        alices["backlinks"],
        json!([]),
        "bob's link is no backlink of alice's note"
    );
}
