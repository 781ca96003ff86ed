//! The phases of a run: a fresh store, then stores of growing size.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use pkb_core::store::{PutMode, sqlite};

use crate::Config;
use crate::client::{Catalog, Error, Launch, Peer};
use crate::corpus::{self, Index, Note, Rng};
use crate::measure::{self, Call, kib, micros, p50_p99};
use crate::report::{Report, Unit};

/// The fresh store's section in the table.
pub const FRESH: &str = "fresh store (3 notes)";
const COLD: &str = "cold start to initialize answer (median of 10)";

/// Queries over the seed notes, with and without matches.
const SEED_QUERIES: &[&str] = &[
    "deploy",
    "check",
    "todo",
    "meeting notes",
    "dep",
    "health",
    "release",
    "line",
    "decisions",
    "zebra",
];

/// The figures the targets are checked against; NaN where not measured.
#[derive(Debug)]
pub struct Key {
    /// Echo round trip p50: server, floor (µs).
    pub echo_p50: [f64; 2],
    /// Fetch round trip p50 on the fresh store: server, floor (µs).
    pub fetch_p50: [f64; 2],
    /// Search round trip p50 on the fresh store: server, floor (µs).
    pub search_p50: [f64; 2],
    /// Pipelined fetch: server, floor (calls/s).
    pub pipelined: [f64; 2],
    /// Pipelined writes, each durable before its answer: server, floor (calls/s).
    pub pipelined_writes: [f64; 2],
    /// Fetch round trip p50 at 2026-07-28 and at 2025-11-25, run alongside (µs).
    pub stateless_fetch_p50: [f64; 2],
    /// Write round trip p50 (µs).
    pub write_p50: f64,
    /// Import of the generated Markdown vault, the whole command (notes/s).
    pub import_per_s: f64,
    /// Export of the same notes, the whole command (notes/s).
    pub export_per_s: f64,
    /// A bare 4 KiB write + fdatasync on the store's disk, p50 (µs).
    pub fsync_p50: f64,
    /// Per store size.
    pub scale: std::collections::BTreeMap<usize, ScaleKey>,
    /// Fetch p50 on a fresh store: PostgreSQL, SQLite (µs).
    pub postgres_fetch_p50: [f64; 2],
    /// Write p50 on a fresh store: PostgreSQL, SQLite (µs).
    pub postgres_write_p50: [f64; 2],
    /// Pipelined writes: PostgreSQL, SQLite (calls/s).
    pub postgres_pipelined_writes: [f64; 2],
    /// Search p99 on PostgreSQL, per store size (µs).
    pub postgres_search_p99: std::collections::BTreeMap<usize, f64>,
    /// Edit p50 and write p50, measured alternately (µs).
    pub edit_write_p50: [f64; 2],
    /// Fetch p50 of notes with 50 versions and with one, alternately (µs).
    pub versioned_fetch_p50: [f64; 2],
    /// History p99 of a note with 1,000 versions (µs).
    pub history_p99: f64,
    /// Fetch p50 of 10 notes again and again, with five links each and without (µs).
    pub linked_fetch_p50: [f64; 2],
    /// Fetch p50 of notes drawn from 10,000, with five links each and without (µs).
    pub linked_random_fetch_p50: [f64; 2],
    /// Write p50 of a note with 20 links and without (µs).
    pub linked_write_p50: [f64; 2],
    /// Seconds until every note had its vectors.
    pub meaning_ready_s: f64,
    /// Word search p50 and write p50 while indexing, as ratios to before it.
    pub meaning_during: [f64; 2],
    /// Meaning and hybrid search p99 (µs).
    pub meaning_p99: [f64; 2],
    /// Peak RSS with the encoder loaded (KiB).
    pub meaning_rss_kib: f64,
    /// First start on a vault of 10,000 files (files/s) and a restart with nothing changed (s).
    pub folder_start: [f64; 2],
    /// Write, fetch and word search p50 on a vault and on the SQLite store (µs).
    pub folder_write_p50: [f64; 2],
    /// See `folder_write_p50`.
    pub folder_fetch_p50: [f64; 2],
    /// See `folder_write_p50`.
    pub folder_search_p50: [f64; 2],
    /// A change to a file until search finds it, p50 and p99 (µs).
    pub folder_outside: [f64; 2],
    /// nDCG@10 of words, meaning and hybrid in the small retrieval run.
    pub retrieval_ndcg: [f64; 3],
    /// Server time p99 of the web page's Changes page and of a version's diff (µs).
    pub web_p99: [f64; 2],
    /// The largest page the web page phase was answered (bytes).
    pub web_page_bytes: f64,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            echo_p50: [f64::NAN; 2],
            fetch_p50: [f64::NAN; 2],
            search_p50: [f64::NAN; 2],
            pipelined: [f64::NAN; 2],
            stateless_fetch_p50: [f64::NAN; 2],
            pipelined_writes: [f64::NAN; 2],
            write_p50: f64::NAN,
            import_per_s: f64::NAN,
            export_per_s: f64::NAN,
            fsync_p50: f64::NAN,
            scale: Default::default(),
            postgres_fetch_p50: [f64::NAN; 2],
            postgres_write_p50: [f64::NAN; 2],
            postgres_pipelined_writes: [f64::NAN; 2],
            postgres_search_p99: Default::default(),
            edit_write_p50: [f64::NAN; 2],
            versioned_fetch_p50: [f64::NAN; 2],
            history_p99: f64::NAN,
            linked_fetch_p50: [f64::NAN; 2],
            linked_random_fetch_p50: [f64::NAN; 2],
            linked_write_p50: [f64::NAN; 2],
            meaning_ready_s: f64::NAN,
            meaning_during: [f64::NAN; 2],
            meaning_p99: [f64::NAN; 2],
            meaning_rss_kib: f64::NAN,
            folder_start: [f64::NAN; 2],
            folder_write_p50: [f64::NAN; 2],
            folder_fetch_p50: [f64::NAN; 2],
            folder_search_p50: [f64::NAN; 2],
            folder_outside: [f64::NAN; 2],
            retrieval_ndcg: [f64::NAN; 3],
            web_p99: [f64::NAN; 2],
            web_page_bytes: f64::NAN,
        }
    }
}

