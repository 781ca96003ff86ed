//! Unit tests of the store's rules, each on SQLite (in memory) and on PostgreSQL.

use super::sqlite;
use super::*;

#[derive(Clone, Copy, Debug)]
enum Backend {
    Sqlite,
    Postgres,
}

tokio::task_local! {
    static BACKEND: Backend;
}

/// The backend of the running test.
fn backend() -> Backend {
    BACKEND.try_with(|b| *b).unwrap_or(Backend::Sqlite)
}

/// A new store on the test's backend: in memory, or a new user's rows of a shared database.
async fn open(seed: bool) -> Store {
    match backend() {
        Backend::Sqlite => sqlite::open_in_memory(seed).expect("in-memory store"),
        Backend::Postgres => {
            let admin = postgres::testing::admin_url().expect("checked by the test");
            let url = postgres::testing::database(&admin, "pkb_unit_tests").await;
            let database = postgres::PgDatabase::connect(&url, seed)
                .await
                .expect("connect to the test database");
            database.store_for(&postgres::testing::fresh_key())
        }
    }
}

/// Runs each test once on each backend, as `<name>::sqlite` and `<name>::postgres`.
macro_rules! on_both_backends {
    ($( async fn $name:ident() $body:block )*) => {
        $(
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                #[tokio::test]
                async fn sqlite() {
                    BACKEND.scope(Backend::Sqlite, async $body).await
                }

                #[tokio::test]
                async fn postgres() {
                    if postgres::testing::admin_url().is_none() {
                        return;
                    }
                    BACKEND.scope(Backend::Postgres, async $body).await
                }
            }
        )*
    };
}

