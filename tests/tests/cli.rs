//! The binary's terminal subcommands and its lifecycle: `tools`, `call`, `--help`, SIGTERM.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

fn pkb(args: &[&str]) -> std::process::Output {
    Command::new(support::server_binary())
        .args(args)
        .env_remove("PKB_DB")
        .output()
        .expect("run pkb-server")
}

#[test]
fn tools_lists_every_tool_with_its_arguments() {
    let output = pkb(&["tools"]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    for name in [
        "echo",
        "search",
        "fetch",
        "write",
        "edit",
        "history",
        "restore",
        "summarize",
        "summarize_and_save",
        "delete",
    ] {
        assert!(text.lines().any(|l| l == name), "{name} in {text}");
    }
    assert!(text.contains("query (string, required)"), "{text}");
}

#[test]
fn call_runs_a_tool_through_the_same_validation() {
    let (_dir, path) = support::temp_store();
    let ok = pkb(&[
        "--db",
        &path,
        "call",
        "write",
        r#"{"title": "From the shell", "body": "hi"}"#,
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let saved: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(saved["id"], "from-the-shell");

    let fetched = pkb(&[
        "--db",
        &path,
        "call",
        "fetch",
        r#"{"id": "from-the-shell"}"#,
    ]);
    let note: serde_json::Value = serde_json::from_slice(&fetched.stdout).unwrap();
    assert_eq!(note["note"]["body"], "hi");

    let invalid = pkb(&["--db", &path, "call", "fetch", r#"{"id": ""}"#]);
    assert!(!invalid.status.success());
    assert_eq!(
        String::from_utf8_lossy(&invalid.stderr).trim(),
        "invalid arguments: id: must be at least 1 character"
    );
    let missing = pkb(&["--db", &path, "call", "fetch", r#"{"id": "nope"}"#]);
    assert!(!missing.status.success());
    let unknown = pkb(&["--db", &path, "call", "nope", "{}"]);
    assert!(!unknown.status.success());
}

#[test]
fn help_says_what_it_is_and_how_a_client_starts_it() {
    let output = pkb(&["--help"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("Model Context Protocol")
            && text.contains("--db")
            && text.contains("--memory"),
        "{text}"
    );
    let version = String::from_utf8(pkb(&["--version"]).stdout).unwrap();
    assert!(version.contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn a_garbage_store_file_is_refused_and_left_alone() {
    let (_dir, path) = support::temp_store();
    std::fs::write(&path, b"not a database, just text").unwrap();
    let output = pkb(&["--db", &path, "call", "echo", r#"{"text": "x"}"#]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains(&path));
    assert_eq!(std::fs::read(&path).unwrap(), b"not a database, just text");
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let mut child = Command::new(support::server_binary())
        .arg("--memory")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("protocolVersion"));
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "clean exit on SIGTERM: {exit}");
}

#[test]
fn check_calls_a_store_another_process_holds_locked_busy_not_damaged() {
    let (_dir, path) = support::temp_store();
    assert!(
        pkb(&["--db", &path, "call", "fetch", r#"{"id": "todo"}"#])
            .status
            .success()
    );
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let output = pkb(&["--db", &path, "check"]);
    holder.execute_batch("ROLLBACK").unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(75), "{stderr}");
    assert!(
        stderr.contains("is busy") && stderr.contains(&path),
        "{stderr}"
    );
    assert!(
        !stderr.contains("damaged") && !stderr.contains("backup"),
        "a lock is no damage: {stderr}"
    );
    let output = pkb(&["--db", &path, "check"]);
    assert!(
        output.status.success(),
        "once the lock is gone it checks sound"
    );
}

#[test]
fn a_writer_gets_its_turn_between_another_process_s_busy_transactions() {
    let (_dir, path) = support::temp_store();
    assert!(
        pkb(&["--db", &path, "call", "fetch", r#"{"id": "todo"}"#])
            .status
            .success()
    );
    // Another process that writes constantly: it holds the write lock 60 ms at a time and lets
    // it go for 0.3 ms in between, until this write is answered (8 s at most). A writer that
    // looks for the lock only now and then (SQLite's own wait sleeps up to 100 ms between
    // looks) found it held every time and gave up after 5 s, in every run; one that looks every
    // millisecond gets a turn in one of the gaps, within a few cycles.
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy = {
        let (path, answered) = (path.clone(), std::sync::Arc::clone(&answered));
        std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.busy_timeout(Duration::from_secs(5)).unwrap();
            let started = std::time::Instant::now();
            while !answered.load(std::sync::atomic::Ordering::Relaxed)
                && started.elapsed() < Duration::from_secs(8)
            {
                conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                std::thread::sleep(Duration::from_millis(60));
                conn.execute_batch("COMMIT").unwrap();
                std::thread::sleep(Duration::from_micros(300));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let write = pkb(&[
        "--db",
        &path,
        "call",
        "write",
        r#"{"title": "My turn", "body": "between two of theirs"}"#,
    ]);
    answered.store(true, std::sync::atomic::Ordering::Relaxed);
    busy.join().unwrap();
    let said = String::from_utf8_lossy(&write.stdout).into_owned()
        + &String::from_utf8_lossy(&write.stderr);
    assert!(write.status.success(), "the write got no turn: {said}");
}

#[test]
fn a_store_this_process_can_only_read_is_warned_of_at_start_and_each_write_says_why() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let mode = |path: &str, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let (dir, path) = support::temp_store();
    assert!(
        pkb(&["--db", &path, "call", "fetch", r#"{"id": "todo"}"#])
            .status
            .success()
    );
    // Another user's server, still running, keeps the -shm it made: this one may only read it.
    let other = rusqlite::Connection::open(&path).unwrap();
    other
        .query_row("SELECT count(*) FROM notes", [], |r| r.get::<_, i64>(0))
        .unwrap();
    mode(&format!("{path}-shm"), 0o444);
    mode(&path, 0o666);
    mode(&format!("{path}-wal"), 0o666);
    mode(dir.path().to_str().unwrap(), 0o777);
    // Root may write any file, so the server then runs as nobody, for whom the modes hold; from
    // a copy in the temporary folder, which nobody may run wherever the build is.
    let as_root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let binary = dir.path().join("pkb-server");
    std::fs::copy(support::server_binary(), &binary).unwrap();
    mode(binary.to_str().unwrap(), 0o755);
    let run = |args: &[&str]| {
        let mut command = Command::new(&binary);
        command
            .args(args)
            .env_remove("PKB_DB")
            .env_remove("RUST_LOG");
        if as_root {
            command.uid(65534).gid(65534);
        }
        command.output().expect("run pkb-server")
    };
    let write = run(&[
        "--db",
        &path,
        "call",
        "write",
        r#"{"title": "Lost", "body": "b"}"#,
    ]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&write.stdout),
        String::from_utf8_lossy(&write.stderr)
    );
    assert!(!write.status.success(), "{said}");
    assert!(
        said.contains("can only read the store") && said.contains("every write will fail"),
        "warned at start: {said}"
    );
    assert!(
        said.matches("can only read the store").count() >= 2,
        "the write's own error says why too: {said}"
    );
    let read = run(&["--db", &path, "call", "fetch", r#"{"id": "todo"}"#]);
    assert!(read.status.success(), "reads still work");
    drop(other);
}

#[test]
fn check_finds_a_store_out_of_step_and_reindex_mends_it() {
    let (_dir, path) = support::temp_store();
    let created = pkb(&["--db", &path, "call", "fetch", r#"{"id": "todo"}"#]);
    assert!(created.status.success());
    let output = pkb(&["--db", &path, "check"]);
    assert!(output.status.success(), "a new store is sound");
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("ok: 3 notes"));
    {
        // What an older build writing after an upgrade leaves: a note without term counts.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("DELETE FROM note_terms WHERE note = 1", [])
            .unwrap();
    }
    let output = pkb(&["--db", &path, "check"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("out of step") && stderr.contains(&path),
        "{stderr}"
    );

    let output = pkb(&["--db", &path, "reindex"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "reindexed 3 notes; the store checks sound\n"
    );
    assert!(pkb(&["--db", &path, "check"]).status.success());

    let missing = format!("{path}.missing");
    let output = pkb(&["--db", &missing, "check"]);
    assert!(
        !output.status.success(),
        "no store is created to be checked"
    );
    assert!(!std::path::Path::new(&missing).exists());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no store at"));

    // A 0-byte file is no store either: neither command seeds it.
    let empty = format!("{path}.empty");
    std::fs::write(&empty, b"").unwrap();
    for command in ["check", "reindex"] {
        let output = pkb(&["--db", &empty, command]);
        assert!(!output.status.success(), "{command} on an empty file");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("no store at") && stderr.contains("empty"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::metadata(&empty).unwrap().len(),
            0,
            "{command} left it alone"
        );
    }
}

#[test]
fn check_and_reindex_look_after_a_postgresql_store() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(url) = runtime.block_on(support::postgres_database()) else {
        return;
    };
    let output = pkb(&["--db", &url, "check"]);
    assert!(!output.status.success(), "a database without PKB's notes");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("holds no PKB notes"), "{stderr}");

    assert!(
        pkb(&["--db", &url, "call", "fetch", r#"{"id": "todo"}"#])
            .status
            .success()
    );
    let output = pkb(&["--db", &url, "check"]);
    assert!(output.status.success(), "a new store is sound");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "ok: 3 notes; the store checks sound\n",
        "no SQLite parts (pages, vocabulary) named for a PostgreSQL store"
    );

    // What a hand-made UPDATE that bypassed PKB leaves: a search entry of other words.
    runtime.block_on(pkb_core::store::postgres::testing::execute(
        &url,
        "UPDATE pkb_notes SET search = to_tsvector('simple', 'stale') WHERE id = 'todo'",
    ));
    let output = pkb(&["--db", &url, "check"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("out of step") && stderr.contains("1 of the notes' search entries"),
        "{stderr}"
    );
    let output = pkb(&["--db", &url, "reindex"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(pkb(&["--db", &url, "check"]).status.success());
    let found = pkb(&[
        "--db",
        &url,
        "call",
        "search",
        r#"{"query": "things", "mode": "words"}"#,
    ]);
    assert!(String::from_utf8_lossy(&found.stdout).contains("\"todo\""));

    // An unreachable database: a clear error, naming neither user nor password.
    let unreachable = "postgres://pkb:hunter2-secret@127.0.0.1:1/pkb";
    let output = pkb(&["--db", unreachable, "check"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("postgres://127.0.0.1:1/pkb") && !stderr.contains("hunter2"),
        "{stderr}"
    );
}

#[test]
fn an_empty_pkb_db_counts_as_unset() {
    let data = tempfile::tempdir().unwrap();
    let output = Command::new(support::server_binary())
        .args(["call", "fetch", r#"{"id": "todo"}"#])
        .env("PKB_DB", "")
        .env("XDG_DATA_HOME", data.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        data.path().join("pkb").join("pkb.db").exists(),
        "the default store was used"
    );
}

/// Each user's store and each connection holds files: the server raises its soft limit of open
/// files to the hard one at start, where the common soft limit of 1,024 would run out at a few
/// hundred users.
#[cfg(target_os = "linux")]
#[test]
fn the_server_raises_its_soft_limit_of_open_files_to_the_hard_one() {
    let (_dir, path) = support::temp_store();
    let mut child = Command::new("prlimit")
        .arg("--nofile=1024:4096")
        .arg(support::server_binary())
        .args(["--db", &path])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prlimit (util-linux) runs the server");
    let limits = format!("/proc/{}/limits", child.id());
    let started = std::time::Instant::now();
    let soft = loop {
        let text = std::fs::read_to_string(&limits).unwrap_or_default();
        let soft = text
            .lines()
            .find(|line| line.starts_with("Max open files"))
            .and_then(|line| line.split_whitespace().nth(3).map(str::to_owned));
        if soft.as_deref() == Some("4096") || started.elapsed() > Duration::from_secs(10) {
            break soft;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(soft.as_deref(), Some("4096"));
}

/// A note `diary` with five versions, the first three made `old` (an SQL date) on `db`.
fn diary_with_old_versions(db: &str, set_old: impl FnOnce(&str)) {
    let calls = [
        ("write", r#"{"title": "Diary", "body": "v1"}"#),
        ("edit", r#"{"id": "diary", "append": "v2"}"#),
        ("edit", r#"{"id": "diary", "append": "v3"}"#),
        ("edit", r#"{"id": "diary", "append": "v4"}"#),
        ("edit", r#"{"id": "diary", "append": "v5"}"#),
    ];
    for (tool, arguments) in calls {
        let output = pkb(&["--db", db, "call", tool, arguments]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    set_old(
        "UPDATE {versions} SET changed_at = '2020-01-01T00:00:00.000Z' WHERE id = 'diary' AND version <= 3",
    );
}

fn versions_of(db: &str, id: &str) -> Vec<u64> {
    let output = pkb(&[
        "--db",
        db,
        "call",
        "history",
        &format!(r#"{{"id": "{id}"}}"#),
    ]);
    if !output.status.success() {
        return Vec::new();
    }
    let history: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect()
}

/// `history prune` drops old versions but never a note's newest; `purge` erases a note and
/// its versions for good, and says what it removed.
fn prune_and_purge(db: &str, set_old: impl FnOnce(&str)) {
    diary_with_old_versions(db, set_old);
    // The seed notes' only versions are old too, by then: each is its note's newest.
    let output = pkb(&["--db", db, "history", "prune", "--older-than", "30"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "pruned 3 versions made more than 30 days ago; each note's newest version stays\n"
    );
    assert_eq!(versions_of(db, "diary"), [5, 4]);
    assert_eq!(
        versions_of(db, "todo"),
        [1],
        "a note's current state is never pruned"
    );

    let deleted = pkb(&["--db", db, "call", "delete", r#"{"id": "diary"}"#]);
    assert!(deleted.status.success());
    let output = pkb(&["--db", db, "purge", "diary"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "purged the deleted note diary and its 3 versions; nothing of it is left\n"
    );
    assert!(versions_of(db, "diary").is_empty());
    let restore = pkb(&[
        "--db",
        db,
        "call",
        "restore",
        r#"{"id": "diary", "version": 4}"#,
    ]);
    assert!(!restore.status.success());
    assert!(String::from_utf8_lossy(&restore.stderr).contains("No note found with ID: diary"));

    let output = pkb(&["--db", db, "purge", "todo"]);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "purged the note todo and its 1 version; nothing of it is left\n"
    );
    let output = pkb(&["--db", db, "purge", "todo"]);
    assert!(!output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "No note found with ID: todo"
    );
    let fetched = pkb(&["--db", db, "call", "fetch", r#"{"id": "todo"}"#]);
    assert!(!fetched.status.success(), "a purged note is gone");
}

#[test]
fn history_prune_and_purge_look_after_the_history() {
    let (_dir, db) = support::temp_store();
    let path = db.clone();
    prune_and_purge(&db, move |sql| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(&sql.replace("{versions}", "note_versions"), [])
            .unwrap();
    });
    let output = pkb(&["--db", &db, "check"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn history_prune_and_purge_look_after_a_postgresql_history() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(url) = runtime.block_on(support::postgres_database()) else {
        return;
    };
    let sql_url = url.clone();
    prune_and_purge(&url, move |sql| {
        runtime.block_on(pkb_core::store::postgres::testing::execute(
            &sql_url,
            &sql.replace("{versions}", "pkb_note_versions"),
        ));
    });
}

#[test]
fn check_finds_a_link_index_out_of_step_and_reindex_mends_it() {
    let (_dir, db) = support::temp_store();
    let wrote = pkb(&[
        "--db",
        &db,
        "call",
        "write",
        r#"{"title": "Hub", "body": "[[todo]]"}"#,
    ]);
    assert!(wrote.status.success());
    assert!(pkb(&["--db", &db, "check"]).status.success());
    // What a hand-made change that bypassed PKB leaves: a link index of other links.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("DELETE FROM note_links", []).unwrap();
    drop(conn);
    let output = pkb(&["--db", &db, "check"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("link index out of step: the links of 1 notes"),
        "{stderr}"
    );
    let output = pkb(&["--db", &db, "reindex"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let todo = pkb(&["--db", &db, "call", "fetch", r#"{"id": "todo"}"#]);
    let todo: serde_json::Value = serde_json::from_slice(&todo.stdout).unwrap();
    assert_eq!(
        todo["backlinks"][0]["id"], "hub",
        "backlinks come back with the index"
    );
}

#[test]
fn check_finds_vectors_of_no_note_and_reindex_drops_them() {
    let (_dir, db) = support::temp_store();
    assert!(
        pkb(&["--db", &db, "call", "echo", r#"{"text": "x"}"#])
            .status
            .success()
    );
    // What a hand-made change that bypassed PKB leaves: a vector of a note that is not there.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO note_vectors (note, passage, model, vector) VALUES (999, 0, 'm', x'00000000')",
        [],
    )
    .unwrap();
    drop(conn);
    let output = pkb(&["--db", &db, "check"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("vectors out of step: 1 vectors belong to no note"),
        "{stderr}"
    );
    let output = pkb(&["--db", &db, "reindex"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_first_search_by_meaning_at_the_terminal_finds_a_small_stores_notes() {
    let (_dir, db) = support::temp_store();
    let wrote = pkb(&[
        "--db",
        &db,
        "call",
        "write",
        r#"{"title": "Fixing the car", "body": "The mechanic replaced the brakes."}"#,
    ]);
    assert!(wrote.status.success());
    let found = pkb(&[
        "--db",
        &db,
        "call",
        "search",
        r#"{"query": "automobile repair", "mode": "meaning"}"#,
    ]);
    assert!(
        found.status.success(),
        "{}",
        String::from_utf8_lossy(&found.stderr)
    );
    let found: serde_json::Value = serde_json::from_slice(&found.stdout).unwrap();
    assert_eq!(found["results"][0]["id"], "fixing-the-car", "{found}");
}
