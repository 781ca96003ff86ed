//! Workloads run against the server and the floor side by side.
//!
//! Each measurement alternates between the two in small chunks, so that both see the same
//! machine: on a shared VM the speed of the CPU drifts by tens of percent within a minute, and
//! a ratio of two figures taken a minute apart would carry that drift.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Catalog, Error, Expect, Launch, Peer, check};
use crate::corpus::{Index, Note};

/// Calls per chunk when alternating.
const CHUNK: usize = 100;

/// One tools/call with what its answer must hold.
pub struct Call {
    /// The tool.
    pub tool: &'static str,
    /// Its arguments.
    pub args: Value,
    /// What the answer must hold.
    pub expect: Expect,
}

impl Call {
    /// `echo` of a text.
    pub fn echo(text: String) -> Call {
        Call {
            tool: "echo",
            args: json!({ "text": text }),
            expect: Expect::Echo(text),
        }
    }

    /// `fetch` of a note.
    pub fn fetch(note: &Note) -> Call {
        Call {
            tool: "fetch",
            args: json!({ "id": note.id }),
            expect: Expect::Fetch(note.clone()),
        }
    }

    /// `write` of a new note.
    pub fn write(note: &Note) -> Call {
        Call {
            tool: "write",
            args: json!({ "title": note.title, "body": note.body, "tags": note.tags }),
            expect: Expect::Write(note.clone()),
        }
    }
}

/// Search calls with limit 10, each query's full match set computed once from `index`.
pub fn search_calls(queries: &[String], index: &Index) -> Vec<Call> {
    let mut cache: HashMap<&str, Arc<Vec<u32>>> = HashMap::new();
    queries
        .iter()
        .map(|q| {
            let matches = cache
                .entry(q.as_str())
                .or_insert_with(|| Arc::new(index.search(q)))
                .clone();
            Call {
                tool: "search",
                args: json!({ "query": q, "mode": "words" }),
                expect: Expect::Search { limit: 10, matches },
            }
        })
        .collect()
}

/// Microseconds.
pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The 50th and 99th percentiles.
pub fn p50_p99(mut samples: Vec<f64>) -> Vec<f64> {
    samples.sort_by(f64::total_cmp);
    vec![percentile(&samples, 0.50), percentile(&samples, 0.99)]
}

/// The median.
pub fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => samples[n / 2],
        _ => (samples[n / 2 - 1] + samples[n / 2]) / 2.0,
    }
}

/// The peak RSS of a peer, KiB.
pub fn kib(peer: &Peer) -> f64 {
    peer.peak_rss_kib().map_or(f64::NAN, |k| k as f64)
}

/// Round trips (µs) of sequential calls, and the server's CPU time per call (µs).
#[derive(Debug, Default, Clone)]
pub struct Sequential {
    /// One round trip per measured call.
    pub samples: Vec<f64>,
    /// The server process's CPU time over the measured calls, per call.
    pub cpu_per_call: f64,
}

/// One call on `peer`, checked; its round trip (µs).
pub fn timed(peer: &mut Peer, call: &Call, catalog: &Catalog) -> Result<f64, Error> {
    let (id, line) = peer.tool_request(call.tool, &call.args);
    let (elapsed, answer) = peer.round_trip(id, &line)?;
    check(&answer, &call.expect, catalog)
        .map_err(|e| format!("{} {}: {e}", peer.name(), call.tool))?;
    Ok(micros(elapsed))
}

/// Runs `calls` one after another on `peer`, checking every answer; returns the round trips
/// and the CPU time the server used meanwhile.
fn run(peer: &mut Peer, calls: &[Call], catalog: &Catalog) -> Result<(Vec<f64>, f64), Error> {
    let mut samples = Vec::with_capacity(calls.len());
    let cpu = peer.cpu_time();
    for call in calls {
        let (id, line) = peer.tool_request(call.tool, &call.args);
        let (elapsed, answer) = peer.round_trip(id, &line)?;
        check(&answer, &call.expect, catalog)
            .map_err(|e| format!("{} {}: {e}", peer.name(), call.tool))?;
        samples.push(micros(elapsed));
    }
    Ok((samples, micros(peer.cpu_time().saturating_sub(cpu))))
}

