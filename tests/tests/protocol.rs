//! The wire itself: raw JSON-RPC lines on the server's stdin, what comes back on stdout,
//! protocol negotiation, and the golden description of every tool, template and prompt.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

struct RawServer {
    child: Child,
    /// `None` once [`RawServer::finish`] closed it.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl RawServer {
    fn start(log: &str) -> Self {
        Self::start_on(log, &["--memory"])
    }

    fn start_on(log: &str, store: &[&str]) -> Self {
        let mut child = Command::new(support::server_binary())
            .args(store)
            .env("RUST_LOG", log)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("input still open");
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// The next answer on stdout; every line must be one JSON-RPC message, and notifications
    /// (such as `resources/list_changed` after a write) are skipped.
    fn receive(&mut self) -> Value {
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).unwrap();
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
            assert_eq!(value["jsonrpc"], "2.0", "{value}");
            if value.get("id").is_some() {
                return value;
            }
        }
    }

    fn initialize(&mut self, version: &str) -> Value {
        self.initialize_with(version, json!({}))
    }

    fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "0"}}}));
        let answer = self.receive();
        if answer.get("result").is_some() {
            self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        }
        answer
    }

    fn fetch_ok(&mut self, id: i64) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "fetch", "arguments": {"id": "todo"}}}));
        let answer = self.receive();
        assert_eq!(answer["id"], id);
        assert_eq!(
            answer["result"]["structuredContent"]["note"]["id"], "todo",
            "{answer}"
        );
    }

    /// Closes the server's input, then returns every message it wrote until it exited, which
    /// it must do cleanly.
    fn finish(&mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "exit on stdin EOF: {status}");
        rest.lines()
            .map(|line| {
                let value: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
                assert_eq!(value["jsonrpc"], "2.0", "{value}");
                value
            })
            .collect()
    }
}

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

impl Drop for RawServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn initialize_negotiates_up_to_2025_11_25() {
    let mut server = RawServer::start("warn");
    let answer = server.initialize("2025-11-25");
    let result = &answer["result"];
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "pkb");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let caps = &result["capabilities"];
    for key in ["tools", "prompts", "completions", "logging"] {
        assert!(caps.get(key).is_some(), "capability {key}: {caps}");
    }
    assert_eq!(caps["resources"]["subscribe"], true);
    assert_eq!(caps["resources"]["listChanged"], true);
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "info"}}));
    assert_eq!(server.receive()["result"], json!({}));

    let mut old = RawServer::start("warn");
    assert_eq!(
        old.initialize("2024-11-05")["result"]["protocolVersion"],
        "2024-11-05"
    );
    let mut newer = RawServer::start("warn");
    assert_eq!(
        newer.initialize("2030-01-01")["result"]["protocolVersion"],
        "2025-11-25"
    );
}

#[test]
fn initialize_never_agrees_to_the_stateless_revision() {
    // The stateless revision has no initialize: asking for it there negotiates down to the
    // newest revision that has one.
    let mut server = RawServer::start("warn");
    assert_eq!(
        server.initialize("2026-07-28")["result"]["protocolVersion"],
        "2025-11-25"
    );
    // A request that declares a revision the server does not know is refused with the
    // supported revisions listed.
    server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2027-01-01"}}}));
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32022, "{answer}");
    assert_eq!(
        answer["error"]["data"]["supported"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ])
    );
}

