//! The PostgreSQL schema, made or migrated at start under an advisory lock, so that two
//! instances starting together do not migrate at once.

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::store::StoreError;

/// The newest schema version this build writes and reads.
pub(super) const SCHEMA_VERSION: i32 = 13;

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

/// Version 2: searches the planner can plan for their words.
///
/// `pkb_query` turns a query's text into prefix lexemes: plainto_tsquery reads no syntax, so
/// the text only ever becomes quoted lexemes joined by `&`, and `:*` (prefix) is then added to
/// each. It is IMMUTABLE (unaccent itself is only STABLE, as its rules file could change) so
/// that the planner folds a query's text into a constant tsquery and sees how common its
/// words are: a common word's newest notes are then read through the recent index, a rare
/// word's through the search index. The GIN indexes keep a short pending list: writes still
/// go in batches, and a search reads through little of it (the default 4 MB made searches
/// after a bulk load ten times slower until a vacuum).
const V2: &str = r#"
CREATE FUNCTION pkb_query(text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsquery('simple', regexp_replace(
        plainto_tsquery('simple', unaccent('unaccent'::regdictionary, $1))::text,
        '''(\s|$)', ''':*\1', 'g'))
$$;

ALTER INDEX pkb_notes_search SET (gin_pending_list_limit = 256);
ALTER INDEX pkb_notes_tags SET (gin_pending_list_limit = 256);
"#;

/// Version 3: text folded before it is indexed or searched, as SQLite's store folds it
/// ([`crate::fold`]), so far as SQL can: `pkb_fold` drops the characters that join a word
/// unseen (soft hyphen, zero-width space, joiners, word joiner, byte order mark), folds
/// compatibility forms (NFKC: full-width and mathematical letters, ligatures), then
/// diacritics and `ß` (unaccent). Look-alike letters of other scripts are not transliterated
/// here. The search vectors are computed again.
const V3: &str = r#"
CREATE FUNCTION pkb_fold(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT unaccent('unaccent'::regdictionary,
        normalize(regexp_replace($1, E'[\u00AD\u200B-\u200D\u2060\uFEFF]', '', 'g'), NFKC))
$$;

CREATE OR REPLACE FUNCTION pkb_search_vector(title text, tags text[], body text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple', pkb_fold(title)), 'A')
        || setweight(to_tsvector('simple', pkb_fold(array_to_string(tags, ' '))), 'B')
        || setweight(to_tsvector('simple', pkb_fold(body)), 'C')
$$;

CREATE OR REPLACE FUNCTION pkb_query(text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsquery('simple', regexp_replace(
        plainto_tsquery('simple', pkb_fold($1))::text,
        '''(\s|$)', ''':*\1', 'g'))
$$;

UPDATE pkb_notes SET search = pkb_search_vector(title, tags, body);
"#;

/// Version 4: the search vector kept in the note's row. A note of about 100 words makes a row
/// just over PostgreSQL's 2 KB toast threshold, and a vector barely compresses, so with the
/// default storage most vectors went out of line: every row a search looked at cost a lookup
/// in the toast table too. Kept in the row (`MAIN`: compressed first, out of line only when a
/// row cannot fit a page otherwise), a common word's newest 1,000 matches at 100,000 notes
/// were found in 8 ms instead of 21 ms. The vectors are written again so that they move.
const V4: &str = r#"
ALTER TABLE pkb_notes ALTER COLUMN search SET STORAGE MAIN;
UPDATE pkb_notes SET search = pkb_search_vector(title, tags, body);
"#;

/// Version 5: every version of every note, kept by the statement that makes it: the note as
/// the change left it (a deletion keeps it as it was), what the change was, when and by which
/// client. `change_order` orders a user's changes across notes. Each note's current state is
/// its newest version: notes from before versions get version 1.
const V5: &str = r#"
ALTER TABLE pkb_notes ADD COLUMN version bigint NOT NULL DEFAULT 1;
CREATE SEQUENCE pkb_change_order;
CREATE TABLE pkb_note_versions (
    owner text NOT NULL REFERENCES pkb_users (owner),
    id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    change_order bigint NOT NULL DEFAULT nextval('pkb_change_order'),
    kind text NOT NULL,
    changed_at text NOT NULL,
    changed_by text NOT NULL,
    title text NOT NULL,
    tags text[] COLLATE "C" NOT NULL,
    body text NOT NULL,
    created_at text NOT NULL,
    PRIMARY KEY (owner, id, version)
);
CREATE INDEX pkb_note_versions_recent ON pkb_note_versions (owner, change_order DESC);
INSERT INTO pkb_note_versions
    (owner, id, version, kind, changed_at, changed_by, title, tags, body, created_at)
SELECT owner, id, 1, 'created', updated_at, 'unknown client', title, tags, body, created_at
FROM pkb_notes ORDER BY created_order;
"#;

/// Version 6: links between notes. Each note keeps its link targets in order (`links`) and
/// every key they resolve by (`link_keys`: the targets, the ids they derive, their case
/// folded), under a GIN index, and its title with its case folded (`title_key`), so that a
/// note's backlinks are a lookup. [`fill_links`] fills them for the notes already there,
/// as the store's own code reads links ([`fill_links`]).
const V6: &str = r#"
ALTER TABLE pkb_notes ADD COLUMN title_key text NOT NULL DEFAULT '';
ALTER TABLE pkb_notes ADD COLUMN links text[] NOT NULL DEFAULT '{}';
ALTER TABLE pkb_notes ADD COLUMN link_keys text[] NOT NULL DEFAULT '{}';
CREATE INDEX pkb_notes_title_key ON pkb_notes (owner, title_key);
CREATE INDEX pkb_notes_link_keys ON pkb_notes USING gin (link_keys);
ALTER INDEX pkb_notes_link_keys SET (gin_pending_list_limit = 256);
"#;

/// The schema version from which links are indexed.
const LINKED_SINCE: i32 = 6;

/// Version 7: vectors for search by meaning, one row per passage of a note's version, with
/// the identity of the encoder that made it; gone with their note.
const V7: &str = r#"
CREATE TABLE pkb_note_vectors (
    owner text NOT NULL,
    id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    passage integer NOT NULL,
    model text NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (owner, id, passage),
    FOREIGN KEY (owner, id) REFERENCES pkb_notes (owner, id) ON DELETE CASCADE
);
"#;

/// Version 8: a generation of each user's vectors, moved on once by every transaction that
/// adds or removes any of them, as it commits: a server keeps a user's vectors in memory
/// while their generation stays, and a change made through any process moves it in the same
/// commit (a count or a sequence read in a snapshot can miss an older transaction that
/// commits later). The move is deferred to the commit so that the generation's row is locked
/// last, when nothing else is waited for. A note's new version drops the vectors of the one
/// before, as SQLite's store does, so that what a search by meaning keeps of a note (its
/// title and tags) changes with the generation too.
const V8: &str = r#"
CREATE TABLE pkb_vector_generation (
    owner text PRIMARY KEY,
    generation bigint NOT NULL,
    moved_by xid8 NOT NULL
);

CREATE FUNCTION pkb_vectors_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pkb_vector_generation AS g (owner, generation, moved_by)
    VALUES (CASE TG_OP WHEN 'DELETE' THEN OLD.owner ELSE NEW.owner END, 1, pg_current_xact_id())
    ON CONFLICT (owner) DO UPDATE SET generation = g.generation + 1, moved_by = EXCLUDED.moved_by
    WHERE g.moved_by <> EXCLUDED.moved_by;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER pkb_vectors_changed AFTER INSERT OR DELETE ON pkb_note_vectors
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION pkb_vectors_changed();

CREATE FUNCTION pkb_note_version_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM pkb_note_vectors WHERE owner = OLD.owner AND id = OLD.id;
    RETURN NULL;
END $$;

CREATE TRIGGER pkb_note_version_moved AFTER UPDATE OF version ON pkb_notes
    FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version)
    EXECUTE FUNCTION pkb_note_version_moved();

DELETE FROM pkb_note_vectors v USING pkb_notes n
WHERE n.owner = v.owner AND n.id = v.id AND n.version <> v.version;
"#;

/// Version 9: what a server keeping a user's vectors in memory needs to read only those
/// added since it read them. The transaction that moves the generation stamps each note whose
/// vectors it adds with the generation it moved to (`pkb_vector_stamps`), and one that removes
/// any vector records the generation it moved to as `removed_at`. The stamps are given in the
/// order of the commits, since the generation's row is locked until its transaction commits;
/// a sequence or a time taken as a row is written would not be: a reader could pass a number
/// whose transaction commits after it. So once a reader's snapshot holds generation `g`, it
/// holds every stamp up to `g`, and a matrix read at `k` with no removal since (`removed_at <=
/// k`) lacks exactly the notes stamped after `k`. Before this version nothing was stamped, so
/// every matrix kept from then is read again whole once.
///
/// The stamps' table is made first: its key on `pkb_notes` waits for the writes of notes in
/// flight, whose commits take the generation's row; locking the generation's table first
/// could deadlock with them.
const V9: &str = r#"
CREATE TABLE pkb_vector_stamps (
    owner text NOT NULL,
    id text COLLATE "C" NOT NULL,
    generation bigint NOT NULL,
    PRIMARY KEY (owner, id),
    FOREIGN KEY (owner, id) REFERENCES pkb_notes (owner, id) ON DELETE CASCADE
);
CREATE INDEX pkb_vector_stamps_added ON pkb_vector_stamps (owner, generation);

ALTER TABLE pkb_vector_generation ADD COLUMN removed_at bigint NOT NULL DEFAULT 0;
UPDATE pkb_vector_generation SET removed_at = generation;

CREATE OR REPLACE FUNCTION pkb_vectors_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed_for text := CASE TG_OP WHEN 'DELETE' THEN OLD.owner ELSE NEW.owner END;
    moved_to bigint;
BEGIN
    INSERT INTO pkb_vector_generation AS g (owner, generation, moved_by)
    VALUES (changed_for, 1, pg_current_xact_id())
    ON CONFLICT (owner) DO UPDATE SET generation = g.generation + 1, moved_by = EXCLUDED.moved_by
    WHERE g.moved_by <> EXCLUDED.moved_by;
    SELECT generation INTO moved_to FROM pkb_vector_generation WHERE owner = changed_for;
    IF TG_OP = 'DELETE' THEN
        UPDATE pkb_vector_generation SET removed_at = moved_to
        WHERE owner = changed_for AND removed_at <> moved_to;
    ELSE
        INSERT INTO pkb_vector_stamps AS s (owner, id, generation)
        VALUES (changed_for, NEW.id, moved_to)
        ON CONFLICT (owner, id) DO UPDATE SET generation = EXCLUDED.generation
        WHERE s.generation <> EXCLUDED.generation;
    END IF;
    RETURN NULL;
END $$;
"#;

/// Version 10: the notes whose links may lead to a note (`pkb_link_sources`), found through
/// the index of link keys in the statement that reads the note. The keys are the note's id and
/// its title's key, known only once its row is read; in a plain statement the planner cannot
/// tell how many notes hold them, judges the index too costly and reads every note (105 ms at
/// 100,000 notes). `EXECUTE ... USING` plans with their values: 0.3 ms through the index.
const V10: &str = r#"
CREATE FUNCTION pkb_link_sources(owner_key text, note_id text, note_key text)
RETURNS TABLE (id text, title text, links text[])
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN QUERY EXECUTE
        'SELECT id, title, links FROM pkb_notes WHERE owner = $1 AND link_keys && $2'
        USING owner_key, ARRAY[note_id, note_key];
END $$;
"#;

/// Version 11: a query's lexemes read back as they are. `pkb_query` gave plainto_tsquery's
/// text, with `:*` added, to `to_tsquery`, which parsed each quoted lexeme again and split the
/// ones the parser keeps whole in a note: `/page?id=5` became the phrase `/page <-> id <-> 5`,
/// which no note holds, so a note was not found by the address it holds. The text is now
/// read back with the tsquery cast, which takes each lexeme as written.
const V11: &str = r#"
CREATE OR REPLACE FUNCTION pkb_query(text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT regexp_replace(
        plainto_tsquery('simple', pkb_fold($1))::text,
        '''(\s|$)', ''':*\1', 'g')::tsquery
$$;
"#;

/// Version 12: inflected forms (`deploying`, `deployment` find "deploy", `deploy` finds
/// "deploying"), as SQLite's store finds them ([`crate::store::stemming`]). Each lexeme's stem
/// is Snowball's English one, from a dictionary of PostgreSQL's own snowball template without
/// stop words (`pkb_stem`): it gives the stems the SQLite store's stemmer gives (a test
/// compares them), and leaves a lexeme over 64 bytes whole, as that stemmer does. A note's search vector also holds, at the same positions and weights, the
/// stem of each of its lexemes that is not its own stem, marked by a leading U+0001, which
/// PostgreSQL's parser never leaves in a lexeme, so that no query word's prefix reaches the
/// stems. A query's lexeme `L` of stem `s` becomes `('L':* | '\x01s' | 's')`: the words it
/// starts, the words of its stem, and the stem itself as a word, where the stem is its own
/// stem; so a note's word matches when it starts with `L` or has the stem `s`, and
/// `running` finds "run" and "runs" but not "runway". The query's lexemes are ANDed, each
/// with its forms, as `to_tsvector` makes them (a compound's parts as words of their own,
/// where they were a phrase before: a note holding the compound holds them too); a query of
/// no lexeme is NULL, which matches nothing, where an empty tsquery did the same with a notice
/// at every call. The search vectors are computed again.
const V12: &str = r#"
CREATE TEXT SEARCH DICTIONARY pkb_english_stem (TEMPLATE = snowball, Language = english);

CREATE FUNCTION pkb_stem(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length($1) > 64 THEN $1
        ELSE COALESCE((ts_lexize('pkb_english_stem'::regdictionary, $1))[1], $1) END
$$;

CREATE FUNCTION pkb_quote_lexeme(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '''' || replace(replace($1, E'\\', E'\\\\'), '''', '''''') || ''''
$$;

CREATE FUNCTION pkb_stems(tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT COALESCE(string_agg(
        pkb_quote_lexeme(E'\x01' || stem) || ':' || (
            SELECT string_agg(position::text || weight, ',')
            FROM unnest(word.positions, word.weights) AS at (position, weight)
        ), ' '), '')::tsvector
    FROM unnest($1) AS word, LATERAL (SELECT pkb_stem(word.lexeme) AS stem) AS stemmed
    WHERE stem <> word.lexeme
$$;

CREATE OR REPLACE FUNCTION pkb_search_vector(title text, tags text[], body text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT words || pkb_stems(words) FROM (
        SELECT setweight(to_tsvector('simple', pkb_fold(title)), 'A')
            || setweight(to_tsvector('simple', pkb_fold(array_to_string(tags, ' '))), 'B')
            || setweight(to_tsvector('simple', pkb_fold(body)), 'C') AS words
    ) AS folded
$$;

CREATE FUNCTION pkb_word_query(lexeme text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '(' || pkb_quote_lexeme(lexeme) || ':* | ' || pkb_quote_lexeme(E'\x01' || stem)
        || CASE WHEN stem <> lexeme AND pkb_stem(stem) = stem
            THEN ' | ' || pkb_quote_lexeme(stem) ELSE '' END
        || ')'
    FROM (SELECT pkb_stem(lexeme) AS stem) AS stemmed
$$;

CREATE OR REPLACE FUNCTION pkb_query(text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg(pkb_word_query(lexeme), ' & ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector('simple', pkb_fold($1)))) AS lexeme
$$;

UPDATE pkb_notes SET search = pkb_search_vector(title, tags, body);
"#;

/// Version 13: a user's changes of one kind, and those of one client, newest first: the web
/// page's Deleted page and its filter by client read them. Without these, both walked the
/// user's changes back along `pkb_note_versions_recent` until they had a page, all of them
/// for a kind or a client that is rare or absent.
const V13: &str = r#"
CREATE INDEX pkb_note_versions_by_kind ON pkb_note_versions (owner, kind, change_order DESC);
CREATE INDEX pkb_note_versions_by_client
    ON pkb_note_versions (owner, changed_by, change_order DESC);
"#;

/// Every migration, in order: `MIGRATIONS[n]` takes version `n` to `n + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] =
    [V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13];

/// Fills the link columns of every note from its title and body, in the caller's
/// transaction: at the migration to version 6, and for `reindex`.
pub(super) async fn fill_links(
    tx: &tokio_postgres::Transaction<'_>,
) -> Result<(), tokio_postgres::Error> {
    let rows = tx
        .query("SELECT owner, id, title, body FROM pkb_notes", &[])
        .await?;
    let update = tx
        .prepare(
            "UPDATE pkb_notes SET title_key = $3, links = $4, link_keys = $5
             WHERE owner = $1 AND id = $2",
        )
        .await?;
    for row in rows {
        let (owner, id, title, body): (String, String, String, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let links = super::LinkColumns::of(&title, &super::nul_escape::decode(body));
        tx.execute(
            &update,
            &[&owner, &id, &links.title_key, &links.targets, &links.keys],
        )
        .await?;
    }
    Ok(())
}

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
    for migration in &MIGRATIONS[usize::try_from(found).unwrap_or(0)..] {
        if let Err(error) = tx.batch_execute(migration).await {
            return Err(migration_error(location, error));
        }
    }
    if found > 0 && found < LINKED_SINCE {
        fill_links(&tx).await.map_err(failed)?;
    }
    tx.batch_execute(&format!(
        "DELETE FROM pkb_schema; INSERT INTO pkb_schema (version) VALUES ({SCHEMA_VERSION})"
    ))
    .await
    .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    tracing::info!(
        location,
        from = found,
        to = SCHEMA_VERSION,
        "made or migrated the PKB schema"
    );
    Ok(())
}

/// A failed migration's error; a role without the rights says what the owner must do.
fn migration_error(location: &str, error: tokio_postgres::Error) -> StoreError {
    if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
        let reason = error
            .as_db_error()
            .map_or_else(|| error.to_string(), |e| e.message().to_owned());
        return StoreError::Open {
            path: location.into(),
            source: format!(
                "PKB needs the unaccent extension and tables of its own, which it makes and changes as its schema moves on, and this role may not ({reason}); start PKB once as the role that owns its tables, or ask the database's owner to run `CREATE EXTENSION unaccent` and to grant CREATE on the schema"
            )
            .into(),
        };
    }
    super::backend_error(location, "migrating", error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::postgres::{PgDatabase, testing};

    /// A scratch database as schema version `version` left it, holding notes of the user
    /// `someone`: `(id, title, tags as an array literal, body)`, plain text without quotes.
    async fn database_at(
        admin: &str,
        version: usize,
        notes: &[(&str, &str, &str, &str)],
    ) -> String {
        let url = testing::scratch_database(admin).await;
        let mut sql = MIGRATIONS[..version].join("\n");
        sql.push_str(&format!(
            "CREATE TABLE pkb_schema (version integer NOT NULL);
            INSERT INTO pkb_schema VALUES ({version});
            INSERT INTO pkb_users (owner) VALUES ('someone');"
        ));
        for (id, title, tags, body) in notes {
            sql.push_str(&format!(
                "INSERT INTO pkb_notes (owner, id, title, tags, body, created_at, updated_at, search)
                VALUES ('someone', '{id}', '{title}', '{tags}', '{body}',
                    '2024-01-01T00:00:00.000Z', '2024-01-01T00:00:00.000Z',
                    pkb_search_vector('{title}', '{tags}', '{body}'));"
            ));
        }
        testing::execute(&url, &sql).await;
        url
    }

    /// PostgreSQL's Snowball English stems (`pkb_stem`) are the SQLite store's
    /// ([`crate::store::stemming`]), on every word of the project's documentation and on a
    /// word over 64 bytes, which both leave whole: both engines then find the same inflected
    /// forms.
    #[tokio::test]
    async fn postgresql_stems_every_word_as_the_sqlite_store_does() {
        let Some(admin) = testing::admin_url() else {
            return;
        };
        let url = testing::database(&admin, "pkb_unit_tests").await;
        let database = PgDatabase::connect(&url, false).await.expect("connect");
        drop(database);
        let text = [
            include_str!("../../../../docs/search.md"),
            include_str!("../../../../docs/storage.md"),
            include_str!("../../../../docs/architecture.md"),
            include_str!("../../../../README.md"),
        ]
        .concat()
        .to_lowercase()
            + &format!(" {}ing", "a".repeat(64));
        let mut words: Vec<&str> = text
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|word| word.len() > 1)
            .collect();
        words.extend([
            "deploying",
            "deployment",
            "dying",
            "skies",
            "happiness",
            "generously",
        ]);
        words.sort_unstable();
        words.dedup();
        assert!(words.len() > 1_500, "{}", words.len());
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let rows = client
            .query(
                "SELECT word, pkb_stem(word) FROM unnest($1::text[]) AS word",
                &[&words],
            )
            .await
            .unwrap();
        let differing: Vec<(String, String, String)> = rows
            .iter()
            .map(|row| (row.get::<_, String>(0), row.get::<_, String>(1)))
            .filter_map(|(word, theirs)| {
                let ours = crate::store::stemming::stem(&word).into_owned();
                (ours != theirs).then_some((word, ours, theirs))
            })
            .collect();
        assert_eq!(rows.len(), words.len());
        assert!(
            differing.is_empty(),
            "(word, SQLite's, PostgreSQL's): {differing:?}"
        );
    }

    #[tokio::test]
    async fn a_version_11_database_is_stemmed_and_finds_inflected_forms() {
        let Some(admin) = testing::admin_url() else {
            return;
        };
        let url = database_at(
            &admin,
            11,
            &[
                ("release", "Release", "{}", "We deploy on Fridays"),
                ("rollout", "Rollout", "{}", "Deploying the build"),
            ],
        )
        .await;
        let database = PgDatabase::connect(&url, true).await.unwrap();
        let store = database.store_for("someone");
        for query in ["deployed", "deployment", "deploy"] {
            let hits = store.search(query, &[], 10).await.unwrap();
            let mut ids: Vec<&str> = hits.iter().map(|hit| hit.id.as_str()).collect();
            ids.sort_unstable();
            assert_eq!(ids, ["release", "rollout"], "{query}");
        }
        assert!(store.search("deployable", &[], 10).await.unwrap().len() == 2);
    }

    #[tokio::test]
    async fn a_version_1_database_is_migrated_and_keeps_its_notes() {
        let Some(admin) = testing::admin_url() else {
            return;
        };
        let url = database_at(
            &admin,
            1,
            &[
                ("linking", "Linking", "{}", "see [[Old note]]"),
                ("old", "Old note", "{kept}", "written by version 1"),
            ],
        )
        .await;
        let database = PgDatabase::connect(&url, true).await.unwrap();
        let store = database.store_for("someone");
        let hits = store.search("vers", &[], 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "old");
        assert_eq!(
            store.count().await.unwrap(),
            2,
            "a known user is not seeded"
        );
        // Version 5 keeps each note as it was as its version 1.
        let note = store.get("old").await.unwrap().unwrap();
        assert_eq!(note.version, 1);
        let history = store.history("old", 10).await.unwrap().unwrap();
        assert_eq!(history.len(), 1);
        assert_eq!(
            (history[0].change, history[0].by.as_str(), history[0].chars),
            (crate::store::ChangeKind::Created, "unknown client", 20)
        );
        let crate::store::VersionLookup::Found(first) = store.version("old", 1).await.unwrap()
        else {
            panic!("version 1 of a note from before versions");
        };
        assert_eq!(first.note, note);
        // Version 6 indexes the links of the notes already there.
        let old = store.get_with_links("old").await.unwrap().unwrap();
        let linking: Vec<&str> = old.backlinks.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(linking, ["linking"]);
        store.verify().await.unwrap();
        store.merge_index().await.unwrap();
        drop((store, database));
        // Version 4 keeps the search vector in the row (it fails the test's SQL otherwise).
        testing::execute(
            &url,
            "DO $$ BEGIN
                IF (SELECT attstorage FROM pg_attribute
                    WHERE attrelid = 'pkb_notes'::regclass AND attname = 'search') <> 'm'
                THEN RAISE EXCEPTION 'the search vector may go out of the row'; END IF;
            END $$",
        )
        .await;

        testing::execute(&url, "UPDATE pkb_schema SET version = 99").await;
        let refused = PgDatabase::connect(&url, true).await.unwrap_err();
        assert!(
            refused.to_string().contains("newer PKB (schema version 99"),
            "{refused}"
        );
    }
}
