//! Opening store files: new, existing, and every kind of file that must be refused untouched.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use pkb_core::store::sqlite::{DamageCheck, SqliteOptions};
use pkb_core::store::{
    ChangeKind, NoteDraft, PutMode, PutOutcome, Store, StoreError, VersionLookup, sqlite,
};
use sha2::{Digest, Sha256};

fn sha256(path: &Path) -> String {
    let bytes = fs::read(path).expect("read file");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file in `dir` with its hash, so a test can tell that nothing was added or changed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let h = sha256(&p);
            (p, h)
        })
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn draft(id: &str, body: &str) -> NoteDraft {
    NoteDraft {
        id: id.to_owned(),
        title: format!("Title of {id}"),
        tags: vec!["t".to_owned()],
        body: body.to_owned(),
    }
}

/// A store file holding `n` notes with ~1 KiB bodies, closed cleanly (no WAL left).
fn pkb_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("pkb.db");
    let store = sqlite::open(&path, true).expect("create store");
    let drafts = (0..n)
        .map(|i| draft(&format!("n{i}"), &format!("body {i} ").repeat(100)))
        .collect();
    block_on(store.put_many(drafts, PutMode::CreateOnly)).expect("fill store");
    drop(store);
    assert!(
        !dir.join("pkb.db-wal").exists(),
        "closing the last connection folds the WAL into the file"
    );
    path
}

/// Takes a store back to how version 9 made it: no stems in the search vocabulary.
fn without_stems(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "DROP INDEX search_terms_by_stem; ALTER TABLE search_terms DROP COLUMN stem;
         PRAGMA user_version = 9;",
    )
    .unwrap();
}

/// Takes a store back to how version 7 made it: no generation of the vectors.
fn without_vector_generation(conn: &rusqlite::Connection) {
    without_stems(conn);
    conn.execute_batch("DROP TABLE vector_generation; PRAGMA user_version = 7;")
        .unwrap();
}

/// Takes a store back to how versions before 7 made it: no vectors.
fn without_vectors(conn: &rusqlite::Connection) {
    without_vector_generation(conn);
    conn.execute_batch("DROP TABLE note_vectors; PRAGMA user_version = 6;")
        .unwrap();
}

/// Takes a store back to how versions before 6 made it: no link index.
fn without_links(conn: &rusqlite::Connection) {
    without_vectors(conn);
    conn.execute_batch(
        "DROP TABLE note_links; DROP INDEX notes_by_title_key;
         ALTER TABLE notes DROP COLUMN title_key; PRAGMA user_version = 5;",
    )
    .unwrap();
}

/// Takes a store back to how versions before 5 made it: no versions of notes kept.
fn without_versions(conn: &rusqlite::Connection) {
    without_links(conn);
    conn.execute_batch(
        "DROP TABLE note_versions; ALTER TABLE notes DROP COLUMN version; PRAGMA user_version = 4;",
    )
    .unwrap();
}

/// Takes a store's search index back to how versions before 4 made it, of the notes as
/// stored, with the index `options` given, and the file to `version`.
fn index_unfolded(conn: &rusqlite::Connection, options: &str, version: i64) {
    without_versions(conn);
    conn.execute_batch(&format!(
        "DROP TABLE notes_fts; DROP VIEW notes_folded;
         CREATE VIRTUAL TABLE notes_fts USING fts5 (
             title, tags, body, content = 'notes', content_rowid = 'seq',
             tokenize = 'unicode61 remove_diacritics 2'{options}
         );
         INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
         PRAGMA user_version = {version};"
    ))
    .unwrap();
}

/// The file's schema version, and the statement that made its search index.
fn version_and_index(path: &Path) -> (i64, String) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "SELECT (SELECT user_version FROM pragma_user_version),
                (SELECT sql FROM sqlite_schema WHERE name = 'notes_fts')",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// Opens `path` with every page checked before `open` returns, so that damage anywhere is
/// refused there.
fn open_checked(path: &Path) -> Result<Store, StoreError> {
    let options = SqliteOptions {
        damage_check: DamageCheck::BeforeOpen,
        ..SqliteOptions::default()
    };
    sqlite::open_with_options(path, &options)
}

