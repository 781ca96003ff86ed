//! Writes in flight wait for their group as tasks: however many there are, one thread at a
//! time commits them, and a write's caller, once answered, reads what it wrote. Its own test
//! binary, so that the process's threads are this file's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pkb_core::store::sqlite::SqliteOptions;
use pkb_core::store::{NoteDraft, PutMode, sqlite};

fn threads_of_this_process() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .unwrap()
}

#[test]
fn many_writes_in_flight_take_no_thread_each_and_all_are_saved() {
    const WRITES: usize = 128;
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions {
        seed: false,
        ..SqliteOptions::default()
    };
    let store = Arc::new(sqlite::open_with_options(&dir.path().join("pkb.db"), &options).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (done, peak) = (Arc::clone(&done), Arc::clone(&peak));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                peak.fetch_max(threads_of_this_process(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let before = threads_of_this_process();
    runtime.block_on(async {
        let writes = (0..WRITES).map(|i| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let draft = NoteDraft {
                    id: format!("note-{i}"),
                    title: format!("Note {i}"),
                    tags: vec!["burst".to_owned()],
                    body: format!("written in a burst of many, number {i} ").repeat(40),
                };
                store.put(draft, PutMode::CreateOnly).await.unwrap();
            })
        });
        for write in writes.collect::<Vec<_>>() {
            write.await.unwrap();
        }
        assert_eq!(store.count().await.unwrap(), WRITES as u64);
    });
    done.store(true, Ordering::SeqCst);
    sampler.join().unwrap();

    // Each write used to hold a thread of tokio's blocking pool until its group was durable:
    // over a hundred threads here. Now the workers, the store's read threads and one thread
    // committing, with room for the pool's idle threads and the other test of this file.
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        peak <= before + 24,
        "{peak} threads at the peak of {WRITES} writes in flight, {before} before"
    );
}

#[test]
fn a_note_read_right_after_its_replacement_is_answered_is_the_new_one() {
    let store = Arc::new(sqlite::open_in_memory(false).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let draft = |body: String| NoteDraft {
            id: "kept-in-memory".to_owned(),
            title: "Kept in memory".to_owned(),
            tags: Vec::new(),
            body,
        };
        for round in 0..300 {
            let body = format!("version {round}");
            store
                .put(draft(body.clone()), PutMode::Replace)
                .await
                .unwrap();
            // Served from memory when nothing was committed since it was last read: the
            // write must count as committed before it is answered.
            let read = store.get("kept-in-memory").await.unwrap().unwrap();
            assert_eq!(read.body, body, "round {round}");
        }
    });
}
