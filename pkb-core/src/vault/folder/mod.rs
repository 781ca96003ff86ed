//! A folder of Markdown files as the store (`--vault DIR`): the files are the notes, in the
//! form `import` reads and `export` writes, and PKB keeps its index, versions and vectors in
//! `DIR/.pkb/`, which can be deleted at any time and is rebuilt from the files.
//!
//! Changes go both ways. A change PKB makes is written to the note's file before it is
//! answered ([`engine`]); a change another program makes to the files (an editor, Obsidian,
//! git, a sync tool) is taken in as a version made `by: file`, at start-up and, while a server
//! runs, through the folder's file events ([`watch`]).

mod beneath;
mod engine;
mod file_index;
mod merge;
mod meta;
mod note_file;
mod sync;
mod turn;
mod watch;

use std::path::Path;
use std::sync::Arc;

pub use meta::META_DIR;
pub use sync::{Announce, FILE_CLIENT, Folder, RefusedFile};
pub use watch::{FolderWatch, watch};

use crate::framework::registry::Catalog;
use crate::store::{Store, StoreError};

/// A vault opened: its store, and its folder (to watch it, or to list the files it refused).
pub struct OpenVault {
    /// The notes.
    pub store: Store,
    /// The files.
    pub folder: Arc<Folder>,
}

/// Opens the vault at `root` (made if missing), taking in every file added, changed or
/// removed since it was last open. Each file's note passes the rules of the `write` tool
/// declared in `registry`, as in an import.
pub async fn open_vault(root: &Path, registry: &Catalog) -> Result<OpenVault, StoreError> {
    let write_args = registry
        .tool("write")
        .map(|tool| tool.args)
        .ok_or_else(|| {
            StoreError::Invalid(
                "this server has no `write` tool whose rules a vault's files follow".to_owned(),
            )
        })?;
    let cannot = |error: std::io::Error| StoreError::Open {
        path: root.to_owned(),
        source: Box::new(error),
    };
    std::fs::create_dir_all(root).map_err(cannot)?;
    let root = std::fs::canonicalize(root).map_err(cannot)?;
    let meta = meta::open(&root)?;
    let folder = Arc::new(Folder::new(root, meta, write_args));
    folder.take_in_at_start().await?;
    let store = Store::from_engine(Arc::new(engine::FolderEngine::new(Arc::clone(&folder))));
    folder.on_notes_changed(Box::new(store.vectors_waker()));
    Ok(OpenVault { store, folder })
}
