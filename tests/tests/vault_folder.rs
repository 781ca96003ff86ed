//! A folder of Markdown files as the store (`--vault DIR`), through a real MCP client on both
//! transports, with the files changed by real programs: `sed -i`, Python's write-and-rename,
//! `git checkout`, `mv` of a folder, a delete and re-create. What PKB writes lands in the
//! files, keeping what it does not know; what other programs write reaches every tool.

#[macro_use]
mod support;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use support::{
    Client, RecordingClient, Sampling, assert_error, call, connect_with, fetched, run_command,
    structured, until_note, watch,
};

/// How long a test waits for a change on disk to be taken in: far past the contract's 2 s,
/// so that a loaded machine does not fail the test; the 2 s is measured in pkb-bench.
const PATIENCE: Duration = Duration::from_secs(20);

fn vault_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, text) in files {
        put_file(dir.path(), path, text);
    }
    dir
}

fn put_file(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

async fn open(dir: &Path) -> (Client, RecordingClient) {
    let handler = RecordingClient::new(Sampling::Unsupported);
    let client = connect_with(handler.clone(), &["--vault", dir.to_str().unwrap()]).await;
    (client, handler)
}

/// Fetches `id` until `done` holds of it (`None`: no such note), or fails after [`PATIENCE`].
async fn until(client: &Client, id: &str, done: impl Fn(Option<&Map<String, Value>>) -> bool) {
    until_note(client, id, PATIENCE, done).await;
}

fn body_is(expected: &str) -> impl Fn(Option<&Map<String, Value>>) -> bool + '_ {
    move |note| note.is_some_and(|note| note["body"] == expected)
}

