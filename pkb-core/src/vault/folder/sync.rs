//! The two ways between a vault's files and its store: changes made to the files by other
//! programs are taken in as versions made `by: file`, and every note PKB changes is written
//! to its file. One change at a time ([`Folder::turn`]), so that PKB's own writes are never
//! taken for another program's.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::file_index::{FileIndex, FileRecord, FileStamp, content_hash};
use super::file_writes::{move_file, write_atomically};
use super::note_file::{changed_file_text, new_file_text};
use crate::ArgSpec;
use crate::links::title_key;
use crate::locks::lock;
use crate::note::Note;
use crate::store::{NoteDates, NoteDraft, NoteEngine, Provenance, PutMode, PutOutcome, StoreError};
use crate::vault::import::{Candidate, file_stem, is_note_file, note_from_bytes, read_bounded};

/// Who the history says made a change found in the files.
pub const FILE_CLIENT: &str = "file";

/// A file PKB cannot take as a note, and why; it is left as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedFile {
    /// The file.
    pub path: PathBuf,
    /// The rule it breaks.
    pub reason: String,
}

/// What a note change found in the files is told to: the note's id, and whether the list of
/// notes changed (a note came or went, or its title changed).
pub type Announce = Box<dyn Fn(&str, bool) + Send + Sync>;

/// A vault: its folder, the store kept in step with it, and what PKB knows of its files.
pub struct Folder {
    root: PathBuf,
    trash: PathBuf,
    pub(super) inner: Arc<dyn NoteEngine>,
    write_args: &'static [ArgSpec],
    index: Arc<Mutex<FileIndex>>,
    /// Held across each change, from either side.
    pub(super) turn: tokio::sync::Mutex<()>,
    refused: Mutex<Vec<RefusedFile>>,
    announce: OnceLock<Announce>,
    /// Tells the store's vector indexer of notes changed from the files.
    wake_vectors: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

/// A file whose metadata differs from its record (or that has none), read.
struct Looked {
    path: String,
    stamp: FileStamp,
    hash: [u8; 32],
    note: Result<Candidate, String>,
}

/// A changed file's note, ready to save.
struct TakenIn {
    path: String,
    /// The file it was moved from, whose record goes.
    moved_from: Option<String>,
    stamp: FileStamp,
    hash: [u8; 32],
    draft: NoteDraft,
    /// The `created` its front matter gives.
    created_at: Option<String>,
    /// The note as the store holds it now.
    current: Option<Note>,
}

impl TakenIn {
    /// Whether `note` already is what the file holds.
    fn holds(&self, note: &Note) -> bool {
        note.title == self.draft.title
            && note.tags == self.draft.tags
            && note.body == self.draft.body
    }
}

/// Notes of changed files saved in one transaction: a first start on a vault of thousands
/// of files commits once per batch, not once per file.
const TAKE_IN_BATCH: usize = 1000;

/// What a look at the files found.
#[derive(Default)]
struct Survey {
    /// Every note file there, by path below the root.
    present: HashSet<String>,
    /// The ones that changed.
    changed: Vec<Looked>,
    /// The ones that cannot be read at all.
    unreadable: Vec<RefusedFile>,
    /// Paths below the root (`""` for the root itself) that could not be looked into: the
    /// files recorded there are not taken for deleted (an unmounted disk, a folder made
    /// unreadable for a moment).
    unreachable: Vec<String>,
}

impl Survey {
    /// Whether the recorded file at `path` may have vanished, rather than gone out of sight.
    fn lost_sight_of(&self, path: &str) -> bool {
        self.unreachable.iter().any(|folder| {
            folder.is_empty() || path == folder || path.starts_with(&format!("{folder}/"))
        })
    }
}

impl Folder {
    /// A vault at `root` over `inner`, the store kept in `root/.pkb`.
    pub(super) fn new(
        root: PathBuf,
        inner: Arc<dyn NoteEngine>,
        index: FileIndex,
        write_args: &'static [ArgSpec],
    ) -> Folder {
        Folder {
            trash: root.join(super::META_DIR).join("trash"),
            root,
            inner,
            write_args,
            index: Arc::new(Mutex::new(index)),
            turn: tokio::sync::Mutex::new(()),
            refused: Mutex::default(),
            announce: OnceLock::new(),
            wake_vectors: OnceLock::new(),
        }
    }