/// The figures of one store size that the targets need.
#[derive(Debug)]
pub struct ScaleKey {
    /// Cold start with this store (µs).
    pub cold_start: f64,
    /// Search p99 over the query mix (µs).
    pub search_p99: f64,
    /// Fetch p50 of the seed notes (µs).
    pub seed_fetch_p50: f64,
    /// Fetch p50 of the seed notes from a 3-note store, measured alongside (µs).
    pub small_fetch_p50: f64,
    /// The highest VmHWM of any server process that worked on this size (KiB).
    pub peak_rss: f64,
}

impl Default for ScaleKey {
    fn default() -> Self {
        ScaleKey {
            cold_start: f64::NAN,
            search_p99: f64::NAN,
            seed_fetch_p50: f64::NAN,
            small_fetch_p50: f64::NAN,
            peak_rss: 0.0,
        }
    }
}

impl Key {
    fn peak(&mut self, size: usize, rss: f64) {
        let entry = self.scale.entry(size).or_default();
        entry.peak_rss = entry.peak_rss.max(rss);
    }
}

/// The server over the store file `db`.
pub fn server_launch(program: &Path, db: &Path) -> Launch {
    Launch {
        program: program.to_owned(),
        args: vec!["--db".into(), db.as_os_str().to_owned()],
        name: "pkb",
    }
}

/// The floor: this binary as `--floor-server`, holding the seed notes and `preload` more.
fn floor_launch(preload: usize) -> Result<Launch, Error> {
    let mut args: Vec<OsString> = vec!["--floor-server".into()];
    if preload > 0 {
        args.push("--preload".into());
        args.push(preload.to_string().into());
    }
    Ok(Launch {
        program: std::env::current_exe().map_err(|e| e.to_string())?,
        args,
        name: "pkb-floor",
    })
}

/// Starts both; the server first.
fn start_both(server: &Launch, floor: &Launch) -> Result<(Peer, Peer), Error> {
    let (srv, _) = Peer::start(server)?;
    let (flr, _) = Peer::start(floor)?;
    Ok((srv, flr))
}

