//! One change of a vault at a time, across every process serving it: clients start one
//! server per window or session, and two servers writing one note's file in turn could
//! otherwise leave it holding the older of two answered changes. Within a process an async
//! mutex orders the changes; between processes an advisory lock on `.pkb/lock` does, as
//! SQLite's own lock orders writers of one database file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::locks::lock;
use crate::store::StoreError;

/// The lock file `.pkb/lock`, open.
#[derive(Clone)]
pub struct LockFile {
    file: Arc<File>,
    path: PathBuf,
}

impl LockFile {
    /// Opens (or makes) the lock file in `meta`, the vault's `.pkb/`.
    pub fn open(meta: &Path) -> Result<LockFile, StoreError> {
        let path = meta.join("lock");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| StoreError::Open {
                path: path.clone(),
                source: Box::new(error),
            })?;
        Ok(LockFile {
            file: Arc::new(file),
            path,
        })
    }

    /// Waits for the lock, off the async runtime when another process holds it.
    async fn lock(&self) -> Result<(), StoreError> {
        match self.file.try_lock() {
            Ok(()) => Ok(()),
            Err(std::fs::TryLockError::WouldBlock) => {
                let file = Arc::clone(&self.file);
                tokio::task::spawn_blocking(move || file.lock())
                    .await
                    .map_err(|error| {
                        StoreError::Unavailable(format!("waiting for the vault's turn: {error}"))
                    })?
                    .map_err(|error| self.failed(&error))
            }
            Err(std::fs::TryLockError::Error(error)) => Err(self.failed(&error)),
        }
    }

    fn failed(&self, error: &std::io::Error) -> StoreError {
        StoreError::Unavailable(format!("cannot lock {} ({error})", self.path.display()))
    }
}

/// The vault's turn, to be taken before each change.
pub struct TurnLock {
    in_process: tokio::sync::Mutex<()>,
    file: Mutex<LockFile>,
}

/// The turn, held until dropped.
pub struct Turn<'a> {
    _in_process: tokio::sync::MutexGuard<'a, ()>,
    file: LockFile,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let _ = self.file.file.unlock();
    }
}

impl Turn<'_> {
    /// Moves the turn to `file`, a `.pkb/lock` made again: the one it held is let go.
    pub async fn move_to(&mut self, file: LockFile) -> Result<(), StoreError> {
        file.lock().await?;
        let old = std::mem::replace(&mut self.file, file);
        let _ = old.file.unlock();
        Ok(())
    }
}

impl TurnLock {
    /// The turn of a vault, by its lock file.
    pub fn new(file: LockFile) -> TurnLock {
        TurnLock {
            in_process: tokio::sync::Mutex::new(()),
            file: Mutex::new(file),
        }
    }

    /// Waits for the turn.
    pub async fn take(&self) -> Result<Turn<'_>, StoreError> {
        let in_process = self.in_process.lock().await;
        let file = lock(&self.file).clone();
        file.lock().await?;
        Ok(Turn {
            _in_process: in_process,
            file,
        })
    }

    /// Takes turns by `file` from now on.
    pub fn use_file(&self, file: LockFile) {
        *lock(&self.file) = file;
    }
}
