//! Changes other programs make to a vault's files, heard through the operating system's file
//! events (the `notify` crate) and taken in with one look at the folder per burst: a save by
//! rename, a `git checkout` of hundreds of files and a lost event queue (a rescan) alike.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::sync::Folder;
use crate::store::StoreError;
use crate::vault::import::is_hidden_under;

/// How long a burst of events is let settle before the folder is looked at: short against the
/// contract's 2 s, long enough that a checkout's files are mostly taken in one look.
const SETTLE: Duration = Duration::from_millis(150);

/// The watch on a vault's folder; dropping it stops it.
pub struct FolderWatch {
    _watcher: notify::RecommendedWatcher,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FolderWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Starts watching `folder`'s files. Must be called within a tokio runtime.
pub fn watch(folder: Arc<Folder>) -> Result<FolderWatch, StoreError> {
    let (heard, mut hearing) = tokio::sync::mpsc::channel::<()>(1);
    let root = folder.root().to_owned();
    let watched = root.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let matters = match &event {
            Ok(event) => {
                event.need_rescan() || event.paths.iter().any(|path| !is_hidden_under(&root, path))
            }
            Err(_) => true,
        };
        if matters {
            // A look already due will see this change too.
            let _ = heard.try_send(());
        }
    })
    .map_err(|error| watch_failed(&watched, &error))?;
    watcher
        .watch(&watched, RecursiveMode::Recursive)
        .map_err(|error| watch_failed(&watched, &error))?;
    let task = tokio::spawn(async move {
        while hearing.recv().await.is_some() {
            tokio::time::sleep(SETTLE).await;
            while hearing.try_recv().is_ok() {}
            if let Err(error) = folder.take_in_changes().await {
                tracing::warn!(%error, "taking in the vault's changed files failed");
            }
        }
    });
    Ok(FolderWatch {
        _watcher: watcher,
        task,
    })
}

fn watch_failed(root: &Path, error: &notify::Error) -> StoreError {
    StoreError::Open {
        path: root.to_owned(),
        source: format!("cannot watch the folder for changes ({error})").into(),
    }
}