/// The same sequential calls on each peer: `warmup` calls first on each, then the rest in
/// alternating chunks. One result per peer, in order.
pub fn sequential(
    peers: &mut [&mut Peer],
    calls: &[Call],
    warmup: usize,
    catalog: &Catalog,
) -> Result<Vec<Sequential>, Error> {
    let warmup = warmup.min(calls.len());
    for peer in peers.iter_mut() {
        run(peer, &calls[..warmup], catalog)?;
    }
    let mut out = vec![Sequential::default(); peers.len()];
    let mut cpu = vec![0.0; peers.len()];
    for chunk in calls[warmup..].chunks(CHUNK) {
        for (i, peer) in peers.iter_mut().enumerate() {
            let (samples, used) = run(peer, chunk, catalog)?;
            out[i].samples.extend(samples);
            cpu[i] += used;
        }
    }
    for (o, c) in out.iter_mut().zip(cpu) {
        o.cpu_per_call = c / o.samples.len().max(1) as f64;
    }
    Ok(out)
}

/// [`sequential`] on the server and the floor.
pub fn sequential_pair(
    peers: [&mut Peer; 2],
    calls: &[Call],
    warmup: usize,
    catalog: &Catalog,
) -> Result<[Sequential; 2], Error> {
    let [a, b] = peers;
    let mut out = sequential(&mut [a, b], calls, warmup, catalog)?;
    let floor = out.pop().unwrap_or_default();
    let server = out.pop().unwrap_or_default();
    Ok([server, floor])
}

/// Runs `calls` on `peer` with `window` requests in flight; returns the elapsed time.
pub fn pipeline(
    peer: &mut Peer,
    calls: &[Call],
    window: usize,
    catalog: &Catalog,
) -> Result<Duration, Error> {
    let lines: Vec<(u64, String)> = calls
        .iter()
        .map(|c| peer.tool_request(c.tool, &c.args))
        .collect();
    let (elapsed, answers) = peer.pipeline(&lines, window)?;
    for ((id, _), call) in lines.iter().zip(calls) {
        check(&answers[id], &call.expect, catalog)
            .map_err(|e| format!("{} {} (pipelined): {e}", peer.name(), call.tool))?;
    }
    Ok(elapsed)
}

/// The same calls on each peer with `window` in flight, in `rounds` alternating parts after
/// `warmup` calls on each; calls per second for each peer.
pub fn pipelined(
    peers: &mut [&mut Peer; 2],
    calls: &[Call],
    warmup: &[Call],
    window: usize,
    rounds: usize,
    catalog: &Catalog,
) -> Result<[f64; 2], Error> {
    if !warmup.is_empty() {
        for peer in peers.iter_mut() {
            pipeline(peer, warmup, window, catalog)?;
        }
    }
    let mut elapsed = [Duration::ZERO; 2];
    let part = calls.len().div_ceil(rounds.max(1)).max(1);
    for chunk in calls.chunks(part) {
        for (i, peer) in peers.iter_mut().enumerate() {
            elapsed[i] += pipeline(peer, chunk, window, catalog)?;
        }
    }
    Ok(elapsed.map(|e| calls.len() as f64 / e.as_secs_f64()))
}

/// Spawn to initialize answer, `n` times each, alternating; the median (µs) and the peak RSS
/// of the last start (KiB) for each.
pub fn cold_start(launches: [&Launch; 2], n: usize) -> Result<[(f64, f64); 2], Error> {
    let mut samples = [Vec::new(), Vec::new()];
    let mut rss = [f64::NAN; 2];
    for _ in 0..n {
        for (i, launch) in launches.iter().enumerate() {
            let (peer, elapsed) = Peer::start(launch)?;
            samples[i].push(micros(elapsed));
            rss[i] = kib(&peer);
            peer.stop()?;
        }
    }
    let [a, b] = samples;
    Ok([(median(a), rss[0]), (median(b), rss[1])])
}
