//! One store per user: a SQLite file each, under the data directory, named from a hash of
//! the user's identity, or each user's rows of one PostgreSQL database; opened at the user's
//! first request and closed when idle, so that thousands of users do not hold thousands of
//! open files and threads, and a user's store (with its caches and vector indexer) outlives
//! each request.

use super::sqlite;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

#[cfg(feature = "postgres")]
use super::postgres::PgDatabase;
use super::{Store, StoreError};
use crate::identity::User;
use crate::locks::lock;

/// The most users' stores kept open at once: each holds two threads and a handful of files,
/// so a server of many users closes the least recently used one to open another, rather than
/// run out of descriptors (past this, a store is opened again when its user comes back).
pub const MAX_OPEN_STORES: usize = 128;

/// How long a user's store stays open after their last request.
pub const IDLE_CLOSE: Duration = Duration::from_secs(120);

/// How long the store must go without a request before its search index is merged.
const INDEX_MERGE_QUIET: Duration = Duration::from_secs(2);

/// The folder of the data directory that holds the users' stores.
pub const USERS_FOLDER: &str = "users";

/// Where the users' notes are kept.
#[derive(Debug, Clone)]
enum Location {
    /// `<dir>/users/<key>.db`.
    Dir(PathBuf),
    /// In memory: gone at exit, and never closed while the server runs.
    Memory,
    /// Rows of one PostgreSQL database, the user's storage key in every key.
    #[cfg(feature = "postgres")]
    Postgres(Arc<PgDatabase>),
}

/// The stores of every user of one server, each opened when first needed.
pub struct UserStores {
    location: Location,
    seed: bool,
    /// The most stores kept open at once ([`MAX_OPEN_STORES`] unless told otherwise).
    max_open: usize,
    open: Mutex<HashMap<Arc<str>, Arc<Slot>>>,
}

struct Slot {
    store: OnceCell<Store>,
    last_used: Mutex<Instant>,
    /// The store's index merge, which would otherwise wait for a write forever once the
    /// store is closed.
    index_merge: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(index_merge) = lock(&self.index_merge).take() {
            index_merge.abort();
        }
    }
}

impl UserStores {
    /// Users' stores as files under the data directory `dir`; new ones seeded when `seed`.
    pub fn in_dir(dir: &Path, seed: bool) -> Self {
        Self {
            location: Location::Dir(dir.to_owned()),
            seed,
            max_open: MAX_OPEN_STORES,
            open: Mutex::default(),
        }
    }

    /// Users' stores in memory, for tests and trials.
    pub fn in_memory(seed: bool) -> Self {
        Self {
            location: Location::Memory,
            seed,
            max_open: MAX_OPEN_STORES,
            open: Mutex::default(),
        }
    }

    /// Users' notes as their rows of `database`; new users seeded as the database says.
    #[cfg(feature = "postgres")]
    pub fn in_postgres(database: Arc<PgDatabase>) -> Self {
        Self {
            location: Location::Postgres(database),
            seed: false,
            max_open: MAX_OPEN_STORES,
            open: Mutex::default(),
        }
    }

    /// The file holding `user`'s notes under the data directory `dir`.
    pub fn path_in(dir: &Path, user: &User) -> PathBuf {
        dir.join(USERS_FOLDER)
            .join(format!("{}.db", user.storage_key()))
    }

    /// The same stores, at most `max_open` of them open at once (at least 1).
    pub fn with_max_open(mut self, max_open: usize) -> Self {
        self.max_open = max_open.max(1);
        self
    }

    /// `user`'s store, opened (and created, seeded) when it is not open.
    pub async fn store_for(&self, user: &User) -> Result<Store, StoreError> {
        let key = user.storage_key();
        let slot = {
            let mut open = lock(&self.open);
            if !open.contains_key(key) && open.len() >= self.max_open && self.closes() {
                close_least_recently_used(&mut open);
            }
            let slot = open.entry(Arc::clone(key)).or_insert_with(|| {
                Arc::new(Slot {
                    store: OnceCell::new(),
                    last_used: Mutex::new(Instant::now()),
                    index_merge: Mutex::new(None),
                })
            });
            *lock(&slot.last_used) = Instant::now();
            Arc::clone(slot)
        };
        let store = slot
            .store
            .get_or_try_init(|| async {
                let store = self.open_store(user).await?;
                *lock(&slot.index_merge) = store.spawn_index_merge(INDEX_MERGE_QUIET);
                Ok::<_, StoreError>(store)
            })
            .await?;
        Ok(store.clone())
    }

    async fn open_store(&self, user: &User) -> Result<Store, StoreError> {
        let store = match &self.location {
            Location::Memory => sqlite::open_in_memory(self.seed)?,
            #[cfg(feature = "postgres")]
            Location::Postgres(database) => database.store_for(user.storage_key()),
            Location::Dir(dir) => {
                let path = Self::path_in(dir, user);
                let seed = self.seed;
                tracing::debug!(path = %path.display(), "opening a user's store");
                tokio::task::spawn_blocking(move || {
                    private_folder(path.parent().unwrap_or(Path::new(".")))?;
                    sqlite::open(&path, seed)
                })
                .await
                .map_err(|e| StoreError::Unavailable(e.to_string()))??
            }
        };
        Ok(store)
    }

