//! PKB's own folder in a vault, `.pkb/`: made and opened at start, and made again from the
//! files when it is deleted while a server runs (the contract lets a person delete it at any
//! time). Whether it still is the folder that was opened is told by its store's file: the
//! same file (device and inode) at `.pkb/notes.db`, or not.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::file_index::FileIndex;
use super::turn::LockFile;
use crate::store::{NoteEngine, StoreError};

/// The folder inside a vault that holds PKB's own files.
pub const META_DIR: &str = ".pkb";

/// What `.pkb/` holds, opened.
pub struct Meta {
    /// The store of the notes, `.pkb/notes.db`.
    pub engine: Arc<dyn NoteEngine>,
    /// What PKB knows of the files, `.pkb/files.db`.
    pub index: FileIndex,
    /// The lock the vault's changes take turns by, `.pkb/lock`.
    pub lock: LockFile,
    /// Which file the store is.
    pub identity: Identity,
}

/// A file's device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity(u64, u64);

/// `.pkb/` below `root`.
pub fn meta_dir(root: &Path) -> PathBuf {
    root.join(META_DIR)
}

fn store_path(root: &Path) -> PathBuf {
    meta_dir(root).join("notes.db")
}

/// Makes `.pkb/` below `root` where missing, and opens what it holds.
pub fn open(root: &Path) -> Result<Meta, StoreError> {
    let meta = meta_dir(root);
    let cannot = |error: std::io::Error| StoreError::Open {
        path: meta.clone(),
        source: Box::new(error),
    };
    // Only `.pkb` itself is made: a vault's folder that went is never made again here.
    match std::fs::create_dir(&meta) {
        Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(cannot(error));
        }
        _ => {}
    }
    let ignore = meta.join(".gitignore");
    if !ignore.exists() {
        // git and sync tools leave PKB's own files alone.
        std::fs::write(&ignore, "*\n").map_err(cannot)?;
    }
    let lock = LockFile::open(&meta)?;
    let store = crate::store::sqlite::open(&store_path(root), false)?;
    let index = FileIndex::open(&meta.join("files.db"))?;
    let identity = identity_of(root).ok_or_else(|| StoreError::Open {
        path: store_path(root),
        source: "the store's file vanished as it was opened".into(),
    })?;
    Ok(Meta {
        engine: Arc::clone(store.engine()),
        index,
        lock,
        identity,
    })
}

/// Which file `.pkb/notes.db` below `root` is now; `None` when there is none.
pub fn identity_of(root: &Path) -> Option<Identity> {
    let metadata = std::fs::metadata(store_path(root)).ok()?;
    Some(Identity(metadata.dev(), metadata.ino()))
}
