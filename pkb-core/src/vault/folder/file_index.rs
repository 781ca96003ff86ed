//! What PKB knows of each file of a vault: the note it holds, and the size, time and content
//! hash the file had when PKB last read or wrote it, so that a change made by another program
//! is told apart from PKB's own, and a start-up finds what changed while it was not running.
//! Kept in `.pkb/files.db`, beside the store, and all in memory while the vault is open.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::links::title_key;
use crate::store::StoreError;

/// A file as PKB last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// The id of the note the file holds.
    pub id: String,
    /// What the file's metadata said.
    pub stamp: FileStamp,
    /// The SHA-256 of its bytes.
    pub hash: [u8; 32],
    /// The version of the note the file holds.
    pub version: u64,
}

/// A file's size and modification time: when both are as recorded, the file is taken as
/// unchanged without being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    /// Bytes.
    pub size: u64,
    /// Nanoseconds since the epoch.
    pub modified_ns: i64,
}

impl FileStamp {
    /// The stamp of a file's metadata.
    pub fn of(metadata: &std::fs::Metadata) -> FileStamp {
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |since| {
                i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
            });
        FileStamp {
            size: metadata.len(),
            modified_ns,
        }
    }
}

/// The content hash of a file's bytes.
pub fn content_hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Every file's record, by its path below the vault (`/`-separated), and the deleted notes'
/// former paths, by id.
pub struct FileIndex {
    connection: Connection,
    /// SQLite's `data_version` when the records were last read: it changes when another
    /// process (another server on the vault) commits to the index.
    read_at: i64,
    files: HashMap<String, FileRecord>,
    paths_by_id: HashMap<String, String>,
    /// Paths by their file name's key (without `.md`, as links name files), for links.
    paths_by_stem: HashMap<String, BTreeSet<String>>,
    trashed: HashMap<String, String>,
    /// Since when each note's file held which version, and whether PKB wrote it there, oldest
    /// first: where a person's save
    /// started from, by its modification time.
    held: HashMap<String, VecDeque<Held>>,
}

/// A version a note's file held: since when, and whether PKB wrote it there (a model's change)
/// or took it in from the file (a person's or another program's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    since: i64,
    version: u64,
    written_by_pkb: bool,
}

/// How many of a note's file versions [`FileIndex::versions_held_until`] remembers.
const HELD_KEPT: usize = 64;

/// How far a file's modification time may lag the moment it was written: Linux stamps files
/// from a clock updated once a scheduler tick (1-10 ms).
const CLOCK_TICK_NS: i64 = 20_000_000;

/// The key a link's name and a file's name are compared by: the name without `.md`, as
/// titles are compared.
pub fn stem_key(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    title_key(name.strip_suffix(".md").unwrap_or(name))
}

const SCHEMA: &str = "
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    size INTEGER NOT NULL,
    modified_ns INTEGER NOT NULL,
    hash BLOB NOT NULL,
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS trashed (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL
);
";

fn data_version(connection: &Connection) -> Result<i64, StoreError> {
    connection
        .query_row("PRAGMA data_version", [], |row| row.get(0))
        .map_err(failed)
}

fn failed(error: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("the vault's file index failed: {error}"))
}

impl FileIndex {
    /// Opens (or makes) the index at `path`, reading it whole.
    pub fn open(path: &Path) -> Result<FileIndex, StoreError> {
        let connection = Connection::open(path).map_err(failed)?;
        connection.execute_batch(SCHEMA).map_err(failed)?;
        let mut index = FileIndex {
            connection,
            read_at: 0,
            files: HashMap::new(),
            paths_by_id: HashMap::new(),
            paths_by_stem: HashMap::new(),
            trashed: HashMap::new(),
            held: HashMap::new(),
        };
        index.load()?;
        Ok(index)
    }

    /// Reads the records again if another process changed them since they were read.
    pub fn refresh(&mut self) -> Result<(), StoreError> {
        if data_version(&self.connection)? != self.read_at {
            self.load()?;
        }
        Ok(())
    }

