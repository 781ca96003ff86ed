//! The folder phase (`--only folder`): a vault of 10,000 Markdown files as the store
//! (`--vault`). Its first start and a restart with nothing changed; write, fetch and word
//! search against the SQLite store holding the same notes (an import of the same files),
//! alternately; fetch of a note with 200 unresolved links, and writes with 1,000 files PKB
//! refuses in the folder; and how long a change made to a file takes to reach search, over
//! 100 changes.

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use pkb_bench::corpus::{self, Rng};
use serde_json::{Value, json};

use crate::client::{Catalog, Error, Launch, Peer};
use crate::measure::{self, Call, p50_p99};
use crate::phases::{Key, server_launch};
use crate::report::{Report, Unit};
use crate::vault::{self, write_vault};

const SECTION: &str = "vault as the store (10,000 files)";
const FILES: usize = 10_000;
/// Changes made to files in the outside-change run.
const OUTSIDE_CHANGES: usize = 100;

fn vault_launch(server: &Path, folder: &Path) -> Launch {
    Launch {
        program: server.to_owned(),
        args: vec![OsString::from("--vault"), folder.as_os_str().to_owned()],
        name: "pkb",
    }
}

/// A word search's round trip (µs); its answer must hold results.
fn timed_search(peer: &mut Peer, args: &Value) -> Result<f64, Error> {
    let (id, line) = peer.tool_request("search", args);
    let (elapsed, answer) = peer.round_trip(id, &line)?;
    let found = answer
        .pointer("/result/structuredContent/results")
        .and_then(Value::as_array)
        .is_some_and(|results| !results.is_empty());
    if !found {
        return Err(format!("search {args} found nothing: {answer}"));
    }
    Ok(elapsed.as_secs_f64() * 1e6)
}

/// Links that no note answers, in the note of the unresolved-links run.
const UNRESOLVED_LINKS: usize = 200;
/// Files PKB refuses, in the refused-files run.
const REFUSED_FILES: usize = 1_000;

/// Issue 52, item 15: what unresolved links and refused files cost. Fetch of a note with
/// [`UNRESOLVED_LINKS`] links to no note against one without links; then write p50 before and
/// after [`REFUSED_FILES`] files that PKB refuses (front matter that is not YAML) are added to
/// the folder.
fn links_and_refused_files(
    peer: &mut Peer,
    folder: &Path,
    corpus: &corpus::Corpus,
    rng: &mut Rng,
    calls: usize,
    report: &mut Report,
) -> Result<(), Error> {
    eprintln!("pkb-bench: {SECTION}: a note with {UNRESOLVED_LINKS} unresolved links");
    let mut catalog = Catalog::default();
    let plain = corpus.note(rng, 8_100_000);
    let mut linking = corpus.note(rng, 8_100_001);
    linking.body = (0..UNRESOLVED_LINKS)
        .map(|k| format!("[[No such page {k}]]"))
        .collect::<Vec<_>>()
        .join(" ");
    for note in [&plain, &linking] {
        measure::timed(peer, &Call::write(note), &catalog)?;
        catalog.push(note.clone());
    }
    let (mut with_links, mut without) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        with_links.push(measure::timed(peer, &Call::fetch(&linking), &catalog)?);
        without.push(measure::timed(peer, &Call::fetch(&plain), &catalog)?);
    }
    report.row(
        SECTION,
        &format!(
            "fetch of a note with {UNRESOLVED_LINKS} unresolved links p50 / p99 \
             (floor column: a note without links)"
        ),
        Unit::Micros,
        p50_p99(with_links),
        Some(p50_p99(without)),
    );

    eprintln!("pkb-bench: {SECTION}: writes before and after {REFUSED_FILES} refused files");
    let mut writes = |first: usize| -> Result<Vec<f64>, Error> {
        (0..calls)
            .map(|k| {
                let note = corpus.note(rng, first + k);
                measure::timed(peer, &Call::write(&note), &catalog)
            })
            .collect()
    };
    let before = writes(8_200_000)?;
    let refused = folder.join("refused");
    std::fs::create_dir_all(&refused).map_err(|e| e.to_string())?;
    for k in 0..REFUSED_FILES {
        let text = format!("---\ntitle: [unclosed {k}\n---\nRefused for its front matter.\n");
        std::fs::write(refused.join(format!("refused-{k}.md")), text).map_err(|e| e.to_string())?;
    }
    // Writes until the look has met them all: then each is refused and remembered.
    std::thread::sleep(Duration::from_secs(2));
    writes(8_300_000)?;
    let after = writes(8_400_000)?;
    report.row(
        SECTION,
        &format!(
            "write p50 / p99 with {REFUSED_FILES} refused files in the folder \
             (floor column: before they were added)"
        ),
        Unit::Micros,
        p50_p99(after),
        Some(p50_p99(before)),
    );
    Ok(())
}

