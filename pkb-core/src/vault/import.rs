//! `import`: every Markdown file under a folder becomes a note, through `write`'s own rules.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::NOTE_EXTENSION;
use super::front_matter;
use crate::ArgSpec;
use crate::framework::args::validate_args;
use crate::framework::registry::Catalog;
use crate::note::{canonical_timestamp, derive_id, is_valid_id, normalize_tags};
use crate::store::{NoteDates, NoteDraft, PutMode, PutOutcome, Store, StoreError};

/// Notes saved per transaction at most: one fsync, one flush of the search index for each
/// batch. 2,000 rather than 500 made an import of 10,000 small notes about a tenth faster
/// (fewer, larger index segments to write and merge), and holds the write lock for about
/// 0.4 s against a running server, well within its 5 s wait.
const BATCH: usize = 2000;

/// Bytes of note text per batch at most, so that a vault of long notes is not held in memory
/// by the thousand (three batches may be in memory at once: one saved, two read ahead).
const BATCH_BYTES: usize = 8 << 20;

/// A file larger than this cannot be a note (a body holds at most 10,000 characters, 40 KB),
/// so it is refused without being read whole.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// A new note with this id.
    Imported(String),
    /// This id existed and was replaced (`--overwrite`).
    Replaced(String),
    /// This id existed and was left alone.
    Skipped(String),
    /// Nothing was written; the rule it broke.
    Refused(String),
}

/// One file of the folder, by path, and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedFile {
    /// The file, as found under the folder given.
    pub path: PathBuf,
    /// What became of it.
    pub outcome: FileOutcome,
}

/// Every file an import looked at, in the order found (sorted by name within each folder).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Each file and its outcome.
    pub files: Vec<ImportedFile>,
}

impl ImportReport {
    /// How many files had an outcome like `matches`.
    pub fn count(&self, matches: fn(&FileOutcome) -> bool) -> usize {
        self.files.iter().filter(|f| matches(&f.outcome)).count()
    }

    /// Whether any file was refused.
    pub fn any_refused(&self) -> bool {
        self.count(|o| matches!(o, FileOutcome::Refused(_))) > 0
    }
}

/// Why an import stopped before the end. Batches committed before the failure stay imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The folder cannot be read.
    #[error("cannot read {}: {reason}", .path.display())]
    Folder {
        /// The folder given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The store failed; the report holds what was done before.
    #[error("the store failed after {} files: {source}", .done.files.len())]
    Store {
        /// The files handled before the failure.
        done: ImportReport,
        /// The failure.
        source: StoreError,
    },
}

/// A file read and checked, ready to save.
pub(super) struct Candidate {
    /// The note, by `write`'s rules, its id from the title or an export's `id`.
    pub(super) draft: NoteDraft,
    /// The dates its front matter brings.
    pub(super) dates: NoteDates,
}

/// How an import treats what it finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Replace a note whose id exists, instead of skipping the file.
    pub overwrite: bool,
    /// Read files that symbolic links lead to outside the folder. Without it such a file is
    /// refused: a shared vault holding `key.md -> ~/.ssh/id_ed25519` must not make a key a
    /// searchable note.
    pub links_outside: bool,
}

