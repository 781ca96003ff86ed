//! `pkb-bench`: the end-to-end benchmark of PKB.
//!
//! ```sh
//! cargo run --release -p pkb-bench -- [--json FILE] [--sizes 10000,100000]
//! ```
//!
//! Starts the release `pkb-server` as a child process over a fresh temporary store and speaks
//! JSON-RPC to it over its pipes, as an MCP client does. Every figure is also measured against
//! the floor, a minimal serde_json line loop answering from a `HashMap` (this same binary
//! re-executed as `pkb-bench --floor-server`), in the same run, so it can be read as a ratio.
//! Every answer is checked: a fast wrong answer fails the run. The benchmark and the servers
//! share one pinned CPU unless `--no-pin` is given.

mod client;
mod floor;
mod folder;
mod history;
mod links;
mod meaning;
mod measure;
mod phases;
mod postgres;
mod report;
mod retrieval;
mod vault;
mod web;

use pkb_bench::corpus;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use client::Error;
use phases::Key;
use report::{Report, Target, Unit};

const USAGE: &str = "\
pkb-bench: end-to-end benchmark of the release pkb-server against a minimal JSON-RPC floor

usage: cargo run --release -p pkb-bench -- [options]

  --json FILE        also write the results as JSON to FILE
  --sizes LIST       store sizes for the scale phase, or `none` [default: 10000,100000]
  --only LIST        run only these parts of the fresh-store phase, for profiling:
                     cold,echo,fetch,search,write,stateless,pipelined,
                     pipelined-write, vault (import and export of a
                     generated vault of 10,000 Markdown files), and history
                     (edit against write, fetch of notes with 50 versions,
                     history of a note with 1,000), and links (two stores of
                     10,000 notes, with five links each and without), and
                     meaning (search by meaning and hybrid, the indexer),
                     and folder (a vault of 10,000 files as the store), and
                     retrieval (nDCG@10 on a BEIR collection; needs
                     --retrieval-data), and web (the web page's server time
                     at 100,000 notes of ten versions, in this process)
                     [default: all but meaning, retrieval and web]
  --meaning-notes N  notes in the meaning phase's store [default: 10000]
  --retrieval-data DIR  a BEIR collection (corpus.jsonl, queries.jsonl, qrels/test.tsv)
                     for the retrieval phase: see bench/retrieval/README.md
  --calls N          sequential calls per tool, after warm-up [default: 5000]
  --warmup N         warm-up calls before each sequential run [default: 500]
  --pipelined N      calls in the pipelined run [default: 20000]
  --window N         requests in flight in the pipelined run [default: 32]
  --tool-load N      load at most the first N notes through the write tool, the rest
                     straight into the store [default: 10000]
  --cpu N            pin the benchmark and the servers to CPU N [default: the last allowed]
  --no-pin           do not pin
  --server PATH      the server binary [default: pkb-server next to this binary]
  --no-build         do not run `cargo build --release -p pkb-server` first
  --dir DIR          where the temporary stores go [default: the system temp folder]
  --keep             keep the stores afterwards (for profiling) and print where they are
  --postgres URL     also run fetch, search, write and pipelined writes on PostgreSQL,
                     beside SQLite, in a new database on the server of this admin URL
                     (as .ci/start-postgres prints)
";

/// The run's settings.
#[derive(Debug, Clone)]
struct Config {
    json: Option<PathBuf>,
    sizes: Vec<usize>,
    calls: usize,
    warmup: usize,
    pipelined: usize,
    window: usize,
    tool_load: usize,
    cpu: Option<usize>,
    pin: bool,
    server: Option<PathBuf>,
    build: bool,
    dir: Option<PathBuf>,
    keep: bool,
    only: Option<Vec<String>>,
    postgres: Option<String>,
    meaning_notes: usize,
    retrieval_data: Option<PathBuf>,
}

impl Config {
    fn runs(&self, part: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|p| p == part))
    }

    /// Whether `--only` names `part`: for the parts a default run leaves out.
    fn names(&self, part: &str) -> bool {
        self.only
            .as_ref()
            .is_some_and(|only| only.iter().any(|p| p == part))
    }
}

enum Mode {
    Bench(Box<Config>),
    Floor { preload: usize },
    Help,
}

