//! The PostgreSQL schema, made or migrated at start under an advisory lock, so that two
//! instances starting together do not migrate at once.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::store::StoreError;

/// The newest schema version this build writes and reads.
pub(super) const SCHEMA_VERSION: i32 = 1;

/// The advisory lock every PKB instance takes while it migrates ("pkb" in ASCII).
const MIGRATION_LOCK: i64 = 0x706b62;

/// Version 1: users, notes, and the search vector every write stores beside a note.
///
/// Ids and tags sort bytewise (`COLLATE "C"`), as they do in SQLite. The search vector weighs
/// the title `A`, the tags `B` and the body `C`; `unaccent` folds diacritics before the
/// `simple` configuration lowercases, so no language's stemming or stop words apply.
const V1: &str = r#"
CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE FUNCTION pkb_search_vector(title text, tags text[], body text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple', unaccent(title)), 'A')
        || setweight(to_tsvector('simple', unaccent(array_to_string(tags, ' '))), 'B')
        || setweight(to_tsvector('simple', unaccent(body)), 'C')
$$;

CREATE TABLE pkb_users (
    owner text PRIMARY KEY,
    first_seen timestamptz NOT NULL DEFAULT now()
);

CREATE SEQUENCE pkb_note_order;

CREATE TABLE pkb_notes (
    owner text NOT NULL REFERENCES pkb_users (owner),
    id text COLLATE "C" NOT NULL,
    title text NOT NULL,
    tags text[] COLLATE "C" NOT NULL,
    body text NOT NULL,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    created_order bigint NOT NULL DEFAULT nextval('pkb_note_order'),
    search tsvector NOT NULL,
    PRIMARY KEY (owner, id)
);

CREATE INDEX pkb_notes_search ON pkb_notes USING gin (search);
CREATE INDEX pkb_notes_tags ON pkb_notes USING gin (tags);
CREATE INDEX pkb_notes_recent ON pkb_notes (owner, created_order DESC);
"#;

/// Makes (when `create`) or migrates the schema; refuses a database a newer PKB migrated,
/// and without `create` one that holds no PKB schema.
pub(super) async fn migrate(
    client: &mut Client,
    location: &str,
    create: bool,
) -> Result<(), StoreError> {
    let failed =
        |source: tokio_postgres::Error| super::backend_error(location, "migrating", source);
    let tx = client.transaction().await.map_err(failed)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS pkb_schema (version integer NOT NULL)")
        .await
        .map_err(failed)?;
    let found: Option<i32> = tx
        .query_opt("SELECT version FROM pkb_schema", &[])
        .await
        .map_err(failed)?
        .map(|row| row.get(0));
    let found = found.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: location.into(),
            found: found.into(),
            supported: SCHEMA_VERSION.into(),
        });
    }
    if found == SCHEMA_VERSION {
        return tx.commit().await.map_err(failed);
    }
    if found == 0 && !create {
        // Rolled back: not even pkb_schema is left behind.
        return Err(StoreError::Open {
            path: location.into(),
            source: "it holds no PKB notes (a server makes them there at its first start)".into(),
        });
    }
    if let Err(error) = tx.batch_execute(V1).await {
        if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
            let reason = error
                .as_db_error()
                .map_or_else(|| error.to_string(), |e| e.message().to_owned());
            return Err(StoreError::Open {
                path: location.into(),
                source: format!(
                    "PKB needs the unaccent extension and its own tables, and this role may not create them ({reason}); ask the database's owner to run `CREATE EXTENSION unaccent` and to grant CREATE on the schema"
                )
                .into(),
            });
        }
        return Err(failed(error));
    }
    tx.batch_execute(&format!(
        "DELETE FROM pkb_schema; INSERT INTO pkb_schema (version) VALUES ({SCHEMA_VERSION})"
    ))
    .await
    .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    tracing::info!(location, version = SCHEMA_VERSION, "made the PKB schema");
    Ok(())
}