fn draft(id: &str, title: &str, tags: &[&str], body: &str) -> NoteDraft {
    NoteDraft {
        id: id.to_owned(),
        title: title.to_owned(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        body: body.to_owned(),
    }
}

async fn empty() -> Store {
    open(false).await
}

async fn seeded() -> Store {
    open(true).await
}

async fn with_notes(notes: &[(&str, &str, &[&str], &str)]) -> Store {
    let store = empty().await;
    for (id, title, tags, body) in notes {
        let outcome = store
            .put(draft(id, title, tags, body), PutMode::CreateOnly)
            .await
            .expect("put");
        assert!(matches!(outcome, PutOutcome::Created(_)), "{id}");
    }
    store
}

async fn ids(store: &Store, query: &str) -> Vec<String> {
    store
        .search(query, &[], 50)
        .await
        .unwrap_or_else(|e| panic!("search {query:?} failed: {e}"))
        .into_iter()
        .map(|h| h.id)
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

// ---- seeding -------------------------------------------------------------------------------

on_both_backends! {
    async fn new_store_has_the_three_seed_notes() {
        let store = seeded().await;
        assert_eq!(store.count().await.unwrap(), 3);
        let deploy = store.get("deploy-checklist").await.unwrap().unwrap();
        assert_eq!(deploy.title, "Deploy checklist");
        assert_eq!(deploy.tags, ["deploy", "release"]);
        assert_eq!(
            deploy.body,
            "Run tests, build the app, then verify the health check."
        );
        assert_eq!(deploy.created_at, deploy.updated_at);
        let todo = store.get("todo").await.unwrap().unwrap();
        assert_eq!(
            (todo.title.as_str(), todo.tags.as_slice()),
            ("Todo", &["todo".to_owned()][..])
        );
        let meeting = store.get("meeting-notes").await.unwrap().unwrap();
        assert_eq!(meeting.title, "Meeting notes");
        assert_eq!(meeting.tags, ["meetings"]);
        assert_eq!(ids(&store, "health").await, ["deploy-checklist"]);
    }
}

on_both_backends! {
    async fn no_seed_means_empty() {
        let store = empty().await;
        assert_eq!(store.count().await.unwrap(), 0);
        assert!(store.list(None, 10).await.unwrap().is_empty());
    }
}

// ---- put -------------------------------------------------------------------------------------

on_both_backends! {
    async fn create_only_refuses_an_existing_id_and_changes_nothing() {
        let store = empty().await;
        let first = store
            .put(draft("a", "First", &["x"], "one"), PutMode::CreateOnly)
            .await
            .unwrap();
        let PutOutcome::Created(first) = first else {
            panic!("expected Created, got {first:?}")
        };
        let again = store
            .put(draft("a", "Second", &["y"], "two"), PutMode::CreateOnly)
            .await
            .unwrap();
        assert_eq!(again, PutOutcome::Exists);
        assert_eq!(store.get("a").await.unwrap(), Some(first));
        assert!(ids(&store, "second").await.is_empty());
    }
}

on_both_backends! {
    async fn replace_tagged_replaces_only_a_note_carrying_the_tag() {
        let store = empty().await;
        let mode = PutMode::ReplaceTagged("summary");
        let created = store
            .put(draft("s", "Fresh", &["summary"], "one"), mode)
            .await
            .unwrap();
        assert!(matches!(created, PutOutcome::Created(_)), "{created:?}");
        let replaced = store
            .put(draft("s", "Again", &["summary"], "two"), mode)
            .await
            .unwrap();
        assert!(matches!(replaced, PutOutcome::Replaced(_)), "{replaced:?}");

        let PutOutcome::Created(mine) = store
            .put(
                draft("m", "Mine", &["summaries"], "mine"),
                PutMode::CreateOnly,
            )
            .await
            .unwrap()
        else {
            panic!("a new id is created")
        };
        let refused = store
            .put(draft("m", "Not mine", &["summary"], "theirs"), mode)
            .await
            .unwrap();
        assert_eq!(refused, PutOutcome::Exists);
        assert_eq!(store.get("m").await.unwrap(), Some(mine));
    }
}

on_both_backends! {
    async fn replace_keeps_created_at_and_updates_everything_else() {
        let store = empty().await;
        let PutOutcome::Created(old) = store
            .put(
                draft("a", "Old title", &["old"], "old body"),
                PutMode::Replace,
            )
            .await
            .unwrap()
        else {
            panic!("replace of a missing note creates it")
        };
        std::thread::sleep(std::time::Duration::from_millis(3));
        let outcome = store
            .put(
                draft("a", "New title", &["new"], "new body"),
                PutMode::Replace,
            )
            .await
            .unwrap();
        let PutOutcome::Replaced(new) = outcome else {
            panic!("expected Replaced, got {outcome:?}")
        };
        assert_eq!(new.created_at, old.created_at);
        assert!(new.updated_at > old.updated_at, "{new:?}");
        assert_eq!(store.get("a").await.unwrap(), Some(new));
        assert_eq!(store.count().await.unwrap(), 1);
        // The search and tag indexes follow the replacement.
        assert!(ids(&store, "old").await.is_empty());
        assert_eq!(ids(&store, "new").await, ["a"]);
        assert_eq!(store.tags_with_prefix("", 10).await.unwrap(), ["new"]);
        store
            .verify()
            .await
            .expect("search index matches the notes");
    }
}

on_both_backends! {
    async fn put_trims_the_title_and_normalises_tags() {
        let store = empty().await;
        let PutOutcome::Created(note) = store
            .put(
                draft("a", "  Spaced  ", &[" Ops", "OPS", "", "Été "], "body"),
                PutMode::CreateOnly,
            )
            .await
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(note.title, "Spaced");
        assert_eq!(note.tags, ["ops", "été"]);
        assert_eq!(store.get("a").await.unwrap(), Some(note));
    }
}

on_both_backends! {
    async fn put_refuses_data_outside_the_contract() {
        let store = empty().await;
        let long = |n: usize| "x".repeat(n);
        let many_tags: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
        let cases = [
            draft("", "t", &[], ""),
            draft("Upper", "t", &[], ""),
            draft("a b", "t", &[], ""),
            draft(&long(101), "t", &[], ""),
            draft("a", "", &[], ""),
            draft("a", "   ", &[], ""),
            draft("a", &long(121), &[], ""),
            draft("a", "two\nlines", &[], ""),
            draft("a", "tab\there", &[], ""),
            draft("a", "t", &[&long(41)], ""),
            NoteDraft {
                tags: many_tags,
                ..draft("a", "t", &[], "")
            },
            draft("a", "t", &[], &long(10_001)),
        ];
        for case in cases {
            let err = store.put(case.clone(), PutMode::Replace).await;
            assert!(
                matches!(err, Err(StoreError::Invalid(_))),
                "{case:?} -> {err:?}"
            );
        }
        assert_eq!(store.count().await.unwrap(), 0);

        // Limits count characters, not bytes, and apply after trimming and de-duplication.
        let ok = [
            draft(
                &long(100),
                &"é".repeat(120),
                &[&"ß".repeat(40)],
                &"é".repeat(10_000),
            ),
            draft("b", &format!("  {}  ", long(120)), &[], ""),
            NoteDraft {
                tags: (0..30).map(|i| format!("T{}", i % 20)).collect(),
                ..draft("c", "t", &[], "")
            },
        ];
        for case in ok {
            let res = store.put(case.clone(), PutMode::CreateOnly).await;
            assert!(
                matches!(res, Ok(PutOutcome::Created(_))),
                "{case:?} -> {res:?}"
            );
        }
    }
}

on_both_backends! {
    async fn bodies_round_trip_exactly() {
        let store = empty().await;
        let body = "line 1\n\tline 2 \u{0} nul, emoji 🚀, RTL עברית, \"quotes\" 'single' \\ back";
        store
            .put(draft("a", "T", &[], body), PutMode::CreateOnly)
            .await
            .unwrap();
        assert_eq!(store.get("a").await.unwrap().unwrap().body, body);
    }
}

on_both_backends! {
    async fn put_many_is_all_or_nothing() {
        let store = empty().await;
        let outcomes = store
            .put_many(
                vec![
                    draft("a", "A", &[], ""),
                    draft("a", "A2", &[], ""),
                    draft("b", "B", &[], ""),
                ],
                PutMode::CreateOnly,
            )
            .await
            .unwrap();
        assert!(matches!(outcomes[0], PutOutcome::Created(_)));
        assert_eq!(outcomes[1], PutOutcome::Exists);
        assert!(matches!(outcomes[2], PutOutcome::Created(_)));
        let bad = store
            .put_many(
                vec![draft("c", "C", &[], ""), draft("BAD", "x", &[], "")],
                PutMode::CreateOnly,
            )
            .await;
        assert!(matches!(bad, Err(StoreError::Invalid(_))));
        assert_eq!(store.get("c").await.unwrap(), None);
        assert_eq!(store.count().await.unwrap(), 2);
    }
}

on_both_backends! {
    async fn put_dated_keeps_the_dates_it_brings() {
        let store = empty().await;
        let dates = |created: Option<&str>, updated: Option<&str>| NoteDates {
            created_at: created.map(str::to_owned),
            updated_at: updated.map(str::to_owned),
        };
        let outcomes = store
            .put_dated(
                vec![
                    (
                        draft("a", "A", &[], ""),
                        dates(Some("2024-03-01T10:00:00+01:00"), Some("2024-03-02")),
                    ),
                    (draft("b", "B", &[], ""), dates(None, None)),
                ],
                PutMode::CreateOnly,
            )
            .await
            .unwrap();
        let PutOutcome::Created(a) = &outcomes[0] else {
            panic!("{outcomes:?}")
        };
        assert_eq!(a.created_at, "2024-03-01T09:00:00.000Z");
        assert_eq!(a.updated_at, "2024-03-02T00:00:00.000Z");
        assert_eq!(store.get("a").await.unwrap().as_ref(), Some(a));
        let b = store.get("b").await.unwrap().unwrap();
        assert_eq!(b.created_at, b.updated_at, "no dates: now, for both");

        // Replacing without a created date keeps the note's own.
        store
            .put_dated(
                vec![(draft("a", "A2", &[], ""), dates(None, Some("2025-01-01")))],
                PutMode::Replace,
            )
            .await
            .unwrap();
        let replaced = store.get("a").await.unwrap().unwrap();
        assert_eq!(replaced.created_at, "2024-03-01T09:00:00.000Z");
        assert_eq!(replaced.updated_at, "2025-01-01T00:00:00.000Z");

        for (created, updated, rule) in [
            (
                Some("soon"),
                None,
                "created_at must be an RFC 3339 date and time",
            ),
            (
                Some("2024-02-01"),
                Some("2024-01-01"),
                "updated_at must not be before created_at",
            ),
        ] {
            let refused = store
                .put_dated(
                    vec![
                        (draft("c", "C", &[], ""), dates(None, None)),
                        (draft("d", "D", &[], ""), dates(created, updated)),
                    ],
                    PutMode::CreateOnly,
                )
                .await;
            assert!(
                matches!(&refused, Err(StoreError::Invalid(text)) if text == rule),
                "{refused:?}"
            );
            assert_eq!(store.get("c").await.unwrap(), None, "all or nothing");
        }
    }
}

on_both_backends! {
    async fn get_is_exact() {
        let store = with_notes(&[("deploy", "Deploy", &[], "")]).await;
        assert!(store.get("deploy").await.unwrap().is_some());
        for id in ["dep", "Deploy", "deploy ", "deploy%", "", "\u{0}"] {
            assert_eq!(store.get(id).await.unwrap(), None, "{id:?}");
        }
    }
}

on_both_backends! {
    async fn delete_removes_the_note_and_its_index_entries() {
        let store = with_notes(&[("a", "Alpha", &["greek"], "first letter")]).await;
        assert!(store.delete("a").await.unwrap());
        assert!(!store.delete("a").await.unwrap());
        assert_eq!(store.get("a").await.unwrap(), None);
        assert!(ids(&store, "alpha").await.is_empty());
        assert!(store.tags_with_prefix("", 10).await.unwrap().is_empty());
        store.verify().await.unwrap();
    }
}

// ---- list ------------------------------------------------------------------------------------

on_both_backends! {
    async fn list_pages_by_id() {
        let store = empty().await;
        let mut expected = Vec::new();
        for i in (0..25).rev() {
            let id = format!("n{i:02}");
            store
                .put(
                    draft(&id, &format!("Note {i}"), &["t"], "body"),
                    PutMode::CreateOnly,
                )
                .await
                .unwrap();
            expected.push(id);
        }
        expected.sort();
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = store.list(after.as_deref(), 10).await.unwrap();
            assert!(page.len() <= 10);
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            seen.extend(page.into_iter().map(|s| s.id));
        }
        assert_eq!(seen, expected);
        let first = &store.list(None, 1).await.unwrap()[0];
        assert_eq!(first.id, "n00");
        assert_eq!(first.title, "Note 0");
        assert_eq!(first.tags, ["t"]);
        assert!(store.list(None, 0).await.unwrap().is_empty());
        assert_eq!(store.list(Some("n23"), 10).await.unwrap().len(), 1);
        assert_eq!(store.list(Some("zzz"), 10).await.unwrap().len(), 0);
        assert_eq!(store.list(Some(""), 100).await.unwrap().len(), 25);
        assert_eq!(store.count().await.unwrap(), 25);
    }
}

// ---- search ----------------------------------------------------------------------------------

on_both_backends! {
    async fn search_requires_every_word() {
        let store = with_notes(&[
            ("a", "Deploy checklist", &[], "run the tests"),
            ("b", "Deploy notes", &[], "nothing else"),
            ("c", "Checklist", &[], "groceries"),
        ])
        .await;
        assert_eq!(ids(&store, "deploy checklist").await, ["a"]);
        assert_eq!(sorted(ids(&store, "deploy").await), ["a", "b"]);
        assert_eq!(
            ids(&store, "deploy tests").await,
            ["a"],
            "words may come from any field"
        );
        assert!(ids(&store, "deploy groceries").await.is_empty());
    }
}

on_both_backends! {
    async fn search_matches_words_as_prefixes() {
        let store = with_notes(&[("a", "Deploy checklist", &[], ""), ("b", "Depot", &[], "")]).await;
        assert_eq!(sorted(ids(&store, "dep").await), ["a", "b"]);
        assert_eq!(ids(&store, "deplo").await, ["a"]);
        assert_eq!(ids(&store, "dep check").await, ["a"]);
        assert!(
            ids(&store, "eploy").await.is_empty(),
            "prefixes, not substrings"
        );
    }
}

on_both_backends! {
    async fn search_matches_inflected_forms_both_ways() {
        let store = with_notes(&[
            ("says-deploy", "Fridays", &[], "We deploy the service"),
            ("says-deploying", "Rollout", &[], "Deploying the new build"),
            ("says-deployment", "Plan", &["deployment"], "for the team"),
            ("depot", "Depot", &[], "where the trucks park"),
        ])
        .await;
        let deploys = ["says-deploy", "says-deploying", "says-deployment"];
        for query in ["deploying", "deployed", "deployment", "deploys", "DEPLOYS", "deploy"] {
            assert_eq!(sorted(ids(&store, query).await), deploys, "{query}");
        }
        assert_eq!(
            ids(&store, "deployed fridays").await,
            ["says-deploy"],
            "every word still required"
        );
        assert!(ids(&store, "deployed trucks").await.is_empty());
        // A prefix of a word and of its stem both still match.
        assert_eq!(sorted(ids(&store, "deploym").await), ["says-deployment"]);
        assert_eq!(sorted(ids(&store, "dep").await), ["depot", "says-deploy", "says-deploying", "says-deployment"]);
        // Syntax stays plain text beside a form.
        assert_eq!(ids(&store, "\"deployed\" (fri*").await, ["says-deploy"]);
    }
}

on_both_backends! {
    async fn a_stem_is_not_itself_a_prefix() {
        let store = with_notes(&[
            ("run", "Morning", &[], "a run in the park"),
            ("runs", "Evening", &[], "she runs daily"),
            ("runway", "Airport", &[], "the runway lights"),
            ("ran", "Past", &[], "he ran"),
        ])
        .await;
        assert_eq!(sorted(ids(&store, "running").await), ["run", "runs"]);
        assert_eq!(sorted(ids(&store, "run").await), ["run", "runs", "runway"], "as a prefix");
        assert_eq!(ids(&store, "runways").await, ["runway"]);
        // Snowball stems suffixes; it knows no irregular forms.
        assert_eq!(ids(&store, "ran").await, ["ran"]);
    }
}

on_both_backends! {
    async fn inflected_forms_are_folded_as_words_are() {
        let store = with_notes(&[
            ("accented", "Café", &[], "Décisions prises"),
            ("full-width", "Ｄｅｐｌｏｙｉｎｇ", &[], ""),
        ])
        .await;
        assert_eq!(ids(&store, "decision").await, ["accented"]);
        assert_eq!(ids(&store, "DÉCISIONS").await, ["accented"]);
        assert_eq!(ids(&store, "deployed").await, ["full-width"]);
        assert_eq!(ids(&store, "cafés").await, ["accented"]);
    }
}

on_both_backends! {
    async fn the_any_word_search_matches_inflected_forms() {
        let store = with_notes(&[
            ("deploy", "Release", &[], "we deploy on fridays"),
            ("other", "Groceries", &[], "milk and eggs"),
        ])
        .await;
        let hits = store
            .engine
            .search_any_words("deploying zebras", &[], 10)
            .await
            .unwrap();
        let found: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(found, ["deploy"]);
    }
}

on_both_backends! {
    async fn search_ignores_case() {
        let store = with_notes(&[("a", "Deploy CHECKLIST", &["Ops"], "Straße ÉCOLE")]).await;
        for q in [
            "deploy",
            "DEPLOY",
            "checklist",
            "OPS",
            "straße",
            "STRASSE",
            "école",
            "ecole",
        ] {
            // ß is folded to ss on both sides, as ids fold it.
            assert_eq!(ids(&store, q).await, ["a"], "{q}");
        }
    }
}

on_both_backends! {
    async fn search_ignores_diacritics_both_ways() {
        let store = with_notes(&[
            ("accented", "Café crème", &[], "naïve résumé"),
            ("plain", "Cafe creme", &[], "naive resume"),
            ("decomposed", "Cafe\u{301} noir", &[], ""),
        ])
        .await;
        let all = ["accented", "decomposed", "plain"];
        assert_eq!(sorted(ids(&store, "café").await), all);
        assert_eq!(sorted(ids(&store, "cafe").await), all);
        assert_eq!(sorted(ids(&store, "CAFÉ").await), all);
        assert_eq!(sorted(ids(&store, "cafe\u{301}").await), all);
        assert_eq!(sorted(ids(&store, "resume").await), ["accented", "plain"]);
        assert_eq!(
            sorted(ids(&store, "RÉSUMÉ naïve").await),
            ["accented", "plain"]
        );
    }
}

on_both_backends! {
    async fn search_folds_compatibility_forms_and_unseen_joiners_as_ids_do() {
        let store = with_notes(&[
            ("full-width", "Ｃａｆé menu", &[], ""),
            ("mathematical", "Menu", &[], "𝐂𝐚𝐟𝐞 au lait"),
            ("soft-hyphen", "Menu", &["caf\u{AD}e"], ""),
            ("joiner", "Menu", &[], "ca\u{200D}fé noir"),
            ("plain", "Cafe", &[], "strasse"),
            ("sharp-s", "Straße", &[], "ﬁle"),
        ])
        .await;
        assert_eq!(
            sorted(ids(&store, "cafe").await),
            ["full-width", "joiner", "mathematical", "plain", "soft-hyphen"]
        );
        assert_eq!(sorted(ids(&store, "ＣＡＦＥ").await), sorted(ids(&store, "cafe").await));
        assert_eq!(sorted(ids(&store, "strasse").await), ["plain", "sharp-s"]);
        assert_eq!(sorted(ids(&store, "straße").await), ["plain", "sharp-s"]);
        assert_eq!(ids(&store, "file").await, ["sharp-s"]);
        assert_eq!(ids(&store, "ﬁ").await, ["sharp-s"]);
    }
}

#[tokio::test]
async fn a_word_spelled_as_several_syllables_is_searched_as_their_phrase() {
    // SQLite's store transliterates every script; PostgreSQL's keeps CJK as it is.
    let store = sqlite::open_in_memory(false).unwrap();
    for (id, body) in [
        ("tokyo", "東京の地図"),
        ("apart", "a dongle and a jingle"),
        ("latin", "Dong Jing, a name"),
    ] {
        store
            .put(draft(id, "Menu", &[], body), PutMode::CreateOnly)
            .await
            .unwrap();
    }
    assert_eq!(sorted(ids(&store, "東京").await), ["latin", "tokyo"]);
    assert_eq!(ids(&store, "東").await.len(), 3, "one syllable is a prefix");
}

#[tokio::test]
async fn search_transliterates_look_alike_letters_as_ids_do() {
    // SQLite's store folds exactly as ids are derived; PostgreSQL's has no transliteration.
    let store = sqlite::open_in_memory(false).unwrap();
    let look_alike = "c\u{430}f\u{435}"; // Cyrillic а and е
    assert_eq!(crate::note::derive_id(look_alike), "cafe");
    store
        .put(
            draft("look-alike", "Menu", &[], look_alike),
            PutMode::CreateOnly,
        )
        .await
        .unwrap();
    assert_eq!(ids(&store, "cafe").await, ["look-alike"]);
    assert_eq!(ids(&store, look_alike).await, ["look-alike"]);
}

on_both_backends! {
    async fn search_covers_title_tags_and_body() {
        let store = with_notes(&[
            ("t", "Kubernetes", &[], ""),
            ("g", "Other", &["kubernetes"], ""),
            ("b", "Third", &[], "about kubernetes clusters"),
        ])
        .await;
        // Title outranks tags, which outrank the body.
        assert_eq!(ids(&store, "kubernetes").await, ["t", "g", "b"]);
    }
}

on_both_backends! {
    async fn title_outranks_body_and_scores_descend() {
        let store = with_notes(&[
            (
                "body1",
                "Weekly report",
                &[],
                "the release went fine, release notes attached",
            ),
            ("title", "Release plan", &[], "what ships when"),
            ("body2", "Misc", &[], "a release"),
        ])
        .await;
        let hits = store.search("release", &[], 10).await.unwrap();
        assert_eq!(hits[0].id, "title");
        assert_eq!(hits.len(), 3);
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "{hits:?}"
        );
        assert!(
            hits.iter().all(|h| h.score > 0.0),
            "higher is better: {hits:?}"
        );
        assert_eq!(hits[0].title, "Release plan");
    }
}