fn parse_args() -> Result<Mode, String> {
    let mut config = Config {
        json: None,
        sizes: vec![10_000, 100_000],
        calls: 5_000,
        warmup: 500,
        pipelined: 20_000,
        window: 32,
        tool_load: 10_000,
        cpu: None,
        pin: true,
        server: None,
        build: true,
        dir: None,
        keep: false,
        only: None,
        postgres: None,
        meaning_notes: 10_000,
        retrieval_data: None,
    };
    let mut floor = false;
    let mut preload = 0;
    let mut args = std::env::args().skip(1);
    let number = |flag: &str, value: Option<String>| -> Result<usize, String> {
        value
            .ok_or(format!("{flag} needs a value"))?
            .replace('_', "")
            .parse()
            .map_err(|_| format!("{flag} takes a number"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(Mode::Help),
            "--floor-server" => floor = true,
            "--preload" => preload = number(&arg, args.next())?,
            "--meaning-notes" => config.meaning_notes = number(&arg, args.next())?,
            "--retrieval-data" => {
                config.retrieval_data =
                    Some(args.next().ok_or("--retrieval-data needs a folder")?.into())
            }
            "--json" => config.json = Some(args.next().ok_or("--json needs a file")?.into()),
            "--sizes" => {
                let value = args.next().ok_or("--sizes needs a list")?;
                if value == "none" {
                    config.sizes.clear();
                    continue;
                }
                let sizes: Result<Vec<usize>, _> = value
                    .split(',')
                    .map(|s| s.trim().replace('_', "").parse())
                    .collect();
                match sizes {
                    Ok(mut sizes) if sizes.iter().all(|&n| n > 0) => {
                        sizes.sort_unstable();
                        sizes.dedup();
                        config.sizes = sizes;
                    }
                    _ => return Err("--sizes takes positive numbers, e.g. 10000,100000".into()),
                }
            }
            "--calls" => config.calls = number(&arg, args.next())?.max(1),
            "--warmup" => config.warmup = number(&arg, args.next())?,
            "--pipelined" => config.pipelined = number(&arg, args.next())?.max(1),
            "--window" => config.window = number(&arg, args.next())?.max(1),
            "--tool-load" => config.tool_load = number(&arg, args.next())?,
            "--cpu" => config.cpu = Some(number(&arg, args.next())?),
            "--no-pin" => config.pin = false,
            "--server" => config.server = Some(args.next().ok_or("--server needs a path")?.into()),
            "--no-build" => config.build = false,
            "--only" => {
                let value = args.next().ok_or("--only needs a list")?;
                config.only = Some(value.split(',').map(|p| p.trim().to_owned()).collect());
            }
            "--dir" => config.dir = Some(args.next().ok_or("--dir needs a folder")?.into()),
            "--keep" => config.keep = true,
            "--postgres" => {
                config.postgres = Some(args.next().ok_or("--postgres needs an admin URL")?)
            }
            other => return Err(format!("unknown argument {other:?}; see --help")),
        }
    }
    Ok(if floor {
        Mode::Floor { preload }
    } else {
        Mode::Bench(Box::new(config))
    })
}

fn main() -> ExitCode {
    match parse_args() {
        Err(message) => {
            eprintln!("pkb-bench: {message}");
            ExitCode::from(2)
        }
        Ok(Mode::Help) => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Mode::Floor { preload }) => match floor::serve(preload) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("pkb-bench floor: {error}");
                ExitCode::FAILURE
            }
        },
        Ok(Mode::Bench(config)) => match run(&config) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("pkb-bench: FAILED: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Pins this thread, and so every child started from it, to one CPU; returns the CPU.
fn pin(config: &Config) -> Result<Option<usize>, Error> {
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    use nix::unistd::Pid;
    if !config.pin {
        return Ok(None);
    }
    let allowed = sched_getaffinity(Pid::from_raw(0)).map_err(|e| e.to_string())?;
    let cpu = match config.cpu {
        Some(cpu) => cpu,
        None => (0..CpuSet::count())
            .rev()
            .find(|&c| allowed.is_set(c).unwrap_or(false))
            .ok_or("no CPU is allowed")?,
    };
    let mut set = CpuSet::new();
    set.set(cpu).map_err(|e| format!("--cpu {cpu}: {e}"))?;
    sched_setaffinity(Pid::from_raw(0), &set)
        .map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))?;
    Ok(Some(cpu))
}

