//! Writes in flight wait for their group as tasks: however many there are, one thread at a
//! time commits them. Alone in its test binary, so that the process's threads are this
//! test's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pkb_core::store::{NoteDraft, PutMode, Store, StoreOptions};

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
    let options = StoreOptions {
        seed: false,
        ..StoreOptions::default()
    };
    let store = Arc::new(Store::open_with_options(&dir.path().join("pkb.db"), &options).unwrap());
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
    // committing, with room for the pool's idle threads.
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        peak <= before + 12,
        "{peak} threads at the peak of {WRITES} writes in flight, {before} before"
    );
}
