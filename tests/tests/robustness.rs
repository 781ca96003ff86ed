//! Load and faults over the real stdio path: a burst of pipelined calls, kill -9 in a stream
//! of writes, several servers on one store, and error texts that never leak other notes.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

/// A server whose stdout is read on a thread, so writes and reads can overlap freely.
struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

/// The server binary with `args`, its stdin and stdout piped.
fn spawn_server(args: &[&str]) -> Child {
    Command::new(support::server_binary())
        .args(args)
        .env_remove("PKB_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn")
}

impl Server {
    fn start(args: &[&str]) -> Self {
        let mut child = spawn_server(args);
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("stdout carries JSON only");
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            stdin,
            lines,
        };
        server.send(&json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "0"}}}));
        assert!(server.answer().get("result").is_some());
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
    }

    /// The next answer (notifications skipped).
    fn answer(&mut self) -> Value {
        loop {
            let value = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("an answer within 30 s");
            if value.get("id").is_some() {
                return value;
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many notes the store at `path` lists, as a new server reads its index resource.
fn notes_in(path: &str) -> usize {
    let mut server = Server::start(&["--db", path]);
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "pkb://notes"}}));
    let answer = server.answer();
    let index: Value =
        serde_json::from_str(answer["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    index["notes"].as_array().unwrap().len()
}

fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[test]
fn five_hundred_calls_written_at_once_are_each_answered_once() {
    let (_dir, path) = support::temp_store();
    let mut server = Server::start(&["--db", &path]);
    let mut expected = HashMap::new();
    let mut burst = String::new();
    for id in 0..500u64 {
        let (message, kind) = match id % 3 {
            0 => (tool_call(id, "fetch", json!({"id": "todo"})), "fetch"),
            1 => (
                tool_call(id, "search", json!({"query": "deploy", "mode": "words"})),
                "search",
            ),
            _ => (
                tool_call(
                    id,
                    "write",
                    json!({"title": format!("Burst {id}"), "body": "b"}),
                ),
                "write",
            ),
        };
        burst.push_str(&message.to_string());
        burst.push('\n');
        expected.insert(id, kind);
    }
    server.stdin.write_all(burst.as_bytes()).unwrap();
    server.stdin.flush().unwrap();
    let mut seen = HashMap::new();
    for _ in 0..500 {
        let answer = server.answer();
        let id = answer["id"].as_u64().expect("numeric id");
        assert!(seen.insert(id, ()).is_none(), "id {id} answered twice");
        let result = &answer["result"];
        assert_ne!(result["isError"], true, "{answer}");
        match expected[&id] {
            "fetch" => assert_eq!(result["structuredContent"]["note"]["id"], "todo"),
            "search" => assert_eq!(
                result["structuredContent"]["results"][0]["id"],
                "deploy-checklist"
            ),
            _ => assert_eq!(result["content"][0]["text"], format!("saved: burst-{id}")),
        }
    }
    assert_eq!(seen.len(), 500);
    drop(server);
    let mut server = Server::start(&["--db", &path]);
    for id in (2..500u64).step_by(3) {
        server.send(&tool_call(
            id,
            "fetch",
            json!({"id": format!("burst-{id}")}),
        ));
        let answer = server.answer();
        assert_eq!(
            answer["result"]["structuredContent"]["note"]["title"],
            format!("Burst {id}")
        );
    }
}

#[test]
fn kill_9_during_writes_loses_no_answered_write() {
    let (_dir, path) = support::temp_store();
    let mut server = Server::start(&["--db", &path]);
    // Writes stream in; the kill lands while some are unanswered.
    let mut burst = String::new();
    for id in 0..400u64 {
        burst.push_str(
            &tool_call(
                id,
                "write",
                json!({"title": format!("Crash {id}"), "body": format!("body {id}")}),
            )
            .to_string(),
        );
        burst.push('\n');
    }
    server.stdin.write_all(burst.as_bytes()).unwrap();
    let mut answered = Vec::new();
    while answered.len() < 60 {
        let answer = server.answer();
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answered.push(answer["id"].as_u64().unwrap());
    }
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();
    while let Ok(value) = server.lines.try_recv() {
        if let Some(id) = value["id"].as_u64() {
            answered.push(id);
        }
    }
    let mut server = Server::start(&["--db", &path]);
    for (n, id) in answered.iter().enumerate() {
        server.send(&tool_call(
            10_000 + n as u64,
            "fetch",
            json!({"id": format!("crash-{id}")}),
        ));
        let answer = server.answer();
        assert_eq!(
            answer["result"]["structuredContent"]["note"]["body"],
            format!("body {id}"),
            "{answer}"
        );
    }
}

#[test]
fn a_write_ahead_log_deleted_under_the_server_stops_writes_being_answered_saved() {
    let (_dir, path) = support::temp_store();
    let mut server = Server::start(&["--db", &path]);
    let write =
        |id: u64, title: &str| tool_call(id, "write", json!({"title": title, "body": "body"}));
    server.send(&write(1, "Before"));
    assert_ne!(server.answer()["result"]["isError"], true);
    std::fs::remove_file(format!("{path}-wal")).expect("the server keeps a WAL");
    for (id, title) in [(2, "After"), (3, "Later")] {
        server.send(&write(id, title));
        let answer = server.answer();
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("write-ahead log") && text.contains("was deleted"),
            "{text}"
        );
    }
    drop(server);
    // A restart opens a new log, and writes are durable again.
    let mut server = Server::start(&["--db", &path]);
    server.send(&write(4, "After"));
    assert_ne!(server.answer()["result"]["isError"], true);
}