/// Runs the phase on a fresh vault under `dir`.
pub fn run(
    server: &Path,
    dir: &Path,
    calls: usize,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let folder = dir.join("folder-vault");
    eprintln!("pkb-bench: {SECTION}: writing the files");
    let notes = write_vault(&folder, FILES)?;
    let db = dir.join("folder-twin.db");
    vault::run(server, "import", &folder, &db)?;

    eprintln!("pkb-bench: {SECTION}: first start");
    let (mut on_files, first) = Peer::start(&vault_launch(server, &folder))?;
    let catalog = Catalog::default();
    // The start must have taken every file in.
    measure::timed(&mut on_files, &Call::fetch(&notes[FILES - 1]), &catalog)?;
    on_files.stop()?;
    eprintln!("pkb-bench: {SECTION}: restart with nothing changed");
    let (mut on_files, again) = Peer::start(&vault_launch(server, &folder))?;
    let (mut on_sqlite, _) = Peer::start(&server_launch(server, &db))?;
    let files_per_s = FILES as f64 / first.as_secs_f64();
    key.folder_start = [files_per_s, again.as_secs_f64()];
    report.row(
        SECTION,
        "first start: files taken in per second, to the initialize answer",
        Unit::PerSec,
        vec![files_per_s],
        None,
    );
    report.row(
        SECTION,
        "restart with nothing changed, to the initialize answer",
        Unit::Micros,
        vec![again.as_secs_f64() * 1e6],
        None,
    );

    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ 0xf01d);
    let words: Vec<String> = notes
        .iter()
        .take(calls)
        .filter_map(|note| note.title.split_whitespace().next().map(str::to_owned))
        .collect();
    let mut rows = Vec::new();
    for what in ["write", "fetch", "search"] {
        eprintln!("pkb-bench: {SECTION}: {what}, on the files and on SQLite alternately");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for k in 0..calls {
            if what == "search" {
                let query = json!({"query": words[k % words.len()], "mode": "words"});
                a.push(timed_search(&mut on_files, &query)?);
                b.push(timed_search(&mut on_sqlite, &query)?);
                continue;
            }
            let mut make = |twin: usize| match what {
                "write" => Call::write(&corpus.note(&mut rng, 7_000_000 + 2 * k + twin)),
                _ => Call::fetch(&notes[(k * 7919) % FILES]),
            };
            let (call, twin) = (make(0), make(1));
            a.push(measure::timed(&mut on_files, &call, &catalog)?);
            b.push(measure::timed(&mut on_sqlite, &twin, &catalog)?);
        }
        let (a, b) = (p50_p99(a), p50_p99(b));
        rows.push((what, a[0], b[0]));
        report.row(
            SECTION,
            &format!("{what} p50 / p99 (floor column: the SQLite store)"),
            Unit::Micros,
            a,
            Some(b),
        );
    }
    key.folder_write_p50 = [rows[0].1, rows[0].2];
    key.folder_fetch_p50 = [rows[1].1, rows[1].2];
    key.folder_search_p50 = [rows[2].1, rows[2].2];

    links_and_refused_files(&mut on_files, &folder, &corpus, &mut rng, calls, report)?;

    eprintln!("pkb-bench: {SECTION}: {OUTSIDE_CHANGES} changes to files until search finds them");
    let mut waits = Vec::new();
    for k in 0..OUTSIDE_CHANGES {
        let note = &notes[(k * 104_729) % FILES];
        let word = format!("outsideword{k}x");
        let path = folder.join(format!(
            "folder-{}/{}.md",
            (k * 104_729) % FILES % 20,
            note.id
        ));
        let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
        let changed = Instant::now();
        std::fs::write(&path, format!("{text}{word}\n")).map_err(|e| e.to_string())?;
        loop {
            let (id, line) =
                on_files.tool_request("search", &json!({"query": word, "mode": "words"}));
            let (_, answer) = on_files.round_trip(id, &line)?;
            let found = answer
                .pointer("/result/structuredContent/results/0/id")
                .and_then(Value::as_str)
                == Some(note.id.as_str());
            if found {
                break;
            }
            if changed.elapsed() > Duration::from_secs(30) {
                return Err(format!(
                    "a change to {} never reached search",
                    path.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        waits.push(changed.elapsed().as_secs_f64() * 1e6);
    }
    let waits = p50_p99(waits);
    key.folder_outside = [waits[0], waits[1]];
    report.row(
        SECTION,
        "a file changed until search finds it, p50 / p99",
        Unit::Micros,
        waits,
        None,
    );
    on_files.stop()?;
    on_sqlite.stop()
}
