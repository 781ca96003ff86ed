//! The write-ahead log under a running server. SQLite writes commits into the `-wal` file it
//! opened; if that file is deleted (or replaced) behind its back, commits still succeed but
//! go into a file nobody will read again, and a crash then loses every one of them. The
//! watch notices, so writes are refused with what happened instead of answered as saved.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::locks::lock;

/// What identifies a file on its disk: device and inode.
type FileIdentity = (u64, u64);

/// The `-wal` file a store's writer uses, and whether it is still the one at its path.
pub(super) struct WalWatch {
    /// The log's path; `None` when there is no log to watch.
    path: Option<PathBuf>,
    /// The file first seen there: SQLite makes it with the first commit of a new store.
    seen: Mutex<Option<FileIdentity>>,
    /// Why writes are refused, once the log was found gone.
    lost: OnceLock<String>,
}

impl WalWatch {
    /// Watches the log of the store at `db_path`, which is in WAL mode.
    pub(super) fn of(db_path: &Path) -> Self {
        let mut wal = db_path.as_os_str().to_owned();
        wal.push("-wal");
        let path = PathBuf::from(wal);
        let seen = Mutex::new(identity(&path));
        Self {
            path: Some(path),
            seen,
            lost: OnceLock::new(),
        }
    }

    /// No log to watch: a store in memory, or one SQLite could not put in WAL mode.
    pub(super) fn none() -> Self {
        Self {
            path: None,
            seen: Mutex::new(None),
            lost: OnceLock::new(),
        }
    }

    /// Whether commits still reach the log at its path; once they do not, why, for good.
    pub(super) fn check(&self) -> Result<(), String> {
        if let Some(why) = self.lost.get() {
            return Err(why.clone());
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let now = identity(path);
        let mut seen = lock(&self.seen);
        let first = match *seen {
            None => {
                // Not made yet: nothing is committed into a log that could be lost.
                *seen = now;
                return Ok(());
            }
            Some(first) => first,
        };
        if now == Some(first) {
            return Ok(());
        }
        let what = if now.is_none() { "deleted" } else { "replaced" };
        let why = format!(
            "the store's write-ahead log {} was {what} while the server ran, so writes can no longer be made durable; nothing more is written: restart the server (writes answered since the log went may be lost)",
            path.display()
        );
        tracing::error!(wal = %path.display(), what, "write-ahead log gone; refusing writes");
        Err(self.lost.get_or_init(|| why).clone())
    }
}

#[cfg(unix)]
fn identity(path: &Path) -> Option<FileIdentity> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_path: &Path) -> Option<FileIdentity> {
    // No inode to compare: nothing is watched.
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_or_replaced_log_is_noticed_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("notes.db");
        let wal = dir.path().join("notes.db-wal");
        let watch = WalWatch::of(&db);
        assert_eq!(watch.check(), Ok(()), "no log yet: a new store");
        std::fs::write(&wal, b"log").unwrap();
        assert_eq!(
            watch.check(),
            Ok(()),
            "the first log seen is the one watched"
        );
        assert_eq!(watch.check(), Ok(()));
        std::fs::remove_file(&wal).unwrap();
        let why = watch.check().unwrap_err();
        assert!(why.contains("was deleted while the server ran"), "{why}");
        std::fs::write(&wal, b"a new log").unwrap();
        assert_eq!(
            watch.check(),
            Err(why),
            "a new file at the path does not mend it"
        );

        let replaced = WalWatch::of(&db);
        let other = dir.path().join("other");
        std::fs::write(&other, b"x").unwrap();
        std::fs::rename(&other, &wal).unwrap();
        assert!(replaced.check().unwrap_err().contains("was replaced"));
        assert_eq!(WalWatch::none().check(), Ok(()));
    }
}
