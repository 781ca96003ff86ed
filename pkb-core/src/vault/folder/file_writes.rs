//! Writing a vault's files so that no reader, and no crash, ever sees half of one: the text
//! goes to a hidden file in the same folder, reaches the disk, and is renamed over the old,
//! and the folder is synced so the rename itself survives a crash.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` as the whole content of `path`, atomically and durably.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let folder = parent(path)?;
    std::fs::create_dir_all(folder)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // Hidden, so that a scan of the folder never takes it for a note.
    let temporary = folder.join(format!(
        ".{name}.pkb-{}-{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        file.write_all(bytes)?;
        // The data and the size it needs; the rename makes the name.
        file.sync_data()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    sync_folder(folder)
}

/// Moves the file at `from` to `to` (in the same file system), making `to`'s folder first.
pub fn move_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let folder = parent(to)?;
    std::fs::create_dir_all(folder)?;
    std::fs::rename(from, to)?;
    sync_folder(folder)?;
    sync_folder(parent(from)?)
}

fn parent(path: &Path) -> std::io::Result<&Path> {
    path.parent().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} has no folder", path.display()),
        )
    })
}

/// Makes the folder's entries (a rename into it) durable.
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    File::open(folder)?.sync_all()
}
