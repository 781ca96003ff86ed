//! Search by meaning and hybrid search on each backend, with the bundled encoder.

use super::*;

/// Notes whose words share nothing with the queries below.
async fn garage_and_kitchen() -> Store {
    let store = empty().await;
    for (id, title, tags, body) in [
        (
            "car",
            "Fixing the car",
            &["garage"][..],
            "The mechanic replaced the engine's timing belt and the brakes.",
        ),
        (
            "groceries",
            "Grocery list",
            &["home"][..],
            "Milk, eggs, bread and apples for the week.",
        ),
        (
            "meeting",
            "Meeting notes",
            &["work"][..],
            "Date, attendees, decisions and follow-ups.",
        ),
    ] {
        store
            .put(draft(id, title, tags, body), PutMode::CreateOnly)
            .await
            .unwrap();
    }
    store
}

/// The ids `search` gives once the background indexer has caught up (it starts at the first
/// search by meaning).
async fn found_by_meaning(
    store: &Store,
    query: &str,
    tags: &[String],
    expect_first: &str,
) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let hits = store.search_by_meaning(query, tags, 10).await.unwrap();
        let ids: Vec<String> = hits.iter().map(|h| h.id.clone()).collect();
        if ids.first().map(String::as_str) == Some(expect_first)
            || std::time::Instant::now() > deadline
        {
            return ids;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

on_both_backends! {
    async fn a_paraphrase_is_found_that_no_word_matches() {
        let store = garage_and_kitchen().await;
        assert!(store.search("automobile repair", &[], 10).await.unwrap().is_empty(), "no word matches");
        let ids = found_by_meaning(&store, "automobile repair", &[], "car").await;
        assert_eq!(ids.first().map(String::as_str), Some("car"), "{ids:?}");
        let ids = found_by_meaning(&store, "food shopping", &[], "groceries").await;
        assert_eq!(ids.first().map(String::as_str), Some("groceries"), "{ids:?}");
        // The tags filter holds in every mode.
        let home = vec!["home".to_owned()];
        let hits = store.search_by_meaning("automobile repair", &home, 10).await.unwrap();
        assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["groceries"]);
        let hybrid = store.search_hybrid("automobile repair", &home, 10).await.unwrap();
        assert!(hybrid.iter().all(|h| h.tags.contains(&"home".to_owned())));
    }

    async fn hybrid_needs_only_some_words_and_keeps_meaning() {
        let store = garage_and_kitchen().await;
        found_by_meaning(&store, "vehicle maintenance", &[], "car").await;
        found_by_meaning(&store, "food shopping", &[], "groceries").await;
        // "brakes" is a word of the car note; "shopping" a meaning of the grocery list.
        let hits = store.search_hybrid("brakes shopping", &[], 10).await.unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert!(ids.contains(&"car") && ids.contains(&"groceries"), "{ids:?}");
        assert!(store.search("brakes shopping", &[], 10).await.unwrap().is_empty(), "words needs both");
    }

    async fn vectors_follow_writes_deletes_and_restores() {
        let store = garage_and_kitchen().await;
        found_by_meaning(&store, "automobile repair", &[], "car").await;
        store.put(draft("bike", "Bicycle", &[], "The bicycle got a new chain and fresh tyres at the repair shop."), PutMode::CreateOnly).await.unwrap();
        let ids = found_by_meaning(&store, "bicycle repair", &[], "bike").await;
        assert_eq!(ids.first().map(String::as_str), Some("bike"), "a write is found: {ids:?}");
        store.delete("car").await.unwrap();
        let hits = store.search_by_meaning("automobile repair", &[], 10).await.unwrap();
        assert!(hits.iter().all(|h| h.id != "car"), "a deleted note is gone at once");
        store.restore("car", 1).await.unwrap();
        let ids = found_by_meaning(&store, "automobile repair", &[], "car").await;
        assert_eq!(ids.first().map(String::as_str), Some("car"), "{ids:?}");
        // A note rewritten is found by what it says now.
        store.put(draft("car", "Fixing the car", &[], "Apples, pears and plums from the market."), PutMode::Replace).await.unwrap();
        let ids = found_by_meaning(&store, "fruit", &[], "car").await;
        assert_eq!(ids.first().map(String::as_str), Some("car"), "{ids:?}");
        store.verify().await.unwrap();
    }
}

/// A store reopened while its vectors were being made goes on from where it was.
/// How long the restart test waits for the vectors: it asks that indexing goes on, not how
/// fast. Beside the rest of the suite on two busy cores, a debug build's encoder took over a
/// minute for these 40 notes that it indexes in 10 s alone.
const INDEXING_PATIENCE: Duration = Duration::from_secs(300);

