//! Where passwords are checked: a few threads of their own, each taking one check at a time
//! with memory of its own.
//!
//! An argon2id check needs 19 MiB. Allocated and freed at every check, that memory stayed with
//! the allocator: on tokio's blocking pool, whose threads come and go, sign-in posts naming
//! accounts that do not exist took a server to 2.8 GiB; on two fixed threads still to 462 MiB,
//! in eight of glibc's arenas of up to 57 MiB each (a freed 19 MiB block raises glibc's
//! threshold for `mmap`, so the next ones come from the arenas, which keep them). So each
//! thread allocates its memory once, at its first check, and keeps it: what the checks hold is
//! [`MAX_THREADS`] times 19 MiB at most, whatever the rate of posts.

use std::sync::{Arc, Mutex};

use argon2::password_hash::phc::{Output, PasswordHash};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::locks::lock;

/// The most password-check threads: more cannot go faster than the cores, and each may keep
/// up to a few times argon2id's 19 MiB in its arena.
pub const MAX_THREADS: usize = 4;

type Job = Box<dyn FnOnce(&mut PasswordMemory) + Send>;

/// A password-check thread's memory for argon2, kept from one check to the next.
#[derive(Default)]
pub struct PasswordMemory {
    blocks: Vec<Block>,
}

impl PasswordMemory {
    /// Whether `password` is the one `hash` (a PHC string of argon2) was made from, checked
    /// as the `argon2` crate's own verifier does (the output compared in constant time), in
    /// this memory.
    pub fn verify(&mut self, password: &[u8], hash: &str) -> bool {
        let Ok(hash) = PasswordHash::new(hash) else {
            return false;
        };
        let (Some(salt), Some(expected)) = (&hash.salt, &hash.hash) else {
            return false;
        };
        let Ok(algorithm) = Algorithm::try_from(hash.algorithm.as_str()) else {
            return false;
        };
        let version = match hash.version.map(Version::try_from).transpose() {
            Ok(version) => version.unwrap_or_default(),
            Err(_) => return false,
        };
        let Ok(params) = Params::try_from(&hash) else {
            return false;
        };
        let blocks = params.block_count();
        if self.blocks.len() < blocks {
            self.blocks.resize(blocks, Block::new());
        }
        let mut computed = vec![0u8; expected.len()];
        Argon2::new(algorithm, version, params)
            .hash_password_into_with_memory(
                password,
                salt.as_ref(),
                &mut computed,
                &mut self.blocks[..blocks],
            )
            .is_ok()
            && Output::new(&computed).is_ok_and(|computed| computed == *expected)
    }
}

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
                    let mut memory = PasswordMemory::default();
                    loop {
                        // Released before the job runs, so the others take the next ones.
                        let job = lock(&queue).recv();
                        match job {
                            Ok(job) => job(&mut memory),
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

    /// Runs `check` on a password-check thread, in its memory, holding `place`; `None` if it
    /// could not run.
    pub async fn run<T: Send + 'static>(
        &self,
        place: OwnedSemaphorePermit,
        check: impl FnOnce(&mut PasswordMemory) -> T + Send + 'static,
    ) -> Option<T> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |memory| {
            let _place = place;
            let _ = answer.send(check(memory));
        });
        self.jobs.send(job).ok()?;
        answered.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use argon2::PasswordHasher;

    use super::*;

    #[test]
    fn kept_memory_verifies_as_the_crate_does_and_is_not_allocated_again() {
        let default = Argon2::default()
            .hash_password(b"correct horse battery")
            .unwrap()
            .to_string();
        let small = Argon2::from(Params::new(1024, 1, 1, None).unwrap())
            .hash_password(b"another long password")
            .unwrap()
            .to_string();
        let mut memory = PasswordMemory::default();
        assert!(memory.verify(b"correct horse battery", &default));
        let kept = (memory.blocks.as_ptr(), memory.blocks.len());
        assert_eq!(kept.1, Params::default().block_count());
        assert!(!memory.verify(b"correct horse battery!", &default));
        assert!(memory.verify(b"another long password", &small));
        assert!(!memory.verify(b"correct horse battery", &small));
        assert_eq!((memory.blocks.as_ptr(), memory.blocks.len()), kept);
        for broken in ["", "not a hash", &default[..default.len() - 4]] {
            assert!(!memory.verify(b"correct horse battery", broken), "{broken}");
        }
    }

    #[tokio::test]
    async fn checks_run_on_the_same_few_threads_and_no_queue_grows() {
        let checks = PasswordChecks::start().unwrap();
        let mut names = std::collections::HashSet::new();
        for _ in 0..50 {
            let place = checks.place().unwrap();
            let name = checks
                .run(place, |_| std::thread::current().name().map(str::to_owned))
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
