//! `pkb-server import` and `export`: the reports and the progress a person at a terminal sees.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use pkb_core::Catalog;
use pkb_core::store::Store;
use pkb_core::vault::{
    FileOutcome, ImportError, ImportOptions, ImportReport, export_dir, import_dir,
};

use crate::cli::{error_out, print_out};

/// Without a terminal, progress is a plain line every this many files.
const PLAIN_PROGRESS_EVERY: usize = 1_000;

/// Who an import's versions are recorded as made by.
const IMPORTED_BY: &str = "pkb-server import";

/// `pkb-server import DIR [--overwrite] [--links-outside]`.
pub async fn import(
    store: &Store,
    registry: &Catalog,
    dir: &Path,
    options: ImportOptions,
) -> ExitCode {
    let mut progress = Progress::new("import", "files");
    let store = store.changed_by(IMPORTED_BY);
    let outcome = import_dir(&store, registry, dir, options, |done, total| {
        progress.show(done, total);
    })
    .await;
    progress.finish();
    match outcome {
        Ok(report) => {
            let code = print_report(&report, dir);
            if report.any_refused() {
                ExitCode::FAILURE
            } else {
                code
            }
        }
        Err(ImportError::Store { done, source }) => {
            print_report(&done, dir);
            error_out(&format!(
                "import stopped: {source}; the files reported above were handled, the rest were not"
            ))
        }
        Err(error) => import_failed(&error),
    }
}

/// An import that could not start, as it is reported.
pub fn import_failed(error: &ImportError) -> ExitCode {
    error_out(&error.to_string())
}

/// Every file that was not plainly imported, then the counts.
fn print_report(report: &ImportReport, dir: &Path) -> ExitCode {
    let mut out = String::new();
    for file in &report.files {
        let path = file.path.display();
        match &file.outcome {
            FileOutcome::Imported(_) => {}
            FileOutcome::Replaced(id) => out.push_str(&format!("replaced {id} from {path}\n")),
            FileOutcome::Skipped(id) => out.push_str(&format!(
                "skipped {path}: note {id} exists; pass --overwrite to replace it\n"
            )),
            FileOutcome::Refused(rule) => eprintln!("refused {path}: {rule}"),
        }
    }
    let count = |matches: fn(&FileOutcome) -> bool| report.count(matches);
    out.push_str(&format!(
        "imported {}, replaced {}, skipped {}, refused {} of {} files in {}\n",
        count(|o| matches!(o, FileOutcome::Imported(_))),
        count(|o| matches!(o, FileOutcome::Replaced(_))),
        count(|o| matches!(o, FileOutcome::Skipped(_))),
        count(|o| matches!(o, FileOutcome::Refused(_))),
        report.files.len(),
        dir.display(),
    ));
    print_out(&out)
}

/// `pkb-server export DIR`.
pub async fn export(store: &Store, dir: &Path) -> ExitCode {
    let mut progress = Progress::new("export", "notes");
    let outcome = export_dir(store, dir, |done, total| progress.show(done, total)).await;
    progress.finish();
    match outcome {
        Ok(report) => print_out(&format!(
            "exported {} notes to {}\n",
            report.written,
            dir.display()
        )),
        Err(error) => error_out(&format!("export stopped: {error}")),
    }
}

/// A bar on stderr when it is a terminal, else a plain line now and then.
enum Progress {
    Bar(ProgressBar),
    Lines {
        what: &'static str,
        unit: &'static str,
        shown: usize,
    },
}

impl Progress {
    fn new(what: &'static str, unit: &'static str) -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress::Lines {
                what,
                unit,
                shown: 0,
            };
        }
        let bar = ProgressBar::new(0);
        let template =
            format!("{what} {{bar:40}} {{pos}}/{{len}} {unit} ({{per_sec}}, {{eta}} left)");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style);
        }
        Progress::Bar(bar)
    }

    fn show(&mut self, done: usize, total: usize) {
        match self {
            Progress::Bar(bar) => {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            }
            Progress::Lines { what, unit, shown } => {
                if done > 0 && (done >= *shown + PLAIN_PROGRESS_EVERY || done == total) {
                    eprintln!("{what}: {done} of {total} {unit}");
                    *shown = done;
                }
            }
        }
    }

    fn finish(&self) {
        if let Progress::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}