on_both_backends! {
    async fn search_filters_by_all_given_tags() {
        let store = with_notes(&[
            ("a", "Plan A", &["work", "urgent"], "plan"),
            ("b", "Plan B", &["work"], "plan"),
            ("c", "Plan C", &["home", "urgent"], "plan"),
        ])
        .await;
        let tagged = |tags: &[&str]| {
            let store = store.clone();
            let tags: Vec<String> = tags.iter().map(|t| (*t).to_owned()).collect();
            async move {
                let hits = store.search("plan", &tags, 10).await.unwrap();
                sorted(hits.into_iter().map(|h| h.id).collect())
            }
        };
        assert_eq!(tagged(&[]).await, ["a", "b", "c"]);
        assert_eq!(tagged(&["work"]).await, ["a", "b"]);
        assert_eq!(tagged(&["work", "urgent"]).await, ["a"]);
        assert_eq!(
            tagged(&[" URGENT ", "urgent"]).await,
            ["a", "c"],
            "normalised like stored tags"
        );
        assert!(tagged(&["work", "home"]).await.is_empty());
        assert!(
            tagged(&["wor"]).await.is_empty(),
            "tags match whole, not as prefixes"
        );
        assert!(tagged(&["missing"]).await.is_empty());
        assert_eq!(
            tagged(&["", " "]).await,
            ["a", "b", "c"],
            "blank tags are dropped"
        );
    }
}

