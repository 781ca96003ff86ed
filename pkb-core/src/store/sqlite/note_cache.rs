//! Notes recently read, kept with the moment they were read at, so that reading one again
//! while nothing was committed is a lookup in memory rather than a hop to a read thread and
//! a query. Any commit, by any process, makes every entry stale at once; see
//! [`super::change_watch`].

use std::sync::{Mutex, MutexGuard};

use quick_cache::unsync::Cache;
use quick_cache::{OptionsBuilder, Weighter};

use super::change_watch::ChangeStamp;
use crate::links::{Link, NoteWithLinks};
use crate::note::Note;

/// How many bytes of notes are kept, at most: about 2,000 notes of 100 words, or 50 of the
/// longest.
const CACHE_BYTES: u64 = 2 * 1024 * 1024;

/// What the cache keeps: a note, or a note with its links; by the note's id.
pub(super) trait Kept: Clone {
    /// The note's id.
    fn id(&self) -> &str;
    /// The bytes of text it holds.
    fn text_bytes(&self) -> usize;
}

fn note_bytes(note: &Note) -> usize {
    note.id.len()
        + note.title.len()
        + note.body.len()
        + note.tags.iter().map(String::len).sum::<usize>()
        + note.created_at.len()
        + note.updated_at.len()
}

impl Kept for Note {
    fn id(&self) -> &str {
        &self.id
    }

    fn text_bytes(&self) -> usize {
        note_bytes(self)
    }
}

impl Kept for NoteWithLinks {
    fn id(&self) -> &str {
        &self.note.id
    }

    fn text_bytes(&self) -> usize {
        let link = |l: &Link| {
            l.target.len()
                + l.id.as_ref().map_or(0, String::len)
                + l.title.as_ref().map_or(0, String::len)
                + 64
        };
        note_bytes(&self.note)
            + self.links.iter().map(link).sum::<usize>()
            + self
                .backlinks
                .iter()
                .map(|b| b.id.len() + b.title.len() + 48)
                .sum::<usize>()
    }
}

/// An entry's weight for [`CACHE_BYTES`]: its text, and a little for the entry itself.
#[derive(Clone)]
struct EntryBytes;

impl<T: Kept> Weighter<String, T> for EntryBytes {
    fn weight(&self, id: &String, entry: &T) -> u64 {
        (id.len() + entry.text_bytes() + 128) as u64
    }
}

/// Notes read while nothing was committed, all from one moment of the store.
pub(super) struct NoteCache<T: Kept = Note> {
    inner: Mutex<Entries<T>>,
}

struct Entries<T: Kept> {
    /// When the notes were read; `None` before the first.
    read_at: Option<ChangeStamp>,
    notes: Cache<String, T, EntryBytes>,
}

impl<T: Kept> NoteCache<T> {
    pub(super) fn new() -> NoteCache<T> {
        NoteCache {
            inner: Mutex::new(Entries {
                read_at: None,
                notes: Cache::with_options(
                    // An unsynchronised cache has one shard whatever it is told; naming the
                    // count spares the default's look at the CPUs (cgroup files read at start).
                    OptionsBuilder::new()
                        .shards(1)
                        .estimated_items_capacity(2_000)
                        .weight_capacity(CACHE_BYTES)
                        .build()
                        .expect("the options are complete"),
                    EntryBytes,
                    Default::default(),
                    Default::default(),
                ),
            }),
        }
    }

    /// The note with this id, if it was kept and nothing has been committed since: `now` is
    /// the store's stamp at the call. Notes of a past moment are left for the next
    /// [`NoteCache::keep`] to drop, on a read thread: freeing 2 MiB of notes has no place on
    /// the async runtime's thread.
    pub(super) fn get(&self, id: &str, now: ChangeStamp) -> Option<T> {
        let kept = self.lock();
        if kept.read_at != Some(now) {
            return None;
        }
        kept.notes.get(id).cloned()
    }

    /// Keeps `note`, read at `read_at`. Only call it when nothing was committed between
    /// `read_at` and the end of the read; notes of an older moment are dropped.
    pub(super) fn keep(&self, note: &T, read_at: ChangeStamp) {
        let mut kept = self.lock();
        if kept.read_at != Some(read_at) {
            kept.notes.clear();
            kept.read_at = Some(read_at);
        }
        kept.notes.insert(note.id().to_owned(), note.clone());
    }

