//! What only the Streamable HTTP transport has: its endpoints, the DNS-rebinding defence,
//! body and session limits, slow clients, and a clean stop with a call in flight. The tools
//! themselves are tested over HTTP by the transport-neutral suites.

#![allow(deprecated)] // subscribe is deprecated only for the stateless 2026-07-28 revision

#[macro_use]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{
    HttpServerProcess, RawHttp, RecordingClient, Sampling, a_read_request_keeps_its_connection,
    call, connect_http, http_client, refused_before_its_body, run_command, structured,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn health_answers_without_authorization() {
    let server = HttpServerProcess::start(&["--memory", "--auth", "none"]).await;
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let answer = http_client()
        .get(format!("{}/healthz", server.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "ok");
}

#[tokio::test]
async fn hosts_and_origins_not_allowed_get_403() {
    let server = HttpServerProcess::start(&[
        "--memory",
        "--allowed-host",
        "notes.internal",
        "--allowed-origin",
        "http://localhost:6274",
    ])
    .await;
    let mut raw = RawHttp::new(&server.url, None);
    let port = server.origin().rsplit(':').next().unwrap().to_owned();
    let with = |host: Option<&str>, origin: Option<&str>| {
        let mut request = raw.post_builder(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        RawHttp::send(request)
    };
    for (host, origin) in [
        (Some("evil.example"), None),
        (Some(&format!("evil.example:{port}") as &str), None),
        (None, Some("http://evil.example")),
        (None, Some("null")),
        (None, Some("http://localhost:6275")),
        (
            Some("localhost.evil.example"),
            Some("http://localhost:6274"),
        ),
    ] {
        let answer = with(host, origin).await;
        assert_eq!(
            answer.status, 403,
            "host {host:?} origin {origin:?}: {answer:?}"
        );
    }
    for (host, origin) in [
        (Some("localhost"), None),
        (Some(&format!("[::1]:{port}") as &str), None),
        (Some("notes.internal"), None),
        (None, Some(server.origin())),
        (None, Some("http://localhost:6274")),
    ] {
        let answer = with(host, origin).await;
        assert_ne!(
            answer.status, 403,
            "host {host:?} origin {origin:?}: {answer:?}"
        );
    }
    // Every name a request gives counts, whichever a later layer would read.
    let twice = |name: &'static str, allowed: String, evil: &'static str| {
        let request = raw.post_builder(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        RawHttp::send(request.header(name, allowed).header(name, evil))
    };
    let host = format!("localhost:{port}");
    assert_eq!(twice("host", host, "evil.example").await.status, 403);
    let origin = server.origin().to_owned();
    assert_eq!(
        twice("origin", origin, "http://evil.example").await.status,
        403
    );
    assert_eq!(with(None, Some("")).await.status, 403, "an empty Origin");
    let address = server.origin().trim_start_matches("http://").to_owned();
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
    let head = format!(
        "POST http://evil.example/mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let status = status_of_raw_post(&address, head, body).await;
    assert!(
        status.contains(" 403 "),
        "a target naming another host: {status}"
    );
    // The check comes before everything else, health included.
    let health = http_client()
        .get(format!("{}/healthz", server.origin()))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 403);
    assert!(raw.initialize().await.status.is_success());
}

#[tokio::test]
async fn a_request_refused_before_its_body_came_ends_its_connection_saying_so() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let address = server.origin().trim_start_matches("http://").to_owned();
    let status = refused_before_its_body(&address, "Origin: http://evil.example\r\n").await;
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    a_read_request_keeps_its_connection(&address).await;
    // The server goes on, on new connections.
    let mut raw = RawHttp::new(&server.url, None);
    assert!(raw.initialize().await.status.is_success());
}

/// Sends `head` and then `body` on a fresh connection, without waiting for the body to be
/// taken, and returns the status line of the answer: a server that refuses a body early
/// answers before the client has finished sending it.
async fn status_of_raw_post(address: &str, head: String, body: Vec<u8>) -> String {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
        writer
    });
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(30), reader.read(&mut buffer))
            .await
            .expect("an answer")
            .unwrap();
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
    }
    sending.abort();
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_body_over_4_mib_gets_413_and_the_server_goes_on() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let mut raw = RawHttp::new(&server.url, None);
    raw.initialize().await;
    let address = server.origin().trim_start_matches("http://").to_owned();
    let session = raw.session.clone().unwrap();
    let headers = |framing: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
             Mcp-Protocol-Version: 2025-11-25\r\n{framing}\r\n"
        )
    };
    let size = 4 * 1024 * 1024 + 1;
    let sized = status_of_raw_post(
        &address,
        headers(&format!("Content-Length: {size}\r\n")),
        vec![b' '; size],
    )
    .await;
    assert!(sized.contains(" 413 "), "{sized}");
    // Streamed without a length, too: refused once it passes the limit.
    let mut chunked = Vec::new();
    for _ in 0..5 {
        chunked.extend_from_slice(format!("{:x}\r\n", 1024 * 1024).as_bytes());
        chunked.extend(std::iter::repeat_n(b' ', 1024 * 1024));
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let streamed =
        status_of_raw_post(&address, headers("Transfer-Encoding: chunked\r\n"), chunked).await;
    assert!(streamed.contains(" 413 "), "{streamed}");
    let answer = raw.call("echo", json!({"text": "still here"})).await;
    assert_eq!(answer.result()["structuredContent"]["text"], "still here");
}