    /// The vault's folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The files the last look found PKB cannot take, sorted by path.
    pub fn refused_files(&self) -> Vec<RefusedFile> {
        lock(&self.refused).clone()
    }

    /// Tells `announce` of every note changed through the files from now on.
    pub fn on_change_from_files(&self, announce: Announce) {
        let _ = self.announce.set(announce);
    }

    /// Wakes the store's vector indexer whenever notes change from the files.
    pub(super) fn on_notes_changed(&self, wake: Box<dyn Fn() + Send + Sync>) {
        let _ = self.wake_vectors.set(wake);
    }

    /// Takes in every change made to the files since they were last looked at.
    pub async fn take_in_changes(&self) -> Result<(), StoreError> {
        let _turn = self.turn.lock().await;
        self.take_in(None).await
    }

    /// The start-up look: every file taken in, then every note the store holds that its file
    /// does not (a change whose file write a crash cut off) written out.
    pub(super) async fn take_in_at_start(&self) -> Result<(), StoreError> {
        let _turn = self.turn.lock().await;
        self.take_in(None).await?;
        let mut after: Option<String> = None;
        let mut listed = HashSet::new();
        loop {
            let notes = self.inner.list_with_bodies(after.as_deref(), 500).await?;
            let Some(last) = notes.last() else { break };
            after = Some(last.id.clone());
            for note in notes {
                let behind = {
                    let index = lock(&self.index);
                    match index.path_of(&note.id) {
                        None => true,
                        Some(path) => index.get(path).is_some_and(|r| r.version < note.version),
                    }
                };
                if behind {
                    self.write_note_file(&note).await?;
                }
                listed.insert(note.id);
            }
        }
        let gone: Vec<(String, String)> = lock(&self.index)
            .paths()
            .filter(|(_, record)| !listed.contains(&record.id))
            .map(|(path, record)| (path.clone(), record.id.clone()))
            .collect();
        for (path, id) in gone {
            self.move_to_trash(&id, &path).await?;
        }
        Ok(())
    }

    /// Takes in a change made on disk to the file of note `id` that PKB has not read yet:
    /// what a client's change of that note must come after. The caller holds the turn.
    pub(super) async fn take_in_file_of(&self, id: &str) -> Result<(), StoreError> {
        let path = lock(&self.index).path_of(id).map_or_else(
            || format!("{id}.{}", super::super::NOTE_EXTENSION),
            str::to_owned,
        );
        self.take_in(Some(path)).await
    }

    /// Looks at every file (or at `only` one) and takes in what changed. The caller holds
    /// the turn.
    async fn take_in(&self, only: Option<String>) -> Result<(), StoreError> {
        let root = self.root.clone();
        let index = Arc::clone(&self.index);
        let write_args = self.write_args;
        let whole = only.is_none();
        let looked_for = only.clone();
        let survey = tokio::task::spawn_blocking(move || survey(&root, &index, only, write_args))
            .await
            .map_err(|error| {
                StoreError::Unavailable(format!("the vault's scan failed: {error}"))
            })?;
        let present = survey.present.clone();
        let mut refused = survey.unreadable.clone();
        // Gone: every recorded file not found, or the one looked for.
        let vanished: Vec<(String, FileRecord)> = lock(&self.index)
            .paths()
            .filter(|(path, _)| !present.contains(*path) && !survey.lost_sight_of(path))
            .filter(|(path, _)| looked_for.as_ref().is_none_or(|only| only == *path))
            .map(|(path, record)| (path.clone(), record.clone()))
            .collect();
        let mut vanished: HashMap<String, FileRecord> = vanished.into_iter().collect();
        let mut claimed: HashMap<String, String> = HashMap::new();
        let mut changed = survey.changed;
        changed.sort_by(|a, b| a.path.cmp(&b.path));
        let mut pending = Vec::new();
        for looked in changed {
            let candidate = match looked.note {
                Ok(candidate) => candidate,
                Err(reason) => {
                    refused.push(self.refused(&looked.path, reason));
                    continue;
                }
            };
            let (id, moved_from) =
                self.identity(&looked.path, &looked.hash, &candidate, &mut vanished);
            let holder = lock(&self.index)
                .path_of(&id)
                .filter(|holder| *holder != looked.path && present.contains(*holder))
                .map(str::to_owned)
                .or_else(|| claimed.get(&id).cloned());
            if let Some(holder) = holder {
                let reason = format!("its note's id `{id}` is the note of {holder}");
                refused.push(self.refused(&looked.path, reason));
                continue;
            }
            claimed.insert(id.clone(), looked.path.clone());
            let Candidate { mut draft, dates } = candidate;
            draft.id = id;
            let current = self.inner.get(&draft.id).await?;
            let taken = TakenIn {
                path: looked.path,
                moved_from,
                stamp: looked.stamp,
                hash: looked.hash,
                draft,
                created_at: dates.created_at,
                current,
            };
            match &taken.current {
                Some(current) if taken.holds(current) => {
                    self.record_taken_in(&taken, current.version)?;
                }
                _ => pending.push(taken),
            }
        }
        while !pending.is_empty() {
            let rest = pending.split_off(pending.len().min(TAKE_IN_BATCH));
            let batch = std::mem::replace(&mut pending, rest);
            self.save_taken_in(batch).await?;
        }
        for (path, record) in vanished {
            if self.inner.delete(&record.id, FILE_CLIENT).await? {
                self.announce(&record.id, true);
            }
            lock(&self.index).forget(&path)?;
        }
        refused.sort_by(|a, b| a.path.cmp(&b.path));
        let mut known = lock(&self.refused);
        // Each file is told of once, not at every look while it stays as it is.
        for file in refused.iter().filter(|file| !known.contains(file)) {
            tracing::warn!(path = %file.path.display(), rule = %file.reason, "a file of the vault is left alone");
        }
        if whole {
            *known = refused;
        } else {
            let looked_at = looked_for.as_ref().map(|path| self.root.join(path));
            known.retain(|file| Some(&file.path) != looked_at.as_ref());
            known.extend(refused);
            known.sort_by(|a, b| a.path.cmp(&b.path));
        }
        Ok(())
    }