/// Imports every `*.md` file under `dir` into `store`, skipping hidden files and folders.
///
/// Each file passes the `write` tool's argument rules (the declarations in `registry`, so the
/// limits are stated once), then the id and dates rules; a file that breaks one is refused and
/// writes nothing, and so is a file a link leads to outside `dir` unless `options` allow it.
/// An id that exists is skipped, or replaced when `options.overwrite`. `progress` is told
/// `(files handled, files found)` as the import goes.
pub async fn import_dir(
    store: &Store,
    registry: &Catalog,
    dir: &Path,
    options: ImportOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<ImportReport, ImportError> {
    let write_args = registry
        .tool("write")
        .map(|tool| tool.args)
        .ok_or_else(|| ImportError::Folder {
            path: dir.to_owned(),
            reason: "this server has no `write` tool to import through".to_owned(),
        })?;
    let root = dir.to_owned();
    let found = tokio::task::spawn_blocking(move || find_notes(&root, options.links_outside))
        .await
        .map_err(|error| ImportError::Folder {
            path: dir.to_owned(),
            reason: error.to_string(),
        })??;
    let total = found.len();
    progress(0, total);

    // Files are read and checked on a blocking thread while the previous batch commits.
    let (batches, mut ready) = mpsc::channel::<Vec<(PathBuf, Result<Candidate, String>)>>(2);
    let reader = tokio::task::spawn_blocking(move || read_all(found, write_args, &batches));

    let mode = if options.overwrite {
        PutMode::Replace
    } else {
        PutMode::CreateOnly
    };
    let mut report = ImportReport::default();
    let mut first_file_of_id: HashMap<String, PathBuf> = HashMap::new();
    while let Some(batch) = ready.recv().await {
        let mut to_save = Vec::new();
        let mut saved_files = Vec::new();
        for (path, checked) in batch {
            let candidate =
                checked.and_then(
                    |candidate| match first_file_of_id.get(&candidate.draft.id) {
                        Some(first) => Err(format!(
                            "its id `{}` is also the id of {}, imported first",
                            candidate.draft.id,
                            first.display()
                        )),
                        None => Ok(candidate),
                    },
                );
            match candidate {
                Ok(candidate) => {
                    first_file_of_id.insert(candidate.draft.id.clone(), path.clone());
                    saved_files.push(path);
                    to_save.push((candidate.draft, candidate.dates));
                }
                Err(rule) => report.files.push(ImportedFile {
                    path,
                    outcome: FileOutcome::Refused(rule),
                }),
            }
        }
        let ids: Vec<String> = to_save.iter().map(|(d, _)| d.id.clone()).collect();
        let outcomes = match store.put_dated(to_save, mode).await {
            Ok(outcomes) => outcomes,
            Err(source) => {
                reader.abort();
                return Err(ImportError::Store {
                    done: report,
                    source,
                });
            }
        };
        for ((path, id), outcome) in saved_files.into_iter().zip(ids).zip(outcomes) {
            let outcome = match outcome {
                PutOutcome::Created(_) => FileOutcome::Imported(id),
                PutOutcome::Replaced(_) => FileOutcome::Replaced(id),
                // An import neither names a version nor only replaces.
                PutOutcome::Exists | PutOutcome::Stale { .. } | PutOutcome::Missing => {
                    FileOutcome::Skipped(id)
                }
            };
            report.files.push(ImportedFile { path, outcome });
        }
        progress(report.files.len(), total);
    }
    Ok(report)
}

/// Whether `root` is a folder to import from: asked before the store is opened too, so that
/// an import that cannot start does not leave a new, empty store behind.
pub fn check_folder(root: &Path) -> Result<(), ImportError> {
    if root.is_dir() {
        return Ok(());
    }
    Err(ImportError::Folder {
        path: root.to_owned(),
        reason: "not a folder".to_owned(),
    })
}

/// A file under the folder, or an entry that could not be read (a symlink loop, say).
type Found = (PathBuf, Result<(), String>);

/// Every note file under `root`, hidden files and folders left out, symlinks followed (a loop
/// is reported, not followed; a file they lead to outside `root` is refused unless
/// `links_outside`).
fn find_notes(root: &Path, links_outside: bool) -> Result<Vec<Found>, ImportError> {
    check_folder(root)?;
    let is_hidden = |entry: &walkdir::DirEntry| {
        entry.depth() > 0 && entry.file_name().to_string_lossy().starts_with('.')
    };
    let mut found = Vec::new();
    let mut seen = SeenFiles::new(root);
    let walk = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| !is_hidden(entry));
    for entry in walk {
        match entry {
            Ok(entry) if entry.file_type().is_dir() => seen.enter(&entry),
            Ok(entry) if entry.file_type().is_file() && is_note_file(entry.path()) => {
                match seen.first_time(&entry) {
                    Seen::New(real) if !links_outside && !real.starts_with(&seen.real_root) => {
                        let reason = format!(
                            "is a link to {}, outside the folder; pass --links-outside to import what links lead to there",
                            real.display()
                        );
                        found.push((entry.into_path(), Err(reason)));
                    }
                    Seen::New(_) | Seen::Unresolved => found.push((entry.into_path(), Ok(()))),
                    Seen::Again => {}
                }
            }
            Ok(_) => {}
            Err(error) => {
                let path = error.path().unwrap_or(root).to_owned();
                // Followed links are read before `filter_entry` sees their names: a broken
                // link that is hidden (an editor's `.#note.md` lock) or not a note (an
                // image) is nothing the import should have looked at.
                let broken_link = error
                    .io_error()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound);
                if error.depth() > 0
                    && (is_hidden_under(root, &path) || (broken_link && !is_note_file(&path)))
                {
                    continue;
                }
                let reason = match error.loop_ancestor() {
                    Some(ancestor) => {
                        format!("a symbolic link loop back to {}", ancestor.display())
                    }
                    None => format!("cannot be read ({})", io_reason(&error)),
                };
                if error.depth() == 0 {
                    return Err(ImportError::Folder { path, reason });
                }
                found.push((path, Err(reason)));
            }
        }
    }
    Ok(found)
}