    fn load(&mut self) -> Result<(), StoreError> {
        self.read_at = data_version(&self.connection)?;
        let mut files = HashMap::new();
        {
            let mut rows = self
                .connection
                .prepare("SELECT path, id, size, modified_ns, hash, version FROM files")
                .map_err(failed)?;
            let read = rows
                .query_map([], |row| {
                    let hash: Vec<u8> = row.get(4)?;
                    Ok((
                        row.get::<_, String>(0)?,
                        FileRecord {
                            id: row.get(1)?,
                            stamp: FileStamp {
                                size: row.get::<_, i64>(2)?.try_into().unwrap_or(0),
                                modified_ns: row.get(3)?,
                            },
                            hash: hash.try_into().unwrap_or([0; 32]),
                            version: row.get::<_, i64>(5)?.try_into().unwrap_or(0),
                        },
                    ))
                })
                .map_err(failed)?;
            for row in read {
                let (path, record) = row.map_err(failed)?;
                files.insert(path, record);
            }
        }
        self.trashed = {
            let mut rows = self
                .connection
                .prepare("SELECT id, path FROM trashed")
                .map_err(failed)?;
            rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(failed)?
                .collect::<Result<HashMap<String, String>, _>>()
                .map_err(failed)?
        };
        self.files = HashMap::new();
        self.paths_by_id = HashMap::new();
        self.paths_by_stem = HashMap::new();
        for (path, record) in files {
            self.remember(&path, record, false);
        }
        Ok(())
    }

    /// Puts `record` in the maps, in place of what `path` held.
    fn remember(&mut self, path: &str, record: FileRecord, written_by_pkb: bool) {
        let held = self.held.entry(record.id.clone()).or_default();
        match held.back_mut() {
            // The same version, its file touched or written again: held since it first was.
            Some(last) if last.version == record.version => {
                last.written_by_pkb |= written_by_pkb;
            }
            _ => {
                held.push_back(Held {
                    since: record.stamp.modified_ns,
                    version: record.version,
                    written_by_pkb,
                });
                if held.len() > HELD_KEPT {
                    held.pop_front();
                }
            }
        }
        self.paths_by_stem
            .entry(stem_key(path))
            .or_default()
            .insert(path.to_owned());
        if let Some(old) = self.files.insert(path.to_owned(), record.clone())
            && old.id != record.id
            && self.paths_by_id.get(&old.id).map(String::as_str) == Some(path)
        {
            self.paths_by_id.remove(&old.id);
        }
        self.paths_by_id.insert(record.id, path.to_owned());
    }

    /// The record of the file at `path`.
    pub fn get(&self, path: &str) -> Option<&FileRecord> {
        self.files.get(path)
    }

    /// The path of the file holding the note `id`.
    pub fn path_of(&self, id: &str) -> Option<&str> {
        self.paths_by_id.get(id).map(String::as_str)
    }

    /// Every recorded path.
    pub fn paths(&self) -> impl Iterator<Item = (&String, &FileRecord)> {
        self.files.iter()
    }

    /// Records the file at `path` as holding `record`, as taken in from the file.
    pub fn record(&mut self, path: &str, record: FileRecord) -> Result<(), StoreError> {
        self.record_held(path, record, false)
    }

    /// Records the file at `path` as holding `record`, as PKB wrote it there.
    pub fn record_written(&mut self, path: &str, record: FileRecord) -> Result<(), StoreError> {
        self.record_held(path, record, true)
    }

