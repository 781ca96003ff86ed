//! Files of the data directory that terminal commands change and running servers watch: the
//! tokens, the accounts and the authorization server's grants. Each is replaced whole and
//! atomically under a lock file, so a reader never sees half of one and two writers never
//! lose each other's change; a server sees a change by the file's metadata, with one `stat`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// How often a running server looks whether a watched file changed. Well under the 1 s
/// within which a revocation must take effect.
pub const RELOAD_INTERVAL: Duration = Duration::from_millis(250);

/// Takes the lock file `name` in `dir` (made with the folder when missing) for as long as the
/// returned file is held: each writer reads, changes and replaces its file under it.
pub(crate) fn lock(dir: &Path, name: &str) -> std::io::Result<File> {
    std::fs::create_dir_all(dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(name))?;
    file.lock()?;
    Ok(file)
}

/// Replaces `dir/name` with `text` atomically (a new file renamed over it), readable by its
/// owner only, and durable once this returns.
pub(crate) fn replace(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let path = dir.join(name);
    let temporary = dir.join(format!("{name}.new"));
    let mut options = OpenOptions::new();
    options.create(true).truncate(true).write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&temporary)?;
    #[cfg(unix)]
    {
        // `mode` applies only to a file it creates; one left by a crash keeps its own.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, &path)?;
    if let Ok(dir) = File::open(dir) {
        // The rename is durable once the folder is: a crash must not bring a revoked
        // credential back.
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The text of `path`, or `None` when there is no such file yet.
pub(crate) fn read_if_exists(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Enough of a file's metadata to see that it was replaced or rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileSignature {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    inode: u64,
}

/// The signature of `path`; `None` when it does not exist.
pub(crate) fn signature_of(path: &Path) -> Option<FileSignature> {
    let metadata = std::fs::metadata(path).ok()?;
    Some(FileSignature {
        len: metadata.len(),
        modified: metadata.modified().ok(),
        #[cfg(unix)]
        inode: std::os::unix::fs::MetadataExt::ino(&metadata),
    })
}

/// A running server's copy of a watched file, read again when it changed.
pub(crate) struct Watched<T> {
    path: PathBuf,
    value: T,
    signature: Option<FileSignature>,
    checked: Instant,
}

impl<T> Watched<T> {
    /// Reads `path` with `load` now.
    pub(crate) fn open<E>(path: PathBuf, load: impl Fn(&Path) -> Result<T, E>) -> Result<Self, E> {
        let signature = signature_of(&path);
        let value = load(&path)?;
        Ok(Self {
            path,
            value,
            signature,
            checked: Instant::now(),
        })
    }

    /// The value, read again first when [`RELOAD_INTERVAL`] has passed (or `now` is true) and
    /// the file changed. A file that cannot be read gives `unreadable`: refusing everything
    /// is safer than serving what may have been revoked.
    pub(crate) fn current<E: std::fmt::Display>(
        &mut self,
        now: bool,
        load: impl Fn(&Path) -> Result<T, E>,
        unreadable: impl FnOnce() -> T,
    ) -> &T {
        if now || self.checked.elapsed() >= RELOAD_INTERVAL {
            self.checked = Instant::now();
            let signature = signature_of(&self.path);
            if signature != self.signature {
                match load(&self.path) {
                    Ok(value) => {
                        self.value = value;
                        self.signature = signature;
                    }
                    Err(error) => {
                        tracing::error!(%error, path = %self.path.display(), "cannot read a file of the data directory; refusing what it would allow until it can be read");
                        self.value = unreadable();
                        self.signature = None;
                    }
                }
            }
        }
        &self.value
    }
}

/// `bytes` random bytes from the system, base64url-encoded: every secret PKB hands out
/// (tokens, codes, CSRF tokens, ids) is one.
pub(crate) fn random_secret(bytes: usize) -> std::io::Result<String> {
    let mut secret = vec![0u8; bytes];
    getrandom::fill(&mut secret).map_err(|error| {
        std::io::Error::other(format!("no randomness from the system: {error}"))
    })?;
    Ok(URL_SAFE_NO_PAD.encode(secret))
}

/// Hex SHA-256 of `secret`: how a secret of 256 random bits is kept (a slow hash protects
/// nothing there is to guess).
pub(crate) fn hex_sha256(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `name` can name a user (a token or an account): 1 to 64 characters of
/// `A-Z a-z 0-9 . _ -`.
pub(crate) fn valid_user_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}
