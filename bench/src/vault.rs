//! The vault phase: `pkb-server import` of a generated Markdown vault into a new store, then
//! `pkb-server export` of that store, each timed as the whole command a user runs.
//!
//! The vault is laid out as Obsidian keeps one: notes in folders, YAML front matter with a
//! title and tags, and a hidden `.obsidian` folder that import must skip. Both commands must
//! account for every note: the import's summary and the export's file count are checked, so a
//! fast wrong run fails the benchmark.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use pkb_bench::corpus::{self, Note, Rng};

use crate::client::Error;
use crate::phases::Key;
use crate::report::{Report, Unit};

const SECTION: &str = "Markdown vault";

/// Folders the generated notes are spread over.
const FOLDERS: usize = 20;

/// Imports a generated vault of `notes` Markdown files into a new store under `dir`, exports
/// it again, and reports notes/s of each.
pub fn import_export(
    notes: usize,
    server: &Path,
    dir: &Path,
    report: &mut Report,
    key: &mut Key,
) -> Result<(), Error> {
    let vault = dir.join("vault");
    let db = dir.join("vault.db");
    let exported = dir.join("exported");
    write_vault(&vault, notes)?;

    eprintln!("pkb-bench: {SECTION}: import of {notes} files");
    let started = Instant::now();
    let summary = run(server, "import", &vault, &db)?;
    let import_rate = notes as f64 / started.elapsed().as_secs_f64();
    let expected = format!("imported {notes}, replaced 0, skipped 0, refused 0 of {notes} files");
    if !summary.contains(&expected) {
        return Err(format!(
            "import did not take every file: expected `{expected}`, got {summary}"
        ));
    }

    eprintln!("pkb-bench: {SECTION}: export of {notes} notes");
    let started = Instant::now();
    run(server, "export", &exported, &db)?;
    let export_rate = notes as f64 / started.elapsed().as_secs_f64();
    let written = std::fs::read_dir(&exported)
        .map_err(|e| format!("cannot list the export: {e}"))?
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "md"))
        })
        .count();
    if written != notes {
        return Err(format!("export wrote {written} notes, not {notes}"));
    }

    let label = |what: &str| format!("{what} of {notes} notes, the whole command, notes/s");
    report.row(
        SECTION,
        &label("import"),
        Unit::PerSec,
        vec![import_rate],
        None,
    );
    report.row(
        SECTION,
        &label("export"),
        Unit::PerSec,
        vec![export_rate],
        None,
    );
    key.import_per_s = import_rate;
    key.export_per_s = export_rate;
    Ok(())
}

/// Runs `pkb-server COMMAND FOLDER --db DB`; its stdout and stderr, or why it failed.
pub fn run(server: &Path, command: &str, folder: &Path, db: &Path) -> Result<String, Error> {
    let out = Command::new(server)
        .arg(command)
        .arg(folder)
        .arg("--db")
        .arg(db)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", server.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!(
            "pkb-server {command} failed ({}): {text}",
            out.status
        ));
    }
    Ok(text)
}

/// Writes `notes` generated notes as Markdown files with front matter under `vault`; the
/// notes written.
pub fn write_vault(vault: &Path, notes: usize) -> Result<Vec<Note>, Error> {
    let fail = |e: std::io::Error| format!("cannot write the vault in {}: {e}", vault.display());
    let hidden = vault.join(".obsidian");
    std::fs::create_dir_all(&hidden).map_err(fail)?;
    std::fs::write(hidden.join("workspace.md"), "# not a note\n").map_err(fail)?;
    for folder in 0..FOLDERS {
        std::fs::create_dir_all(vault.join(format!("folder-{folder}"))).map_err(fail)?;
    }
    let (corpus, _) = corpus::generate(0);
    let mut rng = Rng(corpus::SEED ^ 0x7a17);
    let mut written = Vec::with_capacity(notes);
    for k in 0..notes {
        let note = corpus.note(&mut rng, 3_000_000 + k);
        // JSON strings and arrays are YAML scalars and flow sequences: quoting for free.
        let title = serde_json::to_string(&note.title).map_err(|e| e.to_string())?;
        let tags = serde_json::to_string(&note.tags).map_err(|e| e.to_string())?;
        let text = format!("---\ntitle: {title}\ntags: {tags}\n---\n{}\n", note.body);
        let path = vault.join(format!("folder-{}/{}.md", k % FOLDERS, note.id));
        std::fs::write(path, text).map_err(fail)?;
        written.push(note);
    }
    Ok(written)
}
