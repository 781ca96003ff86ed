//! The on-disk schema: how a PKB file is recognised, created, seeded and migrated.

use rusqlite::{Connection, ErrorCode};

use crate::store::{NoteDraft, Provenance, PutMode, SEEDED_BY};

/// Marks a SQLite file as a PKB store (`PRAGMA application_id`): the bytes "PKB1".
pub(super) const APPLICATION_ID: i32 = 0x504B_4231;

/// Schema migrations; entry `n` takes a store from version `n` to `n + 1`.
///
/// Append only: a released entry never changes, since stores in the field already ran it.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11];

/// The schema version this build writes and the newest it reads.
pub(super) const SCHEMA_VERSION: i64 = 11;

const _: () = assert!(MIGRATIONS.len() as i64 == SCHEMA_VERSION);

/// Notes, a tag index, and an external-content FTS5 index over title, tags and body.
///
/// The indexes are written by the store next to each note, in the same transaction, rather
/// than by triggers: a statement that fires triggers opens a statement savepoint, and FTS5
/// flushes its pending index data to disk at every savepoint, so a batch of notes became one
/// tiny index segment per note and constant merging (imports ran three times slower).
const V1: &str = r#"
CREATE TABLE notes (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    title      TEXT NOT NULL,
    tags       TEXT NOT NULL,  -- JSON array of strings, in the note's order
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE note_tags (
    tag  TEXT NOT NULL,
    note INTEGER NOT NULL,
    PRIMARY KEY (tag, note)
) WITHOUT ROWID;
CREATE INDEX note_tags_by_note ON note_tags (note);

CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title, tags, body,
    content = 'notes',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2'
);
"#;

/// The search vocabulary and per-note term counts of [`super::terms`]: a prefix becomes a
/// list of exact terms, and BM25 is computed for candidate notes only. `notes` counts the notes
/// holding a term; `search_stats` holds the note count and total tokens (the average length).
const V2: &str = r#"
CREATE TABLE search_terms (
    id    INTEGER PRIMARY KEY,
    term  TEXT NOT NULL UNIQUE,
    notes INTEGER NOT NULL
);

CREATE TABLE note_terms (
    note  INTEGER PRIMARY KEY,  -- notes.seq
    terms BLOB NOT NULL         -- see terms::NoteTerms
);

CREATE TABLE search_stats (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    notes  INTEGER NOT NULL,
    tokens INTEGER NOT NULL
);
INSERT INTO search_stats (id, notes, tokens) VALUES (1, 0, 0);
"#;

/// The FTS5 index again, now also keeping the notes of every 2- and 3-character prefix (its
/// `prefix` option), rebuilt from the notes. A short query word is a prefix of tens of terms;
/// with the prefix kept, FTS5 reads one doclist for it instead of stepping or seeking every
/// term's (see `search_planner`). FTS5 counts these lengths in characters, as query words are cut.
/// Merged into one segment, as `Store::merge_index` leaves an index: a rebuild leaves several,
/// too few for the server's own merge to start, and each one costs every search a seek.
const V3: &str = r#"
DROP TABLE notes_fts;
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title, tags, body,
    content = 'notes',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
INSERT INTO notes_fts (notes_fts) VALUES ('optimize');
"#;

/// The search index and its vocabulary again, now of the notes folded as ids are
/// ([`crate::fold`]): the index reads them through the `notes_folded` view, `pkb_fold`
/// being registered on every connection, and the vocabulary is counted again from it
/// ([`upgrade`]). Full-width, mathematical and look-alike letters, ligatures and `ß` then
/// find the words they read as, and a zero-width character no longer splits a word.
/// FTS5 deletes a note's entries only given the text they were made from, so the index is
/// bound to this fold: a change to it (a dependency update included, which a test of
/// [`crate::fold`] catches) needs a migration that makes the index again, as this one does,
/// and older builds then refuse the file rather than write into it with their fold.
const V4: &str = r#"
CREATE VIEW notes_folded AS
    SELECT seq, pkb_fold(title) AS title, pkb_fold(tags) AS tags, pkb_fold(body) AS body
    FROM notes;
DROP TABLE notes_fts;
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title, tags, body,
    content = 'notes_folded',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