fn rss_row(report: &mut Report, section: &str, label: &str, srv: &Peer, flr: &Peer) -> f64 {
    let rss = kib(srv);
    report.row(
        section,
        &format!("peak RSS (VmHWM) {label}"),
        Unit::Kib,
        vec![rss],
        Some(vec![kib(flr)]),
    );
    rss
}

/// The workload of one tool on the fresh store: `n` calls.
pub fn fresh_calls(tool: &str, n: usize, catalog: &Catalog, index: &Index) -> Vec<Call> {
    match tool {
        "echo" => (0..n)
            .map(|k| {
                Call::echo(format!(
                    "pkb-bench echo {k}: the quick brown fox jumps over the lazy dog"
                ))
            })
            .collect(),
        "fetch" => (0..n)
            .map(|k| Call::fetch(&catalog.notes[k % catalog.notes.len()]))
            .collect(),
        "search" => {
            let queries: Vec<String> = (0..n)
                .map(|k| SEED_QUERIES[k % SEED_QUERIES.len()].to_owned())
                .collect();
            measure::search_calls(&queries, index)
        }
        _ => {
            let (corpus, _) = corpus::generate(0);
            let mut rng = Rng(corpus::SEED ^ 0x77);
            (0..n)
                .map(|k| Call::write(&corpus.note(&mut rng, 1_000_000 + k)))
                .collect()
        }
    }
}

/// Cold start, sequential round trips of each tool, and pipelined fetch on a new store.
pub fn fresh(
    config: &Config,
    server: &Path,
    dir: &Path,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let server = server_launch(server, &dir.join("fresh.db"));
    let floor = floor_launch(0)?;
    let mut catalog = Catalog::default();
    for note in corpus::seed_notes() {
        catalog.push(note);
    }
    let index = Index::new(&catalog.notes);

    if config.runs("cold") {
        eprintln!("pkb-bench: {FRESH}: cold start");
        let (peer, first) = Peer::start(&server)?;
        peer.stop()?;
        report.row(
            FRESH,
            "first start, creating the store",
            Unit::Micros,
            vec![micros(first)],
            None,
        );
        let [(s, s_rss), (f, f_rss)] = measure::cold_start([&server, &floor], 10)?;
        report.row(FRESH, COLD, Unit::Micros, vec![s], Some(vec![f]));
        report.row(
            FRESH,
            "peak RSS (VmHWM) after initialize",
            Unit::Kib,
            vec![s_rss],
            Some(vec![f_rss]),
        );
    }

    // One server and one floor for the whole sequence, as a client keeps its server.
    let (mut srv, mut flr) = start_both(&server, &floor)?;
    for tool in ["echo", "fetch", "search", "write"] {
        if !config.runs(tool) {
            continue;
        }
        eprintln!(
            "pkb-bench: {FRESH}: {} sequential {tool} calls",
            config.calls
        );
        let calls = fresh_calls(tool, config.warmup + config.calls, &catalog, &index);
        let [s, f] =
            measure::sequential_pair([&mut srv, &mut flr], &calls, config.warmup, &catalog)?;
        let (s_cpu, f_cpu) = (s.cpu_per_call, f.cpu_per_call);
        let (s, f) = (p50_p99(s.samples), p50_p99(f.samples));
        match tool {
            "echo" => key.echo_p50 = [s[0], f[0]],
            "fetch" => key.fetch_p50 = [s[0], f[0]],
            "search" => key.search_p50 = [s[0], f[0]],
            "write" => key.write_p50 = s[0],
            _ => {}
        }
        let label = if tool == "write" {
            "write round trip p50 / p99 (durable commit)".to_owned()
        } else {
            format!("{tool} round trip p50 / p99")
        };
        report.row(FRESH, &label, Unit::Micros, s, Some(f));
        report.row(
            FRESH,
            &format!("  {tool}: CPU time per call (server process)"),
            Unit::Micros,
            vec![s_cpu],
            Some(vec![f_cpu]),
        );
        rss_row(report, FRESH, &format!("after {tool}"), &srv, &flr);
    }

    if config.runs("stateless") {
        eprintln!(
            "pkb-bench: {FRESH}: {} sequential fetch calls at 2026-07-28 and 2025-11-25",
            config.calls
        );
        // A second server on the same store, spoken to statelessly; the session server
        // runs the same calls alongside, so the two figures are taken together.
        let mut stateless = Peer::start_stateless(&server)?;
        let calls = fresh_calls("fetch", config.warmup + config.calls, &catalog, &index);
        let out = measure::sequential(
            &mut [&mut stateless, &mut srv],
            &calls,
            config.warmup,
            &catalog,
        )?;
        let [new, old] = [0, 1].map(|i| p50_p99(out[i].samples.clone()));
        key.stateless_fetch_p50 = [new[0], old[0]];
        report.row(
            FRESH,
            "fetch p50 / p99 at 2026-07-28, stateless (floor column: 2025-11-25, session)",
            Unit::Micros,
            new,
            Some(old),
        );
        stateless.stop()?;
    }

    if config.runs("pipelined") {
        eprintln!(
            "pkb-bench: {FRESH}: {} pipelined fetch calls, {} in flight",
            config.pipelined, config.window
        );
        let fetch = |k: usize| Call::fetch(&catalog.notes[k % catalog.notes.len()]);
        let warm: Vec<Call> = (0..1_000).map(fetch).collect();
        let calls: Vec<Call> = (0..config.pipelined).map(fetch).collect();
        let rates = measure::pipelined(
            &mut [&mut srv, &mut flr],
            &calls,
            &warm,
            config.window,
            4,
            &catalog,
        )?;
        key.pipelined = rates;
        report.row(
            FRESH,
            &format!("pipelined fetch, {} in flight", config.window),
            Unit::PerSec,
            vec![rates[0]],
            Some(vec![rates[1]]),
        );
        rss_row(report, FRESH, "after pipelined fetch", &srv, &flr);
    }
    if config.runs("pipelined-write") {
        eprintln!(
            "pkb-bench: {FRESH}: {} pipelined write calls, {} in flight",
            config.pipelined / 5,
            config.window
        );
        // New notes of their own, after the sequential writes' ones.
        let rates = pipelined_writes(config, [&mut srv, &mut flr], &catalog, 0x99, 2_000_000)?;
        key.pipelined_writes = rates;
        report.row(
            FRESH,
            &format!(
                "pipelined write, {} in flight, each durable before its answer",
                config.window
            ),
            Unit::PerSec,
            vec![rates[0]],
            Some(vec![rates[1]]),
        );
    }
    srv.stop()?;
    flr.stop()?;
    Ok(())
}