#[tokio::test]
async fn a_deleted_or_unknown_session_gets_404() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let mut raw = RawHttp::new(&server.url, None);
    raw.initialize().await;
    assert!(
        raw.call("fetch", json!({"id": "todo"}))
            .await
            .status
            .is_success()
    );
    // 204: an ended session, as the official SDKs expect (rmcp's own answer is 202).
    assert_eq!(raw.end_session().await, 204);
    assert_eq!(raw.call("fetch", json!({"id": "todo"})).await.status, 404);
    let mut unknown = raw.clone();
    unknown.session = Some("no-such-session".into());
    assert_eq!(
        unknown.call("fetch", json!({"id": "todo"})).await.status,
        404
    );
    // Ending a session that ended, or never was, finds none either.
    assert_eq!(raw.end_session().await, 404);
    assert_eq!(unknown.end_session().await, 404);
    // The 2026-07-28 revision has no sessions to end.
    let stateless = raw
        .client
        .delete(&server.url)
        .header("mcp-session-id", "no-such-session")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(stateless.status(), 405);
}

#[tokio::test]
async fn past_max_sessions_initialize_gets_503_and_open_sessions_go_on() {
    let server = HttpServerProcess::start(&["--memory", "--max-sessions", "2"]).await;
    let mut first = RawHttp::new(&server.url, None);
    let mut second = RawHttp::new(&server.url, None);
    let mut third = RawHttp::new(&server.url, None);
    assert!(first.initialize().await.status.is_success());
    assert!(second.initialize().await.status.is_success());
    assert_eq!(third.initialize().await.status, 503);
    // A field the gate does not read, of a type it did not expect, is still an initialize.
    let odd = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "name": 0,
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "pkb-tests", "version": "1"}
    }});
    let answer = RawHttp::send(third.post_builder(&odd)).await;
    assert_eq!(answer.status, 503, "{answer:?}");
    for open in [&first, &second] {
        let answer = open.call("fetch", json!({"id": "todo"})).await;
        assert_eq!(answer.result()["structuredContent"]["note"]["id"], "todo");
    }
}

/// The first `initialize` of a client, without a session yet, that cannot be read: -32602
/// naming the field, with its id and 200, as stdio answers it (rmcp took it for another
/// request without a session: 400 `Session ID is required`). No session is opened for it.
#[tokio::test]
async fn an_initialize_without_client_info_is_answered_as_on_stdio() {
    let server = HttpServerProcess::start(&["--memory", "--max-sessions", "1"]).await;
    let raw = RawHttp::new(&server.url, None);
    for (n, params) in [
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"version": "1"}}),
    ]
    .into_iter()
    .enumerate()
    {
        let body = json!({"jsonrpc": "2.0", "id": 70 + n, "method": "initialize", "params": params});
        let answer = RawHttp::send(raw.post_builder(&body)).await;
        assert_eq!(answer.status, 200, "{body} -> {answer:?}");
        assert_eq!(answer.error_code(), -32602, "{body} -> {answer:?}");
        let message = answer.message.as_ref().unwrap();
        assert_eq!(message["id"], 70 + n, "{answer:?}");
        let missing = if n == 0 { "`clientInfo`" } else { "`name`" };
        assert!(
            message["error"]["message"].as_str().unwrap().contains(&format!("missing field {missing}")),
            "{answer:?}"
        );
        assert_eq!(answer.header("mcp-session-id"), None, "{answer:?}");
    }
    let mut good = RawHttp::new(&server.url, None);
    assert!(
        good.initialize().await.status.is_success(),
        "the one session's place is free"
    );
}