/// Opens `path`, expecting a refusal whose message names the file, and checks that the
/// directory's files are byte-for-byte as before.
fn refused(path: &Path, allow_side_files: bool) -> StoreError {
    let dir = path.parent().expect("parent");
    let before = snapshot(dir);
    let err = open_checked(path).expect_err("the file must be refused");
    let message = err.to_string();
    eprintln!("refused: {message}");
    assert!(
        message.contains(&path.display().to_string()),
        "error names the file: {message}"
    );
    let after = snapshot(dir);
    assert_eq!(after.get(path), before.get(path), "file bytes unchanged");
    if allow_side_files {
        // SQLite's -wal/-shm companions of a WAL file may appear, and any reader updates
        // the -shm index; neither holds data. Everything else must be as it was.
        for (p, h) in &before {
            if !p.to_string_lossy().ends_with("-shm") {
                assert_eq!(after.get(p), Some(h), "{} unchanged", p.display());
            }
        }
    } else {
        assert_eq!(
            after,
            before,
            "no file added or changed in {}",
            dir.display()
        );
    }
    err
}

#[test]
fn refuses_a_garbage_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    let bytes: Vec<u8> = (0u32..8192)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&path, bytes).unwrap();
    let err = refused(&path, false);
    assert!(matches!(err, StoreError::NotPkb { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "{} is not a PKB database (it is not an SQLite database); it was left untouched",
            path.display()
        )
    );
}

#[test]
fn refuses_a_short_text_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    fs::write(&path, "just some text\n").unwrap();
    let err = refused(&path, false);
    assert!(matches!(err, StoreError::NotPkb { .. }), "{err:?}");
}

#[test]
fn refuses_a_truncated_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let len = fs::metadata(&path).unwrap().len();
    assert!(len > 100_000, "store is big enough to cut: {len}");
    cut_to(&path, len / 2);
    let err = refused(&path, true);
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("is damaged"), "{err}");
}

#[test]
fn a_store_cut_short_is_refused_by_the_quick_checks_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let len = fs::metadata(&path).unwrap().len();
    for cut in [len / 2, len - 2 * 4096, len - 1000] {
        let copy = dir.path().join(format!("cut-{cut}.db"));
        fs::copy(&path, &copy).unwrap();
        cut_to(&copy, cut);
        let before = sha256(&copy);
        let err = sqlite::open(&copy, true).expect_err("a store cut short is refused at open");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert_eq!(sha256(&copy), before, "file bytes unchanged");
    }
}

#[test]
fn refuses_a_store_cut_mid_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let len = fs::metadata(&path).unwrap().len();
    cut_to(&path, len - 1000);
    let err = refused(&path, true);
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
}

#[test]
fn refuses_a_store_missing_its_last_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let len = fs::metadata(&path).unwrap().len();
    cut_to(&path, len - 2 * 4096);
    let err = refused(&path, true);
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
}

#[test]
fn refuses_a_store_with_a_damaged_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    damage_a_middle_page(&path);
    let err = refused(&path, true);
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
}

/// Truncates the file at `path` to `len` bytes.
fn cut_to(path: &Path, len: u64) {
    let file = fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_len(len).unwrap();
}

/// Overwrites a page in the middle, away from the header, with a repeating pattern.
fn damage_a_middle_page(path: &Path) {
    let mut bytes = fs::read(path).unwrap();
    let page = 4096;
    let start = (bytes.len() / page / 2) * page;
    for (i, b) in bytes[start..start + page].iter_mut().enumerate() {
        *b = (i % 251) as u8;
    }
    fs::write(path, &bytes).unwrap();
}