    fn record_held(
        &mut self,
        path: &str,
        record: FileRecord,
        written_by_pkb: bool,
    ) -> Result<(), StoreError> {
        self.connection
            .execute(
                "INSERT OR REPLACE INTO files (path, id, size, modified_ns, hash, version)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    path,
                    record.id,
                    i64::try_from(record.stamp.size).unwrap_or(i64::MAX),
                    record.stamp.modified_ns,
                    &record.hash[..],
                    i64::try_from(record.version).unwrap_or(i64::MAX),
                ],
            )
            .map_err(failed)?;
        self.remember(path, record, written_by_pkb);
        Ok(())
    }

    /// Forgets the file at `path`.
    pub fn forget(&mut self, path: &str) -> Result<(), StoreError> {
        self.connection
            .execute("DELETE FROM files WHERE path = ?1", [path])
            .map_err(failed)?;
        if let Some(old) = self.files.remove(path)
            && self.paths_by_id.get(&old.id).map(String::as_str) == Some(path)
        {
            self.paths_by_id.remove(&old.id);
        }
        let stem = stem_key(path);
        if let Some(paths) = self.paths_by_stem.get_mut(&stem) {
            paths.remove(path);
            if paths.is_empty() {
                self.paths_by_stem.remove(&stem);
            }
        }
        Ok(())
    }

    /// The recorded paths whose file name, without `.md`, has the key `stem` (see
    /// [`stem_key`]), sorted.
    pub fn paths_named(&self, stem: &str) -> impl Iterator<Item = (&String, &FileRecord)> {
        self.paths_by_stem
            .get(stem)
            .into_iter()
            .flatten()
            .filter_map(|path| self.files.get_key_value(path))
    }

    /// The versions of note `id` a save made at `modified_ns` may have started from, newest
    /// first and at most `most`: the one its file held then, and before it those PKB wrote
    /// there, which an editor holding an older text may not have seen, back to the last one
    /// that came from the file itself (whoever saved the file next had that one, or a later
    /// one, before them: a `git checkout` back to an earlier text is a change, not a save of
    /// a stale one). A file system's clock ticks coarsely, so a save stamped a tick before a
    /// write of PKB's may still have read it: writes that close are counted in. A save older
    /// than everything known is given the oldest known version, which loses nothing when
    /// merged; none when nothing is known.
    pub fn versions_held_until(&self, id: &str, modified_ns: i64, most: usize) -> Vec<u64> {
        let Some(held) = self.held.get(id) else {
            return Vec::new();
        };
        let until = modified_ns.saturating_add(CLOCK_TICK_NS);
        let mut versions = Vec::new();
        for entry in held.iter().rev().filter(|entry| entry.since <= until) {
            if !versions.contains(&entry.version) {
                versions.push(entry.version);
            }
            if !entry.written_by_pkb || versions.len() == most {
                break;
            }
        }
        if versions.is_empty() {
            versions.extend(held.front().map(|entry| entry.version));
        }
        versions
    }

    /// Remembers that the deleted note `id` was at `path`, where a restore brings it back.
    pub fn trash(&mut self, id: &str, path: &str) -> Result<(), StoreError> {
        self.connection
            .execute(
                "INSERT OR REPLACE INTO trashed (id, path) VALUES (?1, ?2)",
                [id, path],
            )
            .map_err(failed)?;
        self.trashed.insert(id.to_owned(), path.to_owned());
        Ok(())
    }

    /// Where the deleted note `id` was.
    pub fn trashed_path(&self, id: &str) -> Option<&str> {
        self.trashed.get(id).map(String::as_str)
    }

    /// Forgets where the deleted note `id` was.
    pub fn untrash(&mut self, id: &str) -> Result<(), StoreError> {
        self.connection
            .execute("DELETE FROM trashed WHERE id = ?1", [id])
            .optional()
            .map_err(failed)?;
        self.trashed.remove(id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: u64, since: i64) -> FileRecord {
        FileRecord {
            id: "plan".into(),
            stamp: FileStamp {
                size: 1,
                modified_ns: since,
            },
            hash: [0; 32],
            version,
        }
    }

    #[test]
    fn a_save_may_start_from_pkbs_writes_back_to_the_last_text_taken_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = FileIndex::open(&dir.path().join("files.db")).unwrap();
        const MS: i64 = 1_000_000;
        index.record("plan.md", at(1, 1_000 * MS)).unwrap();
        index.record("plan.md", at(2, 2_000 * MS)).unwrap();
        index.record_written("plan.md", at(3, 3_000 * MS)).unwrap();
        index.record_written("plan.md", at(4, 4_000 * MS)).unwrap();
        // Touched, the same version: held since it was written.
        index.record("plan.md", at(4, 4_500 * MS)).unwrap();
        let until = |ns| index.versions_held_until("plan", ns, 8);
        assert_eq!(
            until(5_000 * MS),
            [4, 3, 2],
            "not past version 2, taken from the file"
        );
        assert_eq!(until(3_500 * MS), [3, 2]);
        assert_eq!(until(2_500 * MS), [2]);
        // A tick's lag of the file's clock: the write just after still counts.
        assert_eq!(until(3_000 * MS - 5 * MS), [3, 2]);
        assert_eq!(until(10), [1], "older than all: the oldest");
        assert_eq!(index.versions_held_until("plan", 5_000 * MS, 2), [4, 3]);
        assert!(index.versions_held_until("other", 5_000 * MS, 8).is_empty());
    }
}