/// Pipelined writes of `config.pipelined / 5` new notes (numbered from `first`, drawn with
/// `seed`), after 500 of warm-up, to both peers; calls/s of each.
pub fn pipelined_writes(
    config: &Config,
    [a, b]: [&mut Peer; 2],
    catalog: &Catalog,
    seed: u64,
    first: usize,
) -> Result<[f64; 2], Error> {
    const WARM: usize = 500;
    let n = config.pipelined / 5;
    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ seed);
    let writes: Vec<Call> = (0..WARM + n)
        .map(|k| Call::write(&corpus.note(&mut rng, first + k)))
        .collect();
    let (warm, calls) = writes.split_at(WARM);
    measure::pipelined(&mut [a, b], calls, warm, config.window, 4, catalog)
}

/// What one durable commit costs on this disk, for reading the write figure.
pub fn fsync(dir: &Path, report: &mut Report, key: &mut Key) -> Result<(), Error> {
    use std::io::{Seek, Write};
    let path = dir.join("fsync-probe");
    let mut file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    let block = vec![7u8; 4096];
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        file.seek(std::io::SeekFrom::Start(0))
            .and_then(|_| file.write_all(&block))
            .and_then(|_| file.sync_data())
            .map_err(|e| e.to_string())?;
        samples.push(micros(t.elapsed()));
    }
    let _ = std::fs::remove_file(&path);
    key.fsync_p50 = measure::median(samples);
    report.row(
        FRESH,
        "for comparison: 4 KiB write + fdatasync on the store's disk, p50",
        Unit::Micros,
        vec![key.fsync_p50],
        None,
    );
    Ok(())
}