#[test]
fn a_damaged_page_found_in_the_background_refuses_later_calls_and_leaves_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    damage_a_middle_page(&path);
    let before = sha256(&path);

    // The cheap checks at open pass; the damage is deep inside.
    let store = sqlite::open(&path, true).expect("opens before the page check ends");
    block_on(async {
        // A write racing the check lands in the WAL only, or is refused.
        let _ = store
            .put(
                draft("racing", "written while the check runs"),
                PutMode::CreateOnly,
            )
            .await;
        let found = store
            .damage_checked()
            .await
            .expect_err("the check finds the damage");
        assert!(matches!(found, StoreError::Corrupt { .. }), "{found:?}");
        let err = store
            .count()
            .await
            .expect_err("reads are refused once damage is known");
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
        let refused = store
            .put(draft("after", "refused"), PutMode::CreateOnly)
            .await
            .expect_err("writes are refused once damage is known");
        assert!(matches!(refused, StoreError::Corrupt { .. }), "{refused:?}");
    });
    drop(store);
    assert_eq!(
        sha256(&path),
        before,
        "the damaged file was never written to"
    );
}

#[test]
fn a_sound_store_checked_in_the_background_folds_its_wal_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        store.damage_checked().await.unwrap();
        // Once the check has passed, writes are checkpointed as usual.
        for i in 0..50 {
            store
                .put(
                    draft(&format!("late-{i}"), "after open"),
                    PutMode::CreateOnly,
                )
                .await
                .unwrap();
        }
        store.verify().await.unwrap();
    });
    drop(store);
    assert!(
        !dir.path().join("pkb.db-wal").exists(),
        "closing folds the WAL into the file once the check has passed"
    );
    let store = open_checked(&path).unwrap();
    assert_eq!(block_on(store.count()).unwrap(), 3 + 300 + 50);
}

#[test]
fn refuses_another_applications_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA application_id = 305419896;
             CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE ledger (id INTEGER PRIMARY KEY, amount REAL);
             INSERT INTO accounts (name) VALUES ('alice'), ('bob');",
        )
        .unwrap();
    }
    let err = refused(&path, false);
    assert!(matches!(err, StoreError::NotPkb { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("application_id 0x12345678"), "{message}");
    assert!(message.contains("accounts, ledger"), "{message}");
}

#[test]
fn refuses_a_database_without_application_id_that_has_tables() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT);")
            .unwrap();
    }
    let err = refused(&path, false);
    assert!(matches!(err, StoreError::NotPkb { .. }), "{err:?}");
    assert!(
        err.to_string().contains("without an application id"),
        "{err}"
    );
}

#[test]
fn leaves_a_foreign_wal_database_and_its_pending_log_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wal.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (x);")
            .unwrap();
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .unwrap();
        conn.execute_batch("INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
    }
    let wal = dir.path().join("wal.db-wal");
    assert!(
        fs::metadata(&wal).unwrap().len() > 0,
        "frames left in the WAL"
    );
    let wal_before = sha256(&wal);
    let err = refused(&path, true);
    assert!(matches!(err, StoreError::NotPkb { .. }), "{err:?}");
    assert_eq!(
        sha256(&wal),
        wal_before,
        "pending WAL frames not checkpointed"
    );
}

#[test]
fn refuses_a_store_from_a_newer_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 12).unwrap();
    }
    let err = refused(&path, true);
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 12,
                supported: 11,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{} was written by a newer PKB (schema version 12, this build reads up to 11)",
            path.display()
        )
    );
}

#[test]
fn refuses_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let err = sqlite::open(dir.path(), true).expect_err("a folder is not a store");
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains(&dir.path().display().to_string()));
}

#[test]
fn an_empty_file_becomes_a_new_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    fs::write(&path, b"").unwrap();
    let store = sqlite::open(&path, true).unwrap();
    assert_eq!(block_on(store.count()).unwrap(), 3);
}

#[test]
fn a_missing_file_is_created_with_its_folders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("pkb.db");
    let store = sqlite::open(&path, true).unwrap();
    assert!(path.is_file());
    assert_eq!(block_on(store.count()).unwrap(), 3);
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let app_id: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app_id, 0x504B_4231);
    assert_eq!(version, 11);
    assert_eq!(mode, "wal");
}

#[test]
fn seed_false_creates_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite::open(&dir.path().join("x.db"), false).unwrap();
    assert_eq!(block_on(store.count()).unwrap(), 0);
}

