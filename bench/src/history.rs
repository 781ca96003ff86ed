//! The history phase (`--only history`): what keeping every version costs a client. An edit
//! against a write, a fetch of notes with 50 versions against one of notes with one, and
//! the history of a note with 1,000 versions, each pair measured alternately on one server.

use std::path::Path;

use pkb_bench::corpus::{self, Note, Rng};
use serde_json::{Value, json};

use crate::client::{Catalog, Error, Expect, Peer};
use crate::measure::{self, Call, p50_p99};
use crate::phases::{Key, server_launch};
use crate::report::{Report, Unit};

const HISTORY: &str = "history (versions kept)";

/// Notes of each kind in the fetch comparison.
const NOTES: usize = 20;
/// Versions of each note with many.
const MANY: usize = 50;
/// Versions of the note whose history is read.
const LONG: usize = 1_000;

/// One call, timed and checked.
fn timed(
    peer: &mut Peer,
    tool: &'static str,
    args: &Value,
    expect: &Expect,
    catalog: &Catalog,
) -> Result<f64, Error> {
    let call = Call {
        tool,
        args: args.clone(),
        expect: expect.clone(),
    };
    measure::timed(peer, &call, catalog)
}

/// Appends a line to `note` through `edit`, keeping the catalog's copy as the server's.
fn edit(peer: &mut Peer, note: &mut Note, version: u64, catalog: &Catalog) -> Result<f64, Error> {
    let line = format!("edit {version}");
    let args = json!({"id": note.id, "append": line});
    let took = timed(
        peer,
        "edit",
        &args,
        &Expect::Edit {
            id: note.id.clone(),
            version,
        },
        catalog,
    )?;
    if !note.body.is_empty() && !note.body.ends_with('\n') {
        note.body.push('\n');
    }
    note.body.push_str(&line);
    Ok(took)
}

/// Runs the phase on a fresh store under `dir`.
pub fn run(
    server: &Path,
    dir: &Path,
    calls: usize,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let launch = server_launch(server, &dir.join("history.db"));
    let (mut peer, _) = Peer::start(&launch)?;
    let catalog = Catalog::default();
    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ 0x4157);
    let mut next = 3_000_000;
    let mut new_note = |rng: &mut Rng| {
        next += 1;
        corpus.note(rng, next)
    };

    // Edit against write, alternately: each edit appends a line to one of 200 notes.
    eprintln!("pkb-bench: {HISTORY}: {calls} writes and {calls} edits, alternately");
    let mut edited: Vec<(Note, u64)> = Vec::new();
    for _ in 0..200 {
        let note = new_note(&mut rng);
        measure::timed(&mut peer, &Call::write(&note), &catalog)?;
        edited.push((note, 1));
    }
    let (mut writes, mut edits) = (Vec::new(), Vec::new());
    for k in 0..calls {
        let note = new_note(&mut rng);
        writes.push(measure::timed(&mut peer, &Call::write(&note), &catalog)?);
        let (note, version) = &mut edited[k % 200];
        *version += 1;
        edits.push(edit(&mut peer, note, *version, &catalog)?);
    }
    let (writes, edits) = (p50_p99(writes), p50_p99(edits));
    key.edit_write_p50 = [edits[0], writes[0]];
    report.row(
        HISTORY,
        "edit p50 / p99 (append a line; floor column: write of a new note)",
        Unit::Micros,
        edits,
        Some(writes),
    );

    // Fetch of notes with one version against notes with 50, alternately; each note of one
    // version has the body its twin of 50 ended with, so that the answers weigh the same.
    eprintln!("pkb-bench: {HISTORY}: {NOTES} notes of {MANY} versions and {NOTES} of one");
    let mut plain = Vec::new();
    let mut versioned = Vec::new();
    for _ in 0..NOTES {
        let mut note = new_note(&mut rng);
        measure::timed(&mut peer, &Call::write(&note), &catalog)?;
        for version in 2..=MANY as u64 {
            edit(&mut peer, &mut note, version, &catalog)?;
        }
        let mut twin = new_note(&mut rng);
        twin.body = note.body.clone();
        measure::timed(&mut peer, &Call::write(&twin), &catalog)?;
        plain.push(twin);
        versioned.push(note);
    }
    let (mut few, mut many) = (Vec::new(), Vec::new());
    for k in 0..calls {
        let (a, b) = (&plain[k % NOTES], &versioned[k % NOTES]);
        few.push(measure::timed(&mut peer, &Call::fetch(a), &catalog)?);
        many.push(measure::timed(&mut peer, &Call::fetch(b), &catalog)?);
    }
    let (few, many) = (p50_p99(few), p50_p99(many));
    key.versioned_fetch_p50 = [many[0], few[0]];
    report.row(
        HISTORY,
        &format!("fetch p50 / p99 of notes with {MANY} versions (floor column: with 1)"),
        Unit::Micros,
        many,
        Some(few),
    );

    // The history of one note of 1,000 versions.
    eprintln!("pkb-bench: {HISTORY}: a note of {LONG} versions");
    let mut long = new_note(&mut rng);
    long.body = String::new();
    measure::timed(&mut peer, &Call::write(&long), &catalog)?;
    for version in 2..=LONG as u64 {
        edit(&mut peer, &mut long, version, &catalog)?;
    }
    for (limit, label) in [
        (
            20,
            "history p50 / p99 of a note of 1,000 versions (the default 20)",
        ),
        (100, "  the same, limit 100 (the most)"),
    ] {
        let expect = Expect::History {
            id: long.id.clone(),
            newest: LONG as u64,
            listed: limit,
        };
        let args = json!({"id": long.id, "limit": limit});
        let samples: Vec<f64> = (0..calls.min(2_000))
            .map(|_| timed(&mut peer, "history", &args, &expect, &catalog))
            .collect::<Result<_, _>>()?;
        let figures = p50_p99(samples);
        if limit == 20 {
            key.history_p99 = figures[1];
        }
        report.row(HISTORY, label, Unit::Micros, figures, None);
    }
    peer.stop()
}