on_both_backends! {
    async fn search_respects_the_limit_and_keeps_the_best() {
        let store = empty().await;
        for i in 0..30 {
            let title = if i == 17 {
                "Budget".to_owned()
            } else {
                format!("Note {i}")
            };
            store
                .put(
                    draft(&format!("n{i}"), &title, &[], "budget talk"),
                    PutMode::CreateOnly,
                )
                .await
                .unwrap();
        }
        let hits = store.search("budget", &[], 5).await.unwrap();
        assert_eq!(hits.len(), 5);
        assert_eq!(hits[0].id, "n17");
        assert_eq!(store.search("budget", &[], 50).await.unwrap().len(), 30);
        assert!(store.search("budget", &[], 0).await.unwrap().is_empty());
        assert_eq!(
            store.search("budget", &[], usize::MAX).await.unwrap().len(),
            30
        );
    }
}

on_both_backends! {
    async fn search_syntax_is_plain_text() {
        let store = with_notes(&[
            (
                "a",
                "Deploy checklist",
                &["ops"],
                "title: the AND of NEAR things, or not",
            ),
            ("b", "Other", &[], "unrelated"),
        ])
        .await;
        let queries = [
            "\"",
            "\"deploy",
            "deploy\"",
            "\"deploy checklist\"",
            "*",
            "deploy*",
            "*deploy",
            "dep*loy",
            ":",
            "title:deploy",
            "title: deploy",
            "-",
            "-deploy",
            "deploy -checklist",
            "^",
            "^deploy",
            "AND",
            "OR",
            "NOT",
            "deploy AND",
            "AND deploy",
            "deploy OR other",
            "deploy NOT checklist",
            "NEAR(",
            "NEAR(deploy checklist)",
            "NEAR(deploy, 2)",
            ")",
            "(",
            "(deploy",
            "deploy)",
            "{title}: deploy",
            "+deploy",
            "deploy + checklist",
            "[deploy]",
            "'deploy'",
            "deploy;",
            "\\",
            "deploy\\",
            "%",
            "_",
            "?",
            "'",
            "`",
            "\u{0}deploy",
            "deploy\u{0}",
            "deploy\r\n",
        ];
        for q in queries {
            let res = store.search(q, &[], 10).await;
            assert!(res.is_ok(), "{q:?} -> {res:?}");
        }
        // The words around the syntax still count, as plain words.
        assert_eq!(ids(&store, "\"deploy checklist\"").await, ["a"]);
        assert_eq!(ids(&store, "title:deploy").await, ["a"]);
        assert_eq!(
            ids(&store, "deploy -checklist").await,
            ["a"],
            "- does not negate"
        );
        assert_eq!(
            ids(&store, "deploy OR not").await,
            ["a"],
            "OR and NOT are words that must match"
        );
        assert!(
            ids(&store, "deploy OR other").await.is_empty(),
            "OR does not widen the search"
        );
        assert!(
            ids(&store, "deploy NOT checklist")
                .await
                .contains(&"a".to_owned())
        );
        assert_eq!(ids(&store, "NEAR(deploy, things)").await, ["a"]);
        assert_eq!(ids(&store, "^deploy").await, ["a"]);
        assert_eq!(ids(&store, "dep*").await, ["a"]);
        assert!(
            ids(&store, "deploy unrelated").await.is_empty(),
            "OR is not implied"
        );
    }
}

