//! Links resolved when read and backlinks found by the link index, on each backend.

use super::*;
use crate::links::{Backlink, Link};

fn link(target: &str, to: Option<(&str, &str)>) -> Link {
    Link {
        target: target.to_owned(),
        id: to.map(|(id, _)| id.to_owned()),
        title: to.map(|(_, title)| title.to_owned()),
    }
}

fn back(id: &str, title: &str) -> Backlink {
    Backlink {
        id: id.to_owned(),
        title: title.to_owned(),
    }
}

async fn linked(store: &Store, id: &str) -> (Vec<Link>, Vec<Backlink>) {
    let found = store.get_with_links(id).await.unwrap().unwrap();
    (found.links, found.backlinks)
}

async fn put(store: &Store, id: &str, title: &str, body: &str) {
    store
        .put(draft(id, title, &[], body), PutMode::Replace)
        .await
        .unwrap();
}

on_both_backends! {
    async fn links_resolve_by_id_then_derived_id_then_title_and_each_note_once() {
        let store = empty().await;
        put(&store, "deploy-checklist", "Deploy checklist", "steps").await;
        put(&store, "plan", "Quarterly Plan", "goals").await;
        put(&store, "hub", "Hub",
            "[[deploy-checklist]] [[Deploy checklist|the list]] [[Deploy Checklist#Steps]] \
             [the list](pkb://notes/deploy-checklist) <pkb://notes/deploy-checklist> \
             [[quarterly plan]] [[Missing note]] `[[in code]]` [[missing note]] [[Hub]]").await;
        let (links, backlinks) = linked(&store, "hub").await;
        assert_eq!(links, [
            link("deploy-checklist", Some(("deploy-checklist", "Deploy checklist"))),
            link("quarterly plan", Some(("plan", "Quarterly Plan"))),
            link("Missing note", None),
            link("missing note", None),
            link("Hub", Some(("hub", "Hub"))),
        ], "one entry for the note linked five ways; unresolved targets each once");
        assert_eq!(backlinks, [back("hub", "Hub")], "a self-link is a backlink too");
        let (_, to_checklist) = linked(&store, "deploy-checklist").await;
        assert_eq!(to_checklist, [back("hub", "Hub")]);
        let (_, to_plan) = linked(&store, "plan").await;
        assert_eq!(to_plan, [back("hub", "Hub")]);
    }

    async fn a_target_that_is_an_id_wins_over_a_title() {
        let store = empty().await;
        // "Alpha" derives the id `alpha`; another note is titled "alpha" but has another id.
        put(&store, "alpha", "First letter", "").await;
        put(&store, "other", "Alpha", "").await;
        put(&store, "source", "Source", "[[Alpha]]").await;
        let (links, _) = linked(&store, "source").await;
        assert_eq!(links, [link("Alpha", Some(("alpha", "First letter")))]);
        let (_, to_alpha) = linked(&store, "alpha").await;
        let (_, to_other) = linked(&store, "other").await;
        assert_eq!((to_alpha.len(), to_other.len()), (1, 0), "only where the link resolves");
    }

    async fn of_notes_titled_alike_a_title_link_resolves_to_the_smallest_id() {
        let store = empty().await;
        // Neither id is the target or derived from it: the title decides, then the id.
        put(&store, "b-twin", "Twin", "").await;
        put(&store, "a-twin", "TWIN", "").await;
        put(&store, "source", "Source", "[[twin]]").await;
        let (links, _) = linked(&store, "source").await;
        assert_eq!(links, [link("twin", Some(("a-twin", "TWIN")))]);
        assert_eq!(linked(&store, "a-twin").await.1, [back("source", "Source")]);
        assert!(linked(&store, "b-twin").await.1.is_empty());
        assert_eq!(store.backlinks("a-twin").await.unwrap(), [back("source", "Source")]);
        assert!(store.backlinks("b-twin").await.unwrap().is_empty());
    }

    async fn links_follow_notes_made_later_deleted_and_restored() {
        let store = empty().await;
        put(&store, "a", "A", "see [[Later note]]").await;
        assert_eq!(linked(&store, "a").await.0, [link("Later note", None)]);
        put(&store, "later-note", "Later note", "").await;
        assert_eq!(linked(&store, "a").await.0, [link("Later note", Some(("later-note", "Later note")))]);
        assert_eq!(linked(&store, "later-note").await.1, [back("a", "A")]);
        store.delete("later-note").await.unwrap();
        assert_eq!(linked(&store, "a").await.0, [link("Later note", None)]);
        store.restore("later-note", 1).await.unwrap();
        assert_eq!(linked(&store, "later-note").await.1, [back("a", "A")]);
        // The link goes when the linking note changes or goes.
        let edit = NoteEdit { body: Some(crate::note_edit::BodyChange::Replace { old: "[[Later note]]".into(), new: "nothing".into(), all: false }), ..NoteEdit::default() };
        store.edit("a", &edit, None).await.unwrap();
        assert!(linked(&store, "later-note").await.1.is_empty());
        put(&store, "b", "B", "[[later-note]]").await;
        assert_eq!(linked(&store, "later-note").await.1, [back("b", "B")]);
        store.delete("b").await.unwrap();
        assert!(linked(&store, "later-note").await.1.is_empty());
        store.verify().await.unwrap();
    }

    async fn a_version_has_its_own_links_and_a_body_full_of_links_works() {
        let store = empty().await;
        put(&store, "x", "X", "[[Y]]").await;
        put(&store, "y", "Y", "").await;
        put(&store, "x", "X", "[[Z]]").await;
        let VersionLookup::Found(first) = store.version("x", 1).await.unwrap() else { panic!() };
        assert_eq!(store.links_now(&first.note).await.unwrap(), [link("Y", Some(("y", "Y")))]);
        let many: String = (0..900).map(|n| format!("[[n{n}]]")).collect::<Vec<_>>().join(" ");
        put(&store, "n7", "Seven", "").await;
        put(&store, "full", "Full", &many).await;
        let (links, _) = linked(&store, "full").await;
        assert_eq!(links.len(), 900);
        assert_eq!(links[7], link("n7", Some(("n7", "Seven"))));
        assert_eq!(linked(&store, "n7").await.1, [back("full", "Full")]);
        store.verify().await.unwrap();
    }
}

