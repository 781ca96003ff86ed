//! How a SQLite store file is opened: the options, and when damage is looked for.

/// How to open a SQLite store file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Seed a newly created store with the contract's three notes.
    pub seed: bool,
    /// Most read connections kept open at once (at least 1), and the number of read threads.
    pub max_readers: usize,
    /// When an existing file is read through for damaged pages.
    pub damage_check: DamageCheck,
}

/// When [`open`] reads every table and index of an existing file
/// for damage.
///
/// Either way a file found damaged is not written to: in the background, the WAL is not copied
/// into the main file until the check has passed, and every call after a failed check (or after
/// SQLite reports damage during a call) is refused with [`StoreError::Corrupt`]. A file not in
/// WAL mode is always checked before `open` returns. A store that wrote waits for the check
/// when it closes, so that its writes can be folded into the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DamageCheck {
    /// Before `open` returns, which then refuses a damaged file. Costs a read of the whole
    /// file (about 0.3 s at 100,000 notes).
    BeforeOpen,
    /// On a thread of its own after `open` returns, so a server answers at once.
    #[default]
    InBackground,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            seed: true,
            max_readers: READ_THREADS,
            damage_check: DamageCheck::default(),
        }
    }
}

/// Reading threads, and read connections, of a store opened with default options or from a
/// backend. Two let a fetch pass a slow search; each further one costs a connection's page
/// cache and a malloc arena (four took the benchmark's peak RSS from 24 to 31 MiB).
pub(super) const READ_THREADS: usize = 2;