/// What the walk makes of a file it reaches.
enum Seen {
    /// Not found before; its real path.
    New(PathBuf),
    /// Found before, through another path.
    Again,
    /// Its real path cannot be told: read, and any error reported, as any other file.
    Unresolved,
}

/// The files found so far, by their real path: a file reached again through a link (a note
/// linked into a second folder) is one note, read once, not a second file whose id is taken.
/// Only a path that passes through a link is resolved (a `realpath` each); any other is the
/// folder's real path joined with where it was found. Hard links stay files of their own.
struct SeenFiles {
    root: PathBuf,
    real_root: PathBuf,
    /// For each folder on the walk's current path, by depth: whether a link led into it.
    linked: Vec<bool>,
    seen: HashSet<PathBuf>,
}

impl SeenFiles {
    fn new(root: &Path) -> Self {
        SeenFiles {
            root: root.to_owned(),
            real_root: std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned()),
            linked: Vec::new(),
            seen: HashSet::new(),
        }
    }

    /// Notes a folder as the walk enters it.
    fn enter(&mut self, folder: &walkdir::DirEntry) {
        let linked = self.through_link(folder);
        self.linked.truncate(folder.depth());
        self.linked.push(linked);
    }

    /// Whether `file` is one not found before, and where it really is.
    fn first_time(&mut self, file: &walkdir::DirEntry) -> Seen {
        let real = if self.through_link(file) {
            match std::fs::canonicalize(file.path()) {
                Ok(real) => real,
                // Read, and its error reported, as any other.
                Err(_) => return Seen::Unresolved,
            }
        } else {
            match file.path().strip_prefix(&self.root) {
                Ok(relative) => self.real_root.join(relative),
                Err(_) => return Seen::Unresolved,
            }
        };
        if self.seen.insert(real.clone()) {
            Seen::New(real)
        } else {
            Seen::Again
        }
    }

    /// Whether a link led to `entry`: it is one, or a folder above it was reached through one.
    fn through_link(&self, entry: &walkdir::DirEntry) -> bool {
        let depth = entry.depth();
        (depth > 0 && entry.path_is_symlink())
            || depth
                .checked_sub(1)
                .and_then(|parent| self.linked.get(parent))
                .is_some_and(|linked| *linked)
    }
}

/// The bytes of the file at `path`, of at most [`MAX_FILE_BYTES`]. Whatever size the file
/// system reports, at most [`OVER_THE_LIMIT`] bytes more are read: a file such as
/// `/proc/self/pagemap` says it is empty and never ends.
pub(super) fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let mut file =
        std::fs::File::open(path).map_err(|error| format!("cannot be read ({error})"))?;
    read_bounded_from(&mut file)
}

