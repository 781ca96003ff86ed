//! Markdown vaults: a folder of `.md` files with YAML front matter, as Obsidian and most notes
//! tools keep them. [`import_dir`] brings one into a store through the same rules as the
//! `write` tool; [`export_dir`] writes a store out as one, which [`import_dir`] reads back
//! with every id, title, tag, body and date unchanged.

mod export;
pub mod folder;
mod front_matter;
mod import;

pub use export::{ExportError, ExportReport, export_dir};
pub use import::{
    FileOutcome, ImportError, ImportOptions, ImportReport, ImportedFile, check_folder, import_dir,
};

/// The file extension of a note, without its dot.
const NOTE_EXTENSION: &str = "md";
