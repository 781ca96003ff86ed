//! The two ways between a vault's files and its store: changes made to the files by other
//! programs are taken in as versions made `by: file`, and every note PKB changes is written
//! to its file. One change at a time ([`Folder::turn`]), so that PKB's own writes are never
//! taken for another program's.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::beneath::{self, Displaced, Replacing};
use super::file_index::{FileIndex, FileRecord, FileStamp, content_hash, stem_key};
use super::merge::{closest_base, merge_lines};
use super::meta::{self, Identity, Meta};
use super::note_file::{changed_file_text, new_file_text};
use super::turn::{Turn, TurnLock};
use crate::ArgSpec;
use crate::links::title_key;
use crate::locks::lock;
use crate::note::Note;
use crate::store::{
    NoteDates, NoteDraft, NoteEngine, Provenance, PutMode, PutOutcome, StoreError, VersionLookup,
};
use crate::vault::import::{
    Candidate, file_stem, is_note_file, note_from_bytes, read_bounded_from,
};

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
    /// The store in `.pkb/`; another when `.pkb/` is made again.
    inner: RwLock<Arc<dyn NoteEngine>>,
    write_args: &'static [ArgSpec],
    index: Arc<Mutex<FileIndex>>,
    /// Held across each change, from either side, and from every process serving the vault.
    turn_lock: TurnLock,
    /// Which file the store in `.pkb/` is: another (or none) when `.pkb/` was deleted.
    identity: Mutex<Identity>,
    refused: Mutex<Vec<RefusedFile>>,
    /// The files refused by their content, with the stamp they had: one unchanged since is
    /// not read again at every look.
    refused_stamps: Arc<Mutex<HashMap<String, (FileStamp, String)>>>,
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

/// Where the vault's trash is, below its root.
fn trash_path(path: &str) -> String {
    format!("{}/trash/{path}", meta::META_DIR)
}

/// How many times a note's file write meets a save made meanwhile before it gives up: each
/// meeting is a person's save, taken in, so more than a few in one write is a loop.
const WRITE_TRIES: usize = 8;

/// A changed file's note, ready to save.
struct TakenIn {
    path: String,
    /// The file it was moved from, whose record goes.
    moved_from: Option<String>,
    stamp: FileStamp,
    hash: [u8; 32],
    draft: NoteDraft,
    /// The dates its front matter gives.
    dates: NoteDates,
    /// The note as the store holds it now.
    current: Option<Note>,
    /// The draft is the file's text merged with a change PKB made since the file was
    /// written: the file is to be written again.
    rewrite: bool,
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

/// How many of the versions a note's file held before a save are weighed as where the save
/// started from: a person's editor rarely holds a text older than the last few writes.
const BASES_WEIGHED: usize = 8;

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
    pub(super) fn new(root: PathBuf, meta: Meta, write_args: &'static [ArgSpec]) -> Folder {
        Folder {
            root,
            inner: RwLock::new(meta.engine),
            write_args,
            index: Arc::new(Mutex::new(meta.index)),
            turn_lock: TurnLock::new(meta.lock),
            identity: Mutex::new(meta.identity),
            refused: Mutex::default(),
            refused_stamps: Arc::default(),
            announce: OnceLock::new(),
            wake_vectors: OnceLock::new(),
        }
    }