/// One row per query class of `mix`: p50 / p99 of the first server's samples beside the
/// second's, each in the mix's order.
pub fn class_rows(
    report: &mut Report,
    section: &str,
    mix: &[(&str, String)],
    first: &[f64],
    second: &[f64],
) {
    let mut classes: Vec<&str> = mix.iter().map(|(c, _)| *c).collect();
    classes.dedup();
    for class in classes {
        let pick = |samples: &[f64]| -> Vec<f64> {
            mix.iter()
                .zip(samples)
                .filter(|((c, _), _)| *c == class)
                .map(|(_, s)| *s)
                .collect()
        };
        report.row(
            section,
            &format!("  search: {class}"),
            Unit::Micros,
            p50_p99(pick(first)),
            Some(p50_p99(pick(second))),
        );
    }
}

/// Stores of each size in `config.sizes`, grown in turn: loading, cold start, search, fetch.
pub fn scale(
    config: &Config,
    server: &Path,
    dir: &Path,
    mut postgres: Option<&mut crate::postgres::Database>,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let largest = config.sizes.iter().copied().max().unwrap_or(0);
    eprintln!("pkb-bench: generating {largest} notes");
    let (corpus, generated) = corpus::generate(largest);
    let mut catalog = Catalog::default();
    for note in corpus::seed_notes() {
        catalog.push(note);
    }
    let seeds = catalog.notes.len();
    for note in generated {
        catalog.push(note);
    }
    let db: PathBuf = dir.join("scale.db");
    let mut index = Index::new(&catalog.notes[..seeds]);
    let mut indexed = seeds;
    let mut loaded = 0;
    let mix = corpus.queries(&mut Rng(corpus::SEED ^ 0x9));
    let queries: Vec<String> = mix.iter().map(|(_, q)| q.clone()).collect();
    let warm: Vec<String> = corpus.frequent_words(50).to_vec();
    let bare_floor = floor_launch(0)?;
    let three = server_launch(server, &dir.join("three.db"));

    for &size in &config.sizes {
        let section = format!("{size} notes");
        let server = server_launch(server, &db);

        // Through the write tool, up to --tool-load notes.
        let tool_end = size.min(config.tool_load).max(loaded);
        if tool_end > loaded {
            eprintln!("pkb-bench: {section}: writing notes {loaded}..{tool_end} through the tool");
            let calls: Vec<Call> = catalog.notes[seeds + loaded..seeds + tool_end]
                .iter()
                .map(Call::write)
                .collect();
            let (mut srv, mut flr) = start_both(&server, &floor_launch(loaded)?)?;
            let rates = measure::pipelined(
                &mut [&mut srv, &mut flr],
                &calls,
                &[],
                config.window,
                4,
                &catalog,
            )?;
            report.row(
                &section,
                &format!(
                    "load {} notes through write, {} in flight",
                    tool_end - loaded,
                    config.window
                ),
                Unit::PerSec,
                vec![rates[0]],
                Some(vec![rates[1]]),
            );
            let rss = rss_row(report, &section, "after loading through write", &srv, &flr);
            key.peak(size, rss);
            srv.stop()?;
            flr.stop()?;
            loaded = tool_end;
        }
        // The rest straight into the store, as an import would.
        if size > loaded {
            eprintln!("pkb-bench: {section}: storing notes {loaded}..{size} with put_many");
            let store = sqlite::open(&db, true).map_err(|e| e.to_string())?;
            let started = Instant::now();
            for batch in catalog.notes[seeds + loaded..seeds + size].chunks(1_000) {
                let drafts = batch.iter().map(Note::draft).collect();
                futures::executor::block_on(store.put_many(drafts, PutMode::CreateOnly))
                    .map_err(|e| e.to_string())?;
            }
            let rate = (size - loaded) as f64 / started.elapsed().as_secs_f64();
            // What a server's index merge does once the import has gone quiet.
            let merging = Instant::now();
            futures::executor::block_on(store.merge_index()).map_err(|e| e.to_string())?;
            let merged = merging.elapsed();
            drop(store);
            report.row(
                &section,
                &format!(
                    "load {} notes with Store::put_many, batches of 1,000",
                    size - loaded
                ),
                Unit::PerSec,
                vec![rate],
                None,
            );
            report.row(
                &section,
                "then merge the search index (Store::merge_index)",
                Unit::Micros,
                vec![merged.as_secs_f64() * 1e6],
                None,
            );
            loaded = size;
        }
        while indexed < seeds + size {
            index.add(indexed as u32, &catalog.notes[indexed]);
            indexed += 1;
        }

        eprintln!("pkb-bench: {section}: cold start");
        let [(cold, cold_rss), (floor_cold, floor_rss)] =
            measure::cold_start([&server, &bare_floor], 10)?;
        report.row(
            &section,
            &format!("{COLD} (floor: empty)"),
            Unit::Micros,
            vec![cold],
            Some(vec![floor_cold]),
        );
        report.row(
            &section,
            "peak RSS (VmHWM) after initialize",
            Unit::Kib,
            vec![cold_rss],
            Some(vec![floor_rss]),
        );
        key.peak(size, cold_rss);

        eprintln!("pkb-bench: {section}: search and fetch");
        let warm_calls = measure::search_calls(&warm, &index);
        let search = measure::search_calls(&queries, &index);
        let mut fetch_rng = Rng(corpus::SEED ^ 0xf);
        let random_fetch: Vec<Call> = (0..2_200)
            .map(|_| Call::fetch(&catalog.notes[seeds + fetch_rng.below(size)]))
            .collect();
        let seed_fetch: Vec<Call> = (0..2_200)
            .map(|k| Call::fetch(&catalog.notes[k % seeds]))
            .collect();
        let (mut srv, mut flr) = start_both(&server, &floor_launch(size)?)?;
        measure::sequential_pair(
            [&mut srv, &mut flr],
            &warm_calls,
            warm_calls.len(),
            &catalog,
        )?;
        let [s, f] = measure::sequential_pair([&mut srv, &mut flr], &search, 0, &catalog)?;
        let s_all = p50_p99(s.samples.clone());
        report.row(
            &section,
            &format!("search p50 / p99, {} queries, limit 10", queries.len()),
            Unit::Micros,
            s_all.clone(),
            Some(p50_p99(f.samples.clone())),
        );
        class_rows(report, &section, &mix, &s.samples, &f.samples);
        let rss = rss_row(report, &section, "after search", &srv, &flr);
        key.peak(size, rss);
        let [s_random, f_random] =
            measure::sequential_pair([&mut srv, &mut flr], &random_fetch, 200, &catalog)?;
        // The same three notes from a 3-note store alongside, so that only the size differs.
        let (mut small, _) = Peer::start(&three)?;
        let mut seed = measure::sequential(
            &mut [&mut srv, &mut flr, &mut small],
            &seed_fetch,
            200,
            &catalog,
        )?;
        small.stop()?;
        let small_seed = p50_p99(seed.pop().unwrap_or_default().samples);
        let f_seed = seed.pop().unwrap_or_default();
        let s_seed = seed.pop().unwrap_or_default();
        report.row(
            &section,
            "fetch p50 / p99, random notes (~100-word bodies)",
            Unit::Micros,
            p50_p99(s_random.samples),
            Some(p50_p99(f_random.samples)),
        );
        let s_seed = p50_p99(s_seed.samples);
        report.row(
            &section,
            "fetch p50 / p99, the 3 seed notes",
            Unit::Micros,
            s_seed.clone(),
            Some(p50_p99(f_seed.samples)),
        );
        report.row(
            &section,
            "  the same from a 3-note store, alongside",
            Unit::Micros,
            small_seed.clone(),
            None,
        );
        let rss = rss_row(report, &section, "after fetch", &srv, &flr);
        key.peak(size, rss);
        srv.stop()?;
        flr.stop()?;
        let entry = key.scale.entry(size).or_default();
        entry.cold_start = cold;
        entry.search_p99 = s_all[1];
        entry.seed_fetch_p50 = s_seed[0];
        entry.small_fetch_p50 = small_seed[0];
        if let Some(database) = postgres.as_deref_mut() {
            crate::postgres::at_size(
                size,
                &server.program,
                &server,
                database,
                &catalog,
                seeds,
                &mix,
                &warm,
                &index,
                report,
                key,
            )?;
        }
    }
    Ok(())
}