INSERT INTO notes_fts (notes_fts) VALUES ('optimize');
DELETE FROM note_terms;
DELETE FROM search_terms;
UPDATE search_stats SET notes = 0, tokens = 0 WHERE id = 1;
"#;

/// Every version of every note: the note as each change left it (a deletion keeps it as it
/// was), what the change was, when and by which client. `seq` orders the changes across
/// notes; a note's versions are found by its id, so they outlive it. Each note's current
/// state is its newest version: a store from before versions gets version 1 of each note.
const V5: &str = r#"
ALTER TABLE notes ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
CREATE TABLE note_versions (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL,
    version    INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    title      TEXT NOT NULL,
    tags       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (id, version)
);
INSERT INTO note_versions (id, version, kind, changed_at, changed_by, title, tags, body, created_at)
    SELECT id, 1, 'created', updated_at, 'unknown client', title, tags, body, created_at
    FROM notes ORDER BY seq;
"#;

/// Links between notes ([`super::link_index`]): each note's link targets, in order, with the
/// keys a target resolves by (the id it derives, its case folded), and each note's title with
/// its case folded, so that a note's backlinks are a lookup. [`upgrade`] fills both from the
/// notes of an older store.
const V6: &str = r#"
ALTER TABLE notes ADD COLUMN title_key TEXT NOT NULL DEFAULT '';
CREATE INDEX notes_by_title_key ON notes (title_key);
CREATE TABLE note_links (
    note     INTEGER NOT NULL,  -- notes.seq of the linking note
    position INTEGER NOT NULL,  -- order of first appearance
    target   TEXT NOT NULL,
    derived  TEXT NOT NULL,
    folded   TEXT NOT NULL,
    PRIMARY KEY (note, position)
) WITHOUT ROWID;
CREATE INDEX note_links_by_target ON note_links (target);
CREATE INDEX note_links_by_derived ON note_links (derived);
CREATE INDEX note_links_by_folded ON note_links (folded);
"#;

/// Vectors for search by meaning ([`super::vectors`]): one row per passage of a note, with the
/// identity of the encoder that made it. Derived from the notes, and made in the background.
const V7: &str = r#"
CREATE TABLE note_vectors (
    note    INTEGER NOT NULL,  -- notes.seq
    passage INTEGER NOT NULL,
    model   TEXT NOT NULL,
    vector  BLOB NOT NULL,     -- little-endian f32, a unit vector
    PRIMARY KEY (note, passage)
);
"#;

/// A count of the changes to `note_vectors`, moved on by every statement that adds or removes
/// vectors ([`super::vectors`]), so that the vectors kept in memory outlive the commits that
/// leave them alone (the index merge's, other notes' writes) in this process and others.
const V8: &str = r#"
CREATE TABLE vector_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO vector_generation (id, generation) VALUES (1, 0);
"#;

/// How many of the generation's moves removed vectors: while it stays, the vectors added since
/// a generation are read alone (those of higher row ids), not every vector again.
const V9: &str = r#"
ALTER TABLE vector_generation ADD COLUMN removals INTEGER NOT NULL DEFAULT 0;
"#;

/// Each term's stem ([`crate::store::stemming`]), where it is not the term itself, so that a
/// query word is expanded to the terms of its inflected forms as well as to those it starts.
/// The index is left as it is: the forms are found in the vocabulary, and FTS5 is asked for
/// them as exact terms. [`upgrade`] stems the terms of an older store.
const V10: &str = r#"
ALTER TABLE search_terms ADD COLUMN stem TEXT;  -- NULL: the term is its own stem
CREATE INDEX search_terms_by_stem ON search_terms (stem) WHERE stem IS NOT NULL;
"#;

/// The changes of one kind, and those of one client, newest first: the web page's Deleted
/// page and its filter by client read them. Without these, both walked `seq` back until they
/// had a page, the whole history for a kind or client that is rare or absent (about a million
/// rows at 100,000 notes of ten versions each).
const V11: &str = r#"
CREATE INDEX IF NOT EXISTS note_versions_by_kind ON note_versions (kind, seq);
CREATE INDEX IF NOT EXISTS note_versions_by_client ON note_versions (changed_by, seq);
"#;

