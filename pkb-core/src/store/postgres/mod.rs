//! The PostgreSQL backend: every user's notes in one database, shared by any number of PKB
//! processes.
//!
//! Each row carries its owner (the user's storage key) in its primary key, and every query
//! names it. Writes are single statements or one transaction, committed before they are
//! answered (`synchronous_commit` as the server has it, `on` by default), and each notifies
//! the other processes ([`NoteChange`]). The pool reconnects by itself: while the database
//! is away, calls fail with an error naming the database but never its credentials.

mod listen;
mod nul_escape;
mod schema;
mod tls;
mod word_search;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::OnceCell;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{NoTls, Row};

pub use listen::NoteChange;

use super::{
    ChangeEntry, ChangeFilter, ChangeKind, MAX_LIMIT, NoteDates, NoteDraft, NoteEngine,
    NoteSummary, NoteVersion, Provenance, Purged, PutMode, PutOutcome, RANK_WINDOW, RecentChange,
    SEED_NOTES, SEEDED_BY, SearchHit, Store, StoreError, VersionLookup, VersionSummary,
    query_words,
};
use crate::links::{
    Backlink, LinkedNote, NoteWithLinks, TargetKeys, link_targets, links_of, title_key,
};
use crate::locks::lock;
use crate::meaning::{Matrix, MatrixCache, vector_bytes};
use crate::note::{Note, now_rfc3339};

/// Connections kept in the pool: enough for a busy server; PostgreSQL's own default limit
/// is 100 for every client together.
const POOL_SIZE: usize = 16;

/// How long a call waits for a connection, or for one to be made, before it fails: a call
/// must fail clearly while the database is away, not hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a call's statements may take before it fails: a database that stops answering (a
/// frozen host, a network that drops packets) would otherwise hold the call, and its
/// connection, for good; tokio-postgres has no timeout of its own.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// [`ANSWER_WAIT`] for one batch of an import (up to 2,000 notes in one transaction).
const BATCH_WAIT: Duration = Duration::from_secs(120);

/// Where `owner`'s vectors are (schema version 9): the generation, 0 until a vector of theirs
/// is first added, and the generation at which any was last removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct VectorGeneration {
    generation: i64,
    removed_at: i64,
}

impl VectorGeneration {
    async fn of(
        client: &impl deadpool_postgres::GenericClient,
        owner: &str,
    ) -> Result<VectorGeneration, tokio_postgres::Error> {
        let statement = client
            .prepare_cached(
                "SELECT generation, removed_at FROM pkb_vector_generation WHERE owner = $1",
            )
            .await?;
        Ok(client.query_opt(&statement, &[&owner]).await?.map_or(
            VectorGeneration {
                generation: 0,
                removed_at: 0,
            },
            |row| VectorGeneration {
                generation: row.get(0),
                removed_at: row.get(1),
            },
        ))
    }
}

/// Runs `sql`, whose rows are note id, title, tags and vector, a note's passages together, and
/// adds them to `matrix`, row by row (10,000 notes' vectors are some 40 MB as stored, a tenth
/// of it kept); says which notes they were.
async fn read_vectors(
    tx: &deadpool_postgres::Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    matrix: &mut Matrix,
) -> Result<Vec<String>, tokio_postgres::Error> {
    let statement = tx.prepare_cached(sql).await?;
    let rows = tx.query_raw(&statement, params.iter().copied()).await?;
    let mut rows = std::pin::pin!(rows);
    let mut ids = Vec::new();
    while let Some(row) = futures::TryStreamExt::try_next(&mut rows).await? {
        matrix.push_passage(
            &mut ids,
            row.get(0),
            || Ok::<_, tokio_postgres::Error>((row.get(1), nul_escape::decode_all(row.get(2)))),
            row.get(3),
        )?;
    }
    Ok(ids)
}

/// Whether `text` names a PostgreSQL database rather than a SQLite file.
pub fn is_url(text: &str) -> bool {
    text.starts_with("postgres://") || text.starts_with("postgresql://")
}

/// One PostgreSQL database holding the notes of every user; [`PgDatabase::store_for`] gives
/// a user's [`Store`].
pub struct PgDatabase {
    pool: Pool,
    config: tokio_postgres::Config,
    /// Where the database is, without credentials: what errors and logs name.
    location: String,
    /// This process among those writing to the database: it ignores its own notifications.
    instance: String,
    seed: bool,
    /// How connections are encrypted; `None` in the clear (see [`tls`]).
    tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    listener: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgDatabase")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Some(listener) = lock(&self.listener).take() {
            listener.abort();
        }
    }
}

impl PgDatabase {
    /// Connects to the database at `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or
    /// key=value form) and makes or migrates PKB's schema. A user's notes are seeded with the
    /// contract's three when the user is first seen, if `seed`.
    pub async fn connect(url: &str, seed: bool) -> Result<Arc<PgDatabase>, StoreError> {
        Self::connect_with(url, seed, true).await
    }

    /// [`PgDatabase::connect`] to a database that already holds PKB's schema (migrated when
    /// older), for the commands that look after a store and must not make one.
    pub async fn connect_existing(url: &str) -> Result<Arc<PgDatabase>, StoreError> {
        Self::connect_with(url, false, false).await
    }

    async fn connect_with(
        url: &str,
        seed: bool,
        create: bool,
    ) -> Result<Arc<PgDatabase>, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|error| StoreError::Open {
            path: "the database URL".into(),
            source: format!("it is not a PostgreSQL URL ({error})").into(),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("pkb-server");
        }
        let location = location_of(&config);
        let tls = tls::connector(&config, &location)?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            Some(tls) => Manager::from_config(config.clone(), tls.clone(), manager_config),
            None => Manager::from_config(config.clone(), NoTls, manager_config),
        };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|error| StoreError::Open {
                path: location.clone().into(),
                source: error.to_string().into(),
            })?;
        let database = PgDatabase {
            pool,
            config,
            location,
            instance: instance_id(),
            seed,
            tls,
            listener: Mutex::default(),
        };
        let mut client = database.client().await?;
        schema::migrate(&mut client, &database.location, create).await?;
        Ok(Arc::new(database))
    }

    /// Where the database is, as errors name it: host, port and database, no credentials.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The notes of the user with storage key `user_key`.
    pub fn store_for(self: &Arc<Self>, user_key: &str) -> Store {
        Store::from_engine(Arc::new(self.notes_for(user_key)))
    }

    /// The engine behind [`PgDatabase::store_for`].
    fn notes_for(self: &Arc<Self>, user_key: &str) -> PgNotes {
        PgNotes {
            database: Arc::clone(self),
            owner: user_key.to_owned(),
            known: OnceCell::new(),
            vector_cache: MatrixCache::default(),
        }
    }

    /// Hands every write made through another process on this database to `on_change`,
    /// from now until this handle is dropped; a lost connection is made again.
    pub fn spawn_change_listener(
        self: &Arc<Self>,
        on_change: impl Fn(NoteChange) + Send + Sync + 'static,
    ) {
        let task = tokio::spawn(listen::listen(Arc::downgrade(self), Arc::new(on_change)));
        if let Some(old) = lock(&self.listener).replace(task) {
            old.abort();
        }
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(|error| {
            let reason = match &error {
                deadpool_postgres::PoolError::Backend(error) => describe(error),
                deadpool_postgres::PoolError::Timeout(_) => {
                    "no connection could be had or made in time".to_owned()
                }
                other => other.to_string(),
            };
            StoreError::Backend {
                context: format!("cannot reach the database {}", self.location),
                source: reason.into(),
            }
        })
    }
}

