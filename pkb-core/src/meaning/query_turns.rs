//! Searches by meaning take turns: encoding a query and scanning the notes' vectors is tens
//! of milliseconds of CPU, and sixteen clients doing it at once on a machine of two cores
//! took every core from the calls that need a millisecond (other clients' word search p50
//! went from 1.9 to 167 ms, fetch to 173 ms). At most half the cores (at least one) work on
//! meaning searches at a time; the others wait their turn, first come first served, and the
//! rest of the machine stays with everything else.

use std::sync::OnceLock;

use tokio::sync::{Semaphore, SemaphorePermit};

/// How many searches by meaning work at once on a machine of `cores` cores.
fn turns_for(cores: usize) -> usize {
    (cores / 2).max(1)
}

/// Waits for a turn to search by meaning; the turn ends when the permit is dropped.
pub async fn take_turn() -> SemaphorePermit<'static> {
    static TURNS: OnceLock<Semaphore> = OnceLock::new();
    let turns = TURNS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Semaphore::new(turns_for(cores))
    });
    turns
        .acquire()
        .await
        .unwrap_or_else(|_| unreachable!("the semaphore is never closed"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn half_the_cores_and_at_least_one_search_at_once() {
        assert_eq!(super::turns_for(1), 1);
        assert_eq!(super::turns_for(2), 1);
        assert_eq!(super::turns_for(8), 4);
    }
}