on_both_backends! {
    async fn queries_without_words_find_nothing() {
        let store = seeded().await;
        for q in [
            "",
            " ",
            "\t\n",
            "\"\"",
            "***",
            "()",
            ":",
            "-",
            "^",
            "\"*\"",
            "—",
            "… «» ¡¿",
            "🚀",
            "\u{301}",
        ] {
            let res = store.search(q, &[], 10).await;
            assert_eq!(res.ok(), Some(vec![]), "{q:?}");
        }
    }
}

/// A tiny deterministic generator, so the test needs no extra dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

on_both_backends! {
    async fn random_queries_never_fail() {
        let store = seeded().await;
        let mut rng = XorShift(0x5eed_1234_abcd_ef01);
        let alphabet: Vec<char> =
            "aAzZ09 \"*:-^()+{}[]~,.;'\\/%_?éÉß東京🚀\u{301}\u{94d}\u{200b}\u{0}\t\n"
                .chars()
                .chain(["AND", "OR", "NOT", "NEAR"].iter().flat_map(|w| w.chars()))
                .collect();
        for round in 0..600 {
            let len = (rng.next() % 40) as usize;
            let query: String = if round % 2 == 0 {
                // Random bytes, made into text the way a transport would (lossily).
                let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                (0..len)
                    .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize])
                    .collect()
            };
            let tags = vec![query.clone()];
            let res = store.search(&query, &[], 10).await;
            assert!(res.is_ok(), "{query:?} -> {res:?}");
            let res = store.search(&query, &tags, 10).await;
            assert!(res.is_ok(), "{query:?} with tag -> {res:?}");
            let res = store.ids_with_prefix(&query, 10).await;
            assert!(res.is_ok(), "{query:?} -> {res:?}");
        }
    }
}

