//! What PKB knows of each file of a vault: the note it holds, and the size, time and content
//! hash the file had when PKB last read or wrote it, so that a change made by another program
//! is told apart from PKB's own, and a start-up finds what changed while it was not running.
//! Kept in `.pkb/files.db`, beside the store, and all in memory while the vault is open.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

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
    files: HashMap<String, FileRecord>,
    paths_by_id: HashMap<String, String>,
    trashed: HashMap<String, String>,
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

fn failed(error: rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("the vault's file index failed: {error}"))
}

impl FileIndex {
    /// Opens (or makes) the index at `path`, reading it whole.
    pub fn open(path: &Path) -> Result<FileIndex, StoreError> {
        let connection = Connection::open(path).map_err(failed)?;
        connection.execute_batch(SCHEMA).map_err(failed)?;
        let mut files = HashMap::new();
        {
            let mut rows = connection
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
        let trashed = {
            let mut rows = connection
                .prepare("SELECT id, path FROM trashed")
                .map_err(failed)?;
            rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
                .map_err(failed)?
                .collect::<Result<HashMap<String, String>, _>>()
                .map_err(failed)?
        };
        let paths_by_id = files
            .iter()
            .map(|(path, record)| (record.id.clone(), path.clone()))
            .collect();
        Ok(FileIndex {
            connection,
            files,
            paths_by_id,
            trashed,
        })
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

    /// Records the file at `path` as holding `record`.
    pub fn record(&mut self, path: &str, record: FileRecord) -> Result<(), StoreError> {
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
        if let Some(old) = self.files.insert(path.to_owned(), record.clone())
            && old.id != record.id
            && self.paths_by_id.get(&old.id).map(String::as_str) == Some(path)
        {
            self.paths_by_id.remove(&old.id);
        }
        self.paths_by_id.insert(record.id, path.to_owned());
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
        Ok(())
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
