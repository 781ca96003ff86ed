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
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while indexed(&store).await == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(indexed(&store).await > 0, "indexing started");
    }
    let store = sqlite::open(&path, false).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
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

    // Removed behind the generation's back (with triggers off, as only a hand-made change
    // could), the car's vectors are still in memory: the search read none of them again.
    postgres::testing::execute(
        &url,
        &format!(
            "SET session_replication_role = replica;
             DELETE FROM pkb_note_vectors WHERE owner = '{user}' AND id = 'car'"
        ),
    )
    .await;
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
