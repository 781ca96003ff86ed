//! The store's read threads: a panicking read, reads alongside a slow one, and a clean stop.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pkb_core::store::sqlite::NoteBackend;
use pkb_core::store::{
    NoteDates, NoteDraft, NoteSummary, Provenance, PutMode, PutOutcome, SearchHit, StoreError,
    sqlite,
};

/// A backend whose `get("boom")` panics, whose `search` waits until the gate opens, and which
/// counts the reads it finished.
#[derive(Default)]
struct Scripted {
    reads: AtomicUsize,
    gate: Mutex<bool>,
    opened: Condvar,
}

impl Scripted {
    fn open_gate(&self) {
        *self.gate.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl NoteBackend for Scripted {
    fn get(&self, id: &str) -> Result<Option<pkb_core::note::Note>, StoreError> {
        assert_ne!(id, "boom", "scripted panic");
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(None)
    }
    fn put(&self, _: NoteDraft, _: PutMode, _: &Provenance) -> Result<PutOutcome, StoreError> {
        Ok(PutOutcome::Exists)
    }
    fn put_dated(
        &self,
        _: Vec<(NoteDraft, NoteDates)>,
        _: PutMode,
        _: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        Ok(Vec::new())
    }
    fn delete(&self, _: &str, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn list(&self, _: Option<&str>, _: usize) -> Result<Vec<NoteSummary>, StoreError> {
        Ok(Vec::new())
    }
    fn list_with_bodies(
        &self,
        _: Option<&str>,
        _: usize,
    ) -> Result<Vec<pkb_core::note::Note>, StoreError> {
        Ok(Vec::new())
    }
    fn count(&self) -> Result<u64, StoreError> {
        Ok(self.reads.load(Ordering::SeqCst) as u64)
    }
    fn search(&self, _: &str, _: &[String], _: usize) -> Result<Vec<SearchHit>, StoreError> {
        // Generous: only reached if nothing else could run while this search held its thread.
        let (open, timeout) = self
            .opened
            .wait_timeout_while(self.gate.lock().unwrap(), Duration::from_secs(60), |open| {
                !*open
            })
            .unwrap();
        if timeout.timed_out() && !*open {
            return Err(StoreError::Unavailable("the gate never opened".to_owned()));
        }
        self.reads.fetch_add(1, Ordering::SeqCst);
        Ok(Vec::new())
    }
    fn ids_with_prefix(&self, _: &str, _: usize) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn tags_with_prefix(&self, _: &str, _: usize) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    fn verify(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn a_panicking_read_fails_that_call_and_the_threads_keep_serving() {
    let backend = Arc::new(Scripted::default());
    let store = sqlite::from_backend(backend.clone());
    runtime().block_on(async {
        for _ in 0..3 {
            let err = store
                .get("boom")
                .await
                .expect_err("the panicking read fails");
            assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
        }
        for _ in 0..10 {
            assert_eq!(store.get("fine").await.unwrap(), None);
        }
    });
    assert_eq!(backend.reads.load(Ordering::SeqCst), 10);
}

#[test]
fn a_fetch_is_answered_while_a_slow_search_runs() {
    let backend = Arc::new(Scripted::default());
    let store = sqlite::from_backend(backend.clone());
    runtime().block_on(async {
        let slow = tokio::spawn({
            let store = store.clone();
            async move { store.search("anything", &[], 10).await }
        });
        tokio::task::yield_now().await;
        // The search holds one thread until the gate opens; these reads take the other one.
        for _ in 0..20 {
            store.get("fine").await.unwrap();
        }
        assert_eq!(backend.reads.load(Ordering::SeqCst), 20);
        backend.open_gate();
        slow.await
            .unwrap()
            .expect("the search was still waiting: the gets did not need its thread");
    });
}

#[test]
fn the_last_handle_gone_releases_the_backend_after_its_reads() {
    let backend = Arc::new(Scripted::default());
    backend.open_gate();
    let store = sqlite::from_backend(backend.clone());
    let rt = runtime();
    let pending = rt.spawn({
        let store = store.clone();
        async move { store.search("x", &[], 1).await }
    });
    rt.block_on(async { tokio::task::yield_now().await });
    drop(store);
    rt.block_on(pending).unwrap().unwrap();
    assert_eq!(
        Arc::strong_count(&backend),
        1,
        "the read threads let go of the backend once the last handle is gone"
    );
}
