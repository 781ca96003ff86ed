//! One change of a vault at a time, across every process serving it: clients start one
//! server per window or session, and two servers writing one note's file in turn could
//! otherwise leave it holding the older of two answered changes. Within a process an async
//! mutex orders the changes; between processes an advisory lock on `.pkb/lock` does, as
//! SQLite's own lock orders writers of one database file.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store::StoreError;

/// The vault's turn, to be taken before each change.
pub struct TurnLock {
    in_process: tokio::sync::Mutex<()>,
    file: Arc<File>,
    path: PathBuf,
}

/// The turn, held until dropped.
pub struct Turn<'a> {
    _in_process: tokio::sync::MutexGuard<'a, ()>,
    file: Arc<File>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

impl TurnLock {
    /// The turn of the vault whose own folder is `meta`.
    pub fn open(meta: &Path) -> Result<TurnLock, StoreError> {
        let path = meta.join("lock");
        let file = open_lock_file(&path)?;
        Ok(TurnLock {
            in_process: tokio::sync::Mutex::new(()),
            file: Arc::new(file),
            path,
        })
    }

    /// Waits for the turn.
    pub async fn take(&self) -> Result<Turn<'_>, StoreError> {
        let in_process = self.in_process.lock().await;
        match self.file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let file = Arc::clone(&self.file);
                tokio::task::spawn_blocking(move || file.lock())
                    .await
                    .map_err(|error| {
                        StoreError::Unavailable(format!("waiting for the vault's turn: {error}"))
                    })?
                    .map_err(|error| self.failed(&error))?;
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(self.failed(&error)),
        }
        Ok(Turn {
            _in_process: in_process,
            file: Arc::clone(&self.file),
        })
    }

    fn failed(&self, error: &std::io::Error) -> StoreError {
        StoreError::Unavailable(format!("cannot lock {} ({error})", self.path.display()))
    }
}

fn open_lock_file(path: &Path) -> Result<File, StoreError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|error| StoreError::Open {
            path: path.to_owned(),
            source: Box::new(error),
        })
}
