//! Threads of the store's own that serve reads, fed by one queue.
//!
//! A read handed to tokio's blocking pool costs a task, the pool's lock and a fresh thread
//! wake-up for every call, and 32 reads in flight spread over as many threads that then queue
//! for the few connections. These threads stay awake while the queue holds work, so a burst of
//! reads is served back to back, and there are never more of them than read connections.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::{NoteBackend, StoreError};

type Job = Box<dyn FnOnce(&dyn NoteBackend) + Send>;

/// The reading threads of one store; dropping it lets them finish their queue and waits.
pub(super) struct ReadThreads {
    queue: Option<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
}

impl ReadThreads {
    /// Starts `count` threads (at least one) reading from `backend`.
    pub(super) fn start(backend: &Arc<dyn NoteBackend>, count: usize) -> std::io::Result<Self> {
        let (queue, jobs) = unbounded::<Job>();
        let threads = (0..count.max(1))
            .map(|i| {
                let backend = Arc::clone(backend);
                let jobs = jobs.clone();
                std::thread::Builder::new()
                    .name(format!("pkb-read-{i}"))
                    .spawn(move || serve(backend.as_ref(), &jobs))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(ReadThreads {
            queue: Some(queue),
            threads,
        })
    }

    /// Runs `f` on a reading thread and waits for its answer without blocking the caller's
    /// executor.
    pub(super) async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&dyn NoteBackend) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |backend| {
            // The caller may have gone away; its answer is then dropped.
            let _ = answer.send(f(backend));
        });
        let sent = self.queue.as_ref().map(|queue| queue.send(job));
        if !matches!(sent, Some(Ok(()))) {
            return Err(StoreError::Unavailable(
                "the read threads have stopped".to_owned(),
            ));
        }
        answered
            .await
            .map_err(|_| StoreError::Unavailable("a read failed without answering".to_owned()))?
    }
}

impl Drop for ReadThreads {
    fn drop(&mut self) {
        // Closing the queue ends each thread once it is empty; joining means the backend's
        // last reference (and the file's clean close) is gone when the store is dropped.
        self.queue = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn serve(backend: &dyn NoteBackend, jobs: &Receiver<Job>) {
    // Ends when the queue is closed and empty.
    for job in jobs {
        // A panicking read drops its answer (the caller sees `Unavailable`); the thread
        // goes on serving.
        let _ = catch_unwind(AssertUnwindSafe(|| job(backend)));
    }
}