#[test]
fn bad_lines_get_errors_and_the_server_keeps_serving() {
    let mut server = RawServer::start("warn");
    server.initialize("2025-11-25");

    server.send_raw(b"this is not json");
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32700);
    assert_eq!(answer["id"], Value::Null);
    server.fetch_ok(1);

    server.send_raw(&[0xff, 0xfe, b'{', 0x80]);
    assert_eq!(server.receive()["error"]["code"], -32700);
    server.fetch_ok(2);

    server.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}),
    );
    let answer = server.receive();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(3), json!(-32602)),
        "{answer}"
    );
    server.fetch_ok(4);

    server.send(json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method"}));
    let answer = server.receive();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(5), json!(-32601)),
        "{answer}"
    );

    server.send(json!({"jsonrpc": "2.0", "id": 51, "method": "tools/call", "params": [1, 2]}));
    let answer = server.receive();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(51), json!(-32602)),
        "{answer}"
    );
    for (id, meta) in [(52, json!(5)), (53, json!([1]))] {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "fetch", "arguments": {"id": "todo"}, "_meta": meta}}));
        let answer = server.receive();
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (json!(id), json!(-32602)),
            "{answer}"
        );
    }
    // rmcp would read a cursor that is no string as none, and answer with the first page.
    for (id, cursor) in [(54, json!(123)), (55, json!([])), (56, json!({"a": 1}))] {
        server.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/list", "params": {"cursor": cursor}}),
        );
        let answer = server.receive();
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (json!(id), json!(-32602)),
            "{answer}"
        );
    }
    // An initialize that cannot be read says which of its own fields is wrong.
    server.send(json!({"jsonrpc": "2.0", "id": 57, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}));
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("missing field `clientInfo`"),
        "{answer}"
    );
    server.send(json!([1, 2, 3]));
    assert_eq!(server.receive()["error"]["code"], -32600);
    // A known method in a bad envelope is an invalid request, not bad params.
    for (envelope, id) in [
        (
            json!({"jsonrpc": "1.0", "id": 52, "method": "ping"}),
            json!(52),
        ),
        (json!({"id": 53, "method": "ping"}), json!(53)),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            Value::Null,
        ),
        // IDs that could not be echoed back exactly.
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "ping"}),
            Value::Null,
        ),
    ] {
        server.send(envelope.clone());
        let answer = server.receive();
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (id, json!(-32600)),
            "{envelope} -> {answer}"
        );
    }
    server.send(json!({"jsonrpc": "2.0", "id": 6}));
    assert_eq!(server.receive()["error"]["code"], -32600);
    // A response to a request the server never sent is ignored.
    server.send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}));
    server.fetch_ok(7);

    let deep = "[".repeat(100_000);
    server.send_raw(deep.as_bytes());
    assert_eq!(server.receive()["error"]["code"], -32700);
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "a".repeat(20 << 20)
    );
    server.send_raw(huge.as_bytes());
    let answer = server.receive();
    assert_eq!(answer["error"]["code"], -32700, "a 20 MB line is refused");
    server.fetch_ok(9);
}

#[test]
fn stdout_carries_only_json_rpc_even_at_trace_level() {
    let mut server = RawServer::start("trace");
    server.initialize("2025-11-25");
    for id in 1..=5 {
        server.fetch_ok(id);
    }
    server.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "write", "arguments": {"title": "Trace", "body": "x"}}}));
    let answer = server.receive();
    assert_eq!(answer["result"]["content"][0]["text"], "saved: trace");
    // Closing stdin ends the server cleanly, with nothing but JSON-RPC on stdout.
    server.finish();
}

#[test]
fn a_tool_call_before_initialize_is_refused_and_runs_nothing() {
    let mut server = RawServer::start("warn");
    server.send(tool_call(
        1,
        "write",
        json!({"title": "Early", "body": "x"}),
    ));
    let answer = server.receive();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["error"]["code"].is_i64(), "{answer}");
    server.initialize("2025-11-25");
    server.send(tool_call(2, "fetch", json!({"id": "early"})));
    let answer = server.receive();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "No note found with ID: early"
    );
}

#[test]
fn calls_in_flight_when_input_ends_are_all_answered() {
    let mut server = RawServer::start("warn");
    server.initialize("2025-11-25");
    let mut burst = String::new();
    for id in 1..=40 {
        let (name, arguments) = if id % 2 == 0 {
            ("write", json!({"title": format!("Late {id}"), "body": "x"}))
        } else {
            ("search", json!({"query": "deploy", "mode": "words"}))
        };
        burst.push_str(&tool_call(id, name, arguments).to_string());
        burst.push('\n');
    }
    server.send_raw(burst.trim_end().as_bytes());
    let mut answered: Vec<i64> = server
        .finish()
        .iter()
        .filter_map(|message| message["id"].as_i64())
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, (1..=40).collect::<Vec<_>>());
}