#[tokio::test]
async fn a_body_that_is_not_json_gets_a_parse_error_and_the_server_goes_on() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    support::refuses_a_body_that_is_not_json(&mut RawHttp::new(&server.url, None)).await;
}

#[tokio::test]
async fn json_that_is_no_readable_message_is_answered_as_on_stdio() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    support::answers_unreadable_messages_as_on_stdio(&mut RawHttp::new(&server.url, None)).await;
}

#[tokio::test]
async fn event_streams_open_with_a_priming_event_from_2025_11_25_on_only() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    for (revision, primed) in [
        ("2024-11-05", false),
        ("2025-03-26", false),
        ("2025-06-18", false),
        ("2025-11-25", true),
    ] {
        let raw = RawHttp::new(&server.url, None);
        let params = json!({
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "pkb-tests", "version": "1"}
        });
        let answer = raw.request("initialize", params).await;
        assert_eq!(answer.result()["protocolVersion"], revision, "{answer:?}");
        let empty_event = answer
            .body
            .split("\n\n")
            .any(|event| event.lines().any(|line| line.trim() == "data:"));
        assert_eq!(empty_event, primed, "{revision}: {}", answer.body);
        // The session's own event stream (GET) opens the same way.
        let session = answer.header("mcp-session-id").expect("a session");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let sent = support::http_client()
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", revision)
            .body(initialized.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(sent.status(), 202);
        let mut stream = support::http_client()
            .get(&server.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", revision)
            .send()
            .await
            .unwrap();
        assert!(
            stream.status().is_success(),
            "{revision}: {:?}",
            stream.status()
        );
        let first = tokio::time::timeout(Duration::from_millis(1500), stream.chunk()).await;
        let primed_stream = match first {
            Ok(Ok(Some(chunk))) => String::from_utf8_lossy(&chunk)
                .lines()
                .any(|line| line.trim() == "data:"),
            _ => false,
        };
        assert_eq!(
            primed_stream, primed,
            "{revision}: the session's GET stream"
        );
    }
}

#[tokio::test]
async fn idle_sessions_end() {
    let server = HttpServerProcess::start(&["--memory", "--session-idle-timeout", "1"]).await;
    let mut raw = RawHttp::new(&server.url, None);
    raw.initialize().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(raw.call("fetch", json!({"id": "todo"})).await.status, 404);
}

/// Calls answered without rmcp's session worker still count as use of the session.
#[tokio::test]
async fn a_session_in_use_outlives_the_idle_timeout() {
    let server = HttpServerProcess::start(&["--memory", "--session-idle-timeout", "1"]).await;
    let mut raw = RawHttp::new(&server.url, None);
    raw.initialize().await;
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        let answer = raw.call("fetch", json!({"id": "todo"})).await;
        assert_eq!(answer.result()["structuredContent"]["note"]["id"], "todo");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn a_client_that_sends_its_headers_slowly_is_cut_off() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let address = server.origin().trim_start_matches("http://").to_owned();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), slow.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the connection was not closed");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(25),
        "cut off after {waited:?}, before the 30 s limit"
    );
    // Everyone else was served meanwhile.
    let mut raw = RawHttp::new(&server.url, None);
    assert!(raw.initialize().await.status.is_success());
}