/// What [`MIGRATIONS`] leave in a blank store, made in one script: a new store (every
/// `--memory` start, every first start) is made without dropping and making the search index
/// twice, rebuilding it three times and rewriting the schema for each added column, which took
/// about half of an in-memory store's cold start. A test holds it to the migrations' result
/// ([`tests::a_new_store_is_what_the_migrations_make`]); a new migration changes it too.
const CURRENT: &str = r#"
CREATE TABLE notes (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    title      TEXT NOT NULL,
    tags       TEXT NOT NULL,  -- JSON array of strings, in the note's order
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    version    INTEGER NOT NULL DEFAULT 1,
    title_key  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX notes_by_title_key ON notes (title_key);

CREATE TABLE note_tags (
    tag  TEXT NOT NULL,
    note INTEGER NOT NULL,
    PRIMARY KEY (tag, note)
) WITHOUT ROWID;
CREATE INDEX note_tags_by_note ON note_tags (note);

CREATE VIEW notes_folded AS
    SELECT seq, pkb_fold(title) AS title, pkb_fold(tags) AS tags, pkb_fold(body) AS body
    FROM notes;
CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title, tags, body,
    content = 'notes_folded',
    content_rowid = 'seq',
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '2 3'
);
-- Writes the index's (empty) averages record as the migrations' rebuilds leave it.
INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');

CREATE TABLE search_terms (
    id    INTEGER PRIMARY KEY,
    term  TEXT NOT NULL UNIQUE,
    notes INTEGER NOT NULL,
    stem  TEXT  -- NULL: the term is its own stem
);
CREATE INDEX search_terms_by_stem ON search_terms (stem) WHERE stem IS NOT NULL;

CREATE TABLE note_terms (
    note  INTEGER PRIMARY KEY,  -- notes.seq
    terms BLOB NOT NULL         -- see terms::NoteTerms
);

CREATE TABLE search_stats (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    notes  INTEGER NOT NULL,
    tokens INTEGER NOT NULL
);
INSERT INTO search_stats (id, notes, tokens) VALUES (1, 0, 0);

CREATE TABLE note_versions (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL,
    version    INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    title      TEXT NOT NULL,
    tags       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (id, version)
);
CREATE INDEX note_versions_by_kind ON note_versions (kind, seq);
CREATE INDEX note_versions_by_client ON note_versions (changed_by, seq);

CREATE TABLE note_links (
    note     INTEGER NOT NULL,  -- notes.seq of the linking note
    position INTEGER NOT NULL,  -- order of first appearance
    target   TEXT NOT NULL,
    derived  TEXT NOT NULL,
    folded   TEXT NOT NULL,
    PRIMARY KEY (note, position)
) WITHOUT ROWID;
CREATE INDEX note_links_by_target ON note_links (target);
CREATE INDEX note_links_by_derived ON note_links (derived);
CREATE INDEX note_links_by_folded ON note_links (folded);

CREATE TABLE note_vectors (
    note    INTEGER NOT NULL,  -- notes.seq
    passage INTEGER NOT NULL,
    model   TEXT NOT NULL,
    vector  BLOB NOT NULL,     -- little-endian f32, a unit vector
    PRIMARY KEY (note, passage)
);

CREATE TABLE vector_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL,
    removals   INTEGER NOT NULL DEFAULT 0
);
INSERT INTO vector_generation (id, generation) VALUES (1, 0);
"#;

/// The schema version from which links are indexed.
const LINKED_SINCE: i64 = 6;

/// The schema version from which the vocabulary holds each term's stem.
const STEMMED_SINCE: i64 = 10;

/// The prefix lengths, in characters, whose notes the index keeps (its `prefix` option).
pub(super) const KEPT_PREFIX_CHARS: [usize; 2] = [2, 3];

/// Tables a current store must have; their absence means damage, not a new store.
const REQUIRED_TABLES: &[&str] = &[
    "note_links",
    "note_vectors",
    "note_terms",
    "note_tags",
    "note_versions",
    "notes",
    "notes_fts",
    "search_stats",
    "search_terms",
    "vector_generation",
];

/// What a file holds, as far as PKB is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FileState {
    /// No schema at all: a missing, empty or blank database; safe to initialise.
    Blank,
    /// A PKB store at this schema version (at most [`SCHEMA_VERSION`]).
    Pkb(i64),
    /// Something else; the reason says what.
    Foreign(String),
    /// A PKB store from a newer build.
    TooNew(i64),
    /// A PKB store that fails its checks.
    Damaged(String),
}