on_both_backends! {
    async fn a_note_is_found_by_any_run_of_its_own_words() {
        // Pieces people write in notes, each kept whole by one engine's tokenizer or split by
        // the other's: searching for a run of a note's own text must find it on both.
        let pieces = [
            "example.com/page?id=5",
            "https://github.com/org/repo/issues/12?q=is%3Aopen+label#top",
            "mailto:someone@example.org",
            "someone@example.org",
            "/usr/local/bin/pkb-server",
            "C:\\Users\\me\\notes.md",
            "~/notes/2026-12-06.md",
            "v1.2.3-beta.4",
            "3.14",
            "1,000,000",
            "e-mail",
            "state-of-the-art",
            "it's",
            "rock'n'roll",
            "snake_case_name",
            "CamelCaseName",
            "C++",
            "C#",
            "node.js",
            "#hashtag",
            "@mention",
            "[link](https://x.org/a_b)",
            "**bold**",
            "`code()`",
            "\"quoted\"",
            "wait...",
            "em—dash",
            "Straße",
            "café",
            "cafe\u{301}",
            "東京",
            "ΟΔΥΣΣΕΥΣ",
            "naïve",
            "ﬁle",
            "ＦＵＬＬ",
            "zero\u{200b}width",
            "soft\u{ad}hyphen",
            "🚀launch",
            "x86_64-unknown-linux-gnu",
            "key=value;other=2",
            "(parenthesised)",
            "50%",
            "$HOME",
            "a/b/c",
            "1.2.3.4:8080",
            "O'Reilly",
            "AT&T",
            "foo|bar",
            "<tag>",
            "10:30",
            "2026-12-06T09:00:00Z",
            "U.S.A.",
            "--flag",
            "+1",
            "1e10",
            "0x1F",
            "½",
            "Ⅻ",
            "İstanbul",
            "ÅNGSTRÖM",
            "مرحبا",
            "שלום",
            "สวัสดี",
            "नमस्ते",
            "한국어",
            "カタカナ",
            "👩\u{200d}💻",
            "🇫🇷",
        ];
        let mut rng = XorShift(0x0dd_ba11_5eed_cafe);
        let mut pick = |n: usize| (rng.next() % n as u64) as usize;
        let notes: Vec<(String, Vec<&str>)> = (0..120)
            .map(|i| {
                let words = (0..6).map(|_| pieces[pick(pieces.len())]).collect();
                (format!("n{i:03}"), words)
            })
            .collect();
        let drafts: Vec<NoteDraft> = notes
            .iter()
            .map(|(id, words)| draft(id, "Pieces", &[], &format!("marker{id} {}", words.join(" "))))
            .collect();
        let store = empty().await;
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        for (id, words) in &notes {
            for start in 0..words.len() {
                let end = (start + 1 + pick(3)).min(words.len());
                let query = format!("marker{id} {}", words[start..end].join(" "));
                let found = ids(&store, &query).await;
                assert!(found.contains(id), "{query:?} found {found:?}");
            }
        }
    }
}

on_both_backends! {
    async fn long_queries_do_not_fail() {
        let store = seeded().await;
        let many = vec!["deploy"; 2000].join(" ");
        assert_eq!(ids(&store, &many).await, ["deploy-checklist"]);
        let distinct: String = (0..500).map(|i| format!("w{i} ")).collect();
        assert!(ids(&store, &distinct).await.is_empty());
        let nested = "(".repeat(5000) + "deploy" + &")".repeat(5000);
        assert_eq!(ids(&store, &nested).await, ["deploy-checklist"]);
    }
}

on_both_backends! {
    async fn search_handles_non_latin_scripts() {
        let store = with_notes(&[
            (
                "ru",
                "Привет мир",
                &[],
                "Съешь же ещё этих мягких французских булок",
            ),
            ("jp", "東京", &["旅行"], "タワー"),
            ("hi", "हिन्दी नोट", &[], ""),
        ])
        .await;
        assert_eq!(ids(&store, "привет").await, ["ru"]);
        assert_eq!(ids(&store, "ПРИВ").await, ["ru"]);
        assert_eq!(ids(&store, "ещё").await, ["ru"]);
        assert_eq!(ids(&store, "東京").await, ["jp"]);
        assert_eq!(ids(&store, "旅行").await, ["jp"]);
        assert_eq!(ids(&store, "हिन्दी").await, ["hi"]);
    }
}