    /// Whether stores are closed when idle or when too many are open. A PostgreSQL user's
    /// store is kept between requests too, as a file's is: its vector indexer, started by a
    /// search by meaning, goes on making the user's vectors after the request (a store made
    /// for each request dropped it with the answer, and each search by meaning waited 3 s for
    /// a new one). Stores in memory are never closed: they would be lost.
    fn closes(&self) -> bool {
        !matches!(self.location, Location::Memory)
    }

    /// How many users' stores are open.
    pub fn open_count(&self) -> usize {
        lock(&self.open)
            .values()
            .filter(|slot| slot.store.initialized())
            .count()
    }

    /// Closes the stores of users idle for `idle`; requests still running on one keep it
    /// until they end. Returns how many were closed.
    pub fn close_idle(&self, idle: Duration) -> usize {
        if !self.closes() {
            return 0;
        }
        let mut open = lock(&self.open);
        let before = open.len();
        open.retain(|_, slot| lock(&slot.last_used).elapsed() < idle);
        before - open.len()
    }

    /// Closes idle stores every so often, for as long as `stores` lives.
    pub fn spawn_idle_close(stores: &Arc<Self>, idle: Duration) -> tokio::task::JoinHandle<()> {
        let stores: Weak<Self> = Arc::downgrade(stores);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval((idle / 4).max(Duration::from_millis(100)));
            loop {
                tick.tick().await;
                let Some(stores) = stores.upgrade() else {
                    return;
                };
                let closed = stores.close_idle(idle);
                if closed > 0 {
                    tracing::debug!(closed, "closed idle users' stores");
                }
            }
        })
    }
}

/// Forgets the store used least recently: it closes once the requests still running on it end.
fn close_least_recently_used(open: &mut HashMap<Arc<str>, Arc<Slot>>) {
    let oldest = open
        .iter()
        .min_by_key(|(_, slot)| *lock(&slot.last_used))
        .map(|(key, _)| Arc::clone(key));
    if let Some(key) = oldest {
        tracing::debug!("closing the least recently used user's store to open another");
        open.remove(&key);
    }
}

/// Creates the users' folder readable by its owner only: it holds everyone's notes.
fn private_folder(folder: &Path) -> Result<(), StoreError> {
    let open = |source: std::io::Error| StoreError::Open {
        path: folder.to_owned(),
        source: Box::new(source),
    };
    if folder.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(folder).map_err(open)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700)).map_err(open)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NoteDraft, PutMode};

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn a_postgresql_users_store_outlives_each_request() {
        use crate::store::postgres::testing;
        let Some(admin) = testing::admin_url() else {
            return;
        };
        let url = testing::scratch_database(&admin).await;
        let stores = UserStores::in_postgres(PgDatabase::connect(&url, false).await.unwrap());
        let alice = User::token_user("alice");
        let first = stores.store_for(&alice).await.unwrap();
        let again = stores.store_for(&alice).await.unwrap();
        assert!(
            Arc::ptr_eq(first.engine(), again.engine()),
            "one store, with its vector indexer, for the user's requests"
        );
        let bob = stores.store_for(&User::token_user("bob")).await.unwrap();
        assert!(!Arc::ptr_eq(first.engine(), bob.engine()));
        drop((first, again, bob));
        assert_eq!(stores.open_count(), 2);
        assert_eq!(stores.close_idle(Duration::ZERO), 2, "closed when idle");
        assert_eq!(stores.open_count(), 0);
    }

    #[tokio::test]
    async fn each_user_has_a_store_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let stores = UserStores::in_dir(dir.path(), false);
        let alice = User::token_user("alice");
        let bob = User::token_user("bob");
        let draft = NoteDraft::from_title("Secret", vec![], "alice's");
        stores
            .store_for(&alice)
            .await
            .unwrap()
            .put(draft, PutMode::CreateOnly)
            .await
            .unwrap();
        assert!(
            stores
                .store_for(&bob)
                .await
                .unwrap()
                .get("secret")
                .await
                .unwrap()
                .is_none()
        );
        assert_eq!(stores.open_count(), 2);
        assert!(UserStores::path_in(dir.path(), &alice).exists());

        assert_eq!(stores.close_idle(Duration::ZERO), 2);
        assert_eq!(stores.open_count(), 0);
        let reopened = stores.store_for(&alice).await.unwrap();
        assert!(reopened.get("secret").await.unwrap().is_some());
    }

    #[tokio::test]
    async fn past_the_most_open_stores_the_least_recently_used_closes() {
        let dir = tempfile::tempdir().unwrap();
        let stores = UserStores::in_dir(dir.path(), false).with_max_open(3);
        let users: Vec<User> = (0..5)
            .map(|n| User::token_user(&format!("user{n}")))
            .collect();
        let first = stores.store_for(&users[0]).await.unwrap();
        let draft = NoteDraft::from_title("Kept", vec![], "still here");
        first.put(draft, PutMode::CreateOnly).await.unwrap();
        drop(first);
        for user in &users[1..] {
            stores.store_for(user).await.unwrap();
            assert!(stores.open_count() <= 3, "{}", stores.open_count());
        }
        // The first user's store was closed for the others; their notes wait in its file.
        assert_eq!(stores.open_count(), 3);
        let reopened = stores.store_for(&users[0]).await.unwrap();
        assert!(reopened.get("kept").await.unwrap().is_some());
        assert_eq!(stores.open_count(), 3);
    }
}