    /// The id a changed file's note has: its own file's, a file it was moved from (same
    /// content, gone from its place), or the one its text gives.
    fn identity(
        &self,
        path: &str,
        hash: &[u8; 32],
        candidate: &Candidate,
        vanished: &mut HashMap<String, FileRecord>,
    ) -> (String, Option<String>) {
        if let Some(record) = lock(&self.index).get(path) {
            return (record.id.clone(), None);
        }
        let moved = vanished
            .iter()
            .find(|(_, record)| record.hash == *hash)
            .or_else(|| {
                vanished
                    .iter()
                    .find(|(_, record)| record.id == candidate.draft.id)
            })
            .map(|(path, record)| (path.clone(), record.id.clone()));
        match moved {
            Some((path, id)) => {
                vanished.remove(&path);
                (id, Some(path))
            }
            None => (candidate.draft.id.clone(), None),
        }
    }

    /// Saves the notes of changed files as versions made by `file`, in one transaction.
    async fn save_taken_in(&self, batch: Vec<TakenIn>) -> Result<(), StoreError> {
        let notes = batch
            .iter()
            .map(|taken| {
                let dates = NoteDates {
                    // A new note's `created` comes from its file; a known note keeps its own.
                    created_at: taken
                        .current
                        .is_none()
                        .then(|| taken.created_at.clone())
                        .flatten(),
                    updated_at: None,
                };
                (taken.draft.clone(), dates)
            })
            .collect();
        let by = Provenance::write(FILE_CLIENT);
        let outcomes = self.inner.put_dated(notes, PutMode::Replace, &by).await?;
        for (taken, outcome) in batch.iter().zip(outcomes) {
            let (PutOutcome::Created(note) | PutOutcome::Replaced(note)) = outcome else {
                return Err(StoreError::Unavailable(
                    "the store answered a file's change with no note".to_owned(),
                ));
            };
            let list_changed = taken
                .current
                .as_ref()
                .is_none_or(|current| current.title != note.title);
            self.announce(&note.id, list_changed);
            self.record_taken_in(taken, note.version)?;
        }
        Ok(())
    }

    /// Records that the file `taken` came from holds version `version` of its note.
    fn record_taken_in(&self, taken: &TakenIn, version: u64) -> Result<(), StoreError> {
        let mut index = lock(&self.index);
        if let Some(old) = &taken.moved_from {
            index.forget(old)?;
        }
        index.record(
            &taken.path,
            FileRecord {
                id: taken.draft.id.clone(),
                stamp: taken.stamp,
                hash: taken.hash,
                version,
            },
        )
    }