on_both_backends! {
    async fn results_carry_title_and_tags() {
        let store = seeded().await;
        let hits = store.search("deploy", &[], 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].title, "Deploy checklist");
        assert_eq!(hits[0].tags, ["deploy", "release"]);
        let json = serde_json::to_value(&hits[0]).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            sorted(keys.iter().map(|k| (*k).to_owned()).collect()),
            ["id", "score", "tags", "title"]
        );
    }
}

// ---- prefixes --------------------------------------------------------------------------------

on_both_backends! {
    async fn id_prefixes_are_literal_sorted_and_limited() {
        let store = with_notes(&[
            ("deploy-checklist", "A", &[], ""),
            ("deploy", "B", &[], ""),
            ("depot", "C", &[], ""),
            ("dev", "D", &[], ""),
            ("zeta", "E", &[], ""),
        ])
        .await;
        assert_eq!(
            store.ids_with_prefix("dep", 10).await.unwrap(),
            ["deploy", "deploy-checklist", "depot"]
        );
        assert_eq!(
            store.ids_with_prefix("dep", 2).await.unwrap(),
            ["deploy", "deploy-checklist"]
        );
        assert_eq!(store.ids_with_prefix("", 100).await.unwrap().len(), 5);
        assert_eq!(
            store.ids_with_prefix("DEP", 10).await.unwrap().len(),
            3,
            "ids are lowercase"
        );
        assert!(store.ids_with_prefix("dep", 0).await.unwrap().is_empty());
        for p in [
            "%", "_", "*", "?", "[", "de_", "d%", "d*", "de?", "[d]", "d[e]p", "\\",
        ] {
            assert!(
                store.ids_with_prefix(p, 10).await.unwrap().is_empty(),
                "{p:?}"
            );
        }
    }
}

on_both_backends! {
    async fn tag_prefixes_are_literal_distinct_sorted_and_limited() {
        let store = with_notes(&[
            (
                "a",
                "A",
                &["50%", "a_b", "c*", "what?", "[x]", "deploy"],
                "",
            ),
            ("b", "B", &["deploy", "design", "5"], ""),
            ("c", "C", &["axb", "c-star", "whatx", "x"], ""),
        ])
        .await;
        let tags = |p: &'static str, n: usize| {
            let store = store.clone();
            async move { store.tags_with_prefix(p, n).await.unwrap() }
        };
        assert_eq!(tags("de", 10).await, ["deploy", "design"]);
        assert_eq!(tags("de", 1).await, ["deploy"]);
        assert_eq!(tags("De", 10).await, ["deploy", "design"]);
        assert_eq!(tags("50%", 10).await, ["50%"]);
        assert_eq!(tags("5", 10).await, ["5", "50%"]);
        assert_eq!(tags("%", 10).await, Vec::<String>::new());
        assert_eq!(tags("a_", 10).await, ["a_b"]);
        assert_eq!(tags("_", 10).await, Vec::<String>::new());
        assert_eq!(tags("c*", 10).await, ["c*"]);
        assert_eq!(tags("*", 10).await, Vec::<String>::new());
        assert_eq!(tags("what?", 10).await, ["what?"]);
        assert_eq!(tags("?", 10).await, Vec::<String>::new());
        assert_eq!(tags("[", 10).await, ["[x]"]);
        assert_eq!(tags("[x", 10).await, ["[x]"]);
        assert_eq!(tags("", 100).await.len(), 12);
    }
}

// ---- paths -----------------------------------------------------------------------------------

#[test]
fn default_path_prefers_an_absolute_xdg_data_home() {
    let p = |xdg: Option<&str>, home: Option<&str>| {
        default_data_dir_from(xdg.map(Into::into), home.map(Into::into))
            .map(|dir| dir.join("pkb.db"))
    };
    assert_eq!(
        p(Some("/data"), Some("/home/u")).unwrap(),
        PathBuf::from("/data/pkb/pkb.db")
    );
    assert_eq!(
        p(Some("relative"), Some("/home/u")).unwrap(),
        PathBuf::from("/home/u/.local/share/pkb/pkb.db")
    );
    assert_eq!(
        p(Some(""), Some("/home/u")).unwrap(),
        PathBuf::from("/home/u/.local/share/pkb/pkb.db")
    );
    assert_eq!(
        p(None, Some("/home/u")).unwrap(),
        PathBuf::from("/home/u/.local/share/pkb/pkb.db")
    );
    assert!(matches!(p(None, None), Err(StoreError::NoDataDir)));
    assert!(matches!(
        p(Some("rel"), Some("")),
        Err(StoreError::NoDataDir)
    ));
}

#[test]
fn from_title_derives_the_id() {
    let d = NoteDraft::from_title("  Deploy checklist ", vec![], "b");
    assert_eq!(d.id, "deploy-checklist");
}

#[test]
fn store_works_without_a_runtime() {
    // Without tokio the calls run inline; block_on-style executors still work.
    let store = sqlite::open_in_memory(true).unwrap();
    let count = futures::executor::block_on(store.count()).unwrap();
    assert_eq!(count, 3);
}

// ---- the ranking window ----------------------------------------------------------------------

on_both_backends! {
    async fn very_common_words_rank_the_newest_matches() {
        let window = usize::try_from(RANK_WINDOW).unwrap();
        let store = empty().await;
        let drafts: Vec<NoteDraft> = (0..window + 50)
            .map(|i| {
                let tags: &[&str] = if i < 5 { &["old"] } else { &[] };
                let title = if i == 0 { "Common ground" } else { "Note" };
                draft(&format!("n{i:05}"), title, tags, "a common word")
            })
            .collect();
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();

        let hits = store.search("common", &[], 50).await.unwrap();
        assert_eq!(hits.len(), 50);
        // The oldest note would win on its title, but it is outside the window of newest matches.
        assert!(hits.iter().all(|h| h.id.as_str() >= "n00050"), "{hits:?}");

        // The window is taken over notes that pass the tag filter, so old tagged notes still count.
        let old = store
            .search("common", &["old".to_owned()], 50)
            .await
            .unwrap();
        assert_eq!(old.len(), 5);
        assert_eq!(old[0].id, "n00000", "title match first");

        // A selective query ranks every match, however old.
        let hits = store.search("common ground", &[], 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].id, "n00000");
    }
}