/// `host:port/dbname` of a configuration, for messages.
fn location_of(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let dbname = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres://{host}:{port}/{dbname}")
}

/// A random id for this process's handle on a database.
fn instance_id() -> String {
    let mut bytes = [0u8; 12];
    // Without randomness two processes could share an id and miss each other's writes;
    // the time and pid still tell them apart.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes[..8].copy_from_slice(&(nanos as u64).to_le_bytes());
        bytes[8..].copy_from_slice(&std::process::id().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A storage error from a statement of `what`, naming the database and no credentials.
fn backend_error(location: &str, what: &str, source: tokio_postgres::Error) -> StoreError {
    StoreError::Backend {
        context: format!("{what} in {location}"),
        source: describe(&source).into(),
    }
}

/// What went wrong, in words: tokio-postgres shows a server's error only as "db error".
/// An authentication failure is not detailed, as its text names the role.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) if db.code().code().starts_with("28") => {
            "the database refused the credentials".to_owned()
        }
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

/// One user's notes in a [`PgDatabase`].
struct PgNotes {
    database: Arc<PgDatabase>,
    owner: String,
    /// Set once the user's row exists (and their seed notes, if they are new).
    known: OnceCell<()>,
    /// The user's vectors as the last search by meaning read them.
    vector_cache: MatrixCache,
}

/// Saves one note whatever the mode, in one statement, with its new version: inserted, or
/// replaced when the mode allows, else left alone (no row returned). `xmax = 0` holds for a
/// row this statement inserted, which tells a creation from a replacement even when two
/// processes race. A new note's version goes on from any its id had before it was deleted.
const UPSERT: &str = "
WITH saved AS (
    INSERT INTO pkb_notes AS n
        (owner, id, title, tags, body, created_at, updated_at, search, version,
         title_key, links, link_keys)
    VALUES ($1, $2, $3, $4, $5, COALESCE($6, $7), $7, pkb_search_vector($3, $4, $5),
        COALESCE((SELECT max(version) FROM pkb_note_versions WHERE owner = $1 AND id = $2), 0) + 1,
        $13, $14, $15)
    ON CONFLICT (owner, id) DO UPDATE SET
        title = EXCLUDED.title, tags = EXCLUDED.tags, body = EXCLUDED.body,
        created_at = COALESCE($6, n.created_at), updated_at = EXCLUDED.updated_at,
        search = EXCLUDED.search, version = n.version + 1,
        title_key = EXCLUDED.title_key, links = EXCLUDED.links, link_keys = EXCLUDED.link_keys
    WHERE $8 AND ($9::text IS NULL OR $9 = ANY (n.tags))
    RETURNING created_at, xmax = 0 AS created, version
),
kept AS (
    INSERT INTO pkb_note_versions
        (owner, id, version, kind, changed_at, changed_by, title, tags, body, created_at)
    SELECT $1, $2, version,
        COALESCE($11::text, CASE WHEN created THEN 'created' ELSE 'replaced' END),
        $7, $12, $3, $4, $5, created_at
    FROM saved
)
SELECT created_at, created, version,
    pg_notify('pkb_changes', json_build_object('i', $10::text, 'u', $1, 'id', $2, 'l', created)::text)
FROM saved";

/// [`UPSERT`] for [`PutMode::ReplaceAtVersion`]: the note is replaced only at version `$16`.
const REPLACE_AT_VERSION: &str = "
WITH saved AS (
    UPDATE pkb_notes SET
        title = $3, tags = $4, body = $5, created_at = COALESCE($6, created_at), updated_at = $7,
        search = pkb_search_vector($3, $4, $5), version = version + 1,
        title_key = $13, links = $14, link_keys = $15
    WHERE owner = $1 AND id = $2 AND version = $16 AND $8 AND $9::text IS NULL
    RETURNING created_at, false AS created, version
),
kept AS (
    INSERT INTO pkb_note_versions
        (owner, id, version, kind, changed_at, changed_by, title, tags, body, created_at)
    SELECT $1, $2, version, COALESCE($11::text, 'replaced'), $7, $12, $3, $4, $5, created_at
    FROM saved
)
SELECT created_at, created, version,
    pg_notify('pkb_changes', json_build_object('i', $10::text, 'u', $1, 'id', $2, 'l', created)::text)
FROM saved";

/// The same columns of a version as of a note, for [`note_from`].
const VERSION_COLUMNS: &str =
    "id, title, tags, body, created_at, changed_at, version, kind, changed_by";

impl PgNotes {
    fn failed(&self, what: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        let what = what.to_owned();
        move |source| backend_error(&self.database.location, &what, source)
    }

    /// The rows of one statement (prepared once per connection), or a storage error saying
    /// what was being done.
    async fn rows(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let failed = self.failed(what);
        self.answered(what, ANSWER_WAIT, async {
            let client = self.client().await?;
            let statement = client.prepare_cached(sql).await.map_err(&failed)?;
            client.query(&statement, params).await.map_err(&failed)
        })
        .await
    }

    /// The notes `pkb_link_sources` found for the note `id` whose title's key is `key`, from
    /// their JSON (`[[id, title, links], ...]`; NULL for none).
    fn link_sources(
        &self,
        id: &str,
        key: String,
        found: Option<String>,
    ) -> Result<Vec<LinkSource>, StoreError> {
        let Some(found) = found else {
            return Ok(Vec::new());
        };
        let rows: Vec<(String, String, Vec<String>)> =
            serde_json::from_str(&found).map_err(|error| StoreError::Backend {
                context: format!("finding backlinks in {}", self.database.location),
                source: format!("unreadable link sources: {error}").into(),
            })?;
        Ok(rows
            .into_iter()
            .map(|(source, title, links)| {
                let keys = nul_escape::decode_all(links)
                    .iter()
                    .map(|t| TargetKeys::of(t))
                    .filter(|k| k.target == id || k.derived == id || k.folded == key)
                    .collect();
                (Backlink { id: source, title }, keys)
            })
            .collect())
    }

    /// The rows of `sql` as an unnamed statement, which PostgreSQL plans with these values: a
    /// prepared statement's generic plan would not know how common a query's words are.
    async fn planned_rows(
        &self,
        what: &str,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>, StoreError> {
        let failed = self.failed(what);
        self.answered(what, ANSWER_WAIT, async {
            let client = self.client().await?;
            client.query_typed(sql, params).await.map_err(&failed)
        })
        .await
    }

    /// The words of `text` and how many notes hold each ([`word_search::WORD_COUNTS`]; a word
    /// none of the newest notes holds is looked up in the index when `look_further`).
    async fn word_counts(
        &self,
        text: &str,
        look_further: bool,
    ) -> Result<word_search::WordCounts, StoreError> {
        let rows = self
            .rows(
                "searching",
                word_search::WORD_COUNTS,
                &[&self.owner, &text, &word_search::SAMPLED, &look_further],
            )
            .await?;
        Ok(word_search::WordCounts {
            counted: rows.first().map_or(0, |row| row.get(2)),
            words: rows
                .iter()
                .map(|row| word_search::WordCount {
                    query: row.get(0),
                    newest_holding: row.get(1),
                    held_anywhere: row.get(3),
                })
                .collect(),
        })
    }

    /// What `work` gives, or a storage error once it has waited `wait` for the database.
    async fn answered<T>(
        &self,
        what: &str,
        wait: Duration,
        work: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(wait, work).await.unwrap_or_else(|_| {
            Err(StoreError::Backend {
                context: format!("{what} in {}", self.database.location),
                source: format!(
                    "the database did not answer within {} s (a change sent may still be made once it does)",
                    wait.as_secs()
                )
                .into(),
            })
        })
    }

    /// Every vector of `model` of this user, with their notes: the matrix kept from an
    /// earlier search while the vectors' generation (schema version 8) has not moved; else, in
    /// one snapshot with the generation it is at, the kept matrix with the notes stamped since
    /// (schema version 9) if no vector was removed meanwhile, or every vector read again.
    async fn vectors_of(&self, model: &str) -> Result<Arc<Matrix>, StoreError> {
        let failed = self.failed("searching by meaning");
        let mut client = self.client().await?;
        let kept = self.vector_cache.latest(model);
        let now = VectorGeneration::of(&client, &self.owner)
            .await
            .map_err(&failed)?;
        if let Some((kept_at, _, kept)) = &kept
            && *kept_at == now.generation
        {
            return Ok(Arc::clone(kept));
        }
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(&failed)?;
        let now = VectorGeneration::of(&tx, &self.owner)
            .await
            .map_err(&failed)?;
        let forward_from = kept.filter(|(kept_at, _, _)| {
            // Only forward: a generation behind the one kept (the database restored from an
            // older copy, say) says nothing of what was added since.
            now.removed_at <= *kept_at && now.generation > *kept_at
        });
        let mut matrix = None;
        if let Some((kept_at, _, kept)) = forward_from {
            let mut added = kept.as_ref().clone();
            let ids = read_vectors(
                &tx,
                "SELECT n.id, n.title, n.tags, v.vector FROM pkb_vector_stamps s
                 JOIN pkb_note_vectors v ON v.owner = s.owner AND v.id = s.id
                 JOIN pkb_notes n ON n.owner = v.owner AND n.id = v.id AND n.version = v.version
                 WHERE s.owner = $1 AND s.generation > $3 AND v.model = $2
                 ORDER BY v.id, v.passage",
                &[&self.owner, &model, &kept_at],
                &mut added,
            )
            .await
            .map_err(&failed)?;
            // A note stamped anew while its vectors are still kept had them removed where no
            // removal was counted (by hand, triggers off): read everything instead.
            if !kept.holds_any(&ids) {
                added.settle();
                matrix = Some(added);
            }
        }
        let matrix = match matrix {
            Some(matrix) => matrix,
            None => {
                let mut matrix = Matrix::default();
                read_vectors(
                    &tx,
                    "SELECT n.id, n.title, n.tags, v.vector FROM pkb_note_vectors v
                     JOIN pkb_notes n
                         ON n.owner = v.owner AND n.id = v.id AND n.version = v.version
                     WHERE v.owner = $1 AND v.model = $2
                     ORDER BY v.id, v.passage",
                    &[&self.owner, &model],
                    &mut matrix,
                )
                .await
                .map_err(&failed)?;
                matrix
            }
        };
        tx.commit().await.map_err(&failed)?;
        let matrix = Arc::new(matrix);
        self.vector_cache
            .keep(None, (now.generation, 0), model, Arc::clone(&matrix));
        Ok(matrix)
    }

    /// [`NoteEngine::put_dated`], in one transaction.
    async fn put_batch(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        let failed = self.failed("saving notes");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&failed)?;
        let statement = tx
            .prepare_cached(statement_for(mode))
            .await
            .map_err(&failed)?;
        let now = now_rfc3339();
        // The statements go out together (tokio-postgres pipelines them) and run in order.
        let boxed: Vec<_> = notes
            .iter()
            .map(|(draft, dates)| {
                let updated = dates.updated_at.as_deref().unwrap_or(&now);
                self.upsert_params(
                    draft,
                    (dates.created_at.as_deref(), updated),
                    mode,
                    provenance,
                )
            })
            .collect();
        let runs = boxed.iter().map(|p| {
            let p = params(p);
            let tx = &tx;
            let statement = &statement;
            async move { tx.query(statement, &p).await }
        });
        let rows = futures::future::try_join_all(runs).await.map_err(&failed)?;
        drop(boxed);
        tx.commit().await.map_err(&failed)?;
        let mut outcomes = Vec::with_capacity(rows.len());
        for ((draft, dates), rows) in notes.into_iter().zip(rows) {
            let updated = dates.updated_at.unwrap_or_else(|| now.clone());
            let outcome = match Self::outcome(draft.clone(), &updated, &rows) {
                Some(saved) => saved,
                None => self.not_saved(&draft.id, mode).await?,
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// Why a put in `mode` saved nothing: the note exists (and the mode leaves it alone), or
    /// it is missing or at another version than [`PutMode::ReplaceAtVersion`] named.
    async fn not_saved(&self, id: &str, mode: PutMode) -> Result<PutOutcome, StoreError> {
        let PutMode::ReplaceAtVersion(_) = mode else {
            return Ok(PutOutcome::Exists);
        };
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "reading a note's version",
                "SELECT version FROM pkb_notes WHERE owner = $1 AND id = $2",
                &[&self.owner, &id],
            )
            .await?;
        Ok(match rows.first() {
            Some(row) => PutOutcome::Stale {
                current: to_u64(row.get(0)),
            },
            None => PutOutcome::Missing,
        })
    }

    /// Whether any version of a note with this (stored) id is kept.
    async fn has_history(&self, id: &str) -> Result<bool, StoreError> {
        let rows = self
            .rows(
                "reading a note's history",
                "SELECT 1 FROM pkb_note_versions WHERE owner = $1 AND id = $2 LIMIT 1",
                &[&self.owner, &id],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    /// A pooled connection, once the user's row (and their seed notes) exist.
    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        let mut client = self.database.client().await?;
        self.known
            .get_or_try_init(|| self.make_known(&mut client))
            .await?;
        Ok(client)
    }

    /// Records the user, and gives a user seen for the first time the seed notes, in one
    /// transaction: two processes meeting a new user at once seed once.
    async fn make_known(&self, client: &mut deadpool_postgres::Client) -> Result<(), StoreError> {
        let failed = self.failed("recording a user");
        let tx = client.transaction().await.map_err(&failed)?;
        let new = tx
            .execute(
                "INSERT INTO pkb_users (owner) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&self.owner],
            )
            .await
            .map_err(&failed)?
            == 1;
        if new && self.database.seed {
            let now = now_rfc3339();
            let upsert = tx.prepare_cached(UPSERT).await.map_err(&failed)?;
            for (id, title, tags, body) in SEED_NOTES {
                let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
                let draft = NoteDraft {
                    id: (*id).to_owned(),
                    title: (*title).to_owned(),
                    tags,
                    body: (*body).to_owned(),
                };
                let dates = (None, now.as_str());
                let seeded = Provenance::write(SEEDED_BY);
                let boxed = self.upsert_params(&draft, dates, PutMode::CreateOnly, &seeded);
                tx.query(&upsert, &params(&boxed)).await.map_err(&failed)?;
            }
        }
        tx.commit().await.map_err(&failed)
    }

    /// The parameters of [`UPSERT`] (and of [`REPLACE_AT_VERSION`], which takes one more).
    fn upsert_params<'a>(
        &'a self,
        draft: &'a NoteDraft,
        (created, updated): (Option<&'a str>, &'a str),
        mode: PutMode,
        provenance: &'a Provenance,
    ) -> Vec<Box<dyn ToSql + Sync + Send + 'a>> {
        let tags = nul_escape::encode_all(&draft.tags);
        let body = nul_escape::encode(&draft.body).into_owned();
        let (replace, tag, at_version) = match mode {
            PutMode::CreateOnly => (false, None, None),
            PutMode::Replace => (true, None, None),
            PutMode::ReplaceTagged(tag) => (true, Some(tag), None),
            PutMode::ReplaceAtVersion(version) => (true, None, Some(to_i64(version))),
        };
        let kind = provenance.kind.map(ChangeKind::as_str);
        let links = LinkColumns::of(&draft.title, &draft.body);
        let mut params: Vec<Box<dyn ToSql + Sync + Send + 'a>> = vec![
            Box::new(&self.owner),
            Box::new(&draft.id),
            Box::new(&draft.title),
            Box::new(tags),
            Box::new(body),
            Box::new(created),
            Box::new(updated),
            Box::new(replace),
            Box::new(tag),
            Box::new(&self.database.instance),
            Box::new(kind),
            Box::new(&*provenance.by),
            Box::new(links.title_key),
            Box::new(links.targets),
            Box::new(links.keys),
        ];
        if let Some(version) = at_version {
            params.push(Box::new(version));
        }
        params
    }

    /// The outcome of one [`UPSERT`] from its rows; `None` when it saved nothing.
    fn outcome(draft: NoteDraft, updated: &str, rows: &[Row]) -> Option<PutOutcome> {
        let row = rows.first()?;
        let created_at: String = row.get(0);
        let created: bool = row.get(1);
        let note = Note {
            id: draft.id,
            title: draft.title,
            tags: draft.tags,
            body: draft.body,
            created_at,
            updated_at: updated.to_owned(),
            version: to_u64(row.get(2)),
        };
        Some(if created {
            PutOutcome::Created(note)
        } else {
            PutOutcome::Replaced(note)
        })
    }
}

/// A note's columns for links: its title's key, its link targets in order, and every key they
/// resolve by, for the GIN index that finds backlinks; stored as PostgreSQL's text holds it.
pub(super) struct LinkColumns {
    pub(super) title_key: String,
    pub(super) targets: Vec<String>,
    pub(super) keys: Vec<String>,
}

impl LinkColumns {
    pub(super) fn of(title: &str, body: &str) -> LinkColumns {
        let targets = link_targets(body);
        let mut keys: Vec<String> = Vec::with_capacity(targets.len() * 3);
        for target in &targets {
            let found = TargetKeys::of(target);
            for key in [found.target, found.derived, found.folded] {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        LinkColumns {
            title_key: nul_escape::encode(&title_key(title)).into_owned(),
            targets: nul_escape::encode_all(&targets),
            keys: nul_escape::encode_all(&keys),
        }
    }
}

/// The statement that puts a note in `mode`.
fn statement_for(mode: PutMode) -> &'static str {
    match mode {
        PutMode::ReplaceAtVersion(_) => REPLACE_AT_VERSION,
        _ => UPSERT,
    }
}

/// A version number as PostgreSQL's `bigint` holds it.
fn to_i64(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(i64::MAX)
}

/// A stored `bigint` version or count (never negative).
fn to_u64(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

/// Parameters of a query, as tokio-postgres takes them.
fn params<'a>(boxed: &'a [Box<dyn ToSql + Sync + Send + 'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    boxed
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// A caller's limit as a query parameter, bounded as in every backend.
fn limit(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(i64::MAX)
}

/// A note that may link to another: its id and title, and those of its links' keys that could
/// name that note, each to be resolved to see whether it does.
type LinkSource = (Backlink, Vec<TargetKeys>);

/// The notes among `sources` with a link that resolves to the note `id`, sorted by id;
/// `resolved` answers their keys, in order.
fn confirmed_backlinks(
    id: &str,
    sources: Vec<LinkSource>,
    mut resolved: impl Iterator<Item = Option<LinkedNote>>,
) -> Vec<Backlink> {
    let mut found: Vec<Backlink> = Vec::new();
    for (source, keys) in sources {
        let links_here = keys
            .iter()
            .map(|_| resolved.next().flatten())
            .filter(|note| note.as_ref().is_some_and(|n| n.id == id))
            .count();
        if links_here > 0 {
            found.push(source);
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    found
}

/// A search's row: id, title, tags and score.
fn search_hit(row: &Row) -> SearchHit {
    SearchHit {
        id: row.get(0),
        title: row.get(1),
        tags: nul_escape::decode_all(row.get(2)),
        score: row.get(3),
    }
}

/// A note from a row of `id, title, tags, body, created_at, updated_at, version`.
fn note_from(row: &Row) -> Note {
    Note {
        id: row.get(0),
        title: row.get(1),
        tags: nul_escape::decode_all(row.get(2)),
        body: nul_escape::decode(row.get(3)),
        created_at: row.get(4),
        updated_at: row.get(5),
        version: to_u64(row.get(6)),
    }
}

#[async_trait]
impl NoteEngine for PgNotes {
    async fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "reading a note",
                "SELECT id, title, tags, body, created_at, updated_at, version FROM pkb_notes
                 WHERE owner = $1 AND id = $2",
                &[&self.owner, &id],
            )
            .await?;
        Ok(rows.first().map(note_from))
    }

    async fn put(
        &self,
        draft: NoteDraft,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<PutOutcome, StoreError> {
        let now = now_rfc3339();
        let boxed = self.upsert_params(&draft, (None, &now), mode, provenance);
        let rows = self
            .rows("saving a note", statement_for(mode), &params(&boxed))
            .await?;
        drop(boxed);
        let id = draft.id.clone();
        match Self::outcome(draft, &now, &rows) {
            Some(saved) => Ok(saved),
            None => self.not_saved(&id, mode).await,
        }
    }

    async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
        provenance: &Provenance,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        self.answered(
            "saving notes",
            BATCH_WAIT,
            self.put_batch(notes, mode, provenance),
        )
        .await
    }

    async fn delete(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "deleting a note",
                "WITH gone AS (
                    DELETE FROM pkb_notes WHERE owner = $1 AND id = $2
                    RETURNING title, tags, body, created_at, version
                 ),
                 kept AS (
                    INSERT INTO pkb_note_versions
                        (owner, id, version, kind, changed_at, changed_by, title, tags, body, created_at)
                    SELECT $1, $2, version + 1, 'deleted', $4, $5, title, tags, body, created_at
                    FROM gone
                 )
                 SELECT pg_notify('pkb_changes',
                     json_build_object('i', $3::text, 'u', $1, 'id', $2, 'l', true)::text)
                 FROM gone",
                &[
                    &self.owner,
                    &id,
                    &self.database.instance,
                    &now_rfc3339(),
                    &by,
                ],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn search_any_words(
        &self,
        text: &str,
        tags: &[String],
        limit_to: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        if query_words::words(text).next().is_none() {
            return Ok(Vec::new());
        }
        let tags = nul_escape::encode_all(tags);
        let text = text.replace('\0', " ");
        let results = limit(limit_to);
        // Both statements within the one wait a call of one statement has.
        let rows = self
            .answered("searching", ANSWER_WAIT, async {
                if query_words::words(&text).nth(1).is_none() {
                    let params: [(&(dyn ToSql + Sync), Type); 4] = [
                        (&self.owner, Type::TEXT),
                        (&text, Type::TEXT),
                        (&tags, Type::TEXT_ARRAY),
                        (&results, Type::INT8),
                    ];
                    return self
                        .planned_rows("searching", word_search::ANY_WORD, &params)
                        .await;
                }
                // The words half the newest notes hold are left out while another is held by
                // some, as SQLite's store leaves out those half its notes hold, and the others
                // weighed by their IDF among the newest notes, as BM25 weighs them. When every
                // word is that common, only the newest matches are ranked, as in SQLite's store.
                let shares = self.word_counts(&text, true).await?.shares();
                let window = query_words::any_words_window(shares.iter().map(|(_, share)| *share));
                let kept = query_words::kept_any_words(shares);
                if kept.is_empty() {
                    return Ok(Vec::new());
                }
                let any = kept
                    .iter()
                    .map(|word| word.query.as_str())
                    .collect::<Vec<_>>()
                    .join(" | ");
                let (words, idfs): (Vec<String>, Vec<f64>) =
                    kept.into_iter().map(|word| (word.query, word.idf)).unzip();
                let mut params: Vec<(&(dyn ToSql + Sync), Type)> = vec![
                    (&self.owner, Type::TEXT),
                    (&any, Type::TEXT),
                    (&tags, Type::TEXT_ARRAY),
                    (&results, Type::INT8),
                    (&words, Type::TEXT_ARRAY),
                    (&idfs, Type::FLOAT8_ARRAY),
                ];
                // Planned with the words, as search is.
                let sql = match &window {
                    Some(window) => {
                        params.push((window, Type::INT8));
                        word_search::SOME_WORDS_NEWEST
                    }
                    None => word_search::SOME_WORDS,
                };
                self.planned_rows("searching", sql, &params).await
            })
            .await?;
        Ok(rows.iter().map(search_hit).collect())
    }

    async fn notes_without_vectors(
        &self,
        model: &str,
        limit_to: usize,
    ) -> Result<Vec<Note>, StoreError> {
        // A note with vectors has a first passage: one row of the primary key to look for,
        // which the planner knows even before its statistics have seen the vectors (without
        // them it had compared every vector with every note: over 10 s at 10,000 notes).
        let rows = self
            .rows(
                "finding notes without vectors",
                "SELECT id, title, tags, body, created_at, updated_at, version FROM pkb_notes n
                 WHERE owner = $1 AND NOT EXISTS (
                     SELECT 1 FROM pkb_note_vectors v
                     WHERE v.owner = n.owner AND v.id = n.id AND v.passage = 0
                       AND v.version = n.version AND v.model = $2)
                 ORDER BY created_order LIMIT $3",
                &[&self.owner, &model, &limit(limit_to)],
            )
            .await?;
        Ok(rows.iter().map(note_from).collect())
    }

    async fn put_vectors(
        &self,
        id: &str,
        version: u64,
        model: &str,
        vectors: Vec<Vec<f32>>,
    ) -> Result<bool, StoreError> {
        let failed = self.failed("keeping a note's vectors");
        let id = nul_escape::encode(id).into_owned();
        let bytes: Vec<Vec<u8>> = vectors.iter().map(|v| vector_bytes(v)).collect();
        self.answered("keeping a note's vectors", ANSWER_WAIT, async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.map_err(&failed)?;
            tx.execute(
                "DELETE FROM pkb_note_vectors WHERE owner = $1 AND id = $2",
                &[&self.owner, &id],
            )
            .await
            .map_err(&failed)?;
            let kept = tx
                .execute(
                    "INSERT INTO pkb_note_vectors (owner, id, version, passage, model, vector)
                     SELECT $1, $2, $3, ord - 1, $4, vector
                     FROM unnest($5::bytea[]) WITH ORDINALITY AS p(vector, ord)
                     WHERE EXISTS (SELECT 1 FROM pkb_notes
                                   WHERE owner = $1 AND id = $2 AND version = $3)",
                    &[&self.owner, &id, &to_i64(version), &model, &bytes],
                )
                .await
                .map_err(&failed)?;
            tx.commit().await.map_err(&failed)?;
            Ok(kept > 0)
        })
        .await
    }

    async fn nearest(
        &self,
        model: &str,
        query: &[f32],
        tags: &[String],
        limit_to: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let matrix = self
            .answered("searching by meaning", ANSWER_WAIT, self.vectors_of(model))
            .await?;
        Ok(matrix.nearest(query, tags, limit_to))
    }

    async fn resolve_targets(
        &self,
        targets: &[TargetKeys],
    ) -> Result<Vec<Option<LinkedNote>>, StoreError> {
        if targets.is_empty() {
            return Ok(Vec::new());
        }
        let column = |pick: fn(&TargetKeys) -> &String| {
            nul_escape::encode_all(&targets.iter().map(pick).cloned().collect::<Vec<_>>())
        };
        let (target, derived, folded) = (
            column(|k| &k.target),
            column(|k| &k.derived),
            column(|k| &k.folded),
        );
        // In the contract's order: the id, the derived id, the title ignoring case.
        let rows = self
            .rows(
                "resolving links",
                "SELECT coalesce(a.id, b.id, c.id), coalesce(a.title, b.title, c.title)
                 FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY
                     AS t(target, derived, folded, ord)
                 LEFT JOIN pkb_notes a ON a.owner = $1 AND a.id = t.target
                 LEFT JOIN pkb_notes b ON b.owner = $1 AND b.id = t.derived
                 LEFT JOIN LATERAL (
                     SELECT id, title FROM pkb_notes
                     WHERE owner = $1 AND title_key = t.folded ORDER BY id LIMIT 1
                 ) c ON true
                 ORDER BY t.ord",
                &[&self.owner, &target, &derived, &folded],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| {
                let id: Option<String> = row.get(0);
                let title: Option<String> = row.get(1);
                id.zip(title).map(|(id, title)| LinkedNote { id, title })
            })
            .collect())
    }

    async fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        let id = nul_escape::encode(id);
        // The note and the notes that may link to it, in one statement and one snapshot.
        let rows = self
            .rows(
                "reading a note",
                "SELECT n.id, n.title, n.tags, n.body, n.created_at, n.updated_at, n.version,
                     n.title_key, (SELECT json_agg(json_build_array(s.id, s.title, s.links))::text
                         FROM pkb_link_sources(n.owner, n.id, n.title_key) s)
                 FROM pkb_notes n WHERE n.owner = $1 AND n.id = $2",
                &[&self.owner, &id],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let note = note_from(row);
        let sources = self.link_sources(&id, row.get(7), row.get(8))?;
        // Its own links and the sources' keys, resolved together.
        let targets = link_targets(&note.body);
        let mut asked: Vec<TargetKeys> = targets.iter().map(|t| TargetKeys::of(t)).collect();
        let own = asked.len();
        asked.extend(sources.iter().flat_map(|(_, keys)| keys.iter().cloned()));
        let mut resolved = self.resolve_targets(&asked).await?.into_iter();
        let links = links_of(targets, resolved.by_ref().take(own).collect());
        Ok(Some(NoteWithLinks {
            note,
            links,
            backlinks: confirmed_backlinks(&id, sources, resolved),
        }))
    }

    async fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError> {
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "finding backlinks",
                "SELECT n.title_key, (SELECT json_agg(json_build_array(s.id, s.title, s.links))::text
                     FROM pkb_link_sources(n.owner, n.id, n.title_key) s)
                 FROM pkb_notes n WHERE n.owner = $1 AND n.id = $2",
                &[&self.owner, &id],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(Vec::new());
        };
        let sources = self.link_sources(&id, row.get(0), row.get(1))?;
        let asked: Vec<TargetKeys> = sources
            .iter()
            .flat_map(|(_, keys)| keys.iter().cloned())
            .collect();
        let resolved = self.resolve_targets(&asked).await?;
        Ok(confirmed_backlinks(&id, sources, resolved.into_iter()))
    }

    async fn history(
        &self,
        id: &str,
        limit_to: usize,
    ) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        let id = nul_escape::encode(id);
        // A body's characters as given: each escaped character is stored as two.
        let rows = self
            .rows(
                "reading a note's history",
                "SELECT version, kind, changed_at, changed_by, title,
                    char_length(body)
                      - (char_length(body) - char_length(replace(body, chr(57344), ''))) / 2
                 FROM pkb_note_versions WHERE owner = $1 AND id = $2
                 ORDER BY version DESC LIMIT $3",
                &[&self.owner, &id, &limit(limit_to)],
            )
            .await?;
        if rows.is_empty() && !self.has_history(&id).await? {
            return Ok(None);
        }
        Ok(Some(
            rows.iter()
                .map(|row| VersionSummary {
                    version: to_u64(row.get(0)),
                    change: ChangeKind::parse(row.get(1)),
                    at: row.get(2),
                    by: row.get(3),
                    title: row.get(4),
                    chars: u64::try_from(row.get::<_, i32>(5)).unwrap_or(0),
                })
                .collect(),
        ))
    }

    async fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        // Only the conditions given are written, so that each finds its index: the owner's
        // changes in order for a page of all, the primary key for one note's, those of a kind
        // or a client for theirs.
        let mut sql = String::from(
            "SELECT change_order, id, version, kind, changed_at, changed_by, title
             FROM pkb_note_versions WHERE owner = $1",
        );
        let mut values: Vec<Box<dyn ToSql + Sync + Send>> = vec![Box::new(self.owner.clone())];
        let mut condition = |column: &str, value: Box<dyn ToSql + Sync + Send>| {
            values.push(value);
            sql.push_str(&format!(" AND {column} ${}", values.len()));
        };
        if let Some(before) = filter.before {
            condition("change_order <", Box::new(to_i64(before)));
        }
        if let Some(id) = &filter.id {
            condition("id =", Box::new(nul_escape::encode(id).into_owned()));
        }
        if let Some(by) = &filter.by {
            condition("changed_by =", Box::new(by.clone()));
        }
        if let Some(change) = filter.change {
            condition("kind =", Box::new(change.as_str().to_owned()));
        }
        if filter.newest {
            sql.push_str(
                " AND version = (SELECT max(version) FROM pkb_note_versions AS later
                   WHERE later.owner = $1 AND later.id = pkb_note_versions.id)",
            );
        }
        values.push(Box::new(limit(filter.limit)));
        sql.push_str(&format!(
            " ORDER BY change_order DESC LIMIT ${}",
            values.len()
        ));
        let rows = self
            .rows("reading the notes' history", &sql, &params(&values))
            .await?;
        Ok(rows
            .iter()
            .map(|row| ChangeEntry {
                position: to_u64(row.get(0)),
                change: RecentChange {
                    id: row.get(1),
                    version: to_u64(row.get(2)),
                    change: ChangeKind::parse(row.get(3)),
                    at: row.get(4),
                    by: row.get(5),
                    title: row.get(6),
                },
            })
            .collect())
    }

    async fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError> {
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "reading a version of a note",
                &format!(
                    "SELECT {VERSION_COLUMNS} FROM pkb_note_versions
                     WHERE owner = $1 AND id = $2 AND version = $3"
                ),
                &[&self.owner, &id, &to_i64(version)],
            )
            .await?;
        Ok(match rows.first() {
            Some(row) => VersionLookup::Found(Box::new(NoteVersion {
                note: note_from(row),
                change: ChangeKind::parse(row.get(7)),
                by: row.get(8),
            })),
            None if self.has_history(&id).await? => VersionLookup::NoSuchVersion,
            None => VersionLookup::NoSuchNote,
        })
    }

    async fn prune_versions(&self, before: &str) -> Result<u64, StoreError> {
        let failed = self.failed("pruning the notes' history");
        self.answered("pruning the notes' history", BATCH_WAIT, async {
            let client = self.client().await?;
            client
                .execute(
                    "DELETE FROM pkb_note_versions AS old
                     WHERE owner = $1 AND changed_at < $2
                       AND version < (SELECT max(version) FROM pkb_note_versions
                                      WHERE owner = old.owner AND id = old.id)",
                    &[&self.owner, &before],
                )
                .await
                .map_err(&failed)
        })
        .await
    }

    async fn purge(&self, id: &str) -> Result<Purged, StoreError> {
        let id = nul_escape::encode(id);
        let rows = self
            .rows(
                "purging a note",
                "WITH note AS (
                    DELETE FROM pkb_notes WHERE owner = $1 AND id = $2 RETURNING id
                 ),
                 versions AS (
                    DELETE FROM pkb_note_versions WHERE owner = $1 AND id = $2 RETURNING version
                 )
                 SELECT (SELECT count(*) FROM note), (SELECT count(*) FROM versions),
                    CASE WHEN EXISTS (SELECT 1 FROM note) THEN pg_notify('pkb_changes',
                        json_build_object('i', $3::text, 'u', $1, 'id', $2, 'l', true)::text) END",
                &[&self.owner, &id, &self.database.instance],
            )
            .await?;
        let row = rows.first();
        Ok(Purged {
            note: row.is_some_and(|row| row.get::<_, i64>(0) > 0),
            versions: row.map_or(0, |row| to_u64(row.get(1))),
        })
    }

    async fn list(
        &self,
        after: Option<&str>,
        limit_to: usize,
    ) -> Result<Vec<NoteSummary>, StoreError> {
        let rows = self
            .rows(
                "listing notes",
                "SELECT id, title, tags, updated_at FROM pkb_notes
                 WHERE owner = $1 AND ($2::text IS NULL OR id > $2)
                 ORDER BY id LIMIT $3",
                &[&self.owner, &after, &limit(limit_to)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| NoteSummary {
                id: row.get(0),
                title: row.get(1),
                tags: nul_escape::decode_all(row.get(2)),
                updated_at: row.get(3),
            })
            .collect())
    }

    async fn list_with_bodies(
        &self,
        after: Option<&str>,
        limit_to: usize,
    ) -> Result<Vec<Note>, StoreError> {
        let rows = self
            .rows(
                "listing notes",
                "SELECT id, title, tags, body, created_at, updated_at, version FROM pkb_notes
                 WHERE owner = $1 AND ($2::text IS NULL OR id > $2)
                 ORDER BY id LIMIT $3",
                &[&self.owner, &after, &limit(limit_to)],
            )
            .await?;
        Ok(rows.iter().map(note_from).collect())
    }

    async fn count(&self) -> Result<u64, StoreError> {
        let rows = self
            .rows(
                "counting notes",
                "SELECT count(*) FROM pkb_notes WHERE owner = $1",
                &[&self.owner],
            )
            .await?;
        Ok(rows
            .first()
            .map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
    }

    async fn search(
        &self,
        text: &str,
        tags: &[String],
        limit_to: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        // A query with no words finds nothing, as in SQLite's store. The words themselves are
        // left to PostgreSQL's parser, which split the notes: both sides then agree on what a
        // word is ("3.14", "e-mail" and addresses are tokens of their own there).
        if query_words::words(text).next().is_none() {
            return Ok(Vec::new());
        }
        let tags = nul_escape::encode_all(tags);
        // NUL separates words anyway, and PostgreSQL's text cannot hold it.
        let text = text.replace('\0', " ");
        let window = limit(limit_to);
        // Both statements within the one wait a call of one statement has.
        let rows = self
            .answered("searching", ANSWER_WAIT, async {
                let rare = if tags.is_empty() && query_words::words(&text).nth(1).is_some() {
                    self.word_counts(&text, false).await?.rare_words()
                } else {
                    None
                };
                let mut params: Vec<(&(dyn ToSql + Sync), Type)> = vec![
                    (&self.owner, Type::TEXT),
                    (&text, Type::TEXT),
                    (&tags, Type::TEXT_ARRAY),
                    (&window, Type::INT8),
                    (&RANK_WINDOW, Type::INT8),
                ];
                // Planned with this query's words (pkb_query folds them into a constant), so
                // that the planner knows how common they are.
                let sql = match &rare {
                    Some(rare) => {
                        params.push((rare, Type::TEXT));
                        word_search::RARE_WORDS
                    }
                    None => word_search::EVERY_WORD,
                };
                self.planned_rows("searching", sql, &params).await
            })
            .await?;
        Ok(rows.iter().map(search_hit).collect())
    }

    async fn ids_with_prefix(
        &self,
        prefix: &str,
        limit_to: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = nul_escape::encode(prefix);
        // The range keeps to the primary key's order; starts_with takes the prefix literally.
        let rows = self
            .rows(
                "completing an id",
                "SELECT id FROM pkb_notes
                 WHERE owner = $1 AND id >= $2 AND id < $2 || chr(1114111) AND starts_with(id, $2)
                 ORDER BY id LIMIT $3",
                &[&self.owner, &prefix, &limit(limit_to)],
            )
            .await?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    async fn tags_with_prefix(
        &self,
        prefix: &str,
        limit_to: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = nul_escape::encode(prefix);
        let rows = self
            .rows(
                "completing a tag",
                r#"SELECT DISTINCT tag COLLATE "C" FROM pkb_notes, unnest(tags) AS tag
                 WHERE owner = $1 AND starts_with(tag, $2)
                 ORDER BY 1 LIMIT $3"#,
                &[&self.owner, &prefix, &limit(limit_to)],
            )
            .await?;
        Ok(rows
            .iter()
            .map(|row| nul_escape::decode(row.get(0)))
            .collect())
    }

    /// Every user's notes: the search vectors must be what the notes give now.
    async fn verify(&self) -> Result<(), StoreError> {
        let rows = self
            .rows(
                "checking the notes",
                "SELECT count(*) FROM pkb_notes
                 WHERE search IS DISTINCT FROM pkb_search_vector(title, tags, body)",
                &[],
            )
            .await?;
        let stale: i64 = rows.first().map_or(0, |row| row.get(0));
        if stale > 0 {
            return Err(StoreError::OutOfStep {
                store: self.database.location.clone(),
                reason: format!("{stale} of the notes' search entries do not match their text"),
            });
        }
        // The links' columns must be what the notes' bodies give now.
        let rows = self
            .rows(
                "checking the notes' links",
                "SELECT title, body, title_key, links, link_keys FROM pkb_notes",
                &[],
            )
            .await?;
        let unlinked = rows
            .iter()
            .filter(|row| {
                let body = nul_escape::decode(row.get(1));
                let expected = LinkColumns::of(row.get(0), &body);
                expected.title_key != row.get::<_, String>(2)
                    || expected.targets != row.get::<_, Vec<String>>(3)
                    || expected.keys != row.get::<_, Vec<String>>(4)
            })
            .count();
        if unlinked > 0 {
            return Err(StoreError::OutOfStep {
                store: self.database.location.clone(),
                reason: format!("the links of {unlinked} notes do not match their bodies"),
            });
        }
        Ok(())
    }

    /// Every user's notes: their search vectors and link columns, computed again.
    async fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        let failed = self.failed("rebuilding the search index");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&failed)?;
        let count = tx
            .execute(
                "UPDATE pkb_notes SET search = pkb_search_vector(title, tags, body)",
                &[],
            )
            .await
            .map_err(&failed)?;
        schema::fill_links(&tx).await.map_err(&failed)?;
        tx.commit().await.map_err(&failed)?;
        Ok(count)
    }

    /// Every user's notes: the search indexes' pending entries merged in, the visibility map
    /// set and the planner's statistics taken again (`VACUUM (ANALYZE)`), as autovacuum
    /// would do some time after a bulk load; until then a search may be planned for a table
    /// of another size. Only the tables' owner may; for another role PostgreSQL would skip
    /// it with a warning of its own, so this says so in the log and leaves it to autovacuum.
    async fn merge_index(&self) -> Result<(), StoreError> {
        let failed = self.failed("vacuuming the notes");
        let client = self.client().await?;
        let owns: bool = client
            .query_one(
                "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class WHERE oid = 'pkb_notes'::regclass",
                &[],
            )
            .await
            .map_err(&failed)?
            .get(0);
        if !owns {
            tracing::warn!(
                database = %self.database.location,
                "this role does not own pkb_notes and may not vacuum it; autovacuum will"
            );
            return Ok(());
        }
        client
            .batch_execute("VACUUM (ANALYZE) pkb_notes")
            .await
            .map_err(&failed)
    }
}

