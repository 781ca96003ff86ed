//! A vault's files reached from its root one folder at a time, never through a link: a folder
//! or file swapped for a link (to a folder outside the vault, say) while PKB runs is refused,
//! not followed, and a file swapped for a FIFO or a device is refused without blocking. Paths
//! are the file index's: `/`-separated, below the root.
//!
//! A note's file is replaced by exchanging it with the new text's temporary file, so that
//! whatever was there a moment before (a person's editor may have just saved) is put aside
//! and handed back, never lost unread.

use std::fs::File;
use std::io;
use std::path::Path;

/// The file a write put aside: what was at the note's path just before the write.
pub struct Displaced {
    /// Its bytes (at most a note file's limit and a little more).
    pub bytes: Vec<u8>,
    /// Its metadata when put aside.
    pub metadata: std::fs::Metadata,
}

/// What a write did.
pub struct Written {
    /// The metadata of the file written, as its own descriptor gave it: another program's
    /// file that replaces it at once is never taken for it.
    pub metadata: std::fs::Metadata,
    /// The plain file it put aside, if one was there.
    pub displaced: Option<Displaced>,
}

/// How a write treats what is at its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replacing {
    /// Nothing must be there: a file that is makes the write fail with `AlreadyExists`.
    Nothing,
    /// A file is there (or was a moment ago); it is put aside and handed back.
    File,
}

/// The folders of `path` and its name; `..`, `.` and empty parts are refused.
fn split(path: &str) -> io::Result<(Vec<&str>, &str)> {
    let mut parts: Vec<&str> = path.split('/').collect();
    if parts.iter().any(|part| matches!(*part, "" | "." | "..")) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{path} is not a path below the vault"),
        ));
    }
    let name = parts.pop().unwrap_or_default();
    Ok((parts, name))
}

/// The error for something that is not a plain file where a note's file should be.
fn not_a_file() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "is not a plain file (a link, a folder, a FIFO or a device)",
    )
}

/// `file` if it is a plain file.
fn plain(file: File) -> io::Result<File> {
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(not_a_file())
    }
}

#[cfg(target_os = "linux")]
mod at {
    //! The `*at` system calls, through rustix.

