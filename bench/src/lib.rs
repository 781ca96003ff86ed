//! Shared by the benchmarks: the generated notes and query mix both of them measure, the
//! HTTP bench's OAuth issuer, stores of many versions, and what the kernel says of a server
//! process.

pub mod corpus;
pub mod issuer;
pub mod versions;

/// CPU time used so far by all of process `pid`'s live threads, from the scheduler's own
/// accounting (`/proc/PID/task/*/schedstat`, nanoseconds).
pub fn cpu_time(pid: u32) -> std::time::Duration {
    let dir = format!("/proc/{pid}/task");
    let mut total = 0u64;
    for task in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
    }
    std::time::Duration::from_nanos(total)
}