    /// Writes `note` to its file: the one that holds it, the one it was deleted from, or a
    /// new `<id>.md`. The caller holds the turn.
    pub(super) async fn write_note_file(&self, note: &Note) -> Result<(), StoreError> {
        let root = self.root.clone();
        let trash = self.trash.clone();
        let index = Arc::clone(&self.index);
        let note = note.clone();
        tokio::task::spawn_blocking(move || write_note_file(&root, &trash, &index, &note))
            .await
            .map_err(|error| StoreError::Unavailable(format!("writing a note's file: {error}")))?
    }

    /// Moves the file of the deleted note `id` to `.pkb/trash/`, where a restore finds it.
    /// The caller holds the turn.
    pub(super) async fn move_to_trash(&self, id: &str, path: &str) -> Result<(), StoreError> {
        let from = self.root.join(path);
        let to = self.trash.join(path);
        let id = id.to_owned();
        let path = path.to_owned();
        let index = Arc::clone(&self.index);
        tokio::task::spawn_blocking(move || {
            match move_file(&from, &to) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(file_failed(&from, &error)),
            }
            let mut index = lock(&index);
            index.forget(&path)?;
            index.trash(&id, &path)
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("moving a note's file: {error}")))?
    }

    /// The path of the file holding note `id`.
    pub(super) fn path_of(&self, id: &str) -> Option<String> {
        lock(&self.index).path_of(id).map(str::to_owned)
    }

    /// The id of the note in the file a link's `target` names: `name`, `name.md` or
    /// `folder/name`, ignoring case; the first by path of several.
    pub(super) fn id_of_file_named(&self, target: &str) -> Option<String> {
        let wanted = title_key(target.trim().trim_end_matches(".md"));
        let with_folder = wanted.contains('/');
        let index = lock(&self.index);
        index
            .paths()
            .filter(|(path, _)| {
                let path = title_key(path.strip_suffix(".md").unwrap_or(path));
                if with_folder {
                    path == wanted || path.ends_with(&format!("/{wanted}"))
                } else {
                    path.rsplit('/').next() == Some(wanted.as_str())
                }
            })
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(_, record)| record.id.clone())
    }

    /// Forgets every file of note `id`, in the folder and in the trash: a purge.
    pub(super) async fn erase(&self, id: &str) -> Result<(), StoreError> {
        let (live, trashed) = {
            let index = lock(&self.index);
            (
                index.path_of(id).map(str::to_owned),
                index.trashed_path(id).map(str::to_owned),
            )
        };
        if let Some(path) = live {
            remove_if_there(&self.root.join(&path))?;
            lock(&self.index).forget(&path)?;
        }
        if let Some(path) = trashed {
            remove_if_there(&self.trash.join(&path))?;
            lock(&self.index).untrash(id)?;
        }
        Ok(())
    }

    fn refused(&self, path: &str, reason: String) -> RefusedFile {
        RefusedFile {
            path: self.root.join(path),
            reason,
        }
    }

    fn announce(&self, id: &str, list_changed: bool) {
        if let Some(wake) = self.wake_vectors.get() {
            wake();
        }
        if let Some(announce) = self.announce.get() {
            announce(id, list_changed);
        }
    }
}

/// Looks at the files (every one, or `only` one) against their records; a file whose content
/// is unchanged has its new metadata recorded here.
fn survey(
    root: &Path,
    index: &Mutex<FileIndex>,
    only: Option<String>,
    write_args: &'static [ArgSpec],
) -> Survey {
    let mut survey = Survey::default();
    let found: Vec<(String, std::io::Result<std::fs::Metadata>)> = match only {
        Some(path) => match std::fs::symlink_metadata(root.join(&path)) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            metadata => vec![(path, metadata)],
        },
        None => note_files(root, &mut survey.unreadable, &mut survey.unreachable),
    };
    for (path, metadata) in found {
        let full = root.join(&path);
        let metadata = match metadata {
            Ok(metadata) if metadata.is_file() => metadata,
            Ok(_) => {
                survey.unreadable.push(RefusedFile {
                    path: full,
                    reason: "is not a plain file (a link, or a folder named .md)".to_owned(),
                });
                continue;
            }
            Err(error) => {
                survey.unreadable.push(RefusedFile {
                    path: full,
                    reason: format!("cannot be read ({error})"),
                });
                survey.unreachable.push(path);
                continue;
            }
        };
        survey.present.insert(path.clone());
        let stamp = FileStamp::of(&metadata);
        let recorded = lock(index).get(&path).cloned();
        if recorded.as_ref().is_some_and(|r| r.stamp == stamp) {
            continue;
        }
        let bytes = match read_bounded(&full) {
            Ok(bytes) => bytes,
            Err(reason) => {
                survey.unreadable.push(RefusedFile { path: full, reason });
                continue;
            }
        };
        let hash = content_hash(&bytes);
        if let Some(mut record) = recorded.filter(|r| r.hash == hash) {
            record.stamp = stamp;
            if let Err(error) = lock(index).record(&path, record) {
                tracing::warn!(%error, "cannot record a vault file's metadata");
            }
            continue;
        }
        let note = note_from_bytes(bytes, &full, write_args);
        survey.changed.push(Looked {
            path,
            stamp,
            hash,
            note,
        });
    }
    survey
}