#[tokio::test]
async fn indexing_goes_on_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkb.db");
    let notes: Vec<NoteDraft> = (0..40)
        .map(|n| {
            draft(
                &format!("n{n}"),
                &format!("Note {n}"),
                &[],
                &format!("Entry number {n} of a long diary."),
            )
        })
        .collect();
    let indexed = |store: &Store| {
        let store = store.clone();
        async move {
            store
                .search_by_meaning("diary", &[], 100)
                .await
                .unwrap()
                .len()
        }
    };
    {
        let store = sqlite::open(&path, false).unwrap();
        store.put_many(notes, PutMode::CreateOnly).await.unwrap();
        let deadline = std::time::Instant::now() + INDEXING_PATIENCE;
        while indexed(&store).await == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(indexed(&store).await > 0, "indexing started");
    }
    let store = sqlite::open(&path, false).unwrap();
    let deadline = std::time::Instant::now() + INDEXING_PATIENCE;
    while indexed(&store).await < 40 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        indexed(&store).await,
        40,
        "every note has its vectors after the restart"
    );
    store.verify().await.unwrap();
}

/// Removes the vectors of `user`'s note `id` with triggers off, as only a hand-made change
/// could: their generation does not move, so a server that kept them in memory still has them.
async fn remove_vectors_unseen(url: &str, user: &str, id: &str) {
    postgres::testing::execute(
        url,
        &format!(
            "SET session_replication_role = replica;
             DELETE FROM pkb_note_vectors WHERE owner = '{user}' AND id = '{id}'"
        ),
    )
    .await;
}

/// On PostgreSQL a user's vectors are kept in memory between searches by meaning while their
/// generation stays, and read again once any process has added or removed one.
#[tokio::test]
async fn postgresql_keeps_vectors_until_any_process_changes_them() {
    let Some(admin) = postgres::testing::admin_url() else {
        return;
    };
    let url = postgres::testing::database(&admin, "pkb_unit_tests").await;
    let user = postgres::testing::fresh_key();
    let here = postgres::PgDatabase::connect(&url, false)
        .await
        .unwrap()
        .store_for(&user);
    for (id, title, body) in [
        (
            "car",
            "Fixing the car",
            "The mechanic replaced the engine's timing belt and the brakes.",
        ),
        (
            "groceries",
            "Grocery list",
            "Milk, eggs, bread and apples for the week.",
        ),
    ] {
        here.put(draft(id, title, &[], body), PutMode::CreateOnly)
            .await
            .unwrap();
    }
    found_by_meaning(&here, "automobile repair", &[], "car").await;
    let ids = found_by_meaning(&here, "food shopping", &[], "groceries").await;
    assert_eq!(
        ids.first().map(String::as_str),
        Some("groceries"),
        "{ids:?}"
    );

    // Removed behind the generation's back, the car's vectors are still in memory: the
    // search read none of them again.
    remove_vectors_unseen(&url, &user, "car").await;
    let hits = here
        .search_by_meaning("automobile repair", &[], 10)
        .await
        .unwrap();
    assert_eq!(
        hits.first().map(|h| h.id.as_str()),
        Some("car"),
        "kept: {hits:?}"
    );

    // A note deleted through another process takes its vectors with it, and moves the
    // generation in the same commit.
    let elsewhere = postgres::PgDatabase::connect(&url, false)
        .await
        .unwrap()
        .store_for(&user);
    elsewhere.delete("groceries").await.unwrap();
    let hits = here
        .search_by_meaning("food shopping", &[], 10)
        .await
        .unwrap();
    assert!(
        hits.iter().all(|h| h.id != "groceries"),
        "read again: {hits:?}"
    );
}

/// The test model of [`postgresql_reads_the_vectors_added_since_and_misses_none_added_meanwhile`].
const MODEL: &str = "test-model@1";
/// How many notes it has.
const NOTES: usize = 60;

fn note_id(n: usize) -> String {
    format!("n{n:02}")
}

/// Gives note `n` two passages of a vector of its own.
async fn keep_vectors(store: &Store, n: usize) {
    let angle = n as f32 / NOTES as f32;
    let mut vector = vec![0.0; 8];
    (vector[0], vector[1]) = (angle.cos(), angle.sin());
    let kept = store
        .engine
        .put_vectors(&note_id(n), 1, MODEL, vec![vector.clone(), vector])
        .await
        .unwrap();
    assert!(kept, "n{n} is at version 1");
}

