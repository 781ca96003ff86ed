//! `export`: every note of a store as `<id>.md`, front matter first.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::NOTE_EXTENSION;
use super::front_matter::{self, ExportedFields};
use crate::note::{Note, is_valid_id};
use crate::store::{Store, StoreError};

/// Notes read per page.
const PAGE: usize = 1_000;

/// What an export wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// How many note files were written.
    pub written: usize,
}

/// Why an export stopped. Files written before stay.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
    /// A file or the folder could not be written.
    #[error("cannot write {}: {reason}", .path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// Writes every note of `store` to `dir/<id>.md` (making `dir` if needed, replacing files of
/// the same name): YAML front matter with `id`, `title`, `tags`, `created` and `updated`,
/// then the body and a final line end. `progress` is told `(notes written, notes in all)`.
///
/// Each file is written under a hidden temporary name (made new, so that a symbolic link
/// planted there is not followed) and renamed into place, so a file is never half-written
/// and a link planted at `<id>.md` is replaced, not followed.
pub async fn export_dir(
    store: &Store,
    dir: &Path,
    mut progress: impl FnMut(usize, usize),
) -> Result<ExportReport, ExportError> {
    std::fs::create_dir_all(dir).map_err(|error| ExportError::Write {
        path: dir.to_owned(),
        reason: error.to_string(),
    })?;
    let total = usize::try_from(store.count().await?).unwrap_or(usize::MAX);
    progress(0, total);
    let mut report = ExportReport::default();
    let mut after: Option<String> = None;
    loop {
        let notes = store.list_with_bodies(after.as_deref(), PAGE).await?;
        let Some(last) = notes.last() else { break };
        after = Some(last.id.clone());
        let folder = dir.to_owned();
        report.written += tokio::task::spawn_blocking(move || write_notes(&folder, &notes))
            .await
            .map_err(|error| ExportError::Write {
                path: dir.to_owned(),
                reason: error.to_string(),
            })??;
        progress(report.written, total.max(report.written));
    }
    Ok(report)
}

fn write_notes(dir: &Path, notes: &[Note]) -> Result<usize, ExportError> {
    for note in notes {
        // Ids are `[a-z0-9-]`, so they are safe file names; a store that held another would
        // be damaged, and its note is not written outside the folder.
        if !is_valid_id(&note.id) {
            return Err(ExportError::Store(StoreError::Invalid(format!(
                "a stored note has an id that is not a file name: {:?}",
                note.id
            ))));
        }
        let path = dir.join(format!("{}.{NOTE_EXTENSION}", note.id));
        let write_error = |error: &dyn std::fmt::Display| ExportError::Write {
            path: path.clone(),
            reason: error.to_string(),
        };
        let text = note_text(note).map_err(|error| write_error(&error))?;
        let temporary = dir.join(format!(".{}.{NOTE_EXTENSION}.partial", note.id));
        let written = write_new(&temporary, text.as_bytes())
            .and_then(|()| std::fs::rename(&temporary, &path));
        if let Err(error) = written {
            // No litter: what was written is not the note's file, and will never be.
            let _ = std::fs::remove_file(&temporary);
            return Err(write_error(&error));
        }
    }
    Ok(notes.len())
}

/// Writes `bytes` to a new file at `path`, in place of whatever was there (a file an
/// interrupted export left, or a link, which is removed rather than followed).
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let create = || OpenOptions::new().write(true).create_new(true).open(path);
    let mut file = match create() {
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            create()?
        }
        opened => opened?,
    };
    file.write_all(bytes)
}

/// The Markdown file of one note.
pub(super) fn note_text(note: &Note) -> Result<String, serde_norway::Error> {
    let mut text = front_matter::render(&ExportedFields {
        id: &note.id,
        title: &note.title,
        tags: &note.tags,
        created: &note.created_at,
        updated: &note.updated_at,
    })?;
    text.reserve(note.body.len() + 1);
    text.push_str(&note.body);
    text.push('\n');
    Ok(text)
}