#[test]
fn a_second_initialize_is_refused_and_the_first_session_goes_on() {
    let mut server = RawServer::start("warn");
    let first = server.initialize("2025-11-25");
    assert_eq!(first["result"]["protocolVersion"], "2025-11-25");
    let again = server.initialize("2024-11-05");
    assert_eq!(again["error"]["code"], -32600, "{again}");
    // Still the first session's version: results keep their structured content.
    server.send(tool_call(7, "echo", json!({"text": "hi"})));
    let echoed = server.receive();
    assert_eq!(
        echoed["result"]["structuredContent"]["text"], "hi",
        "{echoed}"
    );
}

#[test]
fn every_write_saved_before_sigterm_is_answered() {
    let (_dir, path) = support::temp_store();
    let mut server = RawServer::start_on("warn", &["--db", &path]);
    server.initialize("2025-11-25");
    let mut burst = String::new();
    for id in 1..=60 {
        let arguments = json!({"title": format!("Sigterm {id}"), "body": "x"});
        burst.push_str(&tool_call(id, "write", arguments).to_string());
        burst.push('\n');
    }
    server.send_raw(burst.trim_end().as_bytes());
    // The burst is being answered: SIGTERM lands among calls in flight. Each new note sends
    // `resources/list_changed`, which rmcp's loop, stopped by the signal, no longer delivers.
    let first = server.receive();
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut server.stdout, &mut rest).unwrap();
    assert!(server.child.wait().unwrap().success());
    let mut answered: Vec<i64> = std::iter::once(first)
        .chain(rest.lines().map(|l| serde_json::from_str(l).unwrap()))
        .filter_map(|message: Value| message["id"].as_i64())
        .collect();
    answered.sort_unstable();

    let conn = rusqlite::Connection::open(&path).unwrap();
    let mut saved: Vec<i64> = conn
        .prepare("SELECT substr(id, 9) FROM notes WHERE id LIKE 'sigterm-%'")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|id| id.unwrap().parse().unwrap())
        .collect();
    saved.sort_unstable();
    assert_eq!(
        answered, saved,
        "every saved note answered, every answer saved"
    );
}

/// A client that sends on and never reads its answers fills the pipe, then the server's
/// queue, then every place for a request: SIGTERM must still stop the server, at once.
#[test]
fn sigterm_stops_a_server_whose_answers_nobody_reads() {
    let mut server = RawServer::start("warn");
    server.initialize("2025-11-25");
    let mut burst = String::new();
    for id in 1..=3_000 {
        burst.push_str(&tool_call(id, "echo", json!({"text": "x".repeat(200)})).to_string());
        burst.push('\n');
    }
    let mut stdin = server.stdin.take().expect("input open");
    // The server stops reading once its places are taken: the rest waits in the pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(burst.as_bytes());
        stdin
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    let killed = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "SIGTERM did not stop the server"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(writer.join());
}

#[test]
fn a_cancelled_call_gets_no_answer_and_the_others_still_do() {
    let mut server = RawServer::start("warn");
    server.initialize_with("2025-11-25", json!({"sampling": {}}));
    server.send(tool_call(5, "summarize", json!({"id": "todo"})));
    server.send(tool_call(6, "summarize", json!({"id": "deploy-checklist"})));
    // Both calls now wait on the client's model.
    let asks = [server.receive(), server.receive()];
    for ask in &asks {
        assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    }
    server.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 5, "reason": "the user moved on"}}),
    );
    for ask in &asks {
        server.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
            "role": "assistant", "model": "raw",
            "content": {"type": "text", "text": "A summary."}}}));
    }
    let rest = server.finish();
    let answers: Vec<&Value> = rest.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(answers.len(), 1, "{rest:?}");
    assert_eq!(answers[0]["id"], 6);
    assert_eq!(
        answers[0]["result"]["structuredContent"]["summary"],
        "A summary."
    );
}