#[test]
fn reopening_keeps_notes_and_never_reseeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkb.db");
    {
        let store = sqlite::open(&path, true).unwrap();
        block_on(async {
            store
                .put(draft("kept", "kept body"), PutMode::CreateOnly)
                .await
                .unwrap();
            assert!(store.delete("todo").await.unwrap());
        });
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 3);
        assert_eq!(
            store.get("todo").await.unwrap(),
            None,
            "seeds only on creation"
        );
        let kept = store.get("kept").await.unwrap().unwrap();
        assert_eq!(kept.body, "kept body");
        assert_eq!(
            store.search("kept", &[], 10).await.unwrap()[0].id,
            "kept",
            "search index persisted"
        );
        store.verify().await.unwrap();
    });
}

#[test]
fn in_memory_stores_write_no_file_and_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let cwd_before = snapshot(dir.path());
    let a = sqlite::open_in_memory(true).unwrap();
    let b = sqlite::open_in_memory(false).unwrap();
    block_on(async {
        a.put(draft("x", ""), PutMode::CreateOnly).await.unwrap();
        assert_eq!(a.count().await.unwrap(), 4);
        assert_eq!(b.count().await.unwrap(), 0);
    });
    assert_eq!(snapshot(dir.path()), cwd_before);
}

#[test]
fn a_version_1_store_is_migrated_and_its_notes_stay_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 30);
    {
        // Version 1 had no search vocabulary, and indexed the notes unfolded, keeping no
        // prefixes: take the current store back to it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        index_unfolded(&conn, "", 1);
        conn.execute_batch(
            "DROP TABLE search_terms; DROP TABLE note_terms; DROP TABLE search_stats;",
        )
        .unwrap();
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 33, "no note lost or reseeded");
        let hits = store.search("bod 17", &[], 10).await.unwrap();
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("n17"), "{hits:?}");
        let hits = store.search("deploy", &[], 10).await.unwrap();
        assert_eq!(
            hits.first().map(|h| h.id.as_str()),
            Some("deploy-checklist")
        );
        store.verify().await.unwrap();
    });
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 11);
    let (notes, indexed): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT notes FROM search_stats), (SELECT count(*) FROM note_terms)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((notes, indexed), (33, 33));
}

#[test]
fn a_version_4_store_keeps_each_note_as_its_version_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    let before = {
        let store = sqlite::open(&path, true).unwrap();
        block_on(store.put(draft("n1", "changed before versions"), PutMode::Replace)).unwrap();
        let notes = block_on(store.list_with_bodies(None, 100)).unwrap();
        drop(store);
        // The previous release's file: the same notes, without their versions.
        without_versions(&rusqlite::Connection::open(&path).unwrap());
        notes
    };
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 6, "no note lost or reseeded");
        for old in &before {
            let note = store.get(&old.id).await.unwrap().unwrap();
            assert_eq!(note.version, 1, "{}", old.id);
            assert_eq!((&note.title, &note.body), (&old.title, &old.body));
            let history = store.history(&old.id, 10).await.unwrap().unwrap();
            assert_eq!(history.len(), 1);
            assert_eq!(history[0].version, 1);
            assert_eq!(history[0].change, ChangeKind::Created);
            assert_eq!(history[0].by, "unknown client");
            assert_eq!(history[0].at, old.updated_at);
            let VersionLookup::Found(first) = store.version(&old.id, 1).await.unwrap() else {
                panic!("version 1 of {}", old.id);
            };
            assert_eq!(first.note, note, "version 1 is the note as it was");
        }
        let replaced = store
            .put(draft("n1", "after the upgrade"), PutMode::Replace)
            .await
            .unwrap();
        assert!(matches!(replaced, PutOutcome::Replaced(ref n) if n.version == 2));
        store.verify().await.unwrap();
    });
    drop(store);
    let (version, _) = version_and_index(&path);
    assert_eq!(version, 11);
}