/// The bytes of `file`, as [`read_bounded`] reads them.
pub(super) fn read_bounded_from(file: &mut std::fs::File) -> Result<Vec<u8>, String> {
    let too_large =
        |size: String| format!("is larger than 1 MiB ({size}), more than a note can hold");
    let cannot_read = |error: std::io::Error| format!("cannot be read ({error})");
    let reported = file.metadata().map_err(cannot_read)?.len();
    if reported > MAX_FILE_BYTES {
        return Err(too_large(format!("{reported} bytes")));
    }
    let most = usize::try_from(MAX_FILE_BYTES + OVER_THE_LIMIT).unwrap_or(usize::MAX);
    let mut bytes = Vec::with_capacity(usize::try_from(reported).unwrap_or(0));
    let mut chunk = vec![0; READ_CHUNK];
    while bytes.len() < most {
        let want = (most - bytes.len()).min(READ_CHUNK);
        match file.read(&mut chunk[..want]) {
            Ok(0) => break,
            Ok(read) => bytes.extend_from_slice(&chunk[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(cannot_read(error)),
        }
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large("more bytes than it said it holds".to_owned()));
    }
    Ok(bytes)
}

/// How far past the limit a file is read to find that it goes on: 8 bytes, since some files
/// (`/proc/self/pagemap`) are read only in multiples of 8.
const OVER_THE_LIMIT: u64 = 8;

/// What one read asks for: a multiple of 8, as [`OVER_THE_LIMIT`] is.
const READ_CHUNK: usize = 64 * 1024;

fn io_reason(error: &walkdir::Error) -> String {
    error
        .io_error()
        .map_or_else(|| error.to_string(), ToString::to_string)
}

/// Whether `path` is, or is in, a hidden file or folder below `root`.
pub(super) fn is_hidden_under(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root).is_ok_and(|below| {
        below
            .components()
            .any(|part| part.as_os_str().to_string_lossy().starts_with('.'))
    })
}

pub(super) fn is_note_file(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case(NOTE_EXTENSION))
}

/// Reads and checks every file, sending them on in batches; stops when the receiver is gone.
fn read_all(
    found: Vec<Found>,
    write_args: &'static [ArgSpec],
    batches: &mpsc::Sender<Vec<(PathBuf, Result<Candidate, String>)>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut bytes = 0;
    for (path, walked) in found {
        let checked = walked.and_then(|()| read_note(&path, write_args));
        if let Ok(candidate) = &checked {
            bytes += candidate.draft.body.len() + candidate.draft.title.len();
        }
        batch.push((path, checked));
        if batch.len() == BATCH || bytes >= BATCH_BYTES {
            bytes = 0;
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if batches.blocking_send(full).is_err() {
                return;
            }
        }
    }
    if !batch.is_empty() {
        let _ = batches.blocking_send(batch);
    }
}

/// One file as a note, or the rule it breaks.
fn read_note(path: &Path, write_args: &'static [ArgSpec]) -> Result<Candidate, String> {
    note_from_bytes(read_bounded(path)?, path, write_args)
}

/// The note the bytes of the file at `path` hold, or the rule they break.
pub(super) fn note_from_bytes(
    bytes: Vec<u8>,
    path: &Path,
    write_args: &'static [ArgSpec],
) -> Result<Candidate, String> {
    let text = String::from_utf8(bytes).map_err(|error| {
        format!(
            "is not UTF-8 text (invalid bytes at byte {})",
            error.utf8_error().valid_up_to()
        )
    })?;
    note_from_text(&text, &file_stem(path), write_args)
}

/// The file's name without its extension: the title of last resort.
pub(super) fn file_stem(path: &Path) -> String {
    path.file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The note a Markdown text holds; `file_stem` is the title of last resort.
fn note_from_text(
    text: &str,
    file_stem: &str,
    write_args: &'static [ArgSpec],
) -> Result<Candidate, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let split = front_matter::split(text)?;
    let fields = match split.yaml {
        Some(yaml) => front_matter::fields(yaml)?,
        None => front_matter::Fields::default(),
    };
    // A blank title is none: the next place a title can come from is asked.
    let (title, body) = match fields.title.filter(|title| !title.trim().is_empty()) {
        Some(title) => (title, split.rest.to_owned()),
        None => match take_heading(split.rest) {
            Some((title, body)) => (title, body),
            None => (file_stem.to_owned(), split.rest.to_owned()),
        },
    };
    let body = without_final_line_end(&body, crlf_file(text)).to_owned();
    let (title, body, tags) = checked_by_write(write_args, title, body, fields.tags)?;
    // The id comes from the title, as for `write`, except in a file an export wrote (it
    // writes the id with both dates), whose note may have an id of its own (`<id>-summary`).
    // Other tools' `id` fields (a Zettelkasten number, a UUID) are not PKB's ids.
    let id = match &fields.id {
        Some(id) if fields.created.is_some() && fields.updated.is_some() && is_valid_id(id) => {
            id.clone()
        }
        _ => derive_id(&title),
    };
    let dates = dates(fields.created, fields.updated)?;
    // The store's own rules too: a tag within its length may pass `write`'s declaration and
    // grow past it when lower-cased (`İ` is two characters then), and the store would refuse
    // the whole batch it came in.
    let draft = crate::store::validate(NoteDraft {
        id,
        title,
        tags,
        body,
    })
    .map_err(|invalid| invalid.to_string())?;
    Ok(Candidate { draft, dates })
}

