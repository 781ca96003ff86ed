//! An answered write survives `kill -9` of the process that made it, and so does every
//! version it kept.
//!
//! The test re-runs its own binary as the writer (selected by an environment variable), lets it
//! save and edit notes in a loop, printing each id once the call has returned, kills it with
//! SIGKILL at a moment derived from the clock, then reopens the file and checks every
//! acknowledged note and each of its versions.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pkb_core::note_edit::{BodyChange, NoteEdit, TagChange};
use pkb_core::store::{EditOutcome, NoteDraft, PutMode, VersionLookup, sqlite};

const ROLE: &str = "PKB_STORE_CRASH_WRITER_DB";
const TEST_NAME: &str = "acknowledged_writes_survive_sigkill";
/// The writer stops by itself after this long, should the parent fail to kill it.
const WRITER_MAX: Duration = Duration::from_secs(60);

/// The exact content of version `version` of note `i`, so the parent can tell it is intact.
fn content(i: u64, version: u64) -> NoteDraft {
    NoteDraft {
        id: format!("crash-{i}"),
        title: format!("Crash note {i} v{version}"),
        tags: vec!["crash".to_owned(), format!("group-{}", i % 7)],
        body: format!("note {i} version {version}; ").repeat(40 + (i % 50) as usize),
    }
}

fn parse_title(title: &str) -> Option<(u64, u64)> {
    let rest = title.strip_prefix("Crash note ")?;
    let (i, v) = rest.split_once(" v")?;
    Some((i.parse().ok()?, v.parse().ok()?))
}

/// `content(i, version)` as an edit of `content(i, version - 1)` makes it.
fn edit_to(i: u64, version: u64) -> NoteEdit {
    let target = content(i, version);
    NoteEdit {
        title: Some(target.title),
        tags: TagChange::Set(target.tags),
        body: Some(BodyChange::Replace {
            old: format!("note {i} version {}; ", version - 1),
            new: format!("note {i} version {version}; "),
            all: true,
        }),
    }
}

/// The child: creates new notes and, every third step, changes an earlier one to a newer
/// version, by a whole write or an edit in turn. Prints `ack <index> <version> ok` after
/// each call returns.
fn run_writer(db: &Path) {
    // libtest has printed "test <name> ... " without a newline; start acks on a fresh line.
    println!();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let store = sqlite::open(db, true).expect("open store");
        let started = Instant::now();
        let mut versions: Vec<u64> = Vec::new();
        let mut step: u64 = 0;
        while started.elapsed() < WRITER_MAX {
            step += 1;
            let (i, version) = if step.is_multiple_of(3) && !versions.is_empty() {
                let i = (step * 7919) % versions.len() as u64;
                (i, versions[i as usize] + 1)
            } else {
                (versions.len() as u64, 1)
            };
            if version > 1 && step.is_multiple_of(2) {
                let edited = store
                    .edit(&format!("crash-{i}"), &edit_to(i, version), None)
                    .await
                    .expect("edit");
                assert!(matches!(edited, EditOutcome::Edited { .. }), "{edited:?}");
            } else {
                store
                    .put(content(i, version), PutMode::Replace)
                    .await
                    .expect("put");
            }
            if version == 1 {
                versions.push(1);
            } else {
                versions[i as usize] = version;
            }
            // One write per line: a kill cannot interleave a half line with a later one, and
            // the trailing "ok" tells a complete line from a cut one.
            println!("ack {i} {version} ok");
        }
    });
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    if let Some(db) = std::env::var_os(ROLE) {
        run_writer(Path::new(&db));
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn writer");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<(u64, u64)>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let parsed = line
                .strip_prefix("ack ")
                .and_then(|l| l.strip_suffix(" ok"))
                .and_then(|l| l.split_once(' '))
                .and_then(|(i, v)| Some((i.parse().ok()?, v.parse().ok()?)));
            if let Some(ack) = parsed
                && tx.send(ack).is_err()
            {
                break;
            }
        }
    });

    // Start the clock only once the writer is really writing, so a slow machine still kills
    // it mid-stream rather than during start-up.
    let mut acked: HashMap<u64, u64> = HashMap::new();
    while acked.len() < 5 {
        let (i, v) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the writer acknowledges writes");
        acked.insert(i, v);
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let delay = Duration::from_millis(200 + u64::from(nanos % 500));
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL the writer");
    let status = child.wait().unwrap();
    assert!(!status.success(), "the writer was killed, not finished");
    reader.join().unwrap();
    for (i, v) in rx.try_iter() {
        let latest = acked.entry(i).or_insert(v);
        *latest = (*latest).max(v);
    }
    eprintln!("killed after {delay:?}; {} notes acknowledged", acked.len());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = sqlite::open(&db, true).expect("reopen after kill -9");
        for (&i, &acked_version) in &acked {
            let note = store
                .get(&format!("crash-{i}"))
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("acknowledged note crash-{i} is missing"));
            let (_, version) = parse_title(&note.title).expect("title intact");
            // The write in flight at the kill may have committed without its ack.
            assert!(
                version >= acked_version,
                "crash-{i}: stored v{version}, acknowledged v{acked_version}"
            );
            let expected = content(i, version);
            assert_eq!(note.title, expected.title);
            assert_eq!(note.body, expected.body, "crash-{i} body intact");
            assert_eq!(note.tags, expected.tags);
            assert_eq!(note.version, version, "crash-{i}: its version count");
            // Every version the writer was answered for is kept, whole.
            for earlier in 1..=acked_version {
                let VersionLookup::Found(kept) = store.version(&note.id, earlier).await.unwrap()
                else {
                    panic!("crash-{i} lost its answered version {earlier}");
                };
                let expected = content(i, earlier);
                assert_eq!(
                    (&kept.note.title, &kept.note.body, &kept.note.tags),
                    (&expected.title, &expected.body, &expected.tags),
                    "crash-{i} version {earlier}"
                );
            }
        }
        // Seeds plus every acknowledged note, and at most one more that was in flight.
        let count = store.count().await.unwrap();
        let expected = acked.len() as u64 + 3;
        assert!(
            count == expected || count == expected + 1,
            "count {count}, acknowledged {}",
            acked.len()
        );
        store.verify().await.expect("file and search index intact");
        // The newest note, so that it lies inside the ranking window, and every hit, because
        // hundreds of notes match these words (`12` is also a prefix of `120`) and many tie.
        let some = *acked.keys().max().unwrap();
        let hits = store
            .search(
                &format!("note {some} version"),
                &["crash".to_owned()],
                10_000,
            )
            .await
            .unwrap();
        assert!(
            hits.iter().any(|h| h.id == format!("crash-{some}")),
            "search index has crash-{some}"
        );
    });
}