/// A failure while inspecting, already sorted into the kind of answer it calls for.
#[derive(Debug)]
pub(super) enum InspectError {
    /// The file is not an SQLite database at all.
    NotSqlite,
    /// SQLite reported corruption.
    Corrupt(rusqlite::Error),
    /// Anything else (permissions, I/O, locking).
    Other(rusqlite::Error),
}

impl From<rusqlite::Error> for InspectError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) => InspectError::NotSqlite,
            Some(ErrorCode::DatabaseCorrupt) => InspectError::Corrupt(e),
            _ => InspectError::Other(e),
        }
    }
}

/// How thoroughly [`inspect`] looks.
#[derive(Debug, Clone, Copy)]
pub(super) enum Depth {
    /// Ids, version and tables only: for the second look, under the write lock.
    Quick,
    /// Also the file's size (`file_len` bytes on disk). Damage inside the file is left to
    /// [`super::page_check`], which reads every page.
    Full {
        /// Length of the main database file.
        file_len: u64,
    },
}

/// Reads what the file holds without writing to it.
pub(super) fn inspect(conn: &Connection, depth: Depth) -> Result<FileState, InspectError> {
    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name",
    )?;
    let tables = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?;

    if objects == 0 && version == 0 && (app_id == 0 || app_id == APPLICATION_ID) {
        return Ok(FileState::Blank);
    }
    if app_id != APPLICATION_ID {
        return Ok(FileState::Foreign(describe_foreign(app_id, &tables)));
    }
    if version > SCHEMA_VERSION {
        return Ok(FileState::TooNew(version));
    }
    if version < 1 {
        return Ok(FileState::Damaged(format!(
            "PKB file without a schema version but with tables {}",
            tables.join(", ")
        )));
    }
    if version == SCHEMA_VERSION {
        let missing: Vec<&str> = REQUIRED_TABLES
            .iter()
            .copied()
            .filter(|t| !tables.iter().any(|have| have == t))
            .collect();
        if !missing.is_empty() {
            return Ok(FileState::Damaged(format!(
                "missing tables: {}",
                missing.join(", ")
            )));
        }
    }
    if let Depth::Full { file_len } = depth {
        let page_size: u64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        // SQLite only ever writes whole pages; a ragged end means the file was cut short.
        if page_size > 0 && !file_len.is_multiple_of(page_size) {
            return Ok(FileState::Damaged(format!(
                "its size, {file_len} bytes, is not a whole number of {page_size}-byte pages: it was cut short"
            )));
        }
    }
    Ok(FileState::Pkb(version))
}

fn describe_foreign(app_id: i32, tables: &[String]) -> String {
    let owner = if app_id == 0 {
        "an SQLite database without an application id".to_owned()
    } else {
        format!("an SQLite database of another application (application_id {app_id:#010x})")
    };
    const SHOWN: usize = 5;
    let mut listed = tables
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if tables.len() > SHOWN {
        listed.push_str(&format!(" and {} more", tables.len() - SHOWN));
    }
    if listed.is_empty() {
        owner
    } else {
        format!("{owner}, with tables {listed}")
    }
}

/// The schema version from which the index holds the notes folded.
const FOLDED_SINCE: i64 = 4;

/// Makes the search index and its vocabulary again from the notes, folded.
pub(super) fn rebuild_search_index(conn: &Connection) -> rusqlite::Result<()> {
    // FTS5 re-reads its external content, the `notes_folded` view, for 'rebuild'.
    conn.execute_batch(
        "DELETE FROM note_terms;
         DELETE FROM search_terms;
         UPDATE search_stats SET notes = 0, tokens = 0 WHERE id = 1;",
    )?;
    super::terms::backfill(conn)?;
    conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('rebuild')", [])?;
    Ok(())
}

