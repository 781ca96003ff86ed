//! A person and models changing one vault at once: an editor saving a note (read, write a
//! temporary file, rename, as editors do) while a model edits the same note, and two servers
//! on one vault (clients start one per window). Nothing answered and nothing saved is lost:
//! every save and every answered edit is in the file or in a version, and the file ends
//! holding both sides' last lines. Also a folder swapped for a link, and what a rebuilt
//! `.pkb/` keeps.
//!
//! The races run for a few seconds here; `PKB_RACE_SECONDS=60` runs them as the hardening
//! issue measured them.

#[macro_use]
mod support;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{
    Client, RecordingClient, Sampling, call, connect_with, run_command, structured, until_note,
};

/// How long a change on disk may take to be taken in before a test fails: far past the
/// contract's 2 s, for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(30);

fn race_time() -> Duration {
    let seconds = std::env::var("PKB_RACE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    Duration::from_secs(seconds)
}

async fn open(dir: &Path) -> Client {
    let handler = RecordingClient::new(Sampling::Unsupported);
    connect_with(handler, &["--vault", dir.to_str().unwrap()]).await
}

/// Every body the note `id` has had, and the one it has now: each version, by number.
async fn every_body(client: &Client, id: &str) -> Vec<String> {
    let now = structured(&call(client, "fetch", json!({"id": id})).await);
    let current = now["note"]["version"].as_u64().unwrap();
    let mut bodies = Vec::new();
    for version in 1..=current {
        let found = call(client, "fetch", json!({"id": id, "version": version})).await;
        bodies.push(
            structured(&found)["note"]["body"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    bodies
}

/// A person's editor: every 30-250 ms it reads the note's file, adds a line
/// (`editor line N`) and saves through a temporary file renamed over it. The lines it saved,
/// in order. Each save holds every line before it, as a person's does: a save replaced by the
/// next before anyone read it is still found in that next one.
fn editor(file: PathBuf, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut saved = Vec::new();
    let temporary = file.with_file_name(".plan.md.swp");
    // A small fixed-seed generator: the pauses vary, the run is repeatable in kind.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(30 + seed % 221));
        let text = std::fs::read_to_string(&file).unwrap();
        n += 1;
        let line = format!("editor line {n}");
        let mut new = text.clone();
        if !new.ends_with('\n') {
            new.push('\n');
        }
        new.push_str(&line);
        new.push('\n');
        std::fs::write(&temporary, &new).unwrap();
        std::fs::rename(&temporary, &file).unwrap();
        saved.push(line);
    }
    saved
}

/// A model and an editor change one note for [`race_time`]: the editor adds lines, the model
/// makes its own line the next (so that a minute's race stays within a note's limit); the
/// model waits `pause` between its edits.
async fn a_model_and_an_editor_change_one_note(pause: Duration) {
    let vault = tempfile::tempdir().unwrap();
    let file = vault.path().join("plan.md");
    std::fs::write(&file, "# Plan\n\nmodel line 0\n").unwrap();
    let client = open(vault.path()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let person = {
        let (file, stop) = (file.clone(), Arc::clone(&stop));
        std::thread::spawn(move || editor(file, stop))
    };
    let mut answered = Vec::new();
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < race_time() {
        let line = format!("model line {}", n + 1);
        let old = format!("model line {n}");
        let result = call(
            &client,
            "edit",
            json!({"id": "plan", "replace": {"old": old, "new": line}}),
        )
        .await;
        // A refusal (the model's own line gone) shows below as a last line missing.
        if result.is_error != Some(true) {
            answered.push(line);
            n += 1;
        }
        tokio::time::sleep(pause).await;
    }
    stop.store(true, Ordering::Relaxed);
    let saved = person.join().unwrap();
    assert!(
        saved.len() >= 5 && answered.len() >= 5,
        "{saved:?} {answered:?}"
    );

    // The editor's last save is taken in (at most a watcher's look away).
    let last_saved = saved.last().unwrap().clone();
    // The file follows the store's take-in, written with whatever was merged into it.
    let holds_both = |text: &str| {
        text.lines().any(|l| l == last_saved)
            && answered
                .last()
                .is_none_or(|edit| text.lines().any(|l| l == edit))
    };
    until_note(&client, "plan", PATIENCE, |note| {
        let body = note
            .and_then(|note| note["body"].as_str())
            .unwrap_or_default();
        let on_disk = std::fs::read_to_string(&file).unwrap();
        body.lines().any(|l| l == last_saved) && holds_both(&on_disk)
    })
    .await;
    let on_disk = std::fs::read_to_string(&file).unwrap();
    let bodies = every_body(&client, "plan").await;
    let holds = |text: &str, line: &str| text.lines().any(|l| l == line);
    let kept = |line: &String| holds(&on_disk, line) || bodies.iter().any(|b| holds(b, line));
    let lost_saves: Vec<&String> = saved.iter().filter(|line| !kept(line)).collect();
    let lost_edits: Vec<&String> = answered.iter().filter(|line| !kept(line)).collect();
    assert!(
        lost_saves.is_empty() && lost_edits.is_empty(),
        "lost {} of {} saves ({lost_saves:?}) and {} of {} answered edits ({lost_edits:?})",
        lost_saves.len(),
        saved.len(),
        lost_edits.len(),
        answered.len()
    );
    assert!(holds(&on_disk, &last_saved), "{on_disk}");
    assert!(holds(&on_disk, answered.last().unwrap()), "{on_disk}");
}

#[tokio::test]
async fn an_editor_saving_while_a_model_edits_without_pause_loses_nothing() {
    a_model_and_an_editor_change_one_note(Duration::ZERO).await;
}

#[tokio::test]
async fn an_editor_saving_while_a_model_edits_every_100_ms_loses_nothing() {
    a_model_and_an_editor_change_one_note(Duration::from_millis(100)).await;
}

/// A person's editor read the note, a model's edit was written, and only then did the editor
/// save what it had read plus its own line: its save is merged with the model's edit, not
/// taken as the note, although the file's time says it was made after that edit.
#[tokio::test]
async fn a_save_made_on_the_text_before_a_models_edit_keeps_that_edit() {
    let vault = tempfile::tempdir().unwrap();
    let file = vault.path().join("plan.md");
    std::fs::write(&file, "# Plan\n\nmodel line 0\nshared line\n").unwrap();
    let client = open(vault.path()).await;
    let read_by_the_editor = std::fs::read_to_string(&file).unwrap();
    let edit = json!({"id": "plan", "replace": {"old": "model line 0", "new": "model line 1"}});
    assert_ne!(call(&client, "edit", edit).await.is_error, Some(true));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let temporary = vault.path().join(".plan.md.swp");
    std::fs::write(&temporary, format!("{read_by_the_editor}editor line\n")).unwrap();
    std::fs::rename(&temporary, &file).unwrap();
    let note = until_note(&client, "plan", PATIENCE, |note| {
        note.is_some_and(|note| note["body"].as_str().unwrap().contains("editor line"))
    })
    .await
    .unwrap();
    assert_eq!(note["body"], "model line 1\nshared line\neditor line");
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert!(
        on_disk.contains("model line 1") && on_disk.contains("editor line"),
        "{on_disk}"
    );
}

#[tokio::test]
async fn two_servers_on_one_vault_lose_no_answered_edit_and_take_in_none_of_each_other() {
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(vault.path().join("log.md"), "# Log\n\nstart\n").unwrap();
    let one = open(vault.path()).await;
    let two = open(vault.path()).await;
    let edits = |client: Client, who: &'static str| async move {
        let mut answered = Vec::new();
        for n in 0..60 {
            let line = format!("{who} {n}");
            let result = call(&client, "edit", json!({"id": "log", "append": line})).await;
            if result.is_error != Some(true) {
                answered.push(line);
            }
        }
        (client, answered)
    };
    let ((one, first), (two, second)) = tokio::join!(edits(one, "one"), edits(two, "two"));
    assert_eq!(first.len() + second.len(), 120, "every edit is answered");
    let on_disk = std::fs::read_to_string(vault.path().join("log.md")).unwrap();
    let missing: Vec<&String> = first
        .iter()
        .chain(&second)
        .filter(|line| !on_disk.lines().any(|l| l == line.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "answered but not in the file: {missing:?}"
    );
    // Each sees the other's changes, and neither took the other's writes for a person's.
    for client in [&one, &two] {
        let note = call(client, "fetch", json!({"id": "log"})).await;
        let body = structured(&note)["note"]["body"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(body.contains("one 59") && body.contains("two 59"), "{body}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let history = structured(&call(&one, "history", json!({"id": "log", "limit": 100})).await);
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(
        versions[0]["version"], 121,
        "one version an edit: {history:?}"
    );
    let by_file: Vec<&Value> = versions.iter().filter(|v| v["by"] == "file").collect();
    assert!(
        by_file.is_empty(),
        "taken in as a person's change: {by_file:?}"
    );
}

#[tokio::test]
async fn a_folder_swapped_for_a_link_outside_is_never_read_or_written_through() {
    let vault = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(vault.path().join("sub")).unwrap();
    std::fs::write(vault.path().join("sub/a.md"), "# A\n\ninside\n").unwrap();
    std::fs::write(outside.path().join("a.md"), "# A\n\nsecret outside\n").unwrap();
    let client = open(vault.path()).await;
    let note = call(&client, "fetch", json!({"id": "a"})).await;
    assert_eq!(structured(&note)["note"]["body"], "inside");
    std::fs::rename(vault.path().join("sub"), vault.path().join("moved-away")).unwrap();
    std::os::unix::fs::symlink(outside.path(), vault.path().join("sub")).unwrap();
    let _ = call(
        &client,
        "edit",
        json!({"id": "a", "append": "written by a model"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(outside.path().join("a.md")).unwrap(),
        "# A\n\nsecret outside\n"
    );
    let ids: HashSet<String> = structured(
        &call(
            &client,
            "search",
            json!({"query": "secret", "mode": "words"}),
        )
        .await,
    )["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.is_empty(), "the outside file became a note: {ids:?}");
    // The note's file is out of the vault's sight now: the note is gone (a version of it
    // kept), and no version ever held the outside file's text.
    let history = structured(&call(&client, "history", json!({"id": "a"})).await);
    for version in history["versions"].as_array().unwrap() {
        assert_eq!(version["chars"], "inside".len(), "{history:?}");
    }
}

#[tokio::test]
async fn a_rebuilt_store_keeps_renamed_notes_ids_and_files_dates() {
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(
        vault.path().join("Quarterly planning.md"),
        "intro\n\nsee [[Budget]]\n",
    )
    .unwrap();
    std::fs::write(
        vault.path().join("dated.md"),
        "---\ncreated: 2024-01-02T03:04:05Z\nupdated: 2024-05-06T07:08:09Z\n---\ndated body\n",
    )
    .unwrap();
    let root = vault.path().to_str().unwrap();
    let fetch = |id: &str| {
        let (status, out, err) = run_command(&[
            "--vault",
            root,
            "call",
            "fetch",
            &json!({"id": id}).to_string(),
        ]);
        assert!(status.success(), "{out}{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let dated = fetch("dated");
    assert_eq!(dated["note"]["created_at"], "2024-01-02T03:04:05.000Z");
    assert_eq!(dated["note"]["updated_at"], "2024-05-06T07:08:09.000Z");
    let renamed = json!({"id": "quarterly-planning", "title": "Q3 plans"}).to_string();
    let (status, out, err) = run_command(&["--vault", root, "call", "edit", &renamed]);
    assert!(status.success(), "{out}{err}");
    std::fs::remove_dir_all(vault.path().join(".pkb")).unwrap();
    let note = fetch("quarterly-planning");
    assert_eq!(note["note"]["title"], "Q3 plans");
    assert_eq!(note["note"]["body"], "intro\n\nsee [[Budget]]");
}

#[tokio::test]
async fn pkb_deleted_while_a_server_runs_is_made_again_and_no_write_is_refused() {
    let vault = tempfile::tempdir().unwrap();
    std::fs::write(vault.path().join("plan.md"), "# Plan\n\nstep one\n").unwrap();
    let client = open(vault.path()).await;
    let renamed = call(&client, "edit", json!({"id": "plan", "title": "Roadmap"})).await;
    assert_ne!(renamed.is_error, Some(true));
    std::fs::remove_dir_all(vault.path().join(".pkb")).unwrap();
    // The next change finds the folder gone, makes it again from the files, and is made.
    let edited = call(&client, "edit", json!({"id": "plan", "append": "step two"})).await;
    assert_ne!(edited.is_error, Some(true), "{edited:?}");
    let written = call(&client, "write", json!({"title": "Fresh", "body": "after"})).await;
    assert_ne!(written.is_error, Some(true), "{written:?}");
    let note = structured(&call(&client, "fetch", json!({"id": "plan"})).await);
    assert_eq!(
        note["note"]["title"], "Roadmap",
        "the renamed note keeps its id"
    );
    assert_eq!(note["note"]["body"], "step one\nstep two");
    let on_disk = std::fs::read_to_string(vault.path().join("plan.md")).unwrap();
    assert!(on_disk.ends_with("step one\nstep two\n"), "{on_disk}");
    assert!(vault.path().join("fresh.md").exists());
    assert!(vault.path().join(".pkb/notes.db").exists());
    // And a restart finds it all.
    drop(client);
    let root = vault.path().to_str().unwrap();
    let (status, out, err) = run_command(&["--vault", root, "call", "fetch", r#"{"id":"fresh"}"#]);
    assert!(status.success(), "{out}{err}");
    assert!(out.contains("\"body\": \"after\""), "{out}");
}