#[test]
fn four_servers_on_one_store_write_and_search_side_by_side() {
    let (_dir, path) = support::temp_store();
    // Create and seed the store before the race, as a first window would.
    drop(Server::start(&["--db", &path]));
    let handles: Vec<_> = (0..4u64)
        .map(|process| {
            let path = path.clone();
            std::thread::spawn(move || {
                let mut server = Server::start(&["--db", &path]);
                let mut burst = String::new();
                for n in 0..50u64 {
                    let id = process * 1000 + n;
                    burst.push_str(
                        &tool_call(
                            id,
                            "write",
                            json!({"title": format!("P{process} note {n}"), "body": "shared"}),
                        )
                        .to_string(),
                    );
                    burst.push('\n');
                    burst.push_str(
                        &tool_call(
                            id + 500,
                            "search",
                            json!({"query": "shared", "mode": "words"}),
                        )
                        .to_string(),
                    );
                    burst.push('\n');
                }
                server.stdin.write_all(burst.as_bytes()).unwrap();
                for _ in 0..100 {
                    let answer = server.answer();
                    assert_ne!(answer["result"]["isError"], true, "{answer}");
                    assert!(answer.get("error").is_none(), "{answer}");
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a server process failed");
    }
    assert_eq!(
        notes_in(&path),
        3 + 4 * 50,
        "every write of every process is there"
    );
}

/// The load the README promises writers: sixteen processes on one file, each pipelining fifty
/// writes of 10,000 characters, every one saved, none refused for another's lock.
#[test]
fn sixteen_servers_pipelining_large_writes_on_one_store_each_get_every_write_saved() {
    const SERVERS: u64 = 16;
    const WRITES: u64 = 50;
    let (_dir, path) = support::temp_store();
    drop(Server::start(&["--db", &path]));
    let servers: Vec<Server> = (0..SERVERS)
        .map(|_| Server::start(&["--db", &path]))
        .collect();
    let body = "a fair turn for every writer ".repeat(400);
    let body = &body[..10_000];
    // Every burst is written before any answer is read, so the writers overlap.
    let bursts: Vec<String> = (0..SERVERS)
        .map(|process| {
            (0..WRITES)
                .map(|n| {
                    let arguments = json!({"title": format!("P{process} note {n}"), "body": body});
                    tool_call(process * 1000 + n, "write", arguments).to_string() + "\n"
                })
                .collect()
        })
        .collect();
    let handles: Vec<_> = servers
        .into_iter()
        .zip(bursts)
        .map(|(mut server, burst)| {
            std::thread::spawn(move || {
                server.stdin.write_all(burst.as_bytes()).unwrap();
                let refused: Vec<Value> = (0..WRITES)
                    .map(|_| server.answer())
                    .filter(|a| a["result"]["isError"] == true || a.get("error").is_some())
                    .collect();
                refused
            })
        })
        .collect();
    let refused: Vec<Value> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("a server's client thread failed"))
        .collect();
    assert!(
        refused.is_empty(),
        "writes refused under the promised load: {refused:?}"
    );
    assert_eq!(
        notes_in(&path),
        usize::try_from(3 + SERVERS * WRITES).unwrap(),
        "every write of every process is there"
    );
}

#[test]
fn error_texts_never_mention_other_notes() {
    let mut server = Server::start(&["--memory"]);
    let secret_title = "Zebra secret plans";
    let secret_body = "the quokka password";
    server.send(&tool_call(
        1,
        "write",
        json!({"title": secret_title, "body": secret_body, "tags": ["hidden"]}),
    ));
    server.answer();
    let probes = [
        tool_call(2, "fetch", json!({"id": "zebra"})),
        tool_call(3, "fetch", json!({"id": "zebra-secret-plan"})),
        tool_call(4, "summarize", json!({"id": "zebra-secret"})),
        tool_call(5, "summarize_and_save", json!({"id": "zebra"})),
        tool_call(
            6,
            "write",
            json!({"title": "Zebra secret plans", "body": "x"}),
        ),
        tool_call(7, "write", json!({"title": "", "body": secret_body})),
        tool_call(8, "search", json!({"query": ""})),
        json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read", "params": {"uri": "pkb://notes/zebra"}}),
        json!({"jsonrpc": "2.0", "id": 10, "method": "prompts/get", "params": {"name": "zebra"}}),
        tool_call(11, "zebra-secret-plans", json!({})),
    ];
    for probe in probes {
        server.send(&probe);
        let answer = server.answer().to_string();
        // Only what the caller sent may come back; nothing of the stored note may.
        let mut sent = probe.to_string();
        if sent.contains("Zebra secret plans") {
            // The ID derived from the caller's own title is the caller's, not a leak.
            sent.push_str(" zebra-secret-plans");
        }
        for leak in [
            "quokka",
            "Zebra secret plans",
            "hidden",
            "zebra-secret-plans",
        ] {
            if !sent.contains(leak) {
                assert!(!answer.contains(leak), "{leak} leaked in {answer}");
            }
        }
    }
}

/// A client that pipelines calls and does not read its answers meanwhile: the server stops
/// reading once its answers wait, instead of reading on and holding every answer in memory.
#[cfg(target_os = "linux")]
#[test]
fn answers_a_client_does_not_read_do_not_pile_up_in_memory() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const CALLS: usize = 2_000;
    let mut child = spawn_server(&["--memory"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "slow", "version": "0"}}}))
    .unwrap();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"result\""), "{line}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();

    // About 10 MB of calls, each answered with its 5,000 characters: far more than the pipes
    // and the calls in flight hold.
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            let text = "x".repeat(5_000);
            for id in 1..=CALLS {
                let call = tool_call(id as u64, "echo", json!({"text": text}));
                writeln!(stdin, "{call}").unwrap();
                written.store(id, Ordering::Relaxed);
            }
        })
    };
    // Until the writer is held up by the server, or has written everything.
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = written.load(Ordering::Relaxed);
        if now == last || now == CALLS {
            break;
        }
        last = now;
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    let held_up_at = written.load(Ordering::Relaxed);

    // Every call is still answered once the client reads.
    let mut answered = 0;
    while answered < CALLS {
        line.clear();
        if stdout.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if line.contains("\"id\"") {
            answered += 1;
        }
    }
    writer.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answered, CALLS);
    assert!(
        held_up_at < CALLS,
        "the writer was held up before writing all {CALLS} calls"
    );
    assert!(
        peak_kib < 60 * 1024,
        "peak RSS {peak_kib} KiB while {held_up_at} calls were written and none read"
    );
}