#[test]
fn a_version_7_store_keeps_its_vectors_and_counts_their_changes_from_then() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    let vectors = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM note_vectors", [], |r| r.get(0))
            .unwrap()
    };
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        without_vector_generation(&conn);
        conn.execute(
            "INSERT INTO note_vectors (note, passage, model, vector)
             SELECT seq, 0, 'test-model', x'0000803f' FROM notes",
            [],
        )
        .unwrap();
    }
    let before = vectors(&rusqlite::Connection::open(&path).unwrap());
    assert!(before >= 3);
    let store = sqlite::open(&path, true).unwrap();
    block_on(store.verify()).unwrap();
    drop(store);
    let (version, _) = version_and_index(&path);
    assert_eq!(version, 11);
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        vectors(&conn),
        before,
        "the vectors made before the upgrade stay"
    );
    let generation: (i64, i64) = conn
        .query_row(
            "SELECT generation, removals FROM vector_generation",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(generation, (0, 0));
}

#[test]
fn a_version_8_store_gets_the_count_of_removals() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        without_stems(&conn);
        conn.execute_batch(
            "ALTER TABLE vector_generation DROP COLUMN removals;
             UPDATE vector_generation SET generation = 5; PRAGMA user_version = 8;",
        )
        .unwrap();
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(store.verify()).unwrap();
    drop(store);
    assert_eq!(version_and_index(&path).0, 11);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let generation: (i64, i64) = conn
        .query_row(
            "SELECT generation, removals FROM vector_generation",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(generation, (5, 0), "the generation stays where it was");
}

#[test]
fn a_version_9_store_gets_the_stems_of_its_terms_and_finds_inflected_forms() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    {
        let store = sqlite::open(&path, true).unwrap();
        block_on(store.put(
            draft("release", "We deploy on Fridays"),
            PutMode::CreateOnly,
        ))
        .unwrap();
        drop(store);
        without_stems(&rusqlite::Connection::open(&path).unwrap());
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 7, "no note lost or reseeded");
        for query in ["deploying", "deployed", "deployments"] {
            let hits = store.search(query, &[], 10).await.unwrap();
            let mut ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
            ids.sort_unstable();
            assert_eq!(ids, ["deploy-checklist", "release"], "{query}");
        }
        store.verify().await.unwrap();
    });
    drop(store);
    assert_eq!(version_and_index(&path).0, 11);
}

#[test]
fn verify_reports_stems_the_stemmer_no_longer_gives_and_rebuild_mends_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE search_terms SET stem = 'elsewhere' WHERE term = 'body'")
        .unwrap();
    let store = open_checked(&path).unwrap();
    let err = block_on(store.verify()).expect_err("the stale stem is found");
    assert!(
        err.to_string().contains("1 terms hold another stem"),
        "{err}"
    );
    block_on(store.rebuild_indexes()).unwrap();
    block_on(store.verify()).expect("in step after the rebuild");
}

#[test]
fn a_version_5_store_gets_the_links_of_every_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 3);
    {
        let store = sqlite::open(&path, true).unwrap();
        block_on(store.put(
            draft("n1", "see [[Title of n2]] and [[todo]]"),
            PutMode::Replace,
        ))
        .unwrap();
        drop(store);
        without_links(&rusqlite::Connection::open(&path).unwrap());
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        let n1 = store.get_with_links("n1").await.unwrap().unwrap();
        let linked: Vec<Option<&str>> = n1.links.iter().map(|l| l.id.as_deref()).collect();
        assert_eq!(linked, [Some("n2"), Some("todo")]);
        let todo = store.get_with_links("todo").await.unwrap().unwrap();
        assert_eq!(
            todo.backlinks.len(),
            1,
            "found through the index the upgrade made"
        );
        store.verify().await.unwrap();
    });
    drop(store);
    let (version, _) = version_and_index(&path);
    assert_eq!(version, 11);
}

#[test]
fn a_version_2_store_gets_the_prefix_index_and_its_notes_stay_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 30);
    {
        // Version 2's index kept no prefixes: take the current store back to it.
        index_unfolded(&rusqlite::Connection::open(&path).unwrap(), "", 2);
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 33, "no note lost or reseeded");
        // A two-letter word of several terms (deploy, decisions, delete) is now read from
        // the kept prefixes.
        let hits = store.search("de", &[], 10).await.unwrap();
        let mut ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["deploy-checklist", "meeting-notes", "todo"]);
        let hits = store.search("bod 17", &[], 10).await.unwrap();
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("n17"), "{hits:?}");
        store.verify().await.unwrap();
    });
    drop(store);
    let (version, sql) = version_and_index(&path);
    assert_eq!(version, 11);
    assert!(sql.contains("prefix = '2 3'"), "{sql}");
}

