//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) against the
//! fixture server `examples/conformance_server/`, for the 2025-11-25 and 2026-07-28
//! revisions, every scenario of each (`--suite all`). It fails on any failure that
//! `examples/conformance-baseline.yml` does not list, and on a listed scenario that passes.
//!
//! The suite needs Node.js 22 or newer: `.ci/install-conformance` installs both at pinned
//! versions and prints the directory to put in `PKB_CONFORMANCE_DIR`. Without it the test
//! skips, unless `PKB_REQUIRE_CONFORMANCE=1` (as in CI).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

mod support;

/// The fixture server, stopped when dropped.
struct FixtureServer {
    child: Child,
    url: String,
}

impl FixtureServer {
    fn start() -> Self {
        let mut child = Command::new(support::example_binary("conformance_server"))
            .arg("127.0.0.1:0")
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the fixture server");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the fixture server printed its address")
                .expect("stderr reads");
            if let Some(url) = line.strip_prefix("conformance fixtures: listening on ") {
                break url.to_owned();
            }
        };
        // Keep reading, so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, url }
    }
}

impl Drop for FixtureServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where `.ci/install-conformance` put the suite, or `None` to skip.
fn suite_dir() -> Option<PathBuf> {
    match std::env::var_os("PKB_CONFORMANCE_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ if std::env::var("PKB_REQUIRE_CONFORMANCE").as_deref() == Ok("1") => {
            panic!("PKB_REQUIRE_CONFORMANCE=1 but PKB_CONFORMANCE_DIR is not set")
        }
        _ => {
            eprintln!(
                "skipped: set PKB_CONFORMANCE_DIR=$(.ci/install-conformance) to run the conformance suite"
            );
            None
        }
    }
}

fn run_suite(dir: &Path, url: &str, revision: &str) {
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance-baseline.yml");
    let results = tempfile::tempdir().expect("a results directory");
    let output = Command::new(dir.join("node"))
        .arg(dir.join("conformance"))
        .args([
            "server",
            "--url",
            url,
            "--suite",
            "all",
            "--spec-version",
            revision,
        ])
        .arg("--expected-failures")
        .arg(&baseline)
        .arg("--output-dir")
        .arg(results.path())
        .output()
        .expect("run the conformance suite");
    let report = String::from_utf8_lossy(&output.stdout);
    let summary = report
        .find("=== SUMMARY ===")
        .map_or(&report[..], |at| &report[at..]);
    assert!(
        output.status.success(),
        "the conformance suite failed at {revision}:\n{summary}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_fixture_server_passes_the_official_conformance_suite() {
    let Some(dir) = suite_dir() else {
        return;
    };
    let server = FixtureServer::start();
    for revision in ["2025-11-25", "2026-07-28"] {
        run_suite(&dir, &server.url, revision);
    }
}
