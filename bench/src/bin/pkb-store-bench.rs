//! Store benchmark: insert rate, search and get latency, file size, at several store sizes;
//! with `--versions`, also what ten versions of every note take on disk and what
//! `history prune` gives back.
//!
//! `cargo run --release -p pkb-bench --bin pkb-store-bench -- --sizes 10000,100000 [--versions]`
//!
//! A plain program (no harness) that prints one table. Everything goes through the public async
//! [`Store`] API on a multi-threaded tokio runtime, so latencies include the hop to the blocking
//! pool. Notes come from `pkb_bench::corpus`, the generator the stdio benchmark uses too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pkb_bench::corpus::{Corpus, Rng, SEED};
use pkb_bench::versions::{self, BATCH};
use pkb_core::store::sqlite::{DamageCheck, SqliteOptions};
use pkb_core::store::{NoteDraft, PutMode, Store, sqlite};

struct Stats {
    p50: Duration,
    p99: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.50),
        p99: at(0.99),
    }
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

fn file_size(path: &Path) -> u64 {
    let side = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
    };
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) + side("-wal")
}

/// Search latency over `queries`, overall and by class, as rows labelled with `state`.
async fn search_rows(
    store: &Store,
    queries: &[(&'static str, String)],
    state: &str,
    row: &mut impl FnMut(&str, String),
) {
    let mut by_class: Vec<(&str, Vec<Duration>, usize)> = Vec::new();
    let mut all = Vec::new();
    for (class, q) in queries {
        let t = Instant::now();
        let hits = store.search(q, &[], 10).await.expect("search");
        let d = t.elapsed();
        all.push(d);
        match by_class.iter_mut().find(|(c, _, _)| c == class) {
            Some((_, v, h)) => {
                v.push(d);
                *h += hits.len();
            }
            None => by_class.push((class, vec![d], hits.len())),
        }
    }
    let total_queries = all.len();
    let s = stats(all);
    row(
        &format!("search, index {state}, all {total_queries} queries, limit 10 (p50 / p99)"),
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );
    for (class, samples, hits) in by_class {
        let count = samples.len();
        let s = stats(samples);
        row(
            &format!("  search: {class} (p50 / p99, avg hits)"),
            format!(
                "{} / {}, {:.1}",
                fmt(s.p50),
                fmt(s.p99),
                hits as f64 / count as f64
            ),
        );
    }
}

struct Row {
    label: String,
    value: String,
}

async fn run_size(n: usize, keep: Option<&Path>, versions: bool, rows: &mut Vec<Row>) {
    let mut rng = Rng(SEED);
    let corpus = Corpus::new(&mut rng);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = match keep {
        Some(keep) => {
            std::fs::create_dir_all(keep).expect("create --keep folder");
            let path = keep.join(format!("bench-{n}.db"));
            for suffix in ["", "-wal", "-shm"] {
                let mut p = path.as_os_str().to_owned();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
            path
        }
        None => dir.path().join("bench.db"),
    };
    let store = sqlite::open(&path, false).expect("open");
    let mut row = |label: &str, value: String| {
        rows.push(Row {
            label: format!("{n:>7} | {label}"),
            value,
        })
    };

    // Bulk load in batches: one transaction and one fsync per batch.
    let mut ids = Vec::with_capacity(n);
    let mut generated = 0;
    let mut load_time = Duration::ZERO;
    while generated < n {
        let batch: Vec<NoteDraft> = (generated..(generated + BATCH).min(n))
            .map(|i| corpus.note(&mut rng, i).draft())
            .collect();
        ids.extend(batch.iter().map(|d| d.id.clone()));
        generated += batch.len();
        let t = Instant::now();
        store
            .put_many(batch, PutMode::CreateOnly)
            .await
            .expect("put_many");
        load_time += t.elapsed();
    }
    row(
        &format!("insert, put_many batches of {BATCH}"),
        format!("{:.0} notes/s", n as f64 / load_time.as_secs_f64()),
    );

    // Single puts: what one write tool call costs, fsync included.
    let mut samples = Vec::new();
    for i in 0..200 {
        let draft = corpus.note(&mut rng, n + i).draft();
        let t = Instant::now();
        store.put(draft, PutMode::CreateOnly).await.expect("put");
        samples.push(t.elapsed());
    }
    let s = stats(samples);
    row(
        "put, one note per transaction (p50 / p99)",
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );

    // Warm the page cache and the readers' statement caches once, as a running server would be.
    for w in corpus.frequent_words(50) {
        store.search(w, &[], 10).await.expect("search");
    }
    let queries = corpus.queries(&mut rng);
    search_rows(&store, &queries, "as written", &mut row).await;
    let t = Instant::now();
    store.merge_index().await.expect("merge the index");
    row(
        "merge the search index (Store::merge_index)",
        fmt(t.elapsed()),
    );
    search_rows(&store, &queries, "merged", &mut row).await;

    let tagged: Vec<String> = vec![corpus.tag(3).to_owned()];
    let mut samples = Vec::new();
    for i in 0..100 {
        let t = Instant::now();
        store
            .search(&corpus.frequent_words(20)[i % 20], &tagged, 10)
            .await
            .expect("search");
        samples.push(t.elapsed());
    }
    let s = stats(samples);
    row(
        "  search: common word + tag filter (p50 / p99)",
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );

    let mut samples = Vec::new();
    for _ in 0..2_000 {
        let id = &ids[rng.below(n)];
        let t = Instant::now();
        let note = store.get(id).await.expect("get");
        samples.push(t.elapsed());
        assert!(note.is_some());
    }
    let s = stats(samples);
    row(
        "get by id (p50 / p99)",
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );

    let mut samples = Vec::new();
    for _ in 0..2_000 {
        let id = &ids[rng.below(n)];
        store.get(id).await.expect("get");
        let t = Instant::now();
        let note = store.get(id).await.expect("get again");
        samples.push(t.elapsed());
        assert_eq!(note.map(|n| n.id).as_deref(), Some(id.as_str()));
    }
    let s = stats(samples);
    row(
        "  get again, nothing committed since: from memory (p50 / p99)",
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );

    let mut samples = Vec::new();
    for i in 0..500 {
        let t = Instant::now();
        store
            .ids_with_prefix(&format!("{}", i % 1000), 100)
            .await
            .expect("prefix");
        samples.push(t.elapsed());
    }
    let s = stats(samples);
    row(
        "ids_with_prefix, limit 100 (p50 / p99)",
        format!("{} / {}", fmt(s.p50), fmt(s.p99)),
    );

    drop(store);
    row(
        "file size after close",
        format!(
            "{:.1} MiB ({:.0} bytes/note)",
            file_size(&path) as f64 / (1024.0 * 1024.0),
            file_size(&path) as f64 / n as f64
        ),
    );
    let t = Instant::now();
    let store = sqlite::open(&path, false).expect("reopen");
    row(
        "open existing file (page check in background)",
        fmt(t.elapsed()),
    );
    store.damage_checked().await.expect("sound store");
    row(
        "  ... until the background page check ends",
        fmt(t.elapsed()),
    );
    drop(store);
    let t = Instant::now();
    let options = SqliteOptions {
        seed: false,
        damage_check: DamageCheck::BeforeOpen,
        ..SqliteOptions::default()
    };
    let store = sqlite::open_with_options(&path, &options).expect("reopen");
    row(
        "open existing file, every page checked first",
        fmt(t.elapsed()),
    );
    if versions {
        ten_versions(&store, &path, &ids, &corpus, &mut rng, &mut row).await;
    }
    drop(store);
}

/// Every note written nine times more (ten versions each, as `write` with overwrite makes
/// them), then every version but each note's newest pruned: the file's size at each step.
async fn ten_versions(
    store: &Store,
    path: &Path,
    ids: &[String],
    corpus: &Corpus,
    rng: &mut Rng,
    row: &mut impl FnMut(&str, String),
) {
    let n = ids.len();
    let before = file_size(path);
    versions::write_again(store, ids, corpus, rng, 9).await;
    store.merge_index().await.expect("merge the index");
    let pages = |path: &Path| {
        let conn = rusqlite::Connection::open(path).expect("open the file");
        conn.pragma_update(None, "wal_checkpoint", "TRUNCATE")
            .expect("checkpoint");
        let (size, free): (i64, i64) = conn
            .query_row(
                "SELECT page_count * page_size, freelist_count * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("page counts");
        (
            size as f64 / (1024.0 * 1024.0),
            free as f64 / (1024.0 * 1024.0),
        )
    };
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let (ten, ten_free) = pages(path);
    let live = ten - ten_free;
    row(
        "versions: 10 of every note (9 more writes of each)",
        format!(
            "{ten:.1} MiB ({live:.1} MiB in use), from {:.1} MiB with 1 ({:.0} bytes a version)",
            mib(before),
            (live - mib(before)) * 1024.0 * 1024.0 / (9 * n) as f64
        ),
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let dropped = store.prune_versions(Duration::ZERO).await.expect("prune");
    let (pruned, free) = pages(path);
    row(
        &format!("  history prune: {dropped} versions dropped"),
        format!("{pruned:.1} MiB, of which {free:.1} MiB free pages that later writes reuse"),
    );
    let conn = rusqlite::Connection::open(path).expect("open the file");
    let t = Instant::now();
    conn.execute_batch("VACUUM").expect("vacuum");
    drop(conn);
    let (vacuumed, _) = pages(path);
    row(
        "  then VACUUM (with no server running)",
        format!("{vacuumed:.1} MiB, in {}", fmt(t.elapsed())),
    );
}

/// `--sizes 10000,100000` (default), `--keep DIR` to leave the store files in DIR, and
/// `--versions` for the versions' rows.
fn parse_args() -> (Vec<usize>, Option<PathBuf>, bool) {
    let args: Vec<String> = std::env::args().collect();
    let versions = args.iter().any(|a| a == "--versions");
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from);
    let mut sizes = vec![10_000, 100_000];
    for (i, arg) in args.iter().enumerate() {
        let value = match arg.strip_prefix("--sizes=") {
            Some(v) => Some(v.to_owned()),
            None if arg == "--sizes" => args.get(i + 1).cloned(),
            None => None,
        };
        if let Some(value) = value {
            let parsed: Result<Vec<usize>, _> = value
                .split(',')
                .map(|s| s.trim().replace('_', "").parse())
                .collect();
            match parsed {
                Ok(v) if !v.is_empty() && v.iter().all(|&n| n > 0) => sizes = v,
                _ => {
                    eprintln!(
                        "--sizes takes positive numbers separated by commas, e.g. 10000,100000"
                    );
                    std::process::exit(2);
                }
            }
        }
    }
    (sizes, keep, versions)
}

fn main() {
    let (sizes, keep, versions) = parse_args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rows = Vec::new();
    for &n in &sizes {
        eprintln!("building a store of {n} notes...");
        rt.block_on(run_size(n, keep.as_deref(), versions, &mut rows));
    }
    let width = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    println!(
        "{:>7} | {:<w$} | result",
        "notes",
        "measure",
        w = width - 10
    );
    println!("{}", "-".repeat(width + 20));
    for r in rows {
        println!("{:<width$} | {}", r.label, r.value);
    }
}