/// The release `pkb-server`, built first when run through cargo.
fn locate_server(config: &Config) -> Result<PathBuf, Error> {
    if let Some(path) = &config.server {
        return Ok(path.clone());
    }
    if cfg!(debug_assertions) {
        return Err(
            "this is a debug build, whose client side would distort every figure: \
                    run `cargo run --release -p pkb-bench`"
                .into(),
        );
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let server = exe.with_file_name("pkb-server");
    if config.build
        && let Some(cargo) = std::env::var_os("CARGO")
    {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        eprintln!("pkb-bench: cargo build --release -p pkb-server");
        let status = std::process::Command::new(cargo)
            .args(["build", "--release", "--quiet", "-p", "pkb-server"])
            .current_dir(workspace)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err("cargo build --release -p pkb-server failed".into());
        }
    }
    if !server.exists() {
        return Err(format!(
            "{} is missing: build it with `cargo build --release -p pkb-server`",
            server.display()
        ));
    }
    Ok(server)
}

/// Notes in the generated vault that is imported and exported.
const VAULT_NOTES: usize = 10_000;

fn ratio(a: f64, b: f64) -> f64 {
    a / b
}

fn targets(key: &Key) -> Vec<Target> {
    let mut out = targets_unchecked(key);
    for target in &mut out {
        if target.measured.contains("NaN") {
            target.measured = "not measured in this run".into();
            target.holds = None;
        }
    }
    out
}