async fn history_by(client: &Client, id: &str) -> Vec<(String, String)> {
    let history = structured(&call(client, "history", json!({"id": id})).await);
    history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["change"].as_str().unwrap().to_owned(),
                v["by"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn run(program: &str, args: &[&str], dir: &Path) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("{program}: {error}"));
    assert!(
        status.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
}

both_transports! {
#[tokio::test]
async fn the_files_are_the_notes_and_outside_edits_reach_every_tool() {
    let vault = vault_with(&[
        ("Projects/Deploy checklist.md", "---\naliases: [ship]\ntags: [ops]\n---\nbuild the app, then verify\n"),
        ("inbox.md", "# Groceries\n\nmilk\n"),
    ]);
    let (client, handler) = open(vault.path()).await;
    let deploy = fetched(&client, "deploy-checklist").await.expect("a file's note");
    assert_eq!(deploy["title"], "Deploy checklist", "the title of last resort is the file name");
    assert_eq!(deploy["tags"], json!(["ops"]));
    assert_eq!(deploy["body"], "build the app, then verify");
    assert_eq!(fetched(&client, "groceries").await.unwrap()["body"], "milk");
    let _watch = watch(&client, &handler, &["pkb://notes/groceries"]).await;

    // sed -i writes a new file and renames it over the old.
    run("sed", &["-i", "s/milk/milk and eggs/", "inbox.md"], vault.path());
    until(&client, "groceries", body_is("milk and eggs")).await;
    assert_eq!(history_by(&client, "groceries").await[0], ("replaced".into(), "file".into()));
    let found = structured(&call(&client, "search", json!({"query": "eggs", "mode": "words"})).await);
    assert_eq!(found["results"][0]["id"], "groceries");
    let start = Instant::now();
    while !handler.updated.lock().unwrap().iter().any(|uri| uri == "pkb://notes/groceries") {
        assert!(start.elapsed() < PATIENCE, "no notification of a change on disk");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Python's write to a temporary file and rename, as many editors save.
    run("python3", &["-c", "import os\nopen('inbox.md.tmp','w').write('# Groceries\\n\\nbread\\n')\nos.replace('inbox.md.tmp','inbox.md')"], vault.path());
    until(&client, "groceries", body_is("bread")).await;

    // A new file, then deleted and made again.
    put_file(vault.path(), "new idea.md", "first draft\n");
    until(&client, "new-idea", body_is("first draft")).await;
    std::fs::remove_file(vault.path().join("new idea.md")).unwrap();
    until(&client, "new-idea", |note| note.is_none()).await;
    put_file(vault.path(), "new idea.md", "second draft\n");
    until(&client, "new-idea", body_is("second draft")).await;
    let changes: Vec<String> = history_by(&client, "new-idea").await.into_iter().map(|(c, _)| c).collect();
    assert_eq!(changes, ["created", "deleted", "created"], "newest first");

    // A folder moved: the same notes, no new versions.
    let versions = history_by(&client, "deploy-checklist").await.len();
    run("mv", &["Projects", "Archive"], vault.path());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let deploy = fetched(&client, "deploy-checklist").await.expect("moved, not deleted");
    assert_eq!(deploy["body"], "build the app, then verify");
    assert_eq!(history_by(&client, "deploy-checklist").await.len(), versions);
    // ... and its file is still the note's: an edit through PKB lands there.
    call(&client, "edit", json!({"id": "deploy-checklist", "append": "then ship"})).await;
    let file = std::fs::read_to_string(vault.path().join("Archive/Deploy checklist.md")).unwrap();
    assert_eq!(file, "---\naliases: [ship]\ntags: [ops]\n---\nbuild the app, then verify\nthen ship\n");
}

#[tokio::test]
async fn what_pkb_writes_lands_in_the_files_keeping_what_it_does_not_know() {
    let obsidian = "---\naliases:\n  - Weekly\ncssclasses: [wide]\ntitle: Weekly review\nreview:\n  cadence: weekly\n  owners: [ana, bo]\ntags:\n- planning\n---\nwhat went well\r\n";
    let crlf = "---\r\ntitle: Windows note\r\n---\r\nline one\r\nline two\r\n";
    let vault = vault_with(&[("weekly.md", obsidian), ("win.md", crlf)]);
    let (client, _handler) = open(vault.path()).await;

    // A new note is a new file, in the export's form.
    call(&client, "write", json!({"title": "Fresh idea", "body": "from a model", "tags": ["ai"]})).await;
    let saved = fetched(&client, "fresh-idea").await.unwrap();
    let file = std::fs::read_to_string(vault.path().join("fresh-idea.md")).expect("new file");
    assert!(file.starts_with("---\nid: fresh-idea\ntitle: Fresh idea\ntags:\n- ai\n"), "{file}");
    assert!(file.ends_with(&format!("updated: {}\n---\nfrom a model\n", saved["updated_at"].as_str().unwrap())), "{file}");

    // An edit changes only what changed: unknown fields, their order, values and nesting stay.
    // A new title no longer gives the note's id, so the file keeps it, as an export does.
    call(&client, "edit", json!({"id": "weekly-review", "title": "Weekly review 2", "add_tags": ["team"]})).await;
    let weekly = fetched(&client, "weekly-review").await.unwrap();
    let file = std::fs::read_to_string(vault.path().join("weekly.md")).unwrap();
    assert_eq!(file, format!("---\naliases:\n  - Weekly\ncssclasses: [wide]\ntitle: Weekly review 2\nreview:\n  cadence: weekly\n  owners: [ana, bo]\ntags:\n- planning\n- team\nid: weekly-review\ncreated: {}\nupdated: {}\n---\nwhat went well\r\n", weekly["created_at"].as_str().unwrap(), weekly["updated_at"].as_str().unwrap()));

    // A file saved with Windows line ends keeps them.
    call(&client, "edit", json!({"id": "windows-note", "append": "line three"})).await;
    let file = std::fs::read_to_string(vault.path().join("win.md")).unwrap();
    assert_eq!(file, "---\r\ntitle: Windows note\r\n---\r\nline one\r\nline two\r\nline three\r\n");

    // Delete moves the file into .pkb/trash; restore brings it back where it was.
    call(&client, "delete", json!({"id": "weekly-review"})).await;
    assert!(!vault.path().join("weekly.md").exists());
    assert!(vault.path().join(".pkb/trash/weekly.md").exists());
    let history = structured(&call(&client, "history", json!({"id": "weekly-review"})).await);
    let before_delete = history["versions"][1]["version"].as_u64().unwrap();
    call(&client, "restore", json!({"id": "weekly-review", "version": before_delete})).await;
    let file = std::fs::read_to_string(vault.path().join("weekly.md")).expect("restored in place");
    assert!(file.starts_with("---\naliases:\n  - Weekly\ncssclasses: [wide]\ntitle: Weekly review 2\n"), "{file}");
    assert!(!vault.path().join(".pkb/trash/weekly.md").exists());

    // PKB's own writes are not taken in again as changes from the files.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(history_by(&client, "fresh-idea").await.iter().all(|(_, by)| by != "file"));
    let weekly = history_by(&client, "weekly-review").await;
    let (first, since) = weekly.split_last().unwrap();
    assert_eq!(first, &("created".to_owned(), "file".to_owned()), "taken in from its file");
    assert!(since.iter().all(|(_, by)| by != "file"), "{weekly:?}");
}

#[tokio::test]
async fn a_change_on_disk_comes_before_a_client_change_to_the_same_note() {
    let vault = vault_with(&[("plan.md", "# Plan\n\nstep one\n")]);
    let (client, _handler) = open(vault.path()).await;
    let plan = fetched(&client, "plan").await.unwrap();
    let read_version = plan["version"].as_u64().unwrap();
    // The editor saves, and at once a model edits the note it read before.
    put_file(vault.path(), "plan.md", "# Plan\n\nstep one\nstep two (editor)\n");
    call(&client, "edit", json!({"id": "plan", "append": "step three (model)"})).await;
    let plan = fetched(&client, "plan").await.unwrap();
    assert_eq!(plan["body"], "step one\nstep two (editor)\nstep three (model)");
    let by: Vec<String> = history_by(&client, "plan").await.into_iter().map(|(_, by)| by).collect();
    assert_eq!(by[1], "file", "the editor's save is a version of its own: {by:?}");
    assert_eq!(std::fs::read_to_string(vault.path().join("plan.md")).unwrap(), "# Plan\n\nstep one\nstep two (editor)\nstep three (model)\n");

    // With expect_version, a change made on disk since the read refuses the edit.
    let current = plan["version"].as_u64().unwrap();
    assert!(current > read_version);
    put_file(vault.path(), "plan.md", "# Plan\n\nrewritten by hand\n");
    let refused = call(&client, "edit", json!({"id": "plan", "append": "x", "expect_version": current})).await;
    assert_error(&refused, &format!("note plan is at version {}, not {current}; fetch it again", current + 1));
    assert_eq!(std::fs::read_to_string(vault.path().join("plan.md")).unwrap(), "# Plan\n\nrewritten by hand\n");
    assert_eq!(fetched(&client, "plan").await.unwrap()["body"], "rewritten by hand");
}

#[tokio::test]
async fn a_git_checkout_of_another_branch_is_taken_in() {
    let vault = vault_with(&[]);
    let root = vault.path();
    run("git", &["init", "-q", "-b", "main"], root);
    for n in 0..150 {
        put_file(root, &format!("notes/n{n:03}.md"), &format!("main text {n}\n"));
    }
    run("git", &["add", "."], root);
    run("git", &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "main"], root);
    run("git", &["checkout", "-qb", "other"], root);
    for n in 0..150 {
        put_file(root, &format!("notes/n{n:03}.md"), &format!("other text {n}\n"));
    }
    std::fs::remove_file(root.join("notes/n149.md")).unwrap();
    run("git", &["add", "-A"], root);
    run("git", &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "other"], root);
    run("git", &["checkout", "-q", "main"], root);

    let (client, _handler) = open(root).await;
    until(&client, "n000", body_is("main text 0")).await;
    run("git", &["checkout", "-q", "other"], root);
    until(&client, "n148", body_is("other text 148")).await;
    until(&client, "n000", body_is("other text 0")).await;
    until(&client, "n149", |note| note.is_none()).await;
    run("git", &["checkout", "-q", "main"], root);
    until(&client, "n149", body_is("main text 149")).await;
    until(&client, "n000", body_is("main text 0")).await;
    // git sees only the files: PKB's folder ignores itself.
    let status = Command::new("git").args(["status", "--porcelain"]).current_dir(root).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}
}