#[test]
fn a_version_3_store_is_indexed_folded_and_finds_what_its_notes_read_as() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 30);
    {
        let store = sqlite::open(&path, true).unwrap();
        block_on(store.put(
            draft("folded", "Ｃａｆé on the Straße"),
            PutMode::CreateOnly,
        ))
        .unwrap();
        drop(store);
        // Version 3 indexed the notes as stored: take the current store back to it.
        index_unfolded(
            &rusqlite::Connection::open(&path).unwrap(),
            ", prefix = '2 3'",
            3,
        );
    }
    let store = sqlite::open(&path, true).unwrap();
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 34, "no note lost or reseeded");
        for query in ["cafe", "strasse", "ＣＡＦＥ straße"] {
            let hits = store.search(query, &[], 10).await.unwrap();
            assert_eq!(
                hits.first().map(|h| h.id.as_str()),
                Some("folded"),
                "{query}"
            );
        }
        let hits = store.search("bod 17", &[], 10).await.unwrap();
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("n17"), "{hits:?}");
        store.verify().await.unwrap();
    });
    drop(store);
    let (version, sql) = version_and_index(&path);
    assert_eq!(version, 11);
    assert!(sql.contains("content = 'notes_folded'"), "{sql}");
}

#[test]
fn a_damaged_store_outside_wal_mode_is_refused_at_open_even_in_the_background_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    {
        // A backup restored in rollback-journal mode: switching it to WAL would write it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "delete");
    }
    damage_a_middle_page(&path);
    let before = sha256(&path);
    let err = sqlite::open(&path, true).expect_err("checked before open returns");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
    assert_eq!(sha256(&path), before, "file bytes unchanged");
}

#[test]
fn a_short_session_that_writes_folds_its_wal_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let store = sqlite::open(&path, true).unwrap();
    block_on(store.put(draft("quick", "one write, then exit"), PutMode::CreateOnly)).unwrap();
    // Closing waits for the page check rather than cancelling it, so the write reaches the file.
    drop(store);
    assert!(
        !dir.path().join("pkb.db-wal").exists(),
        "the WAL was folded into the file"
    );
    let store = open_checked(&path).unwrap();
    assert!(block_on(store.get("quick")).unwrap().is_some());
}

#[test]
fn verify_reports_a_search_vocabulary_out_of_step_and_rebuild_mends_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 5);
    {
        // What an older build still writing to the file after the migration leaves: a note
        // with its search and tag entries but no term counts, and a tag entry gone astray.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            r#"INSERT INTO notes (id, title, tags, body, created_at, updated_at)
                   VALUES ('old', 'Written by an older build', '["legacy"]', 'zebra crossing',
                           '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');
               INSERT INTO notes_fts (rowid, title, tags, body)
                   SELECT seq, title, tags, body FROM notes WHERE id = 'old';
               INSERT INTO note_tags (tag, note) VALUES ('stray', 1);"#,
        )
        .unwrap();
    }
    let store = open_checked(&path).unwrap();
    let err = block_on(store.verify()).expect_err("the gap is found");
    assert!(
        err.to_string().contains("search vocabulary out of step"),
        "{err}"
    );

    block_on(async {
        // The readers hold what FTS5 cached of the index before the rebuild.
        for _ in 0..4 {
            assert_eq!(store.search("zebra body", &[], 10).await.unwrap().len(), 0);
        }
        assert_eq!(store.rebuild_indexes().await.unwrap(), 3 + 5 + 1);
        store.verify().await.expect("in step after the rebuild");
        for _ in 0..4 {
            let hits = store.search("zebra", &[], 10).await.unwrap();
            assert_eq!(hits.len(), 1);
            assert_eq!(hits[0].id, "old");
            assert_eq!(store.search("body 3", &[], 10).await.unwrap().len(), 1);
        }
        let tagged = store.search("zebra", &["legacy".to_owned()], 10).await;
        assert_eq!(tagged.unwrap().len(), 1, "tag index rebuilt from the notes");
        assert!(
            store
                .search("body", &["stray".to_owned()], 10)
                .await
                .unwrap()
                .is_empty(),
            "the stray tag entry is gone"
        );
        assert_eq!(store.count().await.unwrap(), 9, "no note lost");
    });
}

