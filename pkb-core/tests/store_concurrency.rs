//! Several writers on one store: two processes on one file, and many tasks in one process.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pkb_core::store::sqlite::SqliteOptions;
use pkb_core::store::{NoteDraft, PutMode, PutOutcome, sqlite};

const ROLE: &str = "PKB_STORE_TWIN_WRITER";
const DB: &str = "PKB_STORE_TWIN_DB";
const GO: &str = "PKB_STORE_TWIN_GO";
const TEST_NAME: &str = "two_processes_write_one_file_at_once";
const WRITES: usize = 200;

fn note(prefix: &str, i: usize) -> NoteDraft {
    NoteDraft {
        id: format!("{prefix}-{i}"),
        title: format!("Note {i} from {prefix}"),
        tags: vec![prefix.to_owned(), "twin".to_owned()],
        body: format!("written by process {prefix}, number {i}"),
    }
}

/// One of the two children: waits for the go file so both start together (and both create the
/// new file at once), writes its notes one put at a time, then waits to see all of the other's.
fn run_twin(me: &str, other: &str, db: &Path, go: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !go.exists() {
        assert!(Instant::now() < deadline, "never told to go");
        std::thread::sleep(Duration::from_millis(1));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = sqlite::open(db, true).expect("open store");
        for i in 0..WRITES {
            let outcome = store
                .put(note(me, i), PutMode::CreateOnly)
                .await
                .unwrap_or_else(|e| panic!("{me}: put {i} failed: {e}"));
            assert!(matches!(outcome, PutOutcome::Created(_)), "{me}-{i}");
        }
        let prefix = format!("{other}-");
        loop {
            let seen = store.ids_with_prefix(&prefix, 1000).await.unwrap();
            if seen.len() == WRITES {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{me} saw only {} of {other}'s notes",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for i in 0..WRITES {
            let got = store
                .get(&format!("{other}-{i}"))
                .await
                .unwrap()
                .expect("other's note");
            assert_eq!(got.body, note(other, i).body);
        }
        let hits = store
            .search(&format!("process {other}"), &[other.to_owned()], 50)
            .await
            .unwrap();
        assert_eq!(hits.len(), 50, "{me} finds {other}'s notes by search");
        println!("twin {me} saw {other} ok");
    });
}

fn spawn_twin(me: &str, db: &Path, go: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, me)
        .env(DB, db)
        .env(GO, go)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn twin")
}

#[test]
fn two_processes_write_one_file_at_once() {
    if let Some(me) = std::env::var_os(ROLE) {
        let me = me.to_string_lossy().into_owned();
        let other = if me == "a" { "b" } else { "a" };
        let db = PathBuf::from(std::env::var_os(DB).unwrap());
        let go = PathBuf::from(std::env::var_os(GO).unwrap());
        run_twin(&me, other, &db, &go);
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    // The file does not exist yet: both processes create and seed it at the same moment.
    let db = dir.path().join("shared").join("pkb.db");
    let go = dir.path().join("go");
    let a = spawn_twin("a", &db, &go);
    let b = spawn_twin("b", &db, &go);
    std::fs::write(&go, b"").unwrap();
    // Collect both before judging, so a failure shows what each process said.
    let outputs: Vec<(&str, std::process::Output)> = [("a", a), ("b", b)]
        .into_iter()
        .map(|(name, child)| (name, child.wait_with_output().unwrap()))
        .collect();
    let report: String = outputs
        .iter()
        .map(|(name, out)| {
            format!(
                "--- twin {name} ({}):\n{}\n{}\n",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .collect();
    for (name, out) in &outputs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "twin {name} failed\n{report}");
        assert!(!report.contains("locked"), "a twin hit a lock\n{report}");
        assert!(
            stdout.contains(&format!("twin {name} saw")),
            "twin {name} did not finish\n{report}"
        );
    }

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = sqlite::open(&db, true).unwrap();
        assert_eq!(
            store.count().await.unwrap(),
            (2 * WRITES + 3) as u64,
            "every note, and the seeds exactly once"
        );
        assert_eq!(
            store.ids_with_prefix("a-", 1000).await.unwrap().len(),
            WRITES
        );
        assert_eq!(
            store.ids_with_prefix("b-", 1000).await.unwrap().len(),
            WRITES
        );
        store.verify().await.unwrap();
    });
}

#[test]
fn many_tasks_share_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        seed: false,
        max_readers: 2,
        ..SqliteOptions::default()
    };
    let store = sqlite::open_with_options(&dir.path().join("pkb.db"), &options).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(store);
        let mut tasks = Vec::new();
        for t in 0..8 {
            let store = Arc::clone(&store);
            tasks.push(tokio::spawn(async move {
                for i in 0..25 {
                    let prefix = format!("t{t}");
                    store
                        .put(note(&prefix, i), PutMode::CreateOnly)
                        .await
                        .unwrap();
                    let got = store.get(&format!("{prefix}-{i}")).await.unwrap();
                    assert!(got.is_some(), "read your own write");
                    store.search("written number", &[], 10).await.unwrap();
                    store.list(None, 20).await.unwrap();
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(store.count().await.unwrap(), 200);
        assert_eq!(
            store
                .search("written", &["twin".to_owned()], 50)
                .await
                .unwrap()
                .len(),
            50
        );
    });
}