/// What the tests need of a PostgreSQL server: `PKB_TEST_POSTGRES`, an admin URL (as
/// `.ci/start-postgres` prints), and scratch databases made from it.
#[doc(hidden)]
pub mod testing {
    use tokio_postgres::NoTls;
    use tokio_postgres::error::SqlState;

    /// The admin URL in `PKB_TEST_POSTGRES`; `None` (skip the test) when unset, unless
    /// `PKB_REQUIRE_POSTGRES=1`, as CI sets it, makes that a failure.
    pub fn admin_url() -> Option<String> {
        match std::env::var("PKB_TEST_POSTGRES") {
            Ok(url) if !url.is_empty() => Some(url),
            _ if std::env::var("PKB_REQUIRE_POSTGRES").is_ok_and(|v| v == "1") => {
                panic!("PKB_REQUIRE_POSTGRES=1 but PKB_TEST_POSTGRES names no server")
            }
            _ => {
                eprintln!(
                    "skipped: set PKB_TEST_POSTGRES (see .ci/start-postgres) to run on PostgreSQL"
                );
                None
            }
        }
    }

    /// `url` naming the database `name` instead of its own.
    pub fn with_database(url: &str, name: &str) -> String {
        let (base, query) = url
            .split_once('?')
            .map_or((url, None), |(b, q)| (b, Some(q)));
        let scheme_end = base.find("://").map_or(0, |i| i + 3);
        let base = match base[scheme_end..].find('/') {
            Some(slash) => &base[..scheme_end + slash],
            None => base,
        };
        match query {
            Some(query) => format!("{base}/{name}?{query}"),
            None => format!("{base}/{name}"),
        }
    }