#[tokio::test]
async fn files_pkb_cannot_take_are_left_alone_and_listed_by_check() {
    let vault = vault_with(&[
        ("good.md", "fine\n"),
        ("twin/good.md", "---\ntitle: good\n---\nthe same id\n"),
        ("unclosed.md", "---\ntitle: x\nno end\n"),
    ]);
    std::fs::write(vault.path().join("latin1.md"), b"caf\xe9\n").unwrap();
    std::fs::write(vault.path().join("huge.md"), "x".repeat(2 << 20)).unwrap();
    // A name that is not UTF-8 (Latin-1 `café.md`) is told of, not skipped silently.
    let latin1_name = std::ffi::OsStr::from_bytes(b"caf\xe9.md");
    std::fs::write(vault.path().join(latin1_name), "fine text\n").unwrap();
    let root = vault.path().to_str().unwrap();
    let (status, out, _) = run_command(&["--vault", root, "check"]);
    assert!(!status.success(), "{out}");
    assert!(
        out.contains("5 files of the vault cannot be taken as notes"),
        "{out}"
    );
    assert!(out.contains(".md: its name is not UTF-8"), "{out}");
    assert!(out.contains("latin1.md: is not UTF-8 text"), "{out}");
    assert!(out.contains("huge.md: is larger than 1 MiB"), "{out}");
    assert!(
        out.contains("unclosed.md: front matter: the `---` block is never closed"),
        "{out}"
    );
    assert!(
        out.contains("twin/good.md: its note's id `good` is the note of good.md"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(vault.path().join("latin1.md")).unwrap(),
        b"caf\xe9\n"
    );
    assert_eq!(
        std::fs::read_to_string(vault.path().join("twin/good.md")).unwrap(),
        "---\ntitle: good\n---\nthe same id\n"
    );
    let (status, out, _) = run_command(&["--vault", root, "call", "fetch", r#"{"id":"good"}"#]);
    assert!(status.success());
    assert!(out.contains("\"body\": \"fine\""), "{out}");
}

#[tokio::test]
async fn a_restart_takes_in_what_changed_while_no_server_ran() {
    let vault = vault_with(&[("a.md", "alpha\n"), ("b.md", "beta\n")]);
    let root = vault.path().to_str().unwrap();
    let fetch = |id: &str| {
        let (_, out, err) = run_command(&[
            "--vault",
            root,
            "call",
            "fetch",
            &format!(r#"{{"id":"{id}"}}"#),
        ]);
        out + &err
    };
    assert!(fetch("a").contains("alpha"));
    put_file(vault.path(), "a.md", "alpha two\n");
    std::fs::remove_file(vault.path().join("b.md")).unwrap();
    put_file(vault.path(), "c.md", "gamma\n");
    assert!(fetch("a").contains("alpha two"));
    assert!(fetch("b").contains("No note found with ID: b"));
    assert!(fetch("c").contains("gamma"));
    // The index can be deleted: it is rebuilt from the files.
    std::fs::remove_dir_all(vault.path().join(".pkb")).unwrap();
    assert!(fetch("a").contains("alpha two"));
    assert!(fetch("c").contains("gamma"));
    assert_eq!(
        std::fs::read_to_string(vault.path().join(".pkb/.gitignore")).unwrap(),
        "*\n"
    );
}

#[tokio::test]
async fn a_vault_is_refused_with_tokens_or_oauth() {
    let vault = vault_with(&[]);
    let root = vault.path().to_str().unwrap();
    let (status, _, err) =
        run_command(&["--vault", root, "--http", "127.0.0.1:0", "--auth", "tokens"]);
    assert!(!status.success());
    assert!(
        err.contains("--vault") && err.contains("--auth tokens or oauth"),
        "{err}"
    );
    // With oauth it is said before the issuer is asked for its keys: an issuer nothing
    // answers at would otherwise be the error.
    let (status, _, err) = run_command(&[
        "--vault",
        root,
        "--http",
        "127.0.0.1:0",
        "--auth",
        "oauth",
        "--oauth-issuer",
        "http://127.0.0.1:9/",
    ]);
    assert!(!status.success());
    assert!(
        err.contains("--vault") && err.contains("--auth tokens or oauth"),
        "{err}"
    );
    let (status, _, err) = run_command(&["--vault", root, "--memory", "check"]);
    assert!(!status.success());
    assert!(err.contains("cannot be given with --memory"), "{err}");
}

#[tokio::test]
async fn every_answered_write_is_whole_in_its_file_after_kill_9() {
    let vault = vault_with(&[]);
    let root = vault.path().to_owned();
    let mut server = tokio::process::Command::new(support::server_binary())
        .args(["--vault", root.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = support::start_client(
        RecordingClient::new(Sampling::Unsupported),
        (server.stdout.take().unwrap(), server.stdin.take().unwrap()),
    )
    .await;
    let mut answered = Vec::new();
    let writer = async {
        for n in 0.. {
            let body = format!("body {n} {}", "words ".repeat(200));
            let result = call(
                &client,
                "write",
                json!({"title": format!("Burst {}", n % 20), "body": body, "overwrite": true}),
            )
            .await;
            if result.is_error == Some(true) {
                break;
            }
            answered.push((n % 20, body));
        }
    };
    tokio::select! {
        () = writer => {}
        () = tokio::time::sleep(Duration::from_millis(1500)) => {}
    }
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    drop(client);
    assert!(
        answered.len() > 20,
        "only {} writes answered",
        answered.len()
    );
    let mut last = std::collections::HashMap::new();
    for (note, body) in &answered {
        last.insert(*note, body.clone());
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.ends_with(".tmp") || name.starts_with('.'),
            "a temporary file in sight: {name}"
        );
    }
    for (note, body) in last {
        let file = std::fs::read_to_string(root.join(format!("burst-{note}.md"))).unwrap();
        // The last answered write, or one sent after it whose answer the kill cut off.
        let written = file.split("---\n").nth(2).expect("whole front matter");
        let n: usize = written.split(' ').nth(1).unwrap().parse().unwrap();
        let answered_n: usize = body.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(
            n >= answered_n,
            "burst-{note}: the file holds {n}, {answered_n} was answered"
        );
        assert_eq!(
            written,
            format!("body {n} {}\n", "words ".repeat(200)),
            "half a file"
        );
    }
    // The next start finds every note whole, and the files and the store agree.
    let (status, out, _) = run_command(&["--vault", root.to_str().unwrap(), "check"]);
    assert!(status.success(), "{out}");
}

#[tokio::test]
async fn refused_edits_through_pkb_name_the_note() {
    let vault = vault_with(&[("x.md", "body\n")]);
    let (client, _handler) = open(vault.path()).await;
    let missing = call(&client, "edit", json!({"id": "nope", "append": "x"})).await;
    assert_error(&missing, "No note found with ID: nope");
}

stateless_revision! {
#[tokio::test]
async fn links_resolve_by_file_name_too() {
    let vault = vault_with(&[
        ("Projects/Deploy checklist.md", "---\ntitle: Release steps\n---\nbuild, verify\n"),
        ("plan.md", "see [[Deploy checklist]], [[projects/deploy checklist|the list]] and [[Nowhere]]\n"),
    ]);
    let (client, handler) = open(vault.path()).await;
    let plan = structured(&call(&client, "fetch", json!({"id": "plan"})).await);
    assert_eq!(plan["links"], json!([
        {"target": "Deploy checklist", "id": "release-steps", "title": "Release steps"},
        {"target": "projects/deploy checklist", "id": "release-steps", "title": "Release steps"},
        {"target": "Nowhere", "id": null, "title": null},
    ]));
    // The note the file holds lists the note linking to it by its file's name.
    let listed = structured(&call(&client, "fetch", json!({"id": "release-steps"})).await);
    assert_eq!(listed["backlinks"], json!([{"id": "plan", "title": "plan"}]));
    // A change on disk reaches a 2026-07-28 listen stream too.
    let _watch = watch(&client, &handler, &["pkb://notes/plan"]).await;
    put_file(vault.path(), "plan.md", "only [[Nowhere]] now\n");
    until(&client, "plan", body_is("only [[Nowhere]] now")).await;
    let start = Instant::now();
    while !handler.updated.lock().unwrap().iter().any(|uri| uri == "pkb://notes/plan") {
        assert!(start.elapsed() < PATIENCE, "no notification of a change on disk");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
}

/// Ten thousand files made while the server runs, as fast as a program can: more events than
/// the kernel's queue holds (16,384 by default, three an new file), so the watcher may lose
/// some and must look at the whole folder again; every file becomes a note.
#[tokio::test]
async fn ten_thousand_files_made_at_once_all_become_notes() {
    let vault = vault_with(&[]);
    let (client, _handler) = open(vault.path()).await;
    let root = vault.path().to_owned();
    tokio::task::spawn_blocking(move || {
        for n in 0..10_000 {
            put_file(
                &root,
                &format!("f{}/note {n:05}.md", n % 10),
                &format!("text {n}\n"),
            );
        }
    })
    .await
    .unwrap();
    for n in (0..10_000).step_by(997).chain([9_999]) {
        until(
            &client,
            &format!("note-{n:05}"),
            body_is(&format!("text {n}")),
        )
        .await;
    }
    let (_, out, _) = run_command(&["--vault", vault.path().to_str().unwrap(), "check"]);
    assert!(out.starts_with("ok: 10000 notes"), "{out}");
}

/// A file changed by another program reaches search by meaning too: its vectors follow the
/// change without waiting for a write through PKB.
#[tokio::test]
async fn a_changed_file_reaches_search_by_meaning() {
    let vault = vault_with(&[
        (
            "car.md",
            "# Fixing the car\n\nThe mechanic replaced the timing belt and the brakes.\n",
        ),
        (
            "list.md",
            "# Grocery list\n\nMilk, eggs, bread and apples for the week.\n",
        ),
    ]);
    let (client, _handler) = open(vault.path()).await;
    let first = |query: &'static str| {
        let client = &client;
        async move {
            let found = structured(
                &call(client, "search", json!({"query": query, "mode": "meaning"})).await,
            );
            found["results"][0]["id"].as_str().map(str::to_owned)
        }
    };
    let start = Instant::now();
    while first("automobile repair").await.as_deref() != Some("fixing-the-car") {
        assert!(
            start.elapsed() < PATIENCE,
            "the files' notes never got their vectors"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    put_file(
        vault.path(),
        "list.md",
        "# Grocery list\n\nA holiday by the sea: flights, hotel and sunscreen.\n",
    );
    let start = Instant::now();
    while first("vacation at the beach").await.as_deref() != Some("grocery-list") {
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "a changed file's meaning was not taken in before the indexer's own 10 s look"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A vault that goes out of sight (a disk unmounted, the folder moved away) is not taken for
/// a vault whose files were all deleted: its notes stay.
#[tokio::test]
async fn a_vault_out_of_sight_deletes_nothing() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("vault");
    put_file(&root, "a.md", "alpha\n");
    put_file(&root, "sub/b.md", "beta\n");
    let (client, _handler) = open(&root).await;
    until(&client, "b", body_is("beta")).await;
    std::fs::rename(&root, parent.path().join("elsewhere")).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        fetched(&client, "a").await.expect("a kept")["body"],
        "alpha"
    );
    assert_eq!(fetched(&client, "b").await.expect("b kept")["body"], "beta");
    let history = history_by(&client, "a").await;
    assert!(
        history.iter().all(|(change, _)| change != "deleted"),
        "{history:?}"
    );
}
