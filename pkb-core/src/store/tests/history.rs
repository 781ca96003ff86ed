//! The versions every change keeps, on each backend: what is recorded, what reads them,
//! what prune and purge take, and that a replace at a version loses no change made meanwhile.

use super::*;
use crate::note_edit::{BodyChange, NoteEdit};

fn summary(versions: &[VersionSummary]) -> Vec<(u64, ChangeKind, &str)> {
    versions
        .iter()
        .map(|v| (v.version, v.change, v.by.as_str()))
        .collect()
}

on_both_backends! {
    async fn every_change_is_kept_with_its_kind_and_client() {
        let store = empty().await.changed_by("claude-ai 1.2");
        let created = store.put(draft("n", "N", &["a"], "one"), PutMode::CreateOnly).await.unwrap();
        assert!(matches!(created, PutOutcome::Created(ref n) if n.version == 1));
        store.put(draft("n", "N", &["a"], "two"), PutMode::Replace).await.unwrap();
        let edit = NoteEdit { title: Some("M".to_owned()), ..NoteEdit::default() };
        let EditOutcome::Edited { note, title_changed } = store.edit("n", &edit, None).await.unwrap() else {
            panic!("edited");
        };
        assert!(title_changed);
        assert_eq!((note.version, note.title.as_str(), note.body.as_str()), (3, "M", "two"));
        let other = store.changed_by("pkb-server import");
        other
            .put_dated(vec![(draft("n", "M", &["b"], "three"), NoteDates::default())], PutMode::Replace)
            .await
            .unwrap();
        assert!(store.delete("n").await.unwrap());
        let history = store.history("n", 100).await.unwrap().unwrap();
        assert_eq!(summary(&history), [
            (5, ChangeKind::Deleted, "claude-ai 1.2"),
            (4, ChangeKind::Imported, "pkb-server import"),
            (3, ChangeKind::Edited, "claude-ai 1.2"),
            (2, ChangeKind::Replaced, "claude-ai 1.2"),
            (1, ChangeKind::Created, "claude-ai 1.2"),
        ]);
        assert_eq!(history[0].title, "M");
        assert_eq!(history[0].chars, 5, "the deleted version holds the note as it was");
        let VersionLookup::Found(deleted) = store.version("n", 5).await.unwrap() else {
            panic!("the deleted version");
        };
        assert_eq!((deleted.note.body.as_str(), deleted.note.tags.clone()), ("three", vec!["b".to_owned()]));
        assert_eq!(store.version("n", 6).await.unwrap(), VersionLookup::NoSuchVersion);
        assert_eq!(store.version("never", 1).await.unwrap(), VersionLookup::NoSuchNote);
        assert_eq!(store.history("never", 10).await.unwrap(), None);
        assert_eq!(store.history("n", 2).await.unwrap().unwrap().len(), 2);
        let recent = store.recent_changes(2).await.unwrap();
        assert_eq!(
            recent.iter().map(|c| (c.id.as_str(), c.version, c.change)).collect::<Vec<_>>(),
            [("n", 5, ChangeKind::Deleted), ("n", 4, ChangeKind::Imported)]
        );
    }

    async fn changes_are_paged_newest_first_and_filtered_by_note_client_and_kind() {
        let store = empty().await;
        let model = store.changed_by("model 1.0");
        let person = store.changed_by("web page");
        for n in 0..5 {
            model.put(draft(&format!("n{n}"), "N", &[], "one"), PutMode::CreateOnly).await.unwrap();
        }
        person.put(draft("n1", "N", &[], "two"), PutMode::Replace).await.unwrap();
        assert!(model.delete("n3").await.unwrap());
        let all = |before, limit| ChangeFilter { before, limit, ..ChangeFilter::default() };
        let ids = |page: &[ChangeEntry]| {
            page.iter().map(|e| (e.change.id.clone(), e.change.version)).collect::<Vec<_>>()
        };
        let first = store.changes(&all(None, 3)).await.unwrap();
        assert_eq!(ids(&first), [("n3".into(), 2), ("n1".into(), 2), ("n4".into(), 1)]);
        assert!(first.windows(2).all(|w| w[0].position > w[1].position));
        let second = store.changes(&all(Some(first[2].position), 3)).await.unwrap();
        assert_eq!(ids(&second), [("n3".into(), 1), ("n2".into(), 1), ("n1".into(), 1)]);
        let last = store.changes(&all(Some(second[2].position), 3)).await.unwrap();
        assert_eq!(ids(&last), [("n0".into(), 1)]);
        let of_n1 = ChangeFilter { id: Some("n1".into()), limit: 10, ..ChangeFilter::default() };
        assert_eq!(ids(&store.changes(&of_n1).await.unwrap()), [("n1".into(), 2), ("n1".into(), 1)]);
        let by_person = ChangeFilter { by: Some("web page".into()), limit: 10, ..ChangeFilter::default() };
        let found = store.changes(&by_person).await.unwrap();
        assert_eq!(ids(&found), [("n1".into(), 2)]);
        assert_eq!((found[0].change.by.as_str(), found[0].change.change), ("web page", ChangeKind::Replaced));
        let deleted = ChangeFilter { change: Some(ChangeKind::Deleted), limit: 10, ..ChangeFilter::default() };
        assert_eq!(ids(&store.changes(&deleted).await.unwrap()), [("n3".into(), 2)]);
        let nothing = ChangeFilter { id: Some("n1".into()), by: Some("model 1.0".into()), before: Some(first[1].position), limit: 10, ..ChangeFilter::default() };
        assert_eq!(ids(&store.changes(&nothing).await.unwrap()), [("n1".into(), 1)]);
    }

    async fn the_notes_still_deleted_are_the_deletions_that_are_their_notes_newest_version() {
        let store = empty().await;
        for id in ["gone", "back", "twice"] {
            store.put(draft(id, "N", &[], "one"), PutMode::CreateOnly).await.unwrap();
            assert!(store.delete(id).await.unwrap());
        }
        store.restore("back", 1).await.unwrap();
        store.put(draft("twice", "N", &[], "again"), PutMode::CreateOnly).await.unwrap();
        assert!(store.delete("twice").await.unwrap());
        let ids = |page: &[ChangeEntry]| {
            page.iter().map(|e| (e.change.id.clone(), e.change.version)).collect::<Vec<_>>()
        };
        let still = ChangeFilter { change: Some(ChangeKind::Deleted), newest: true, limit: 10, ..ChangeFilter::default() };
        assert_eq!(ids(&store.changes(&still).await.unwrap()), [("twice".into(), 4), ("gone".into(), 2)]);
        let every = ChangeFilter { newest: false, ..still.clone() };
        assert_eq!(store.changes(&every).await.unwrap().len(), 4);
        let newest = ChangeFilter { newest: true, limit: 10, ..ChangeFilter::default() };
        assert_eq!(
            ids(&store.changes(&newest).await.unwrap()),
            [("twice".into(), 4), ("back".into(), 3), ("gone".into(), 2)]
        );
    }

    async fn a_clients_name_is_kept_to_its_first_200_characters() {
        // Three bytes a character, so a cut by bytes would split one.
        let name = "\u{20ac}".repeat(1_000_000);
        let store = empty().await.changed_by(format!("{name} 1.0"));
        store.put(draft("n", "N", &[], "one"), PutMode::CreateOnly).await.unwrap();
        let edit = NoteEdit { title: Some("M".to_owned()), ..NoteEdit::default() };
        store.edit("n", &edit, None).await.unwrap();
        let history = store.history("n", 10).await.unwrap().unwrap();
        let kept = "\u{20ac}".repeat(MAX_BY_CHARS);
        assert_eq!(summary(&history), [(2, ChangeKind::Edited, kept.as_str()), (1, ChangeKind::Created, kept.as_str())]);
        let recent = store.recent_changes(1).await.unwrap();
        assert_eq!(recent[0].by, kept);
        let short = store.changed_by("claude-ai 1.2");
        assert_eq!(short.changes_by(), "claude-ai 1.2", "a name within the bound is kept whole");
    }

    async fn a_replace_at_a_version_loses_nothing_made_meanwhile() {
        let store = empty().await;
        store.put(draft("n", "N", &[], "one"), PutMode::CreateOnly).await.unwrap();
        let stale = store.put(draft("n", "N", &[], "late"), PutMode::ReplaceAtVersion(2)).await.unwrap();
        assert_eq!(stale, PutOutcome::Stale { current: 1 });
        let missing = store.put(draft("m", "M", &[], "x"), PutMode::ReplaceAtVersion(1)).await.unwrap();
        assert_eq!(missing, PutOutcome::Missing);
        assert!(store.get("m").await.unwrap().is_none(), "nothing was made");
        let done = store.put(draft("n", "N", &[], "two"), PutMode::ReplaceAtVersion(1)).await.unwrap();
        assert!(matches!(done, PutOutcome::Replaced(ref n) if n.version == 2 && n.body == "two"));
        // Edits of one note at once each apply to the note as the other left it.
        let appends = (0..8).map(|k| {
            let store = store.clone();
            async move {
                let edit = NoteEdit { body: Some(BodyChange::Append(format!("line {k}"))), ..NoteEdit::default() };
                store.edit("n", &edit, None).await.unwrap()
            }
        });
        futures::future::join_all(appends).await;
        let note = store.get("n").await.unwrap().unwrap();
        assert_eq!(note.version, 10);
        for k in 0..8 {
            assert!(note.body.lines().any(|l| l == format!("line {k}")), "{}", note.body);
        }
    }

    async fn a_note_made_again_goes_on_counting_and_restore_brings_one_back() {
        let store = empty().await;
        store.put(draft("n", "Old", &["x"], "first"), PutMode::CreateOnly).await.unwrap();
        store.delete("n").await.unwrap();
        let again = store.put(draft("n", "New", &[], "second"), PutMode::CreateOnly).await.unwrap();
        assert!(matches!(again, PutOutcome::Created(ref n) if n.version == 3));
        store.delete("n").await.unwrap();
        let VersionLookup::Found(first) = store.version("n", 1).await.unwrap() else {
            panic!("version 1");
        };
        let RestoreOutcome::Restored { note, from, created } = store.restore("n", 1).await.unwrap() else {
            panic!("restored");
        };
        assert!(created, "the deleted note is back");
        assert_eq!((note.version, from, note.title.as_str(), note.tags.clone()), (5, 1, "Old", vec!["x".to_owned()]));
        assert_eq!(note.created_at, first.note.created_at, "made when version 1 was made");
        assert_eq!(store.restore("n", 9).await.unwrap(), RestoreOutcome::NoSuchVersion);
        assert_eq!(store.restore("never", 1).await.unwrap(), RestoreOutcome::NoSuchNote);
        assert_eq!(ids(&store, "old").await, ["n"], "searchable again");
    }

    async fn prune_keeps_each_notes_newest_and_purge_erases_all() {
        let store = empty().await;
        for body in ["a", "b", "c"] {
            store.put(draft("kept", "K", &[], body), PutMode::Replace).await.unwrap();
        }
        store.put(draft("gone", "G", &[], "g"), PutMode::CreateOnly).await.unwrap();
        store.delete("gone").await.unwrap();
        // Everything is older than a moment from now (dates count whole milliseconds).
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(store.prune_versions(Duration::ZERO).await.unwrap(), 3);
        assert_eq!(store.prune_versions(Duration::ZERO).await.unwrap(), 0);
        let kept = store.history("kept", 10).await.unwrap().unwrap();
        assert_eq!(kept.iter().map(|v| v.version).collect::<Vec<_>>(), [3]);
        let gone = store.history("gone", 10).await.unwrap().unwrap();
        assert_eq!(gone.iter().map(|v| v.change).collect::<Vec<_>>(), [ChangeKind::Deleted]);
        assert!(matches!(store.restore("gone", 2).await.unwrap(), RestoreOutcome::Restored { .. }));
        assert_eq!(store.prune_versions(Duration::from_secs(86_400)).await.unwrap(), 0, "nothing that old");

        assert_eq!(store.purge("gone").await.unwrap(), Purged { note: true, versions: 2 });
        assert_eq!(store.history("gone", 10).await.unwrap(), None);
        assert!(store.get("gone").await.unwrap().is_none());
        assert_eq!(store.purge("gone").await.unwrap(), Purged::default());
        assert_eq!(ids(&store, "g").await, Vec::<String>::new());
        store.verify().await.unwrap();
    }
}
