//! The retrieval phase (`--only retrieval --retrieval-data DIR`): a small version of
//! `bench/retrieval/beir_eval.py`'s run, on a BEIR collection kept outside the repository (its
//! README says where to get SciFact): the first 50 judged queries against their judged
//! documents and others, 1,000 in all, through the real `search` tool in each mode. The script
//! does the work, so that the benchmark and the full run measure alike; this phase reports
//! its nDCG@10 and recall@10 beside the other figures.

use std::path::Path;
use std::process::Command;

use crate::client::Error;
use crate::phases::Key;
use crate::report::{Report, Unit};

/// The modes measured, in the order of [`FLOORS`].
pub const MODES: [&str; 3] = ["words", "meaning", "hybrid"];

/// nDCG@10 below which a mode has regressed: on SciFact, with all-MiniLM-L6-v2 and hybrid's
/// word units of a stem (2026-12-07), words 0.060, meaning 0.858 and hybrid 0.881, each less
/// about 0.02 (a claim of the 50 falling from first to second place costs 0.006).
pub const FLOORS: [f64; 3] = [0.04, 0.84, 0.86];

/// Queries asked, and documents written.
const QUERIES: usize = 50;
const DOCUMENTS: usize = 1_000;

/// Runs the phase with `server` on the collection at `data`, its store under `dir`.
pub fn run(
    server: &Path,
    data: &Path,
    dir: &Path,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("retrieval/beir_eval.py");
    eprintln!(
        "pkb-bench: retrieval: {} ({QUERIES} queries)",
        data.display()
    );
    let output = Command::new("python3")
        .arg(&script)
        .arg("--server")
        .arg(server)
        .arg("--data")
        .arg(data)
        .arg("--db")
        .arg(dir.join("retrieval.db"))
        .args(["--queries", &QUERIES.to_string()])
        .args(["--corpus-sample", &DOCUMENTS.to_string()])
        .args(["--nice", "0", "--json"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !output.status.success() {
        return Err(format!("{} failed: {}", script.display(), output.status));
    }
    let results: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("{} answered no JSON: {e}", script.display()))?;
    let section = format!(
        "retrieval ({}: {} queries, {} documents)",
        results["collection"].as_str().unwrap_or("?"),
        results["queries"],
        results["documents"]
    );
    let measure = |mode: &str, what: &str| results["modes"][mode][what].as_f64();
    for mode in MODES {
        let (Some(ndcg), Some(recall)) =
            (measure(mode, "ndcg_at_10"), measure(mode, "recall_at_10"))
        else {
            return Err(format!("{section}: no figures for {mode}"));
        };
        report.row(
            &section,
            &format!("{mode}: nDCG@10 / recall@10"),
            Unit::Score,
            vec![ndcg, recall],
            None,
        );
    }
    if let Some(ready) = results["vectors_ready_s"].as_f64() {
        report.row(
            &section,
            "vectors ready after the first search by meaning",
            Unit::Micros,
            vec![ready * 1e6],
            None,
        );
    }
    key.retrieval_ndcg = MODES.map(|mode| measure(mode, "ndcg_at_10").unwrap_or(f64::NAN));
    Ok(())
}