    use std::fs::File;
    use std::io;
    use std::io::Write;
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, CWD, Mode, OFlags, RenameFlags};

    use super::{Displaced, Replacing, Written, plain, split};

    const READ: OFlags = OFlags::RDONLY
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);

    /// The folder `folders` below `root`, each step refusing a link; made where missing when
    /// `make`.
    fn folder(root: &Path, folders: &[&str], make: bool) -> io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut at = rustix::fs::openat(CWD, root, flags, Mode::empty())?;
        for name in folders {
            let step = |at: &OwnedFd| {
                rustix::fs::openat(at, *name, flags | OFlags::NOFOLLOW, Mode::empty())
            };
            at = match step(&at) {
                Err(rustix::io::Errno::NOENT) if make => {
                    match rustix::fs::mkdirat(&at, *name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(error) => return Err(error.into()),
                    }
                    step(&at)?
                }
                found => found?,
            };
        }
        Ok(at)
    }

    pub fn open(root: &Path, path: &str) -> io::Result<File> {
        let (folders, name) = split(path)?;
        let opened = folder(root, &folders, false)
            .and_then(|at| Ok(rustix::fs::openat(&at, name, READ, Mode::empty())?));
        match opened {
            Ok(fd) => plain(File::from(fd)),
            // A link where a folder or the file was, or a file where a folder was.
            Err(error)
                if [rustix::io::Errno::LOOP, rustix::io::Errno::NOTDIR]
                    .iter()
                    .any(|errno| error.raw_os_error() == Some(errno.raw_os_error())) =>
            {
                Err(super::not_a_file())
            }
            Err(error) => Err(error),
        }
    }

    pub fn exists(root: &Path, path: &str) -> io::Result<bool> {
        let (folders, name) = split(path)?;
        let at = match folder(root, &folders, false) {
            Ok(at) => at,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(error),
        };
        match rustix::fs::statat(&at, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    pub fn remove(root: &Path, path: &str) -> io::Result<()> {
        let (folders, name) = split(path)?;
        let at = folder(root, &folders, false)?;
        rustix::fs::unlinkat(&at, name, AtFlags::empty())?;
        Ok(())
    }

    pub fn move_file(root: &Path, from: &str, to: &str) -> io::Result<()> {
        let (from_folders, from_name) = split(from)?;
        let (to_folders, to_name) = split(to)?;
        let from_at = folder(root, &from_folders, false).map_err(|error| {
            if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
                || error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error())
            {
                super::not_a_file()
            } else {
                error
            }
        })?;
        let to_at = folder(root, &to_folders, true)?;
        rustix::fs::renameat(&from_at, from_name, &to_at, to_name)?;
        rustix::fs::fsync(&to_at)?;
        rustix::fs::fsync(&from_at)?;
        Ok(())
    }

    pub fn write(
        root: &Path,
        path: &str,
        bytes: &[u8],
        replacing: Replacing,
        read_aside: impl Fn(&mut File) -> io::Result<Vec<u8>>,
    ) -> io::Result<Written> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let (folders, name) = split(path)?;
        let at = folder(root, &folders, true)?;
        // Hidden, so that a look at the folder never takes it for a note.
        let temporary = format!(
            ".{name}.pkb-{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let create = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let written = (|| {
            let fd = rustix::fs::openat(
                &at,
                temporary.as_str(),
                create | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            )?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            // The data and the size it needs; the rename makes the name.
            file.sync_data()?;
            Ok(file)
        })();
        let file = match written {
            Ok(file) => file,
            Err(error) => {
                let _ = rustix::fs::unlinkat(&at, temporary.as_str(), AtFlags::empty());
                return Err(error);
            }
        };
        let swapped = match replacing {
            Replacing::Nothing => {
                rename(&at, &temporary, name, RenameFlags::NOREPLACE).map(|()| false)
            }
            Replacing::File => {
                match rename(&at, &temporary, name, RenameFlags::EXCHANGE) {
                    Ok(()) => Ok(true),
                    // Gone meanwhile: nothing to put aside.
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {
                        rename(&at, &temporary, name, RenameFlags::NOREPLACE).map(|()| false)
                    }
                    // A file system without the exchange (some network and FUSE ones).
                    Err(error)
                        if error.raw_os_error()
                            == Some(rustix::io::Errno::INVAL.raw_os_error()) =>
                    {
                        rename(&at, &temporary, name, RenameFlags::empty()).map(|()| false)
                    }
                    Err(error) => Err(error),
                }
            }
        };
        if let Err(error) = swapped {
            let _ = rustix::fs::unlinkat(&at, temporary.as_str(), AtFlags::empty());
            return Err(error);
        }
        // Stamped as of now, when it took the name: a save made before is told apart from
        // one made after by its time (see `FileIndex::base_version`).
        file.set_modified(std::time::SystemTime::now())?;
        let metadata = file.metadata()?;
        rustix::fs::fsync(&at)?;
        let displaced = if swapped? {
            put_aside(&at, &temporary, name, read_aside)?
        } else {
            None
        };
        Ok(Written {
            metadata,
            displaced,
        })
    }

    /// What the exchange left at `temporary`, read and removed; a folder is put back.
    fn put_aside(
        at: &OwnedFd,
        temporary: &str,
        name: &str,
        read_aside: impl Fn(&mut File) -> io::Result<Vec<u8>>,
    ) -> io::Result<Option<Displaced>> {
        let opened = rustix::fs::openat(at, temporary, READ, Mode::empty())
            .map(File::from)
            .map_err(io::Error::from);
        let read = opened.and_then(|mut file| {
            let metadata = file.metadata()?;
            if metadata.is_dir() {
                return Ok(None);
            }
            if !metadata.is_file() {
                return Ok(Some(None));
            }
            let bytes = read_aside(&mut file)?;
            Ok(Some(Some(Displaced { bytes, metadata })))
        });
        match read {
            // A folder made at the note's path goes back where it was.
            Ok(None) => {
                rename(at, temporary, name, RenameFlags::EXCHANGE)?;
                let _ = rustix::fs::unlinkat(at, temporary, AtFlags::empty());
                Err(super::not_a_file())
            }
            Ok(Some(displaced)) => {
                rustix::fs::unlinkat(at, temporary, AtFlags::empty())?;
                Ok(displaced)
            }
            // A link (its target never read), or a file that cannot be taken: what was
            // there goes back, and the note's file is not written.
            Err(error) => {
                if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                    rustix::fs::unlinkat(at, temporary, AtFlags::empty())?;
                    return Ok(None);
                }
                rename(at, temporary, name, RenameFlags::EXCHANGE)?;
                let _ = rustix::fs::unlinkat(at, temporary, AtFlags::empty());
                Err(error)
            }
        }
    }

    fn rename(at: &OwnedFd, from: &str, to: &str, flags: RenameFlags) -> io::Result<()> {
        rustix::fs::renameat_with(at.as_fd(), from, at.as_fd(), to, flags)?;
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod at {
    //! Plain paths, where the `*at` calls are not used: links in the vault's folders are
    //! followed, and a write replaces what is there without putting it aside.

    use std::fs::File;
    use std::io;
    use std::io::Write;
    use std::path::{Path, PathBuf};

    use super::{Replacing, Written, plain, split};

    fn full(root: &Path, path: &str) -> io::Result<PathBuf> {
        let (folders, name) = split(path)?;
        Ok(folders
            .iter()
            .fold(root.to_owned(), |at, f| at.join(f))
            .join(name))
    }

    pub fn open(root: &Path, path: &str) -> io::Result<File> {
        let full = full(root, path)?;
        if !std::fs::symlink_metadata(&full)?.is_file() {
            return Err(super::not_a_file());
        }
        plain(File::open(full)?)
    }

    pub fn exists(root: &Path, path: &str) -> io::Result<bool> {
        Ok(std::fs::symlink_metadata(full(root, path)?).is_ok())
    }

    pub fn remove(root: &Path, path: &str) -> io::Result<()> {
        std::fs::remove_file(full(root, path)?)
    }

    pub fn move_file(root: &Path, from: &str, to: &str) -> io::Result<()> {
        let to = full(root, to)?;
        if let Some(folder) = to.parent() {
            std::fs::create_dir_all(folder)?;
        }
        std::fs::rename(full(root, from)?, to)
    }

    pub fn write(
        root: &Path,
        path: &str,
        bytes: &[u8],
        replacing: Replacing,
        _read_aside: impl Fn(&mut File) -> io::Result<Vec<u8>>,
    ) -> io::Result<Written> {
        let full = full(root, path)?;
        if replacing == Replacing::Nothing && std::fs::symlink_metadata(&full).is_ok() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let folder = full.parent().unwrap_or(root);
        std::fs::create_dir_all(folder)?;
        let temporary = folder.join(format!(".pkb-{}.tmp", std::process::id()));
        let mut file = File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        let metadata = file.metadata()?;
        std::fs::rename(&temporary, &full)?;
        Ok(Written {
            metadata,
            displaced: None,
        })
    }
}

/// Opens the plain file at `path` below `root` to read it.
pub fn open(root: &Path, path: &str) -> io::Result<File> {
    at::open(root, path)
}

/// Whether anything (a file, a folder, a link) is at `path` below `root`.
pub fn exists(root: &Path, path: &str) -> io::Result<bool> {
    at::exists(root, path)
}

/// Removes the file (or link) at `path` below `root`.
pub fn remove(root: &Path, path: &str) -> io::Result<()> {
    at::remove(root, path)
}

/// Moves the file at `from` to `to`, both below `root`, making `to`'s folders, durably.
pub fn move_file(root: &Path, from: &str, to: &str) -> io::Result<()> {
    at::move_file(root, from, to)
}

/// Writes `bytes` as the whole content of `path` below `root`, atomically and durably,
/// handing back the plain file that was there, read by `read_aside`. A file `read_aside`
/// cannot read is put back, and the write fails with its error.
pub fn write(
    root: &Path,
    path: &str,
    bytes: &[u8],
    replacing: Replacing,
    read_aside: impl Fn(&mut File) -> io::Result<Vec<u8>>,
) -> io::Result<Written> {
    at::write(root, path, bytes, replacing, read_aside)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::ErrorKind;
    use std::time::Duration;

    use super::{Replacing, open, write};

    fn read_all(file: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(file, &mut bytes)?;
        Ok(bytes)
    }

    #[test]
    fn a_fifo_where_a_note_was_is_refused_without_waiting_for_a_writer() {
        let vault = tempfile::tempdir().unwrap();
        let fifo = vault.path().join("note.md");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let root = vault.path().to_owned();
        let (done, opened) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(open(&root, "note.md").map(|_| ()));
        });
        // A blocking open never answers: no writer ever comes.
        let error = opened
            .recv_timeout(Duration::from_secs(30))
            .expect("the open of a FIFO blocked")
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidData, "{error}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_outside_is_neither_read_nor_written_through() {
        let vault = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a.md"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path(), vault.path().join("sub")).unwrap();
        let error = open(vault.path(), "sub/a.md").unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidData, "{error}");
        let written = write(vault.path(), "sub/a.md", b"x", Replacing::File, read_all);
        assert!(written.is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("a.md")).unwrap(),
            "secret"
        );
        // A file swapped for a link is not followed either.
        std::os::unix::fs::symlink(outside.path().join("a.md"), vault.path().join("b.md")).unwrap();
        assert_eq!(
            open(vault.path(), "b.md").unwrap_err().kind(),
            ErrorKind::InvalidData
        );
        write(vault.path(), "b.md", b"mine", Replacing::File, read_all).unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.path().join("a.md")).unwrap(),
            "secret"
        );
        assert_eq!(
            std::fs::read_to_string(vault.path().join("b.md")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn a_write_hands_back_what_it_replaced() {
        let vault = tempfile::tempdir().unwrap();
        std::fs::write(vault.path().join("n.md"), "saved by an editor").unwrap();
        let written = write(vault.path(), "n.md", b"pkb", Replacing::File, read_all).unwrap();
        let displaced = written.displaced.expect("the editor's save was put aside");
        assert_eq!(displaced.bytes, b"saved by an editor");
        assert_eq!(written.metadata.len(), 3);
        assert_eq!(std::fs::read(vault.path().join("n.md")).unwrap(), b"pkb");
        let refused = write(vault.path(), "n.md", b"again", Replacing::Nothing, read_all);
        assert!(matches!(refused, Err(error) if error.kind() == ErrorKind::AlreadyExists));
        let leftovers: Vec<_> = std::fs::read_dir(vault.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left");
    }
}