#[tokio::test]
async fn sigterm_answers_the_call_in_flight_then_exits_0() {
    let mut server = HttpServerProcess::start(&["--memory"]).await;
    let handler = RecordingClient::new(Sampling::After(
        Duration::from_millis(1500),
        "A slow summary.".into(),
    ));
    let client = connect_http(handler, &server.url, None).await;
    let in_flight = tokio::spawn(async move {
        let result = call(&client, "summarize", json!({"id": "deploy-checklist"})).await;
        (client, result)
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    terminate(&server);
    let answered = tokio::time::timeout(Duration::from_secs(10), in_flight).await;
    let Ok(answered) = answered else {
        panic!(
            "the call in flight was not answered; the server said: {:?}",
            server.stderr.lock().unwrap()
        );
    };
    let (_client, result) = answered.unwrap();
    assert_eq!(structured(&result)["source"], "sampling");
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .expect("exits within the grace period")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

/// A call whose body is still coming when SIGTERM arrives was accepted before it: it is
/// answered in its session, which outlives it, and the server then exits 0.
#[tokio::test]
async fn sigterm_while_a_body_is_half_sent_answers_it_in_its_session() {
    let mut server = HttpServerProcess::start(&["--memory"]).await;
    let mut raw = RawHttp::new(&server.url, None);
    assert!(raw.initialize().await.status.is_success());
    let session = raw.session.clone().expect("a session");
    let address = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "fetch", "arguments": {"id": "todo"}}})
    .to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Mcp-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{first}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    terminate(&server);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stream.write_all(rest.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        answer.contains(r#""id":7"#) && answer.contains("todo"),
        "{answer}"
    );
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .expect("exits within the grace period")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn no_authorization_off_loopback_refuses_to_start() {
    let (status, _, stderr) = run_command(&["--memory", "--http", "0.0.0.0:0"]);
    assert!(!status.success());
    assert!(stderr.contains("--auth"), "{stderr}");
    let (status, _, stderr) = run_command(&["--memory", "--http", "0.0.0.0:0", "--auth", "none"]);
    assert!(!status.success());
    assert!(stderr.contains("--auth"), "{stderr}");
}

#[tokio::test]
async fn writes_reach_the_subscribers_of_other_sessions() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let watcher = RecordingClient::new(Sampling::Unsupported);
    let watching = connect_http(watcher.clone(), &server.url, None).await;
    watching
        .subscribe(rmcp::model::SubscribeRequestParams::new("pkb://notes/todo"))
        .await
        .unwrap();
    let writer = connect_http(
        RecordingClient::new(Sampling::Unsupported),
        &server.url,
        None,
    )
    .await;
    let result = call(
        &writer,
        "write",
        json!({"title": "Todo", "body": "new", "overwrite": true}),
    )
    .await;
    assert_eq!(structured(&result)["created"], false);
    let created = call(&writer, "write", json!({"title": "Fresh", "body": ""})).await;
    assert_eq!(structured(&created)["created"], true);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && (watcher.updated.lock().unwrap().is_empty()
            || *watcher.list_changed.lock().unwrap() == 0)
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(*watcher.updated.lock().unwrap(), ["pkb://notes/todo"]);
    assert!(*watcher.list_changed.lock().unwrap() >= 1);
}

#[tokio::test]
async fn tls_serves_https_with_the_given_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let support::TestCertificates { ca, cert, key } = support::test_certificates(dir.path());
    let server =
        HttpServerProcess::start(&["--memory", "--tls-cert", &cert, "--tls-key", &key]).await;
    assert!(
        server.url.starts_with("https://127.0.0.1:"),
        "{}",
        server.url
    );
    let pem = std::fs::read(&ca).unwrap();
    pkb_core::transport::http::install_crypto_provider();
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .build()
        .unwrap();
    let health = client
        .get(format!("{}/healthz", server.origin()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");
    let mut raw = RawHttp::new(&server.url, None);
    raw.client = client;
    assert!(raw.initialize().await.status.is_success());
    let answer = raw.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(answer.result()["structuredContent"]["note"]["id"], "todo");
    // Plain HTTP on the TLS port is not served.
    let plain = http_client()
        .get(format!(
            "{}/healthz",
            server.origin().replace("https", "http")
        ))
        .send()
        .await;
    assert!(plain.map(|r| r.status() != 200).unwrap_or(true));
}

#[tokio::test]
async fn initializes_racing_for_the_last_sessions_open_no_more_than_max_sessions() {
    let server = HttpServerProcess::start(&["--memory", "--max-sessions", "3"]).await;
    let racing = (0..24).map(|_| {
        let mut raw = RawHttp::new(&server.url, None);
        tokio::spawn(async move {
            let status = raw.initialize().await.status;
            (status, raw)
        })
    });
    let mut opened = Vec::new();
    for race in futures::future::join_all(racing).await {
        let (status, raw) = race.unwrap();
        match status.as_u16() {
            200 => opened.push(raw),
            503 => {}
            other => panic!("initialize answered {other}"),
        }
    }
    assert_eq!(opened.len(), 3, "exactly --max-sessions sessions open");
    for open in &opened {
        let answer = open.call("fetch", json!({"id": "todo"})).await;
        assert_eq!(answer.result()["structuredContent"]["note"]["id"], "todo");
    }
}

/// A plain call in a session is answered as one JSON body, the same answer rmcp's event
/// stream carries, in a session whose client can be sampled too (whose calls may send it
/// requests on their own stream, and did not); a call asking for progress keeps the event
/// stream.
#[tokio::test]
async fn plain_calls_are_answered_as_json_and_calls_that_may_reach_the_client_as_event_streams() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let mut plain = RawHttp::new(&server.url, None);
    plain.initialize().await;
    let mut sampled = RawHttp::new(&server.url, None);
    sampled.initialize_declaring(json!({"sampling": {}})).await;
    let content_type = |answer: &support::RawAnswer| answer.header("content-type").unwrap();

    let direct = plain.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(content_type(&direct), "application/json");
    let sampled_direct = sampled.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(content_type(&sampled_direct), "application/json");
    assert_eq!(direct.result(), sampled_direct.result());

    for (tool, arguments) in [
        ("no-such-tool", json!({})),
        ("fetch", json!({"id": 5})),
        ("fetch", json!({"id": "no-such-note"})),
    ] {
        let direct = plain.call(tool, arguments.clone()).await;
        let streamed = plain
            .request(
                "tools/call",
                json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": "p"}}),
            )
            .await;
        assert_eq!(content_type(&direct), "application/json");
        assert_eq!(content_type(&streamed), "text/event-stream");
        let (direct, streamed) = (direct.message.unwrap(), streamed.message.unwrap());
        // The whole message: `jsonrpc`, the request's `id`, and the result or error.
        assert_eq!(direct["result"], streamed["result"], "{tool}");
        assert_eq!(direct["error"], streamed["error"], "{tool}");
        assert_eq!(direct["jsonrpc"], "2.0");
        assert!(direct["id"].is_number(), "{direct}");
    }

    let with_progress = plain
        .request(
            "tools/call",
            json!({"name": "fetch", "arguments": {"id": "todo"}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    assert_eq!(content_type(&with_progress), "text/event-stream");
    assert_eq!(
        with_progress.result()["structuredContent"]["note"]["id"],
        "todo"
    );
}

/// In a session whose client can be sampled, a call whose handler asks its client something
/// is answered as an event stream from then on: the request first, then, once the client has
/// answered it in a POST of its own, the call's answer.
#[tokio::test]
async fn a_call_that_asks_its_client_streams_the_request_then_its_answer() {
    let server = HttpServerProcess::start(&["--memory"]).await;
    let mut sampled = RawHttp::new(&server.url, None);
    sampled.initialize_declaring(json!({"sampling": {}})).await;
    let call = json!({
        "jsonrpc": "2.0", "id": 77, "method": "tools/call",
        "params": {"name": "summarize", "arguments": {"id": "deploy-checklist"}},
    });
    let response = sampled.post_builder(&call).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut events = EventReader::new(response);
    let asked = events.next_message().await;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    let reply = json!({
        "jsonrpc": "2.0", "id": asked["id"],
        "result": {"role": "assistant", "model": "test",
                   "content": {"type": "text", "text": "Deploy in three steps."}},
    });
    let accepted = sampled.post_builder(&reply).send().await.unwrap();
    assert_eq!(accepted.status(), 202);
    let answered = events.next_message().await;
    assert_eq!(answered["id"], 77, "{answered}");
    let summary = &answered["result"]["structuredContent"];
    assert_eq!(summary["summary"], "Deploy in three steps.", "{answered}");
    assert_eq!(summary["source"], "sampling");
    assert!(
        events.next_message_or_end().await.is_none(),
        "the stream ends"
    );

    // The session goes on answering plain calls as JSON.
    let fetched = sampled.call("fetch", json!({"id": "todo"})).await;
    assert_eq!(fetched.header("content-type").unwrap(), "application/json");
}

/// The JSON-RPC messages of an event stream, as they arrive.
struct EventReader {
    response: reqwest::Response,
    buffer: String,
}

impl EventReader {
    fn new(response: reqwest::Response) -> Self {
        Self {
            response,
            buffer: String::new(),
        }
    }

    async fn next_message(&mut self) -> serde_json::Value {
        self.next_message_or_end()
            .await
            .expect("the stream ended before the next message")
    }

    /// The next event's message (events without data, as priming events, are skipped), or
    /// `None` once the stream ends.
    async fn next_message_or_end(&mut self) -> Option<serde_json::Value> {
        let deadline = std::time::Duration::from_secs(30);
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data).expect("an event of JSON"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(deadline, self.response.chunk())
                .await
                .expect("the next event within 30 s")
                .expect("the stream reads")?;
            self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

/// Sends the server SIGTERM.
fn terminate(server: &HttpServerProcess) {
    let pid = server.child.id().expect("running");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}