/// Sorted, the ids of every note with vectors that a search by meaning finds.
async fn found(store: &Store) -> Vec<String> {
    let mut query = vec![0.0; 8];
    query[0] = 1.0;
    let mut ids: Vec<String> = store
        .engine
        .nearest(MODEL, &query, &[], 1_000)
        .await
        .unwrap()
        .into_iter()
        .map(|hit| hit.id)
        .collect();
    ids.sort();
    ids
}

/// On PostgreSQL a search reads only the vectors added since its user's matrix was read, while
/// none was removed; added by other processes, committing in any order while it searches, none
/// of them is missed.
#[tokio::test]
async fn postgresql_reads_the_vectors_added_since_and_misses_none_added_meanwhile() {
    let Some(admin) = postgres::testing::admin_url() else {
        return;
    };
    let url = postgres::testing::database(&admin, "pkb_unit_tests").await;
    let user = postgres::testing::fresh_key();
    let elsewhere = || async {
        postgres::PgDatabase::connect(&url, false)
            .await
            .unwrap()
            .store_for(&user)
    };
    let here = elsewhere().await;
    for n in 0..NOTES {
        here.put(
            draft(&note_id(n), &format!("Note {n}"), &[], "Some words."),
            PutMode::CreateOnly,
        )
        .await
        .unwrap();
    }
    for n in 0..10 {
        keep_vectors(&here, n).await;
    }
    let ids = |notes: std::ops::Range<usize>| notes.map(note_id).collect::<Vec<_>>();
    assert_eq!(found(&here).await, ids(0..10));

    // Removed behind the generation's back, n00's vectors stay in the matrix kept: the
    // search after another process added n10's read only those.
    remove_vectors_unseen(&url, &user, "n00").await;
    keep_vectors(&elsewhere().await, 10).await;
    assert_eq!(found(&here).await, ids(0..11));

    // Five processes add the rest, note by note, while this one searches.
    let mut writers = tokio::task::JoinSet::new();
    for writer in 0..5 {
        let store = elsewhere().await;
        writers.spawn(async move {
            for n in (11 + writer..NOTES).step_by(5) {
                keep_vectors(&store, n).await;
            }
        });
    }
    let reader = {
        let here = here.clone();
        tokio::spawn(async move {
            let mut searches = 0;
            while found(&here).await.len() < NOTES {
                searches += 1;
            }
            searches
        })
    };
    writers.join_all().await;
    tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("every vector added is found")
        .unwrap();
    assert_eq!(found(&here).await, ids(0..NOTES));
    // Read whole by a process that kept nothing, n00 is gone.
    assert_eq!(found(&elsewhere().await).await, ids(1..NOTES));

    // A removal through any process has the matrix read whole again.
    elsewhere().await.delete("n05").await.unwrap();
    let mut left = ids(1..NOTES);
    left.retain(|n| n != "n05");
    assert_eq!(found(&here).await, left);

    // Vectors removed unseen and then added again through another process are stamped
    // while the kept matrix still holds the note: it is read whole, not holding it twice.
    remove_vectors_unseen(&url, &user, "n02").await;
    keep_vectors(&elsewhere().await, 2).await;
    assert_eq!(found(&here).await, left);

    // A generation gone back (the database restored from an older copy) has it read whole.
    remove_vectors_unseen(&url, &user, "n01").await;
    postgres::testing::execute(
        &url,
        &format!("UPDATE pkb_vector_generation SET generation = 1 WHERE owner = '{user}'"),
    )
    .await;
    left.retain(|n| n != "n01");
    assert_eq!(found(&here).await, left);
}

/// On SQLite, vectors removed by hand (no removal counted) and then made again are read as
/// added while the kept matrix holds their note: it is read whole, not holding it twice.
#[tokio::test]
async fn sqlite_reads_whole_when_a_note_read_as_added_is_one_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pkb.db");
    let store = sqlite::open(&path, false).unwrap();
    for n in 0..4 {
        store
            .put(
                draft(&note_id(n), &format!("Note {n}"), &[], "Some words."),
                PutMode::CreateOnly,
            )
            .await
            .unwrap();
        keep_vectors(&store, n).await;
    }
    let ids: Vec<String> = (0..4).map(note_id).collect();
    assert_eq!(found(&store).await, ids);
    // Not the last note's: their new rows would take the row ids of those removed.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "DELETE FROM note_vectors WHERE note = (SELECT seq FROM notes WHERE id = 'n01')",
            [],
        )
        .unwrap();
    keep_vectors(&store, 1).await;
    assert_eq!(found(&store).await, ids);
}