#[test]
fn a_note_reusing_the_number_of_one_deleted_behind_the_vocabulary_is_written_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 5);
    {
        // An older build deletes the newest note: its row and search entry, not its counts.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO notes_fts (notes_fts, rowid, title, tags, body)
                 SELECT 'delete', seq, title, tags, body FROM notes
                 WHERE seq = (SELECT max(seq) FROM notes);
             DELETE FROM note_tags WHERE note = (SELECT max(seq) FROM notes);
             DELETE FROM notes WHERE seq = (SELECT max(seq) FROM notes);",
        )
        .unwrap();
    }
    let store = open_checked(&path).unwrap();
    block_on(async {
        let err = store.verify().await.expect_err("counts without a note");
        assert!(
            err.to_string().contains("1 term counts without a note"),
            "{err}"
        );
        // SQLite gives the next note the freed number.
        let outcome = store
            .put(draft("new", "a fresh zebra"), PutMode::CreateOnly)
            .await
            .expect("the stale counts do not block the write");
        assert!(matches!(outcome, PutOutcome::Created(_)), "{outcome:?}");
        store.verify().await.expect("the stale counts went with it");
        let hits = store.search("zebra", &[], 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "new");
    });
}

/// The nice value of this process's thread named `name`, if it is running.
#[cfg(target_os = "linux")]
fn thread_nice(name: &str) -> Option<i64> {
    fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|task| {
            let comm = fs::read_to_string(task.path().join("comm")).ok()?;
            if comm.trim_end() != name {
                return None;
            }
            let stat = fs::read_to_string(task.path().join("stat")).ok()?;
            // Fields after the parenthesised name; the nice value is the 19th field overall.
            let after_name = &stat[stat.rfind(')')? + 2..];
            after_name.split(' ').nth(16)?.parse().ok()
        })
}

#[cfg(target_os = "linux")]
#[test]
fn the_background_page_check_runs_at_the_lowest_priority() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 30);
    let store = sqlite::open(&path, true).unwrap();
    // The check waits a quarter of a second before it starts, so its thread is there to be
    // seen once it has been scheduled, named itself and lowered its priority.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut nice = None;
    while nice != Some(19) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
        nice = thread_nice("pkb-page-check");
    }
    assert_eq!(nice, Some(19), "the page check's thread and its nice value");
    assert_eq!(
        thread_nice("pkb-read-0"),
        Some(0),
        "requests keep the normal priority"
    );
    block_on(store.damage_checked()).unwrap();
}

/// Overwrites the page of `path` that holds `marker` with a repeating pattern, as a disk that
/// misreads would hand it over; returns what to put back: its offset and bytes.
fn garble_the_page_holding(path: &Path, marker: &str) -> (u64, Vec<u8>) {
    use std::io::{Seek, SeekFrom, Write};
    let bytes = fs::read(path).unwrap();
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker.as_bytes())
        .expect("the marker is in the main file");
    let page = 4096;
    let start = at / page * page;
    let original = bytes[start..start + page].to_vec();
    let garbled: Vec<u8> = (0..page).map(|i| (i % 251) as u8).collect();
    let mut file = fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(start as u64)).unwrap();
    file.write_all(&garbled).unwrap();
    file.sync_all().unwrap();
    (start as u64, original)
}

fn put_back(path: &Path, (start, original): (u64, Vec<u8>)) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(start)).unwrap();
    file.write_all(&original).unwrap();
    file.sync_all().unwrap();
}