#[tokio::test]
async fn another_users_notes_are_never_linked_on_postgresql() {
    let Some(admin) = postgres::testing::admin_url() else {
        return;
    };
    let url = postgres::testing::database(&admin, "pkb_unit_tests").await;
    let database = postgres::PgDatabase::connect(&url, false).await.unwrap();
    let alice = database.store_for(&postgres::testing::fresh_key());
    let bob = database.store_for(&postgres::testing::fresh_key());
    alice
        .put(
            draft("secret", "Secret", &[], "[[mine]]"),
            PutMode::CreateOnly,
        )
        .await
        .unwrap();
    alice
        .put(draft("mine", "Mine", &[], ""), PutMode::CreateOnly)
        .await
        .unwrap();
    bob.put(
        draft("mine", "Mine", &[], "[[Secret]]"),
        PutMode::CreateOnly,
    )
    .await
    .unwrap();
    let bobs = bob.get_with_links("mine").await.unwrap().unwrap();
    assert_eq!(
        bobs.links,
        [link("Secret", None)],
        "alice's note does not resolve for bob"
    );
    assert!(
        bobs.backlinks.is_empty(),
        "alice's link to `mine` is not bob's backlink"
    );
    let alices = alice.get_with_links("mine").await.unwrap().unwrap();
    assert_eq!(alices.backlinks, [back("secret", "Secret")]);
}

/// Rows of `pkb_notes` that scans have read one by one in the database at `url`. A backend
/// reports its reads when it ends, or some seconds after it goes idle: the caller closes its
/// connections first.
async fn rows_read_one_by_one(url: &str) -> i64 {
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to the test database");
    let connection = tokio::spawn(connection);
    let read: i64 = client
        .query_one(
            "SELECT coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relname = 'pkb_notes'",
            &[],
        )
        .await
        .expect("read the table's statistics")
        .get(0);
    drop(client);
    let _ = connection.await;
    read
}

#[tokio::test]
async fn backlinks_on_postgresql_come_from_the_link_index_not_from_every_note() {
    let Some(admin) = postgres::testing::admin_url() else {
        return;
    };
    // A database of its own, so that only this test's reads are counted.
    let url = postgres::testing::scratch_database(&admin).await;
    let user = postgres::testing::fresh_key();
    const NOTES: usize = 3_000;
    let notes = (0..NOTES)
        .map(|i| {
            let next = (i + 1) % NOTES;
            draft(
                &format!("n{i}"),
                &format!("Note {i}"),
                &[],
                &format!("See [[Note {next}]]."),
            )
        })
        .collect();
    let database = postgres::PgDatabase::connect(&url, false).await.unwrap();
    database
        .store_for(&user)
        .put_many(notes, PutMode::CreateOnly)
        .await
        .unwrap();
    drop(database);
    postgres::testing::execute(&url, "ANALYZE pkb_notes").await;
    let before = rows_read_one_by_one(&url).await;
    let database = postgres::PgDatabase::connect(&url, false).await.unwrap();
    let store = database.store_for(&user);
    for i in 1..=5 {
        let linking = back(&format!("n{}", i - 1), &format!("Note {}", i - 1));
        let id = format!("n{i}");
        assert_eq!(
            store.backlinks(&id).await.unwrap(),
            std::slice::from_ref(&linking)
        );
        let (next, title) = (format!("n{}", i + 1), format!("Note {}", i + 1));
        let linked_to = link(&title, Some((&next, &title)));
        assert_eq!(linked(&store, &id).await, (vec![linked_to], vec![linking]));
    }
    drop((store, database));
    let read = rows_read_one_by_one(&url).await - before;
    // Read whole, the notes would have been read ten times over: 30,000 rows.
    assert!(
        read < NOTES as i64,
        "five backlinks and five fetches read {read} rows of {NOTES} notes one by one"
    );
}