on_both_backends! {
    async fn a_note_is_found_by_the_addresses_and_paths_it_holds() {
        let held = [
            "example.com/page?id=5",
            "https://github.com/modelcontextprotocol/rust-sdk/issues/123?q=a+b#frag",
            "see x.com/a'b here",
            "/usr/local/bin/pkb-server",
            "e-mail foo@bar.com",
            "v1.2.3-beta",
        ];
        let notes: Vec<(String, String)> = held
            .iter()
            .enumerate()
            .map(|(i, text)| (format!("n{i}"), format!("It says {text}, and more.")))
            .collect();
        let drafts: Vec<NoteDraft> = notes
            .iter()
            .map(|(id, body)| draft(id, "Links", &[], body))
            .collect();
        let store = empty().await;
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        for (i, text) in held.iter().enumerate() {
            let found = ids(&store, text).await;
            assert!(found.contains(&format!("n{i}")), "{text:?} found {found:?}");
        }
    }
}

on_both_backends! {
    async fn a_rare_word_beside_a_common_one_finds_exactly_the_notes_holding_both() {
        // Enough notes that the newest of them tell the common word from the rare one:
        // PostgreSQL then finds the matches through the rare word and checks the other on each.
        let store = empty().await;
        let mut drafts: Vec<NoteDraft> = (0..400)
            .map(|i| {
                let body = if i % 100 == 7 { "a common word and a rarity" } else { "a common word" };
                draft(&format!("n{i:03}"), "Note", &[], body)
            })
            .collect();
        drafts.push(draft("lone", "Lone", &[], "only the rarity here"));
        drafts.push(draft("prefixed", "Prefixed", &[], "commonplace rarest"));
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();

        let both = ["n007", "n107", "n207", "n307"];
        assert_eq!(sorted(ids(&store, "common rarity").await), both);
        assert_eq!(sorted(ids(&store, "rarity COMMON").await), both);
        // Each word is also a prefix, the rare one as the common one.
        let mut prefixed = both.to_vec();
        prefixed.push("prefixed");
        assert_eq!(sorted(ids(&store, "comm rar").await), prefixed);
        assert_eq!(ids(&store, "common rarity nowhere").await, Vec::<String>::new());
    }
}

on_both_backends! {
    async fn the_any_word_search_leaves_out_words_half_the_notes_hold() {
        let store = empty().await;
        let body = |k: usize| match k {
            0 => "the deploy checklist, an ancient one".to_owned(),
            1 => "the release notes".to_owned(),
            _ => format!("the note {k}"),
        };
        let drafts: Vec<NoteDraft> = (0..300)
            .map(|k| draft(&format!("n{k:03}"), &format!("Note {k}"), &[], &body(k)))
            .collect();
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        let found = async |query: &str| -> Vec<String> {
            let hits = store.engine.search_any_words(query, &[], 10).await.unwrap();
            sorted(hits.into_iter().map(|h| h.id).collect())
        };
        assert_eq!(found("the deploy").await, ["n000"], "\"the\", in every note, is left out");
        assert_eq!(found("the deploy release").await, ["n000", "n001"]);
        // Held by the oldest note only, which the newest notes do not tell of.
        assert_eq!(found("ancient the").await, ["n000"]);
        assert_eq!(
            found("the zebra").await.len(),
            10,
            "kept when no other word would match"
        );
    }
}

on_both_backends! {
    async fn the_any_word_search_ranks_only_the_newest_matches_when_every_word_is_common() {
        let store = empty().await;
        let mut drafts = vec![draft(
            "n0000",
            "Note 0",
            &[],
            "common common common shared shared shared rare",
        )];
        drafts.extend((1..=1_005).map(|k| {
            draft(&format!("n{k:04}"), &format!("Note {k}"), &[], "common shared filler")
        }));
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        let found = async |query: &str| -> Vec<String> {
            let hits = store.engine.search_any_words(query, &[], 10).await.unwrap();
            hits.into_iter().map(|h| h.id).collect()
        };
        let common = found("common shared").await;
        assert_eq!(common.len(), 10);
        assert!(
            !common.contains(&"n0000".to_owned()),
            "past the newest 1,000 matches: {common:?}"
        );
        assert_eq!(
            found("common shared rare").await[0],
            "n0000",
            "a rarer word ranks every match"
        );
    }
}

on_both_backends! {
    async fn the_any_word_search_weighs_a_rare_word_above_a_common_one_said_often() {
        // As BM25 weighs them: a word few notes hold tells more of a note than a word many
        // notes hold, however often the note says the latter.
        let store = empty().await;
        let mut drafts: Vec<NoteDraft> = (0..40)
            .map(|k| {
                let body = if k % 3 == 0 { "a routine note on pumps" } else { "a routine note" };
                draft(&format!("n{k:02}"), &format!("Note {k}"), &[], body)
            })
            .collect();
        drafts.push(draft(
            "often",
            "Pumps",
            &["pumps"],
            "Pumps, pumps and more pumps: the pumps of the pumps room.",
        ));
        drafts.push(draft("once", "Plant", &[], "The hall also holds a turbine."));
        store.put_many(drafts, PutMode::CreateOnly).await.unwrap();
        let hits = store.engine.search_any_words("pumps turbine", &[], 10).await.unwrap();
        let found: Vec<&str> = hits.iter().map(|hit| hit.id.as_str()).collect();
        assert_eq!(found[..2], ["once", "often"], "{found:?}");
    }
}

mod history;
mod links;
#[cfg(feature = "meaning")]
mod meaning;
