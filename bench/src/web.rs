//! The web page phase (`--only web`): the server time of the pages the issue bounds, and
//! what they weigh, at 100,000 notes of ten versions each (a million versions). The pages
//! are asked for through the web router itself, in this process, on a multi-threaded tokio
//! runtime as the server's: the time from the request to the last byte of the answer, with
//! no network and no client in it. The store is made as `pkb-store-bench --versions` makes
//! it ([`versions::write_again`]), with 1,000 of its notes deleted since.

use std::path::Path;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use http_body_util::BodyExt;
use pkb_bench::corpus::{Corpus, Rng, SEED};
use pkb_bench::versions::{self, BATCH};
use pkb_core::framework::changes::ChangeHub;
use pkb_core::notes_app::NotesApp;
use pkb_core::store::{NoteDraft, PutMode, Store, sqlite};
use pkb_core::web::{People, WebSettings, router};
use tower_service::Service;

use crate::client::Error;
use crate::measure::p50_p99;
use crate::phases::Key;
use crate::report::{Report, Unit};

const WEB: &str = "web page (100,000 notes of 10 versions)";

/// Notes in the store.
const NOTES: usize = 100_000;
/// Versions of each.
const VERSIONS: usize = 10;
/// Notes deleted since, for the Deleted page.
const DELETED: usize = 1_000;
/// Requests of each page before it is measured.
const WARMUP: usize = 200;

/// A browser's cookie, as the page hands them out; one port's.
const COOKIE: &str = "pkb_web_8787=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// Runs the phase on a new store under `dir`: `calls` requests of each page.
pub fn run(dir: &Path, calls: usize, report: &mut Report, key: &mut Key) -> Result<(), Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(measure(dir, calls, report, key))
}

/// One page: the time to its last byte (µs) and its size (bytes). Anything but 200 and a page
/// holding `expect` fails the run.
async fn page(router: &mut Router, path: &str, expect: &str) -> Result<(f64, usize), Error> {
    let request = http::Request::get(path)
        .header("host", "127.0.0.1:8787")
        .header("cookie", COOKIE)
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-mode", "navigate")
        .header("sec-fetch-dest", "document")
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let Ok(response) = router.call(request).await;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("{path}: {e}"))?
        .to_bytes();
    let took = started.elapsed().as_secs_f64() * 1e6;
    let text = String::from_utf8_lossy(&body);
    if status != http::StatusCode::OK || !text.contains(expect) {
        return Err(format!("{path}: {status}, without {expect:?}: {text}"));
    }
    Ok((took, body.len()))
}

/// The store: [`NOTES`] notes of [`VERSIONS`] versions, [`DELETED`] of them deleted since.
async fn build(path: &Path) -> Result<(Store, Vec<String>), Error> {
    let mut rng = Rng(SEED);
    let corpus = Corpus::new(&mut rng);
    let store = sqlite::open(path, false).map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(NOTES);
    for start in (0..NOTES).step_by(BATCH) {
        let batch: Vec<NoteDraft> = (start..(start + BATCH).min(NOTES))
            .map(|i| corpus.note(&mut rng, i).draft())
            .collect();
        ids.extend(batch.iter().map(|d| d.id.clone()));
        store
            .put_many(batch, PutMode::CreateOnly)
            .await
            .map_err(|e| e.to_string())?;
    }
    versions::write_again(&store, &ids, &corpus, &mut rng, VERSIONS - 1).await;
    for k in 0..DELETED {
        store
            .delete(&ids[k * (NOTES / DELETED)])
            .await
            .map_err(|e| e.to_string())?;
    }
    store.merge_index().await.map_err(|e| e.to_string())?;
    Ok((store, ids))
}

async fn measure(
    dir: &Path,
    calls: usize,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    eprintln!("pkb-bench: {WEB}: writing {NOTES} notes {VERSIONS} times");
    let started = Instant::now();
    let (store, ids) = build(&dir.join("web.db")).await?;
    eprintln!(
        "pkb-bench: {WEB}: store made in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let mut router = router(WebSettings {
        app: NotesApp::Shared(store),
        hub: std::sync::Arc::new(ChangeHub::default()),
        people: People::One,
        https: false,
    });
    let changes = NOTES * VERSIONS + DELETED;
    let mut rng = Rng(SEED ^ 0x3eb);
    // A note kept (not deleted), and one of its versions after the first.
    let version_path = |rng: &mut Rng| loop {
        let i = rng.below(NOTES);
        if !i.is_multiple_of(NOTES / DELETED) {
            return format!("/notes/{}/versions/{}", ids[i], 2 + rng.below(VERSIONS - 1));
        }
    };
    type PathOf<'a> = Box<dyn FnMut(&mut Rng) -> String + 'a>;
    let pages: [(&str, &str, PathOf<'_>); 5] = [
        (
            "Changes, the first page",
            "Older changes",
            Box::new(|_| "/".to_owned()),
        ),
        (
            "Changes, a page deep in the history",
            "Older changes",
            Box::new(move |rng| format!("/?before={}", 1_000 + rng.below(changes - 1_000))),
        ),
        (
            "a version's diff against the one before",
            "From version",
            Box::new(move |rng| version_path(rng)),
        ),
        (
            "Deleted notes (1,000 deleted)",
            "Older deletions",
            Box::new(|_| "/deleted".to_owned()),
        ),
        (
            "Changes of a client that made none",
            "No change matches",
            Box::new(|_| "/?client=nobody+1.0".to_owned()),
        ),
    ];
    for (label, expect, mut path) in pages {
        eprintln!("pkb-bench: {WEB}: {label}");
        for _ in 0..WARMUP {
            page(&mut router, &path(&mut rng), expect).await?;
        }
        let mut times = Vec::with_capacity(calls);
        let mut sizes = Vec::with_capacity(calls);
        for _ in 0..calls {
            let (took, size) = page(&mut router, &path(&mut rng), expect).await?;
            times.push(took);
            sizes.push(size as f64);
        }
        let times = p50_p99(times);
        let largest = sizes.iter().copied().fold(0.0, f64::max);
        if label.starts_with("Changes, the first") {
            key.web_p99[0] = times[1];
        } else if label.starts_with("a version") {
            key.web_p99[1] = times[1];
        }
        key.web_page_bytes = key.web_page_bytes.max(largest);
        report.row(
            WEB,
            &format!("{label}: server time p50 / p99"),
            Unit::Micros,
            times,
            None,
        );
        report.row(
            WEB,
            "  its size p50 / largest",
            Unit::Bytes,
            vec![p50_p99(sizes)[0], largest],
            None,
        );
    }
    Ok(())
}