/// Every `.md` file under `root` by its `/`-separated path below it, hidden files and folders
/// (`.pkb`, `.git`, `.obsidian`, an editor's temporary files) skipped; links are not followed.
fn note_files(
    root: &Path,
    unreadable: &mut Vec<RefusedFile>,
    unreachable: &mut Vec<String>,
) -> Vec<(String, std::io::Result<std::fs::Metadata>)> {
    let mut found = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| {
            entry.depth() == 0 || !entry.file_name().to_string_lossy().starts_with('.')
        });
    for entry in walk {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error.path().unwrap_or(root);
                unreachable.push(relative(root, path).unwrap_or_default());
                unreadable.push(RefusedFile {
                    path: path.to_owned(),
                    reason: format!("cannot be read ({error})"),
                });
                continue;
            }
        };
        if entry.file_type().is_dir() || !is_note_file(entry.path()) {
            continue;
        }
        let Some(path) = relative(root, entry.path()) else {
            continue;
        };
        found.push((path, entry.metadata().map_err(std::io::Error::other)));
    }
    found
}

/// `path` below `root`, `/`-separated; `None` for a name that is not UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let below = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = below.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// See [`Folder::write_note_file`].
fn write_note_file(
    root: &Path,
    trash: &Path,
    index: &Mutex<FileIndex>,
    note: &Note,
) -> Result<(), StoreError> {
    let (live, trashed) = {
        let index = lock(index);
        (
            index.path_of(&note.id).map(str::to_owned),
            index.trashed_path(&note.id).map(str::to_owned),
        )
    };
    let (path, old_text, from_trash) = match (live, trashed) {
        (Some(path), _) => {
            let old = std::fs::read_to_string(root.join(&path)).ok();
            (path, old, None)
        }
        (None, Some(path)) if !root.join(&path).exists() => {
            let old = std::fs::read_to_string(trash.join(&path)).ok();
            (path.clone(), old, Some(path))
        }
        _ => (free_name(root, &note.id), None, None),
    };
    let full = root.join(&path);
    let text = match old_text {
        Some(old) => {
            changed_file_text(&old, note, &file_stem(&full)).or_else(|_| new_file_text(note))
        }
        None => new_file_text(note),
    }
    .map_err(StoreError::Invalid)?;
    write_atomically(&full, text.as_bytes()).map_err(|error| file_failed(&full, &error))?;
    let metadata = std::fs::metadata(&full).map_err(|error| file_failed(&full, &error))?;
    let mut index = lock(index);
    index.record(
        &path,
        FileRecord {
            id: note.id.clone(),
            stamp: FileStamp::of(&metadata),
            hash: content_hash(text.as_bytes()),
            version: note.version,
        },
    )?;
    if let Some(path) = from_trash {
        let _ = std::fs::remove_file(trash.join(path));
        index.untrash(&note.id)?;
    }
    Ok(())
}

/// `<id>.md`, or `<id>-2.md` and on when another file holds that name.
fn free_name(root: &Path, id: &str) -> String {
    let extension = super::super::NOTE_EXTENSION;
    let mut name = format!("{id}.{extension}");
    let mut n = 2;
    while root.join(&name).exists() {
        name = format!("{id}-{n}.{extension}");
        n += 1;
    }
    name
}

fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(file_failed(path, &error))
        }
        _ => Ok(()),
    }
}

fn file_failed(path: &Path, error: &std::io::Error) -> StoreError {
    StoreError::Backend {
        context: format!("cannot write {}", path.display()),
        source: Box::new(std::io::Error::new(error.kind(), error.to_string())),
    }
}