    /// The URL of database `name` on the server of `admin`, made when missing.
    pub async fn database(admin: &str, name: &str) -> String {
        let (client, connection) = tokio_postgres::connect(admin, NoTls)
            .await
            .expect("connect to the test PostgreSQL server");
        let connection = tokio::spawn(connection);
        if let Err(error) = client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
        {
            // Made already, or by a test racing this one.
            let raced = [SqlState::DUPLICATE_DATABASE, SqlState::UNIQUE_VIOLATION];
            assert!(
                error.code().is_some_and(|code| raced.contains(code)),
                "CREATE DATABASE {name}: {error}"
            );
        }
        drop(client);
        let _ = connection.await;
        with_database(admin, name)
    }

    /// Runs `sql` on the database at `url`, as a test that damages a store does.
    pub async fn execute(url: &str, sql: &str) {
        let (client, connection) = tokio_postgres::connect(url, NoTls)
            .await
            .expect("connect to the test database");
        let connection = tokio::spawn(connection);
        client.batch_execute(sql).await.expect("run the test's SQL");
        drop(client);
        let _ = connection.await;
    }

    /// A random key, for a user or a database no other test has.
    pub fn fresh_key() -> String {
        super::instance_id()
    }

    /// A database of its own for one test, on the server of `admin`.
    pub async fn scratch_database(admin: &str) -> String {
        let name = format!("pkb_test_{}", super::instance_id());
        database(admin, &name).await
    }
}
