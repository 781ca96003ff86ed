//! Where passwords are checked: a few threads of their own, each taking one check at a time.
//!
//! An argon2id check allocates 19 MiB and frees it. Run on tokio's blocking pool, whose threads
//! come and go, each check could land on another thread and so in another of the allocator's
//! per-thread arenas (glibc keeps up to eight per core of the host, not of the container), and
//! each arena kept what it had held: sign-in posts naming accounts that do not exist took a
//! server to 2.8 GiB, kept after they stopped. A fixed few threads touch a fixed few arenas, so
//! what the checks hold is bounded by the number of threads ([`MAX_THREADS`] at most) and does not grow with the rate
//! of posts.

use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::locks::lock;

/// The most password-check threads: more cannot go faster than the cores, and each may keep
/// up to a few times argon2id's 19 MiB in its arena.
pub const MAX_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// The threads, and a place for each check under way: a check that finds none is refused at
/// once, so a flood of posts grows no queue.
pub struct PasswordChecks {
    jobs: std::sync::mpsc::Sender<Job>,
    places: Arc<Semaphore>,
    /// How many threads check, so how many checks run at once.
    #[cfg(test)]
    threads: usize,
}

impl PasswordChecks {
    /// Starts one thread per core, at most [`MAX_THREADS`].
    pub fn start() -> Result<Self, String> {
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MAX_THREADS);
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..threads {
            let queue = Arc::clone(&queue);
            std::thread::Builder::new()
                .name(format!("pkb-password-{n}"))
                .spawn(move || {
                    loop {
                        // Released before the job runs, so the others take the next ones.
                        let job = lock(&queue).recv();
                        match job {
                            Ok(job) => job(),
                            Err(_) => break,
                        }
                    }
                })
                .map_err(|error| format!("cannot start a password-check thread: {error}"))?;
        }
        Ok(Self {
            jobs,
            places: Arc::new(Semaphore::new(threads)),
            #[cfg(test)]
            threads,
        })
    }

    /// How many checks run at once.
    #[cfg(test)]
    fn threads(&self) -> usize {
        self.threads
    }

    /// A place for one check, if one is free now.
    pub fn place(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.places).try_acquire_owned().ok()
    }

    /// Runs `check` on a password-check thread, holding `place`; `None` if it could not run.
    pub async fn run<T: Send + 'static>(
        &self,
        place: OwnedSemaphorePermit,
        check: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _place = place;
            let _ = answer.send(check());
        });
        self.jobs.send(job).ok()?;
        answered.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn checks_run_on_the_same_few_threads_and_no_queue_grows() {
        let checks = PasswordChecks::start().unwrap();
        let mut names = std::collections::HashSet::new();
        for _ in 0..50 {
            let place = checks.place().unwrap();
            let name = checks
                .run(place, || std::thread::current().name().map(str::to_owned))
                .await
                .unwrap();
            names.insert(name.unwrap());
        }
        assert!(names.len() <= checks.threads(), "{names:?}");
        // A check's place is given back on its thread just after its answer: wait for it.
        while checks.places.available_permits() < checks.threads() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let places: Vec<_> = (0..checks.threads()).map(|_| checks.place()).collect();
        assert!(places.iter().all(Option::is_some));
        assert!(checks.place().is_none(), "all taken: refused, not queued");
    }
}