fn targets_unchecked(key: &Key) -> Vec<Target> {
    let mut out = Vec::new();
    let us = |v: f64| Unit::Micros.show(v);
    let [s, f] = key.echo_p50;
    out.push(Target {
        name: "echo round trip p50 <= 2x the floor".into(),
        measured: format!("{} vs {} = {:.2}x", us(s), us(f), ratio(s, f)),
        holds: Some(ratio(s, f) <= 2.0),
    });
    let [s, f] = key.fetch_p50;
    out.push(Target {
        name: "fetch round trip p50 <= 2x the floor".into(),
        measured: format!("{} vs {} = {:.2}x", us(s), us(f), ratio(s, f)),
        holds: Some(ratio(s, f) <= 2.0),
    });
    let ([search, _], [fetch, _]) = (key.search_p50, key.fetch_p50);
    out.push(Target {
        name: "search p50 on the 3-note store <= 2x its fetch p50".into(),
        measured: format!(
            "{} vs {} = {:.2}x",
            us(search),
            us(fetch),
            ratio(search, fetch)
        ),
        holds: Some(ratio(search, fetch) <= 2.0),
    });
    let [s, f] = key.pipelined_writes;
    out.push(Target {
        name: "pipelined writes >= 8,000/s, each durable (10x the 800/s of one fsync each)".into(),
        measured: format!("{s:.0}/s (floor, which writes nothing: {f:.0}/s)"),
        holds: Some(s >= 8_000.0),
    });
    out.push(Target {
        name: format!("import of {VAULT_NOTES} Markdown files >= 5,000 notes/s"),
        measured: format!("{:.0}/s", key.import_per_s),
        holds: Some(key.import_per_s >= 5_000.0),
    });
    out.push(Target {
        name: format!("export of {VAULT_NOTES} notes >= 20,000 notes/s"),
        measured: format!("{:.0}/s", key.export_per_s),
        holds: Some(key.export_per_s >= 20_000.0),
    });
    let [new, old] = key.stateless_fetch_p50;
    out.push(Target {
        name: "fetch p50 at 2026-07-28 (stateless) <= 1.2x that at 2025-11-25".into(),
        measured: format!("{} vs {} = {:.2}x", us(new), us(old), ratio(new, old)),
        holds: Some(ratio(new, old) <= 1.2),
    });
    let [s, f] = key.pipelined;
    out.push(Target {
        name: "pipelined fetch >= 0.5x the floor's calls/s".into(),
        measured: format!("{s:.0}/s vs {f:.0}/s = {:.2}x", ratio(s, f)),
        holds: Some(ratio(s, f) >= 0.5),
    });
    if let Some((size, big)) = key.scale.iter().next_back() {
        out.push(Target {
            name: format!(
                "cold start to initialize answer <= 10 ms with an existing {size}-note store"
            ),
            measured: us(big.cold_start),
            holds: Some(big.cold_start <= 10_000.0),
        });
        out.push(Target {
            name: format!("search p99 <= 5 ms at {size} notes"),
            measured: us(big.search_p99),
            holds: Some(big.search_p99 <= 5_000.0),
        });
        let r = ratio(big.seed_fetch_p50, big.small_fetch_p50);
        out.push(Target {
            name: format!(
                "fetch p50 at {size} notes within 1.2x of that at 3 notes \
                 (the 3 seed notes, both stores served alongside)"
            ),
            measured: format!(
                "{} vs {} = {r:.2}x",
                us(big.seed_fetch_p50),
                us(big.small_fetch_p50)
            ),
            holds: Some(r <= 1.2),
        });
        let peak = key.scale.values().map(|k| k.peak_rss).fold(0.0, f64::max);
        out.push(Target {
            name: format!("peak RSS (VmHWM) <= 30 MB through the {size}-note phase"),
            measured: format!("{:.1} MB ({})", peak * 1024.0 / 1e6, Unit::Kib.show(peak)),
            holds: Some(peak * 1024.0 <= 30e6),
        });
    }
    let [pg, lite] = key.postgres_fetch_p50;
    out.push(Target {
        name: "PostgreSQL: fetch p50 within 3x SQLite's (fresh store)".into(),
        measured: format!("{} vs {} = {:.2}x", us(pg), us(lite), ratio(pg, lite)),
        holds: Some(ratio(pg, lite) <= 3.0),
    });
    let [pg, lite] = key.postgres_write_p50;
    out.push(Target {
        name: "PostgreSQL: write p50 within 2x SQLite's durable write".into(),
        measured: format!("{} vs {} = {:.2}x", us(pg), us(lite), ratio(pg, lite)),
        holds: Some(ratio(pg, lite) <= 2.0),
    });
    if let Some((size, p99)) = key.postgres_search_p99.iter().next_back() {
        out.push(Target {
            name: format!("PostgreSQL: search p99 <= 10 ms at {size} notes"),
            measured: us(*p99),
            holds: Some(*p99 <= 10_000.0),
        });
    }
    let [edit, write] = key.edit_write_p50;
    out.push(Target {
        name: "edit p50 within 1.2x of write p50".into(),
        measured: format!("{} vs {} = {:.2}x", us(edit), us(write), ratio(edit, write)),
        holds: Some(ratio(edit, write) <= 1.2),
    });
    let [many, one] = key.versioned_fetch_p50;
    out.push(Target {
        name: "fetch p50 of notes with 50 versions within 1.1x of notes with one".into(),
        measured: format!("{} vs {} = {:.2}x", us(many), us(one), ratio(many, one)),
        holds: Some(ratio(many, one) <= 1.1),
    });
    out.push(Target {
        name: "history of a note with 1,000 versions p99 <= 5 ms".into(),
        measured: us(key.history_p99),
        holds: Some(key.history_p99 <= 5_000.0),
    });
    let [linked, plain] = key.linked_fetch_p50;
    out.push(Target {
        name: "fetch p50 at 10,000 notes with five links each within 1.2x of fetch without links"
            .into(),
        measured: format!(
            "{} vs {} = {:.2}x (notes drawn from all 10,000: {})",
            us(linked),
            us(plain),
            ratio(linked, plain),
            {
                let [l, p] = key.linked_random_fetch_p50;
                format!("{} vs {} = {:.2}x", us(l), us(p), ratio(l, p))
            }
        ),
        holds: Some(ratio(linked, plain) <= 1.2),
    });
    let [per_s, restart] = key.folder_start;
    out.push(Target {
        name: "vault: first start on 10,000 files >= 2,000 files/s; a restart with nothing changed <= 1 s".into(),
        measured: format!("{per_s:.0} files/s; restart {restart:.2} s"),
        holds: Some(per_s >= 2_000.0 && restart <= 1.0),
    });
    let [files, lite] = key.folder_write_p50;
    out.push(Target {
        name: "vault: write p50 within 2x of a write to the SQLite store".into(),
        measured: format!("{} vs {} = {:.2}x", us(files), us(lite), ratio(files, lite)),
        holds: Some(ratio(files, lite) <= 2.0),
    });
    let [fetch_files, fetch_lite] = key.folder_fetch_p50;
    let [search_files, search_lite] = key.folder_search_p50;
    out.push(Target {
        name: "vault: fetch and word search p50 within 1.1x of the SQLite store".into(),
        measured: format!(
            "fetch {:.2}x, search {:.2}x",
            ratio(fetch_files, fetch_lite),
            ratio(search_files, search_lite)
        ),
        holds: Some(
            ratio(fetch_files, fetch_lite) <= 1.1 && ratio(search_files, search_lite) <= 1.1,
        ),
    });
    out.push(Target {
        name: "vault: a file changed reaches search within 2 s (p99 over 100 changes)".into(),
        measured: us(key.folder_outside[1]),
        holds: Some(key.folder_outside[1] <= 2_000_000.0),
    });
    let [linked, plain] = key.linked_write_p50;
    out.push(Target {
        name: "write of a note with 20 links within 1.1x of a write without".into(),
        measured: format!(
            "{} vs {} = {:.2}x",
            us(linked),
            us(plain),
            ratio(linked, plain)
        ),
        holds: Some(ratio(linked, plain) <= 1.1),
    });
    out.push(Target {
        name: "meaning and hybrid search p99 <= 50 ms at 10,000 notes of about 1,000 characters"
            .into(),
        measured: format!("{} and {}", us(key.meaning_p99[0]), us(key.meaning_p99[1])),
        holds: Some(key.meaning_p99.iter().all(|p| *p <= 50_000.0)),
    });
    out.push(Target {
        name: "every vector ready within 10 minutes, word search and writes within 1.2x meanwhile"
            .into(),
        measured: format!(
            "{:.0} s; word search {:.2}x, writes {:.2}x",
            key.meaning_ready_s, key.meaning_during[0], key.meaning_during[1]
        ),
        holds: Some(key.meaning_ready_s <= 600.0 && key.meaning_during.iter().all(|r| *r <= 1.2)),
    });
    let [words, meaning, hybrid] = key.retrieval_ndcg;
    out.push(Target {
        name: format!(
            "small retrieval run: hybrid nDCG@10 above words' and meaning's, none below its floor ({})",
            retrieval::FLOORS.map(|floor| format!("{floor:.2}")).join(", ")
        ),
        measured: format!("words {words:.3}, meaning {meaning:.3}, hybrid {hybrid:.3}"),
        holds: Some(
            hybrid > words
                && hybrid > meaning
                && key
                    .retrieval_ndcg
                    .iter()
                    .zip(retrieval::FLOORS)
                    .all(|(ndcg, floor)| *ndcg >= floor),
        ),
    });
    out.push(Target {
        name: "peak RSS with the encoder loaded <= 250 MB".into(),
        measured: format!("{:.1} MB", key.meaning_rss_kib * 1024.0 / 1e6),
        holds: Some(key.meaning_rss_kib * 1024.0 <= 250e6),
    });
    let [changes, diff] = key.web_p99;
    out.push(Target {
        name: "web page: Changes and a version's diff p99 <= 20 ms server time at 100,000 notes of ten versions, a page under 50 KB".into(),
        measured: format!(
            "{} and {}; largest page {}",
            us(changes),
            us(diff),
            Unit::Bytes.show(key.web_page_bytes)
        ),
        holds: Some(changes <= 20_000.0 && diff <= 20_000.0 && key.web_page_bytes < 50_000.0),
    });
    out.push(Target {
        name: "write p50 with a durable commit".into(),
        measured: format!(
            "{} with synchronous=FULL in WAL mode (one fsync of the WAL per write; \
             a bare 4 KiB write + fdatasync on this disk: {})",
            us(key.write_p50),
            us(key.fsync_p50)
        ),
        holds: None,
    });
    out
}

