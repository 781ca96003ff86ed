//! The links phase (`--only links`): what links cost a client. Two stores of 10,000 notes,
//! one where every note links to five others by title and one where the same words are not
//! links, fetched alternately; and a write of a note with 20 links against one without.

use std::path::Path;

use pkb_bench::corpus::{self, Note, Rng};

use crate::client::{Catalog, Error, Peer};
use crate::measure::{self, Call, p50_p99};
use crate::phases::{Key, server_launch};
use crate::report::{Report, Unit};

const LINKS: &str = "links (10,000 notes, five links each)";
const NOTES: usize = 10_000;

/// `titles` written as links (`[[title]]`), or as text of the same length that is none.
fn mention(titles: &[&str], linked: bool) -> String {
    let (open, close) = if linked { ("[[", "]]") } else { ("((", "))") };
    titles
        .iter()
        .map(|t| format!("{open}{t}{close}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `note` with `mentions` at the end of its body.
fn with(note: &Note, mentions: &str) -> Note {
    let mut note = note.clone();
    note.body = format!("{} See {mentions}.", note.body);
    note
}

/// Runs the phase on fresh stores under `dir`.
pub fn run(
    server: &Path,
    dir: &Path,
    calls: usize,
    window: usize,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ 0x1157);
    let base: Vec<Note> = (0..NOTES)
        .map(|i| corpus.note(&mut rng, 4_000_000 + i))
        .collect();
    let five = |i: usize, linked: bool| {
        let titles: Vec<&str> = (1..=5)
            .map(|k| base[(i + k * 997) % NOTES].title.as_str())
            .collect();
        with(&base[i], &mention(&titles, linked))
    };
    let linked: Vec<Note> = (0..NOTES).map(|i| five(i, true)).collect();
    let plain: Vec<Note> = (0..NOTES).map(|i| five(i, false)).collect();

    eprintln!("pkb-bench: {LINKS}: loading two stores");
    let (mut with_links, _) = Peer::start(&server_launch(server, &dir.join("linked.db")))?;
    let (mut without, _) = Peer::start(&server_launch(server, &dir.join("plain.db")))?;
    let catalog = Catalog::default();
    for (peer, notes) in [(&mut with_links, &linked), (&mut without, &plain)] {
        let writes: Vec<Call> = notes.iter().map(Call::write).collect();
        measure::pipeline(peer, &writes, window, &catalog)?;
    }

    // The same few notes again and again, as a model reads the notes it works on (served
    // from memory while nothing changes), and notes drawn across the store.
    let mut rows = Vec::new();
    for (label, pick) in [
        ("fetch p50 / p99, 10 notes again and again", 10),
        ("fetch p50 / p99, notes drawn from all 10,000", NOTES),
    ] {
        eprintln!("pkb-bench: {LINKS}: {label}");
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for k in 0..calls {
            let i = (k * 7919) % pick;
            a.push(measure::timed(
                &mut with_links,
                &Call::fetch(&linked[i]),
                &catalog,
            )?);
            b.push(measure::timed(
                &mut without,
                &Call::fetch(&plain[i]),
                &catalog,
            )?);
        }
        rows.push((label, p50_p99(a), p50_p99(b)));
    }
    key.linked_fetch_p50 = [rows[0].1[0], rows[0].2[0]];
    key.linked_random_fetch_p50 = [rows[1].1[0], rows[1].2[0]];
    for (label, a, b) in rows {
        report.row(
            LINKS,
            &format!("{label} (floor column: the store without links)"),
            Unit::Micros,
            a,
            Some(b),
        );
    }

    eprintln!("pkb-bench: {LINKS}: writes of notes with 20 links and without, alternately");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for k in 0..calls {
        let new = corpus.note(&mut rng, 5_000_000 + k);
        let titles: Vec<&str> = (0..20)
            .map(|j| base[(k * 31 + j * 503) % NOTES].title.as_str())
            .collect();
        let mut twin = corpus.note(&mut rng, 6_000_000 + k);
        twin.body = new.body.clone();
        a.push(measure::timed(
            &mut with_links,
            &Call::write(&with(&new, &mention(&titles, true))),
            &catalog,
        )?);
        b.push(measure::timed(
            &mut with_links,
            &Call::write(&with(&twin, &mention(&titles, false))),
            &catalog,
        )?);
    }
    let (a, b) = (p50_p99(a), p50_p99(b));
    key.linked_write_p50 = [a[0], b[0]];
    report.row(
        LINKS,
        "write p50 / p99 of a note with 20 links (floor column: the same note without)",
        Unit::Micros,
        a,
        Some(b),
    );
    with_links.stop()?;
    without.stop()
}
