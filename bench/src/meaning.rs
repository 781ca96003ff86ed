//! The meaning phase (`--only meaning`): search by meaning with the bundled encoder. A store
//! of `--meaning-notes` notes of about 1,000 characters is loaded, the background indexer
//! started by a first search by meaning and timed until every note has its vectors (word
//! search and writes measured meanwhile against the same before it started), then meaning and
//! hybrid search are measured once the notes written meanwhile have their vectors too, and the
//! server's peak memory with the encoder loaded.

use std::path::Path;
use std::time::{Duration, Instant};

use pkb_bench::corpus::{self, Note, Rng};
use serde_json::json;

use crate::client::{Catalog, Error, Expect, Peer};
use crate::measure::{self, Call, p50_p99};
use crate::phases::{Key, server_launch};
use crate::report::{Report, Unit};

const MEANING: &str = "meaning";

/// The pause between two rounds of word searches and writes while the indexer works: each
/// round writes ten notes, which the indexer embeds after the loaded ones.
const BETWEEN_ROUNDS: Duration = Duration::from_secs(5);

/// A query by meaning or hybrid, of at most 10 results.
fn ranked(query: &str, mode: &str) -> Call {
    Call {
        tool: "search",
        args: json!({"query": query, "mode": mode}),
        expect: Expect::Ranked { limit: 10 },
    }
}

/// How many notes of the store at `db` have vectors (the indexer's progress), read aside.
fn indexed(db: &Path) -> usize {
    let Ok(conn) =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    conn.query_row("SELECT count(DISTINCT note) FROM note_vectors", [], |r| {
        r.get::<_, i64>(0)
    })
    .map_or(0, |n| n as usize)
}

/// Word searches and writes, alternately: their p50s (µs).
fn words_and_writes(
    peer: &mut Peer,
    words: &[Call],
    corpus: &corpus::Corpus,
    rng: &mut Rng,
    first: usize,
    catalog: &mut Catalog,
) -> Result<(f64, f64), Error> {
    let (mut searched, mut written) = (Vec::new(), Vec::new());
    for (k, search) in words.iter().enumerate() {
        searched.push(measure::timed(peer, search, catalog)?);
        let note = corpus.note(rng, first + k);
        written.push(measure::timed(peer, &Call::write(&note), catalog)?);
        catalog.push(note);
    }
    Ok((p50_p99(searched)[0], p50_p99(written)[0]))
}

/// Runs the phase on a fresh store under `dir`.
pub fn run(
    server: &Path,
    dir: &Path,
    notes: usize,
    window: usize,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let section = format!("{MEANING} ({notes} notes of about 1,000 characters)");
    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ 0x3ea);
    // Two generated bodies make one of about 1,000 characters.
    let loaded: Vec<Note> = (0..notes)
        .map(|i| {
            let mut note = corpus.note(&mut rng, 7_000_000 + i);
            note.body = format!("{} {}", note.body, corpus.note(&mut rng, 0).body);
            note
        })
        .collect();
    let db = dir.join("meaning.db");
    let (mut peer, _) = Peer::start(&server_launch(server, &db))?;
    // The store is seeded, and search by meaning may rank the seed notes among the results.
    let mut catalog = Catalog::default();
    for note in corpus::seed_notes() {
        catalog.push(note);
    }
    eprintln!("pkb-bench: {section}: loading");
    let writes: Vec<Call> = loaded.iter().map(Call::write).collect();
    measure::pipeline(&mut peer, &writes, window, &catalog)?;
    for note in loaded {
        catalog.push(note);
    }
    let words: Vec<Call> = corpus
        .frequent_words(200)
        .iter()
        .take(100)
        .map(|w| Call {
            tool: "search",
            args: json!({"query": w, "mode": "words"}),
            expect: Expect::Ranked { limit: 10 },
        })
        .collect();
    let (search_before, write_before) = words_and_writes(
        &mut peer,
        &words,
        &corpus,
        &mut rng,
        8_000_000,
        &mut catalog,
    )?;

    eprintln!("pkb-bench: {section}: indexing");
    let started = Instant::now();
    measure::timed(
        &mut peer,
        &ranked("the first search by meaning", "meaning"),
        &catalog,
    )?;
    let (mut during_search, mut during_write) = (Vec::new(), Vec::new());
    let mut round = 0;
    let total = catalog.notes.len();
    while indexed(&db) < total {
        if started.elapsed() > Duration::from_secs(1_800) {
            return Err(format!("{section}: vectors not ready after 30 minutes"));
        }
        let (s, w) = words_and_writes(
            &mut peer,
            &words[..10],
            &corpus,
            &mut rng,
            9_000_000 + round * 10,
            &mut catalog,
        )?;
        during_search.push(s);
        during_write.push(w);
        round += 1;
        std::thread::sleep(BETWEEN_ROUNDS);
    }
    let ready = started.elapsed().as_secs_f64();
    let during = |v: Vec<f64>| crate::measure::median(v);
    key.meaning_ready_s = ready;
    key.meaning_during = [
        during(during_search) / search_before,
        during(during_write) / write_before,
    ];
    report.row(
        &section,
        "every note's vectors ready after the first search by meaning (s)",
        Unit::Micros,
        vec![ready * 1e6],
        None,
    );
    report.row(
        &section,
        "word search p50 while indexing (floor column: before)",
        Unit::Micros,
        vec![key.meaning_during[0] * search_before],
        Some(vec![search_before]),
    );
    report.row(
        &section,
        "write p50 while indexing (floor column: before)",
        Unit::Micros,
        vec![key.meaning_during[1] * write_before],
        Some(vec![write_before]),
    );

    // The notes written meanwhile get their vectors too before searches are timed: timed
    // beside the indexer, they measured its work as much as theirs.
    let everything = catalog.notes.len();
    while indexed(&db) < everything {
        if started.elapsed() > Duration::from_secs(2_400) {
            return Err(format!(
                "{section}: the notes written while indexing have no vectors"
            ));
        }
        std::thread::sleep(Duration::from_secs(1));
    }

    // A title without its first word; a title of one word whole (a query may not be empty).
    let queries: Vec<String> = (0..200)
        .map(|k| {
            let note = &catalog.notes[(k * 7919) % catalog.notes.len()];
            let rest = note
                .title
                .split_whitespace()
                .skip(1)
                .collect::<Vec<_>>()
                .join(" ");
            if rest.is_empty() {
                note.title.clone()
            } else {
                rest
            }
        })
        .collect();
    for mode in ["meaning", "hybrid"] {
        eprintln!("pkb-bench: {section}: {mode} search");
        let samples: Vec<f64> = queries
            .iter()
            .map(|q| measure::timed(&mut peer, &ranked(q, mode), &catalog))
            .collect::<Result<_, _>>()?;
        let figures = p50_p99(samples);
        if mode == "meaning" {
            key.meaning_p99[0] = figures[1];
        } else {
            key.meaning_p99[1] = figures[1];
        }
        report.row(
            &section,
            &format!("{mode} search p50 / p99"),
            Unit::Micros,
            figures,
            None,
        );
    }
    let rss = measure::kib(&peer);
    key.meaning_rss_kib = rss;
    report.row(
        &section,
        "peak RSS (VmHWM) with the encoder loaded",
        Unit::Kib,
        vec![rss],
        None,
    );
    peer.stop()
}