    fn lock(&self) -> MutexGuard<'_, Entries<T>> {
        // Every change under the lock leaves `Kept` whole.
        crate::locks::lock(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::store::sqlite::SqliteBackend;
    use crate::store::sqlite::change_watch::ChangeWatch;
    use crate::store::sqlite::{NoteBackend, SqliteOptions};
    use crate::store::{NoteDraft, PutMode};

    fn note(id: &str, body: &str) -> Note {
        Note {
            id: id.to_owned(),
            title: format!("Title of {id}"),
            tags: vec!["cache".to_owned()],
            body: body.to_owned(),
            created_at: "2026-11-30T00:00:00Z".to_owned(),
            updated_at: "2026-11-30T00:00:00Z".to_owned(),
            version: 1,
        }
    }

    fn draft(id: &str, body: &str) -> NoteDraft {
        NoteDraft {
            id: id.to_owned(),
            title: format!("Title of {id}"),
            tags: vec![],
            body: body.to_owned(),
        }
    }

    /// Two handles on one new store file, as two servers in one process would have.
    fn two_handles_on_one_file() -> (tempfile::TempDir, SqliteBackend, SqliteBackend) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pkb.db");
        let options = SqliteOptions {
            seed: false,
            ..SqliteOptions::default()
        };
        let reader = SqliteBackend::open(&path, &options).unwrap();
        let writer = SqliteBackend::open(&path, &options).unwrap();
        (dir, reader, writer)
    }

    #[test]
    fn a_kept_note_is_served_until_anything_is_committed() {
        let watch = ChangeWatch::OwnWrites(AtomicU64::new(0));
        let cache = NoteCache::new();
        let before = watch.stamp().unwrap();
        cache.keep(&note("a", "first"), before);
        assert_eq!(cache.get("a", before).unwrap().body, "first");
        assert_eq!(cache.get("b", before), None);

        watch.wrote();
        let after = watch.stamp().unwrap();
        assert_ne!(after, before);
        assert_eq!(cache.get("a", after), None);
    }

    #[test]
    fn a_note_kept_at_a_new_moment_forgets_the_older_ones() {
        let watch = ChangeWatch::OwnWrites(AtomicU64::new(0));
        let cache = NoteCache::new();
        let before = watch.stamp().unwrap();
        cache.keep(&note("a", "first"), before);
        watch.wrote();
        let after = watch.stamp().unwrap();
        cache.keep(&note("b", "second"), after);
        assert_eq!(cache.get("a", after), None);
        assert_eq!(cache.get("b", after).unwrap().body, "second");
    }

    #[test]
    fn the_cache_holds_at_most_its_bytes() {
        let stamp = ChangeWatch::OwnWrites(AtomicU64::new(0)).stamp().unwrap();
        let cache = NoteCache::new();
        let body = "x".repeat(40_000);
        let ids: Vec<String> = (0..200).map(|i| format!("long-{i}")).collect();
        for id in &ids {
            cache.keep(&note(id, &body), stamp);
        }
        let kept = ids
            .iter()
            .filter(|id| cache.get(id, stamp).is_some())
            .count();
        let most = CACHE_BYTES as usize / body.len();
        assert!(kept > 0 && kept <= most, "kept {kept} notes of 40 kB");
    }

    #[test]
    fn a_store_file_serves_a_note_from_memory_until_any_connection_commits() {
        let (_dir, reader, writer) = two_handles_on_one_file();
        writer
            .put(
                draft("shared", "one"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert_eq!(reader.get_cached("shared"), None, "not read yet");
        assert_eq!(reader.get("shared").unwrap().unwrap().body, "one");
        assert_eq!(reader.get_cached("shared").unwrap().body, "one");
        // Reading commits nothing.
        writer.get("shared").unwrap();
        assert_eq!(reader.get_cached("shared").unwrap().body, "one");

        writer
            .put(
                draft("shared", "two"),
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert_eq!(
            reader.get_cached("shared"),
            None,
            "stale after the other's write"
        );
        assert_eq!(reader.get("shared").unwrap().unwrap().body, "two");
        assert_eq!(reader.get_cached("shared").unwrap().body, "two");

        // A commit that does not touch the note also ends what was kept.
        writer
            .put(
                draft("other", "three"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert_eq!(reader.get_cached("shared"), None);
        assert!(writer.delete("shared", "test").unwrap());
        assert_eq!(reader.get("shared").unwrap(), None);
        assert_eq!(reader.get_cached("shared"), None);
    }

    #[test]
    fn a_read_overtaken_by_a_commit_leaves_what_was_kept_since() {
        let (_dir, reader, writer) = two_handles_on_one_file();
        writer
            .put(
                draft("slow", "old"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        writer
            .put(
                draft("quick", "one"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let slow = reader
            .read_and_keep(&reader.cache, || {
                let slow = reader.get("slow");
                // While the slow read runs, a commit, then a quick read kept at the new moment.
                writer.put(
                    draft("other", "x"),
                    PutMode::CreateOnly,
                    &crate::store::Provenance::write("test"),
                )?;
                reader.get("quick")?;
                slow
            })
            .unwrap();
        assert_eq!(slow.unwrap().body, "old");
        assert_eq!(reader.get_cached("quick").unwrap().body, "one");
        assert_eq!(reader.get_cached("slow"), None);
    }

    #[test]
    fn an_in_memory_store_forgets_kept_notes_on_its_own_writes() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        backend
            .put(
                draft("mine", "one"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        backend.get("mine").unwrap();
        assert_eq!(backend.get_cached("mine").unwrap().body, "one");
        backend
            .put(
                draft("mine", "two"),
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert_eq!(backend.get_cached("mine"), None);
        assert_eq!(backend.get("mine").unwrap().unwrap().body, "two");
    }
}
