//! Several PKB processes on one PostgreSQL database: each hears the others' writes, writers
//! at once lose nothing, and a restart of the database loses no answered write. Run when
//! `PKB_TEST_POSTGRES` names a test server (`.ci/start-postgres`); the restart test starts a
//! server of its own, so that the other tests keep theirs.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{RecordingClient, Sampling, call, structured, text};

/// Waits up to `limit` for `done`, checking every 20 ms.
async fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// A write through one process reaches, within a second, the subscribers of another
/// process on the same database, at both revisions.
async fn writes_reach_the_other_process() {
    let Some(url) = support::postgres_database().await else {
        return;
    };
    let args = ["--db", url.as_str()];
    let writer = support::connect(&args, Sampling::Unsupported).await;
    let handler = RecordingClient::new(Sampling::Unsupported);
    let reader = support::connect_with(handler.clone(), &args).await;
    let _watch = support::watch(
        &reader,
        &handler,
        &["pkb://notes", "pkb://notes/shared-plan"],
    )
    .await;
    // The reader's process listens from its start; its subscription is in place now.

    let saved = call(
        &writer,
        "write",
        json!({"title": "Shared plan", "body": "first draft"}),
    )
    .await;
    assert_eq!(text(&saved), "saved: shared-plan");
    let heard = wait_for(Duration::from_secs(1), || {
        let updated = handler.updated.lock().unwrap();
        updated.iter().any(|u| u == "pkb://notes/shared-plan")
            && updated.iter().any(|u| u == "pkb://notes")
            && *handler.list_changed.lock().unwrap() >= 1
    })
    .await;
    assert!(
        heard,
        "updated {:?}, list changed {}",
        handler.updated.lock().unwrap(),
        handler.list_changed.lock().unwrap()
    );
    let fetched = call(&reader, "fetch", json!({"id": "shared-plan"})).await;
    assert_eq!(structured(&fetched)["note"]["body"], "first draft");

    // Its own writes are announced once, not again when the database echoes them.
    handler.updated.lock().unwrap().clear();
    call(
        &reader,
        "write",
        json!({"title": "Shared plan", "body": "second draft", "overwrite": true}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let own: Vec<String> = handler.updated.lock().unwrap().clone();
    let times = own
        .iter()
        .filter(|u| *u == "pkb://notes/shared-plan")
        .count();
    assert_eq!(times, 1, "{own:?}");
    writer.cancel().await.unwrap();
    reader.cancel().await.unwrap();
}

mod notifications_cross_processes {
    use super::*;

    #[tokio::test]
    async fn with_sessions() {
        super::writes_reach_the_other_process().await;
    }

    #[tokio::test]
    async fn on_listen_streams() {
        support::REVISION
            .scope(
                support::Revision::Stateless,
                super::writes_reach_the_other_process(),
            )
            .await;
    }
}

#[tokio::test]
async fn eight_processes_writing_at_once_lose_nothing() {
    let Some(url) = support::postgres_database().await else {
        return;
    };
    const WRITERS: usize = 8;
    const EACH: usize = 25;
    let mut clients = Vec::new();
    for _ in 0..WRITERS {
        clients.push(support::connect(&["--db", &url, "--no-seed"], Sampling::Unsupported).await);
    }
    let writes = clients.iter().enumerate().map(|(w, client)| async move {
        for n in 0..EACH {
            // Half the writers also replace one shared note, each time.
            let saved = call(
                client,
                "write",
                json!({"title": format!("Writer {w} note {n}"), "body": format!("{w}/{n}")}),
            )
            .await;
            assert_eq!(saved.is_error, Some(false), "{}", text(&saved));
            if w % 2 == 0 {
                let shared = call(
                    client,
                    "write",
                    json!({"title": "Shared", "body": format!("{w}/{n}"), "overwrite": true}),
                )
                .await;
                assert_eq!(shared.is_error, Some(false), "{}", text(&shared));
            }
        }
    });
    futures::future::join_all(writes).await;

    let listed = clients[0].list_all_resources().await.unwrap();
    let notes = listed
        .iter()
        .filter(|r| r.uri.starts_with("pkb://notes/"))
        .count();
    assert_eq!(notes, WRITERS * EACH + 1, "every note and the shared one");
    for w in 0..WRITERS {
        for n in 0..EACH {
            let id = format!("writer-{w}-note-{n}");
            let fetched = call(&clients[(w + 1) % WRITERS], "fetch", json!({"id": id})).await;
            assert_eq!(structured(&fetched)["note"]["body"], format!("{w}/{n}"));
        }
    }
    for client in clients {
        client.cancel().await.unwrap();
    }
}

/// A PostgreSQL server of the test's own, stopped when dropped.
struct OwnPostgres {
    dir: tempfile::TempDir,
    admin: String,
}

impl OwnPostgres {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/start-postgres");
        let output = std::process::Command::new("bash")
            .arg(&script)
            .arg(dir.path())
            .output()
            .expect("run .ci/start-postgres");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let admin = String::from_utf8(output.stdout).unwrap().trim().to_owned();
        OwnPostgres { dir, admin }
    }

    fn ctl(&self, args: &[&str]) {
        let status = std::process::Command::new(self.ctl_path())
            .args(args)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run pg_ctl");
        assert!(status.success(), "pg_ctl {args:?}");
    }

    fn ctl_path(&self) -> PathBuf {
        self.dir.path().join("ctl")
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = std::process::Command::new(self.ctl_path())
            .args(["stop", "-m", "immediate"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

#[tokio::test]
async fn a_database_restart_mid_stream_loses_no_answered_write() {
    if pkb_core::store::postgres::testing::admin_url().is_none() {
        return;
    }
    // Over HTTP, where the server's stderr is kept for the test to read.
    support::TRANSPORT
        .scope(support::Transport::Http, restart_mid_stream())
        .await;
}

async fn restart_mid_stream() {
    let postgres = OwnPostgres::start();
    let database = pkb_core::store::postgres::testing::scratch_database(&postgres.admin).await;
    // A password the server never needs (trust), which must never show in an error.
    let url = database.replacen("postgres://pkb@", "postgres://pkb:hunter2-secret@", 1);
    let client = support::connect(&["--db", &url, "--no-seed"], Sampling::Unsupported).await;

    let mut answered = Vec::new();
    let mut failures = Vec::new();
    let mut restarted = false;
    let mut n = 0;
    let started = Instant::now();
    // Write until the restart is over and writes succeed again.
    while started.elapsed() < Duration::from_secs(60) {
        if n == 20 && !restarted {
            // In a thread: the writes go on while PostgreSQL goes down and comes back.
            let ctl = postgres.ctl_path();
            std::thread::spawn(move || {
                let _ = std::process::Command::new(ctl)
                    .args(["restart", "-m", "fast"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status();
            });
            restarted = true;
        }
        let title = format!("Entry {n:04}");
        let saved = call(&client, "write", json!({"title": title, "body": "kept"})).await;
        if saved.is_error == Some(false) {
            answered.push(structured(&saved)["id"].as_str().unwrap().to_owned());
        } else {
            failures.push(text(&saved));
        }
        n += 1;
        if restarted && !failures.is_empty() && answered.len() >= 40 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!failures.is_empty(), "the restart was seen by some write");
    assert!(answered.len() >= 40, "writes succeed again: {failures:?}");
    for failure in &failures {
        assert!(failure.starts_with("storage error:"), "{failure}");
        assert!(!failure.contains("hunter2"), "{failure}");
    }
    postgres.ctl(&["status"]);
    for id in &answered {
        let fetched = call(&client, "fetch", json!({"id": id})).await;
        assert_eq!(structured(&fetched)["note"]["body"], "kept", "{id}");
    }
    let stderr = client
        .http_server()
        .map(|s| s.stderr.lock().unwrap().join("\n"))
        .unwrap_or_default();
    assert!(!stderr.contains("hunter2"), "{stderr}");
    client.cancel().await.unwrap();
}

/// A database whose processes are stopped (SIGSTOP) until this is dropped: a frozen host, to
/// whom connections stay open and nothing is answered.
struct Frozen(Vec<String>);

impl Frozen {
    fn freeze(postgres: &OwnPostgres) -> Self {
        let pid_file = postgres.dir.path().join("data/postmaster.pid");
        let postmaster = std::fs::read_to_string(pid_file).unwrap();
        let postmaster = postmaster.lines().next().unwrap().trim().to_owned();
        let children = std::process::Command::new("pgrep")
            .args(["-P", &postmaster])
            .output()
            .unwrap();
        let mut pids: Vec<String> = String::from_utf8_lossy(&children.stdout)
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        pids.push(postmaster);
        Self::signal("-STOP", &pids);
        Frozen(pids)
    }

    fn signal(signal: &str, pids: &[String]) {
        let status = std::process::Command::new("kill")
            .arg(signal)
            .args(pids)
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {pids:?}");
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        Self::signal("-CONT", &self.0);
    }
}

#[tokio::test]
async fn a_database_that_stops_answering_fails_calls_and_then_serves_again() {
    if pkb_core::store::postgres::testing::admin_url().is_none() {
        return;
    }
    let postgres = OwnPostgres::start();
    let url = pkb_core::store::postgres::testing::scratch_database(&postgres.admin).await;
    let client = support::connect(&["--db", &url], Sampling::Unsupported).await;
    let fetched = call(&client, "fetch", json!({"id": "todo"})).await;
    assert_eq!(fetched.is_error, Some(false), "{}", text(&fetched));

    let frozen = Frozen::freeze(&postgres);
    // Each call on a connection already open used to wait for good. Bounded here only so
    // that a hang fails the test rather than stalling it.
    for (tool, arguments) in [
        ("fetch", json!({"id": "todo"})),
        ("write", json!({"title": "While frozen", "body": ""})),
        ("search", json!({"query": "todo", "mode": "words"})),
    ] {
        let answer = tokio::time::timeout(Duration::from_secs(120), call(&client, tool, arguments))
            .await
            .unwrap_or_else(|_| panic!("{tool} got no answer from a frozen database"));
        assert_eq!(answer.is_error, Some(true), "{tool}: {}", text(&answer));
        assert!(
            text(&answer).starts_with("storage error:"),
            "{}",
            text(&answer)
        );
    }
    drop(frozen);

    let started = Instant::now();
    loop {
        let fetched = call(&client, "fetch", json!({"id": "todo"})).await;
        if fetched.is_error == Some(false) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "serves again once the database answers: {}",
            text(&fetched)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn sslmode_require_reaches_the_database_over_verified_tls() {
    if pkb_core::store::postgres::testing::admin_url().is_none() {
        return;
    }
    let postgres = OwnPostgres::start();
    let certificates = tempfile::tempdir().unwrap();
    let support::TestCertificates { ca, cert, key } =
        support::test_certificates(certificates.path());
    // The server's own copies, readable by it alone, as PostgreSQL requires of its key.
    let data = postgres.dir.path().join("data");
    for (from, name) in [(&cert, "server.crt"), (&key, "server.key")] {
        let to = data.join(name);
        std::fs::copy(from, &to).unwrap();
        let owner = std::fs::metadata(&data).unwrap();
        std::os::unix::fs::chown(&to, Some(std::os::unix::fs::MetadataExt::uid(&owner)), None)
            .unwrap();
        std::fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let conf = data.join("postgresql.auto.conf");
    let mut settings = std::fs::read_to_string(&conf).unwrap();
    settings.push_str("ssl = on\n");
    std::fs::write(&conf, settings).unwrap();
    postgres.ctl(&["restart", "-m", "fast"]);

    let database = pkb_core::store::postgres::testing::scratch_database(&postgres.admin).await;
    let url = format!("{database}?sslmode=require");
    let pkb = |cert_file: Option<&str>, args: &[&str]| {
        let mut command = std::process::Command::new(support::server_binary());
        command
            .args(["--db", &url])
            .args(args)
            .env_remove("SSL_CERT_DIR")
            .env("RUST_LOG", "warn");
        match cert_file {
            Some(file) => command.env("SSL_CERT_FILE", file),
            None => command.env("SSL_CERT_FILE", "/nonexistent"),
        };
        command.output().unwrap()
    };

    let written = pkb(
        Some(&ca),
        &[
            "call",
            "write",
            r#"{"title": "Over TLS", "body": "encrypted"}"#,
        ],
    );
    assert!(
        written.status.success(),
        "{}",
        String::from_utf8_lossy(&written.stderr)
    );

    // A server whose certificate nothing here vouches for is refused.
    let refused = pkb(None, &["call", "fetch", r#"{"id": "over-tls"}"#]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("certificate"), "{stderr}");

    // The connections were encrypted: ask the server, while a PKB server holds some.
    let server = support::HttpServerProcess::start_with_env(
        &["--db", &url],
        &[("SSL_CERT_FILE", ca.as_str())],
    )
    .await;
    let client = support::connect_http(
        RecordingClient::new(Sampling::Unsupported),
        &server.url,
        None,
    )
    .await;
    let fetched = call(&client, "fetch", json!({"id": "over-tls"})).await;
    assert_eq!(structured(&fetched)["note"]["body"], "encrypted");
    let output = std::process::Command::new("psql")
        .arg(&database)
        .args([
            "-Atc",
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_ssl s \
             JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'pkb-server'",
        ])
        .output()
        .expect("psql runs");
    let counts = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let (encrypted, all) = counts.split_once('|').expect("two counts");
    assert!(all != "0" && encrypted == all, "{counts}");
    client.cancel().await.unwrap();
}