#[test]
fn an_id_reused_after_its_answer_can_be_cancelled() {
    let mut server = RawServer::start("warn");
    server.initialize_with("2025-11-25", json!({"sampling": {}}));
    let summarize = |server: &mut RawServer, cancel: bool| {
        server.send(tool_call(7, "summarize", json!({"id": "todo"})));
        let ask = server.receive();
        assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
        if cancel {
            server.send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 7}}),
            );
        }
        server.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {
            "role": "assistant", "model": "raw",
            "content": {"type": "text", "text": "Again."}}}));
    };
    summarize(&mut server, false);
    assert_eq!(server.receive()["id"], 7);
    summarize(&mut server, true);
    let rest = server.finish();
    assert!(
        rest.iter().all(|message| message.get("id").is_none()),
        "{rest:?}"
    );
}

#[tokio::test]
async fn listings_match_the_golden_file() {
    let client = support::connect_memory().await;
    let tools = client.list_all_tools().await.unwrap();
    let templates = client.list_all_resource_templates().await.unwrap();
    let prompts = client.list_all_prompts().await.unwrap();
    client.cancel().await.unwrap();
    let actual = json!({"tools": tools, "resourceTemplates": templates, "prompts": prompts});
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/listings.json");
    let pretty = serde_json::to_string_pretty(&actual).unwrap() + "\n";
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &pretty).unwrap();
    }
    let expected =
        std::fs::read_to_string(&path).expect("golden file; run with UPDATE_GOLDEN=1 to create it");
    assert_eq!(
        pretty, expected,
        "listings changed: review, then rerun with UPDATE_GOLDEN=1"
    );
    // The annotation table of the contract.
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.as_ref().unwrap();
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    let (t, f) = (Some(true), Some(false));
    assert_eq!(hints("echo"), (t, f, t, f));
    assert_eq!(hints("search"), (t, f, t, f));
    assert_eq!(hints("fetch"), (t, f, t, f));
    assert_eq!(hints("write"), (f, t, f, f));
    assert_eq!(hints("summarize"), (t, f, f, f));
    assert_eq!(hints("summarize_and_save"), (f, t, f, f));
    assert_eq!(hints("delete"), (f, t, t, f));
    assert_eq!(hints("edit"), (f, t, f, f));
    assert_eq!(hints("history"), (t, f, t, f));
    assert_eq!(hints("restore"), (f, t, f, f));
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "delete",
            "echo",
            "edit",
            "fetch",
            "history",
            "restore",
            "search",
            "summarize",
            "summarize_and_save",
            "write"
        ]
    );
    let write = tools.iter().find(|t| t.name == "write").unwrap();
    assert!(
        write
            .description
            .as_deref()
            .unwrap()
            .contains("Idempotent only when overwrite=false")
    );
    let save = tools
        .iter()
        .find(|t| t.name == "summarize_and_save")
        .unwrap();
    assert!(
        save.description
            .as_deref()
            .unwrap()
            .contains("replaces an earlier summary")
    );
}

#[test]
fn errors_answered_to_a_client_are_not_warned_of_at_the_default_level() {
    let mut child = Command::new(support::server_binary())
        .arg("--memory")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().unwrap();
    let mut server = RawServer {
        stdin: child.stdin.take(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        child,
    };
    server.initialize("2025-11-25");
    // Answered with an error by rmcp's loop, and by the direct path.
    server.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
        "params": {"uri": "pkb://notes/no-such-note"}}),
    );
    assert!(server.receive().get("error").is_some());
    server.send(tool_call(2, "no-such-tool", json!({})));
    let unknown_tool = server.receive();
    assert!(unknown_tool.get("error").is_some(), "{unknown_tool}");
    server.finish();
    let mut logged = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut logged).unwrap();
    assert!(
        !logged.contains("WARN") && !logged.contains("response error"),
        "an error the client was answered with is the client's business: {logged}"
    );
}