    /// The store the notes are kept in now.
    pub(super) fn inner(&self) -> Arc<dyn NoteEngine> {
        Arc::clone(
            &self
                .inner
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
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

    /// Waits for the turn: no other change of the vault, from this process or another, until
    /// it is dropped. What another process recorded meanwhile is read first.
    pub(super) async fn turn(&self) -> Result<Turn<'_>, StoreError> {
        let mut turn = self.turn_lock.take().await?;
        // A vault whose whole folder is out of sight (an unmounted disk, a folder moved) is
        // not made again where it was: the look at the files waits for it to come back.
        if self.root.is_dir() && meta::identity_of(&self.root) != Some(*lock(&self.identity)) {
            self.make_meta_again(&mut turn).await?;
        }
        lock(&self.index).refresh()?;
        Ok(turn)
    }

    /// `.pkb/` was deleted while the server ran (or another server on the vault made it
    /// again since): it is made (or opened) again, the files taken in as at a first start,
    /// and the change waiting for the turn goes to the new store. Nothing is refused.
    async fn make_meta_again(&self, turn: &mut Turn<'_>) -> Result<(), StoreError> {
        tracing::warn!(
            folder = %meta::meta_dir(&self.root).display(),
            "the vault's own folder went while the server ran: it is made again from the files"
        );
        let meta = meta::open(&self.root)?;
        turn.move_to(meta.lock.clone()).await?;
        self.turn_lock.use_file(meta.lock);
        *self
            .inner
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = meta.engine;
        *lock(&self.index) = meta.index;
        *lock(&self.identity) = meta.identity;
        lock(&self.refused_stamps).clear();
        self.catch_up_with_files().await
    }

    /// Takes in every change made to the files since they were last looked at.
    pub async fn take_in_changes(&self) -> Result<(), StoreError> {
        let _turn = self.turn().await?;
        self.take_in(None).await
    }

    /// The start-up look: every file taken in, then every note the store holds that its file
    /// does not (a change whose file write a crash cut off) written out.
    pub(super) async fn take_in_at_start(&self) -> Result<(), StoreError> {
        let _turn = self.turn().await?;
        self.catch_up_with_files().await
    }

    /// See [`Folder::take_in_at_start`]; the caller holds the turn.
    async fn catch_up_with_files(&self) -> Result<(), StoreError> {
        self.take_in(None).await?;
        let mut after: Option<String> = None;
        let mut listed = HashSet::new();
        loop {
            let notes = self.inner().list_with_bodies(after.as_deref(), 500).await?;
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
        let refused_stamps = Arc::clone(&self.refused_stamps);
        let write_args = self.write_args;
        let whole = only.is_none();
        let looked_for = only.clone();
        let survey = tokio::task::spawn_blocking(move || {
            survey(&root, &index, &refused_stamps, only, write_args)
        })
        .await
        .map_err(|error| StoreError::Unavailable(format!("the vault's scan failed: {error}")))?;
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
        let mut to_write = Vec::new();
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
            let current = self.inner().get(&draft.id).await?;
            let mut rewrite = false;
            if let Some(current) = &current {
                let merged = self
                    .merged_with(current, draft.clone(), looked.stamp.modified_ns)
                    .await?;
                rewrite = merged != draft;
                draft = merged;
            }
            let taken = TakenIn {
                path: looked.path,
                moved_from,
                stamp: looked.stamp,
                hash: looked.hash,
                draft,
                dates,
                current,
                rewrite,
            };
            match &taken.current {
                Some(current) if taken.holds(current) => {
                    self.record_taken_in(&taken, current.version)?;
                    if taken.rewrite {
                        to_write.push(current.clone());
                    }
                }
                _ => pending.push(taken),
            }
        }
        while !pending.is_empty() {
            let rest = pending.split_off(pending.len().min(TAKE_IN_BATCH));
            let batch = std::mem::replace(&mut pending, rest);
            to_write.extend(self.save_taken_in(batch).await?);
        }
        // A save merged with a change PKB made meanwhile: the file gets the merge too, or the
        // next save, made on the file as it is, would take PKB's change out again.
        for note in to_write {
            self.write_note_file(&note).await?;
        }
        for (path, record) in vanished {
            if self.inner().delete(&record.id, FILE_CLIENT).await? {
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

    /// Saves the notes of changed files as versions made by `file`, in one transaction; the
    /// saved notes whose files are to be written again.
    async fn save_taken_in(&self, batch: Vec<TakenIn>) -> Result<Vec<Note>, StoreError> {
        let notes = batch
            .iter()
            .map(|taken| {
                // A new note's dates come from its file, as an import takes them; a known
                // note keeps its `created`, and its change is made now.
                let dates = match taken.current {
                    None => taken.dates.clone(),
                    Some(_) => NoteDates::default(),
                };
                (taken.draft.clone(), dates)
            })
            .collect();
        let by = Provenance::write(FILE_CLIENT);
        let outcomes = self.inner().put_dated(notes, PutMode::Replace, &by).await?;
        let mut to_write = Vec::new();
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
            if taken.rewrite {
                to_write.push(note);
            }
        }
        Ok(to_write)
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

    /// The note a file's `draft` makes of note `current`: the draft itself, or, when the
    /// note changed since the version the file's text started from (a save made on a version
    /// PKB has since changed), both changes merged so that neither is lost.
    async fn merged_with(
        &self,
        current: &Note,
        draft: NoteDraft,
        modified_ns: i64,
    ) -> Result<NoteDraft, StoreError> {
        let held = lock(&self.index).versions_held_until(&current.id, modified_ns, BASES_WEIGHED);
        let mut candidates = Vec::with_capacity(held.len());
        for version in held {
            if version >= current.version {
                candidates.push(current.clone());
            } else if let VersionLookup::Found(found) =
                self.inner().version(&current.id, version).await?
            {
                candidates.push(found.note);
            }
        }
        let texts: Vec<(u64, &str)> = candidates
            .iter()
            .map(|note| (note.version, note.body.as_str()))
            .collect();
        let Some(base) = closest_base(&draft.body, &texts)
            .filter(|base| *base < current.version)
            .and_then(|base| candidates.iter().find(|note| note.version == base))
        else {
            return Ok(draft);
        };
        let merged = NoteDraft {
            id: draft.id.clone(),
            title: if draft.title == base.title {
                current.title.clone()
            } else {
                draft.title.clone()
            },
            tags: if draft.tags == base.tags {
                current.tags.clone()
            } else {
                draft.tags.clone()
            },
            body: merge_lines(&base.body, &current.body, &draft.body),
        };
        // A merge too long for a note keeps the file's text; PKB's change stays a version.
        Ok(crate::store::validate(merged).unwrap_or(draft))
    }

    /// Writes `note` to its file: the one that holds it, the one it was deleted from, or a
    /// new `<id>.md`. A save another program made to the file since PKB last read it, put
    /// aside by the write, is taken in on top of `note` (merged with it) and written in turn.
    /// The caller holds the turn.
    pub(super) async fn write_note_file(&self, note: &Note) -> Result<(), StoreError> {
        let mut note = note.clone();
        for _ in 0..WRITE_TRIES {
            let root = self.root.clone();
            let index = Arc::clone(&self.index);
            let written = note.clone();
            let unread =
                tokio::task::spawn_blocking(move || write_note_file(&root, &index, &written))
                    .await
                    .map_err(|error| {
                        StoreError::Unavailable(format!("writing a note's file: {error}"))
                    })??;
            let Some((path, unread)) = unread else {
                return Ok(());
            };
            match self.take_in_put_aside(&note, &path, unread).await? {
                Some(merged) => note = merged,
                None => return Ok(()),
            }
        }
        Err(StoreError::Unavailable(format!(
            "the file of {} kept changing while PKB wrote it; its changes are kept as versions",
            note.id
        )))
    }

    /// Takes in `unread`, a save made to the file of `note` at `path` that a write of it put
    /// aside: the note both make, to write next, or `None` when the save is no note (it is
    /// put back, and refused at the next look).
    async fn take_in_put_aside(
        &self,
        note: &Note,
        path: &str,
        unread: Displaced,
    ) -> Result<Option<Note>, StoreError> {
        let stamp = FileStamp::of(&unread.metadata);
        let candidate = note_from_bytes(unread.bytes.clone(), Path::new(path), self.write_args);
        let Ok(Candidate { mut draft, .. }) = candidate else {
            let root = self.root.clone();
            let path = path.to_owned();
            tokio::task::spawn_blocking(move || {
                beneath::write(&root, &path, &unread.bytes, Replacing::File, |_| {
                    Ok(Vec::new())
                })
                .map_err(|error| file_failed(&root.join(&path), &error))
            })
            .await
            .map_err(|error| {
                StoreError::Unavailable(format!("writing a note's file: {error}"))
            })??;
            return Ok(None);
        };
        draft.id = note.id.clone();
        let draft = self.merged_with(note, draft, stamp.modified_ns).await?;
        let by = Provenance::write(FILE_CLIENT);
        let outcome = self
            .inner()
            .put(draft, PutMode::ReplaceAtVersion(note.version), &by)
            .await?;
        let (PutOutcome::Created(saved) | PutOutcome::Replaced(saved)) = outcome else {
            return Err(StoreError::Unavailable(format!(
                "{} changed while its file's save was taken in",
                note.id
            )));
        };
        self.announce(&saved.id, saved.title != note.title);
        Ok(Some(saved))
    }

    /// Moves the file of the deleted note `id` to `.pkb/trash/`, where a restore finds it.
    /// The caller holds the turn.
    pub(super) async fn move_to_trash(&self, id: &str, path: &str) -> Result<(), StoreError> {
        let root = self.root.clone();
        let id = id.to_owned();
        let path = path.to_owned();
        let index = Arc::clone(&self.index);
        tokio::task::spawn_blocking(move || {
            match beneath::move_file(&root, &path, &trash_path(&path)) {
                Ok(()) => {}
                // Gone, or no longer a file of the vault (a folder on its way is a link now).
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
                    ) => {}
                Err(error) => return Err(file_failed(&root.join(&path), &error)),
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
        let target = target.trim();
        let wanted = title_key(target.strip_suffix(".md").unwrap_or(target));
        let index = lock(&self.index);
        // Sorted by path: the first that matches is the one.
        index
            .paths_named(&stem_key(&wanted))
            .find(|(path, _)| {
                !wanted.contains('/') || {
                    let path = title_key(path.strip_suffix(".md").unwrap_or(path));
                    path == wanted || path.ends_with(&format!("/{wanted}"))
                }
            })
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
            remove_if_there(&self.root, &path)?;
            lock(&self.index).forget(&path)?;
        }
        if let Some(path) = trashed {
            remove_if_there(&self.root, &trash_path(&path))?;
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
/// is unchanged has its new metadata recorded here. Each file is opened below the root
/// without following links, and read from what was opened: what is read is what was looked at.
fn survey(
    root: &Path,
    index: &Mutex<FileIndex>,
    refused_stamps: &Mutex<HashMap<String, (FileStamp, String)>>,
    only: Option<String>,
    write_args: &'static [ArgSpec],
) -> Survey {
    let mut survey = Survey::default();
    let found: Vec<String> = match only {
        Some(path) => vec![path],
        None => note_files(root, &mut survey.unreadable, &mut survey.unreachable),
    };
    for path in found {
        let full = root.join(&path);
        let opened = beneath::open(root, &path).and_then(|file| {
            let metadata = file.metadata()?;
            Ok((file, metadata))
        });
        let (mut file, metadata) = match opened {
            Ok(opened) => opened,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
                survey.unreadable.push(RefusedFile {
                    path: full,
                    reason: error.to_string(),
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
        // A file refused as it is now is not read again (one a write's look would otherwise
        // read after every write).
        if recorded.is_none()
            && let Some((_, reason)) = lock(refused_stamps)
                .get(&path)
                .filter(|(refused_at, _)| *refused_at == stamp)
        {
            survey.changed.push(Looked {
                path,
                stamp,
                hash: [0; 32],
                note: Err(reason.clone()),
            });
            continue;
        }
        let bytes = match read_bounded_from(&mut file) {
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
        match &note {
            Err(reason) => {
                lock(refused_stamps).insert(path.clone(), (stamp, reason.clone()));
            }
            Ok(_) => {
                lock(refused_stamps).remove(&path);
            }
        }
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
/// A file whose name (or folder's name) is not UTF-8 is refused.
fn note_files(
    root: &Path,
    unreadable: &mut Vec<RefusedFile>,
    unreachable: &mut Vec<String>,
) -> Vec<String> {
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
            unreadable.push(RefusedFile {
                path: entry.path().to_owned(),
                reason: "its name is not UTF-8".to_owned(),
            });
            continue;
        };
        found.push(path);
    }
    found
}

/// `path` below `root`, `/`-separated; `None` for a name that is not UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let below = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = below.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// See [`Folder::write_note_file`]: the path written, and the save put aside that PKB had
/// not read, if one was.
fn write_note_file(
    root: &Path,
    index: &Mutex<FileIndex>,
    note: &Note,
) -> Result<Option<(String, Displaced)>, StoreError> {
    let (live, trashed) = {
        let index = lock(index);
        (
            index
                .path_of(&note.id)
                .map(|path| (path.to_owned(), index.get(path).map(|r| r.hash))),
            index.trashed_path(&note.id).map(str::to_owned),
        )
    };
    let read = |path: &str| {
        beneath::open(root, path)
            .ok()
            .and_then(|mut file| read_bounded_from(&mut file).ok())
            .and_then(|bytes| String::from_utf8(bytes).ok())
    };
    // What PKB last read or wrote there: anything else the write puts aside is a save it
    // has not read.
    let (mut path, old_text, replacing, expected, from_trash) = match (live, trashed) {
        (Some((path, expected)), _) => {
            let old = read(&path);
            (path, old, Replacing::File, expected, None)
        }
        (None, Some(path)) if !beneath::exists(root, &path).unwrap_or(true) => {
            let old = read(&trash_path(&path));
            (path.clone(), old, Replacing::Nothing, None, Some(path))
        }
        _ => (
            free_name(root, &note.id),
            None,
            Replacing::Nothing,
            None,
            None,
        ),
    };
    let stem = file_stem(Path::new(&path));
    let text = match old_text {
        Some(old) => changed_file_text(&old, note, &stem).or_else(|_| new_file_text(note)),
        None => new_file_text(note),
    }
    .map_err(StoreError::Invalid)?;
    let read_aside = |file: &mut std::fs::File| {
        read_bounded_from(file).map_err(|reason| std::io::Error::other(format!("it {reason}")))
    };
    let written = loop {
        match beneath::write(root, &path, text.as_bytes(), replacing, read_aside) {
            // Made by another program since the name was chosen: another name.
            Err(error)
                if error.kind() == std::io::ErrorKind::AlreadyExists
                    && replacing == Replacing::Nothing =>
            {
                path = free_name(root, &note.id);
            }
            written => break written.map_err(|error| file_failed(&root.join(&path), &error))?,
        }
    };
    let mut index = lock(index);
    index.record_written(
        &path,
        FileRecord {
            id: note.id.clone(),
            stamp: FileStamp::of(&written.metadata),
            hash: content_hash(text.as_bytes()),
            version: note.version,
        },
    )?;
    if let Some(trashed) = from_trash {
        let _ = beneath::remove(root, &trash_path(&trashed));
        index.untrash(&note.id)?;
    }
    Ok(written
        .displaced
        .filter(|displaced| Some(content_hash(&displaced.bytes)) != expected)
        .map(|displaced| (path, displaced)))
}

/// `<id>.md`, or `<id>-2.md` and on when something holds that name.
fn free_name(root: &Path, id: &str) -> String {
    let extension = super::super::NOTE_EXTENSION;
    let mut name = format!("{id}.{extension}");
    let mut n = 2;
    while beneath::exists(root, &name).unwrap_or(false) {
        name = format!("{id}-{n}.{extension}");
        n += 1;
    }
    name
}

fn remove_if_there(root: &Path, path: &str) -> Result<(), StoreError> {
    match beneath::remove(root, path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(file_failed(&root.join(path), &error))
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