#[test]
fn damage_sqlite_reports_during_a_call_is_taken_back_once_the_whole_file_reads_sound() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let store = open_checked(&path).expect("every page is sound at open");
    block_on(async {
        assert!(store.get("n20").await.unwrap().is_some());
        // A page this process has not read yet, read wrong: what a failing disk does.
        let page = garble_the_page_holding(&path, "body 150 body 150");
        let reported = store
            .get("n150")
            .await
            .expect_err("SQLite reports the page it cannot read as damage");
        assert!(
            matches!(reported, StoreError::Corrupt { .. }),
            "{reported:?}"
        );
        let refused = store
            .get("n20")
            .await
            .expect_err("every call is refused while the report stands");
        assert!(matches!(refused, StoreError::Corrupt { .. }), "{refused:?}");
        // The look at the whole file finds the damage while it is there.
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        let still = store.count().await.expect_err("the damage is still there");
        assert!(matches!(still, StoreError::Corrupt { .. }), "{still:?}");

        // The disk comes back: the next look due finds every page sound and serving resumes.
        put_back(&path, page);
        let started = std::time::Instant::now();
        let note = loop {
            match store.get("n150").await {
                Ok(note) => break note.expect("the note is there"),
                Err(StoreError::Corrupt { .. }) if started.elapsed().as_secs() < 30 => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => panic!(
                    "still refused {:?} after the file was mended: {e}",
                    started.elapsed()
                ),
            }
        };
        assert_eq!(note.body, "body 150 ".repeat(100));
        let saved = store
            .put(
                draft("after", "written once the disk came back"),
                PutMode::CreateOnly,
            )
            .await
            .unwrap();
        assert!(matches!(saved, PutOutcome::Created(_)), "{saved:?}");
    });
    drop(store);
    let store = open_checked(&path).expect("sound after all");
    block_on(async {
        assert_eq!(store.count().await.unwrap(), 3 + 300 + 1);
        store.verify().await.unwrap();
    });
}

#[test]
fn a_store_closed_while_damage_sqlite_reported_stands_leaves_its_file_and_keeps_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let store = open_checked(&path).expect("every page is sound at open");
    let garbled = block_on(async {
        // A write after the check passed: it waits in the WAL for a checkpoint.
        store
            .put(draft("late", "in the log"), PutMode::CreateOnly)
            .await
            .unwrap();
        garble_the_page_holding(&path, "body 150 body 150");
        let reported = store.get("n150").await.expect_err("reported damaged");
        assert!(
            matches!(reported, StoreError::Corrupt { .. }),
            "{reported:?}"
        );
        sha256(&path)
    });
    drop(store);
    assert_eq!(
        sha256(&path),
        garbled,
        "closing copied nothing from the WAL into a file reported damaged"
    );
    assert!(dir.path().join("pkb.db-wal").exists(), "the WAL is kept");
}

#[test]
fn damage_the_page_check_finds_is_taken_back_once_the_whole_file_reads_sound() {
    let dir = tempfile::tempdir().unwrap();
    let path = pkb_file(dir.path(), 300);
    let page = garble_the_page_holding(&path, "body 150 body 150");
    let store = sqlite::open(&path, true).expect("opens before the page check ends");
    block_on(async {
        let found = store
            .damage_checked()
            .await
            .expect_err("the check finds it");
        assert!(matches!(found, StoreError::Corrupt { .. }), "{found:?}");
        put_back(&path, page);
        let started = std::time::Instant::now();
        loop {
            match store.count().await {
                Ok(count) => break assert_eq!(count, 3 + 300),
                Err(StoreError::Corrupt { .. }) if started.elapsed().as_secs() < 30 => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                Err(e) => panic!("still refused after the file was mended: {e}"),
            }
        }
        store
            .put(
                draft("after", "written once the file read sound"),
                PutMode::CreateOnly,
            )
            .await
            .unwrap();
    });
    drop(store);
    assert!(
        !dir.path().join("pkb.db-wal").exists(),
        "once sound, closing folds the WAL into the file"
    );
    let store = open_checked(&path).unwrap();
    assert_eq!(block_on(store.count()).unwrap(), 3 + 300 + 1);
}