/// A client that closes its input while the server waits on it (a sampling request it never
/// answered): the request gives up at once, the call is answered, and the server exits,
/// instead of waiting out the end of input's grace for requests still at work (5 s). A
/// `subscriptions/listen` stream, which only the client could cancel, ends the same way.
#[test]
fn the_end_of_input_gives_up_what_waits_on_the_client() {
    let mut child = spawn_server(&["--memory"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut next = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "leaving", "version": "0"}}})
    )
    .unwrap();
    assert!(next().get("result").is_some());
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(
        stdin,
        "{}",
        tool_call(1, "summarize", json!({"id": "deploy-checklist"}))
    )
    .unwrap();
    // The server's sampling request, which this client never answers.
    let asked = next();
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    let closed = std::time::Instant::now();
    drop(stdin);
    let answer = next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(
        answer["result"]["isError"] == true || answer.get("error").is_some(),
        "the call is answered as failed: {answer}"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    // A behaviour, not a speed: before, the exit came only after the 5 s grace.
    assert!(
        closed.elapsed() < Duration::from_secs(4),
        "exited {:?} after the input closed",
        closed.elapsed()
    );
}

/// A change of the store (here a file saved into the vault) between the client's `initialize`
/// and its `notifications/initialized` reaches it after that notification, never before the
/// `initialize` answer or in between.
#[test]
fn no_change_notification_comes_before_the_client_is_initialized() {
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(vault.path().join("first.md"), "# First\n\ntext\n").unwrap();
    let mut child = spawn_server(&["--vault", vault.path().to_str().unwrap()]);
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (sender, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if sender.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "slow to initialize", "version": "0"}}})
    )
    .unwrap();
    let first = lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(first["id"], 0, "the initialize answer comes first: {first}");
    std::fs::write(
        vault.path().join("second.md"),
        "# Second\n\nsaved meanwhile\n",
    )
    .unwrap();
    // The save is taken in within a fraction of this; its notification waits.
    if let Ok(early) = lines.recv_timeout(Duration::from_secs(2)) {
        panic!("sent before notifications/initialized: {early}");
    }
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    let next = lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(
        next["method"], "notifications/resources/list_changed",
        "{next}"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