fn read_first(path: &str, prefix: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_owned())
}

/// The filesystem that holds `dir`, from /proc/mounts.
fn filesystem(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && dir.starts_with(f[1]))
                .then(|| (f[1].len(), format!("{} ({})", f[2], f[0])))
        })
        .max()
        .map_or_else(|| "unknown".into(), |(_, fs)| fs)
}

fn machine(
    config: &Config,
    cpu: Option<usize>,
    server: &Path,
    dir: &Path,
) -> Vec<(String, String)> {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = read_first("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into());
    let total_cpus = std::fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    let memory = read_first("/proc/meminfo", "MemTotal").unwrap_or_default();
    let rustc = std::process::Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    vec![
        ("date".into(), pkb_core::note::now_rfc3339()),
        (
            "machine".into(),
            format!("{model}, {total_cpus} CPUs, {memory} RAM, Linux {kernel}"),
        ),
        (
            "pinning".into(),
            match cpu {
                Some(cpu) => format!("benchmark and servers share CPU {cpu} (sched_setaffinity)"),
                None => format!("not pinned ({cpus} CPUs usable)"),
            },
        ),
        ("server".into(), format!("{} (release)", server.display())),
        ("toolchain".into(), rustc),
        (
            "store".into(),
            format!("SQLite WAL, synchronous=FULL, on {}", filesystem(dir)),
        ),
        (
            "workload".into(),
            format!(
                "{} sequential calls per tool after {} warm-up; {} pipelined; sizes {:?}, the first {} notes through write",
                config.calls, config.warmup, config.pipelined, config.sizes, config.tool_load
            ),
        ),
    ]
}

fn run(config: &Config) -> Result<(), Error> {
    let server = locate_server(config)?;
    let cpu = pin(config)?;
    let temp = match &config.dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("pkb-bench-")
            .tempdir_in(dir),
        None => tempfile::Builder::new().prefix("pkb-bench-").tempdir(),
    }
    .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
    let mut report = Report {
        machine: machine(config, cpu, &server, temp.path()),
        ..Report::default()
    };
    let mut key = Key::default();
    let started = Instant::now();
    phases::fresh(config, &server, temp.path(), &mut report, &mut key)?;
    // A database for the fresh store's calls, and another that grows with the sizes.
    let mut postgres = match &config.postgres {
        Some(admin) => {
            let fresh = postgres::Database::create(admin)?;
            postgres::fresh(config, &server, temp.path(), &fresh, &mut report, &mut key)?;
            Some(postgres::Database::create(admin)?)
        }
        None => None,
    };
    if config.runs("vault") {
        vault::import_export(VAULT_NOTES, &server, temp.path(), &mut report, &mut key)?;
    }
    if config.runs("history") {
        history::run(
            &server,
            temp.path(),
            config.calls.min(2_000),
            &mut report,
            &mut key,
        )?;
    }
    if config.names("meaning") {
        meaning::run(
            &server,
            temp.path(),
            config.meaning_notes,
            config.window,
            &mut report,
            &mut key,
        )?;
    }
    if config.names("retrieval") {
        let data = config
            .retrieval_data
            .as_deref()
            .ok_or("the retrieval phase needs --retrieval-data DIR")?;
        retrieval::run(&server, data, temp.path(), &mut report, &mut key)?;
    }
    if config.names("web") {
        web::run(temp.path(), config.calls.min(2_000), &mut report, &mut key)?;
    }
    if config.runs("folder") {
        folder::run(
            &server,
            temp.path(),
            config.calls.min(2_000),
            &mut report,
            &mut key,
        )?;
    }
    if config.runs("links") {
        links::run(
            &server,
            temp.path(),
            config.calls.min(2_000),
            config.window,
            &mut report,
            &mut key,
        )?;
    }
    phases::fsync(temp.path(), &mut report, &mut key)?;
    if !config.sizes.is_empty() {
        phases::scale(
            config,
            &server,
            temp.path(),
            postgres.as_mut(),
            &mut report,
            &mut key,
        )?;
    }
    report.targets = targets(&key);
    report.machine.push((
        "run time".into(),
        format!("{:.0} s", started.elapsed().as_secs_f64()),
    ));
    print!("{}", report.table());
    if let Some(path) = &config.json {
        let text = serde_json::to_string_pretty(&report.json()).map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if config.keep {
        eprintln!(
            "pkb-bench: the stores are kept in {}",
            temp.keep().display()
        );
    }
    Ok(())
}