/// Brings a blank or older store to [`SCHEMA_VERSION`]; seeds a blank one when asked.
///
/// Runs inside the caller's IMMEDIATE transaction, so a crash or a second process never sees
/// half a schema, and seeding happens exactly once.
pub(super) fn upgrade(conn: &Connection, from: i64, seed: bool) -> rusqlite::Result<()> {
    if from == 0 {
        conn.execute_batch(CURRENT)?;
    } else {
        let start = usize::try_from(from).unwrap_or(0);
        for migration in MIGRATIONS.iter().skip(start) {
            conn.execute_batch(migration)?;
        }
    }
    // Version 4 empties the vocabulary (version 2 made it empty); a store that already has
    // notes counts it again from them.
    if from > 0 && from < FOLDED_SINCE {
        // Counted again from the notes, each new term with its stem.
        super::terms::backfill(conn)?;
    } else if from > 0 && from < STEMMED_SINCE {
        super::terms::fill_stems(conn)?;
    }
    if from > 0 && from < LINKED_SINCE {
        super::link_index::rebuild(conn)?;
    }
    if from == 0 {
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
        if seed {
            let now = crate::note::now_rfc3339();
            let mut vocabulary = super::terms::VocabularyChanges::default();
            for (id, title, tags, body) in crate::store::SEED_NOTES {
                let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
                let stamps = super::writes::Stamps::now(&now);
                let draft = NoteDraft {
                    id: (*id).to_owned(),
                    title: (*title).to_owned(),
                    tags,
                    body: (*body).to_owned(),
                };
                let seeded = Provenance::write(SEEDED_BY);
                super::writes::put_in(
                    conn,
                    &mut vocabulary,
                    draft,
                    PutMode::CreateOnly,
                    stamps,
                    &seeded,
                )?;
            }
            vocabulary.apply(conn)?;
        }
    }
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a connection can tell of a store's schema and contents: each object's kind
    /// and name, each table's columns (`table_xinfo`: names, types, constraints, defaults,
    /// keys), each index's columns and `WHERE`, each view's and virtual table's definition,
    /// and every row of every table (the search index's own tables included).
    fn describe(conn: &Connection) -> Vec<String> {
        let squeeze = |sql: &str| sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut objects: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT type, name, sql FROM sqlite_schema ORDER BY type, name")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        objects.sort();
        let mut out = Vec::new();
        for (kind, name, sql) in objects {
            out.push(format!("{kind} {name}"));
            let pragma = match kind.as_str() {
                "table" => "table_xinfo",
                "index" => "index_xinfo",
                _ => "",
            };
            let virtual_or_view = sql
                .as_deref()
                .is_some_and(|sql| sql.starts_with("CREATE VIRTUAL") || kind == "view");
            if virtual_or_view {
                out.push(squeeze(sql.as_deref().unwrap_or_default()));
            } else if !pragma.is_empty() {
                out.push(rows(
                    conn,
                    &format!("SELECT * FROM pragma_{pragma}('{name}')"),
                ));
            }
            if kind == "index"
                && let Some(sql) = &sql
            {
                // The part after the columns: a partial index's condition.
                out.push(squeeze(sql.rsplit(')').next().unwrap_or_default()));
            }
            if kind == "table" && !virtual_or_view {
                out.push(rows(conn, &format!("SELECT * FROM \"{name}\" ORDER BY 1")));
            }
        }
        out
    }

    /// Every row `sql` returns, every column's value, as text.
    fn rows(conn: &Connection, sql: &str) -> String {
        let mut stmt = conn.prepare(sql).unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..columns)
                    .map(|i| r.get::<_, rusqlite::types::Value>(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        format!("{rows:?}")
    }

    fn blank() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        super::super::fold_function::register(&conn).unwrap();
        conn
    }

    #[test]
    fn a_new_store_is_what_the_migrations_make() {
        let migrated = blank();
        for migration in MIGRATIONS {
            migrated.execute_batch(migration).unwrap();
        }
        let made = blank();
        made.execute_batch(CURRENT).unwrap();
        let (migrated, made) = (describe(&migrated), describe(&made));
        assert!(migrated.len() > 40, "{migrated:#?}");
        assert_eq!(made, migrated);
    }

    #[test]
    fn the_kept_prefix_lengths_are_the_index_option() {
        let lengths: Vec<String> = KEPT_PREFIX_CHARS.iter().map(usize::to_string).collect();
        let option = format!("prefix = '{}'", lengths.join(" "));
        assert!(V3.contains(&option), "V3 declares {option}");
        assert!(V4.contains(&option), "V4 declares {option}");
        assert!(CURRENT.contains(&option), "CURRENT declares {option}");
    }
}