/// Title, body and tags after `write`'s declared rules (trimmed, limits checked), or every
/// problem in `write`'s words.
fn checked_by_write(
    write_args: &'static [ArgSpec],
    title: String,
    body: String,
    tags: Option<Vec<String>>,
) -> Result<(String, String, Vec<String>), String> {
    let mut arguments = Map::new();
    arguments.insert("title".to_owned(), Value::String(title));
    arguments.insert("body".to_owned(), Value::String(body));
    if let Some(tags) = tags {
        arguments.insert(
            "tags".to_owned(),
            Value::Array(tags.into_iter().map(Value::String).collect()),
        );
    }
    let values = validate_args(write_args, Some(arguments)).map_err(|invalid| {
        let problems: Vec<String> = invalid
            .problems()
            .iter()
            .map(|(field, rule)| format!("{field}: {rule}"))
            .collect();
        problems.join("; ")
    })?;
    let mut by_name: HashMap<&str, Value> = write_args
        .iter()
        .map(|spec| spec.name)
        .zip(values)
        .collect();
    let mut text = |name: &str| match by_name.remove(name) {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    let (title, body) = (text("title"), text("body"));
    let tags = match by_name.remove("tags") {
        Some(Value::Array(items)) => items
            .into_iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    Ok((title, body, normalize_tags(tags)))
}

/// The first `# ` heading with text, outside code fences, and the text without it. A heading
/// that opens the text takes the blank lines after it along.
pub(super) fn take_heading(text: &str) -> Option<(String, String)> {
    let mut in_fence = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence
            && let Some(title) = content.strip_prefix("# ")
            && !title.trim().is_empty()
        {
            let before = &text[..offset];
            let after = &text[offset + line.len()..];
            let body = if before.trim().is_empty() {
                after.trim_start_matches(['\n', '\r']).to_owned()
            } else {
                format!("{before}{after}")
            };
            return Some((title.trim().to_owned(), body));
        }
        offset += line.len();
    }
    None
}

/// An editor ends a file with a line end; the note's body does not include it. An export
/// writes one (`\n`), so a body comes back exactly, one that ends in `\r` included; a file
/// whose lines end in `\r\n` ends that way.
fn without_final_line_end(body: &str, crlf: bool) -> &str {
    let end = if crlf { "\r\n" } else { "\n" };
    body.strip_suffix(end)
        .or_else(|| body.strip_suffix('\n'))
        .unwrap_or(body)
}

/// Whether the file's first line ends in `\r\n`: it was saved with Windows line ends.
pub(super) fn crlf_file(text: &str) -> bool {
    text.find('\n')
        .is_some_and(|end| text[..end].ends_with('\r'))
}

/// `created` and `updated` in the store's form. One alone stands for both.
fn dates(created: Option<String>, updated: Option<String>) -> Result<NoteDates, String> {
    let read = |field: &str, value: Option<String>| {
        value
            .map(|text| {
                canonical_timestamp(&text).ok_or_else(|| {
                    format!(
                        "{field}: must be a date (RFC 3339, such as 2024-03-01T09:30:00Z, or 2024-03-01)"
                    )
                })
            })
            .transpose()
    };
    let created = read("created", created)?;
    let updated = read("updated", updated)?;
    if let (Some(created), Some(updated)) = (&created, &updated)
        && updated < created
    {
        return Err("updated: must not be before created".to_owned());
    }
    Ok(NoteDates {
        updated_at: updated.or_else(|| created.clone()),
        created_at: created,
    })
}
