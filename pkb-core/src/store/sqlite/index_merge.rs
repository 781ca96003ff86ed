//! Merging FTS5's index segments, a bounded step at a time.
//!
//! Every write transaction adds a segment to the search index, and FTS5's own merging keeps
//! up to about 16 of them when notes come one at a time. A search seeks in every segment, so
//! at 100,000 notes 17 segments cost a search about 12% more than one. A full merge rewrites
//! the whole index (about 40 MB, 2 s, at 100,000 notes), so it runs in steps of its own
//! transaction that a write can come between, and only past a number of segments.

use rusqlite::Connection;

use super::MergeProgress;

/// Segments the index may hold before [`step`] merges them all into one.
pub(super) const MAX_SEGMENTS: i64 = 8;

/// Index pages written per step: about 30 ms at 100,000 notes here, the longest a write then
/// waits (the first step, which plans the merge, takes about 0.3 s).
const PAGES_PER_STEP: i64 = 200;

/// The index's segments.
pub(super) fn segments(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(DISTINCT segid) FROM notes_fts_idx", [], |r| {
        r.get(0)
    })
}

/// Merges up to [`PAGES_PER_STEP`] pages; `start` begins a merge of every segment into one,
/// otherwise the merge under way goes on. Run inside a write transaction.
pub(super) fn step(conn: &Connection, start: bool) -> rusqlite::Result<MergeProgress> {
    let before = conn.total_changes();
    // A negative page count puts every segment on one level first, so that all of them merge
    // (FTS5's "merge" command); a positive one carries on the merge already started.
    let pages = if start {
        -PAGES_PER_STEP
    } else {
        PAGES_PER_STEP
    };
    conn.execute(
        "INSERT INTO notes_fts (notes_fts, rank) VALUES ('merge', ?1)",
        [pages],
    )?;
    // FTS5 documents a change count that grew by 2 or more as "work was done".
    Ok(if conn.total_changes() - before >= 2 {
        MergeProgress::More
    } else {
        MergeProgress::Done
    })
}

#[cfg(test)]
pub(in crate::store) mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::sqlite::NoteBackend;
    use crate::store::sqlite::SqliteBackend;
    use crate::store::{NoteDraft, PutMode, SearchHit};

    /// A store holding `notes` notes, each written in a transaction of its own, so that each
    /// added a segment.
    pub(in crate::store) fn written_one_by_one(notes: usize) -> Arc<SqliteBackend> {
        let backend = SqliteBackend::open_in_memory(false).expect("in-memory store");
        for i in 0..notes {
            backend
                .put(
                    note(i),
                    PutMode::CreateOnly,
                    &crate::store::Provenance::write("test"),
                )
                .expect("put");
        }
        Arc::new(backend)
    }

    pub(in crate::store) fn note(i: usize) -> NoteDraft {
        let words = ["deploy", "grow", "tomato", "release", "garden", "health"];
        NoteDraft {
            id: format!("note-{i}"),
            title: format!("Note {i} about {}", words[i % words.len()]),
            tags: vec![words[(i + 1) % words.len()].to_owned()],
            body: format!(
                "{} then {} and {} number {i}",
                words[(i + 2) % words.len()],
                words[(i * 7) % words.len()],
                words[(i * 5 + 3) % words.len()],
            ),
        }
    }

    pub(in crate::store) fn count(backend: &SqliteBackend) -> i64 {
        backend.read_for_tests(segments)
    }

    fn results(backend: &SqliteBackend) -> Vec<Vec<SearchHit>> {
        [
            "deploy",
            "gro",
            "tomato garden",
            "note health",
            "number 1",
            "release",
        ]
        .iter()
        .map(|q| backend.search(q, &[], 100).expect("search"))
        .collect()
    }

    #[test]
    fn many_segments_merge_into_one_and_searches_find_the_same() {
        let backend = written_one_by_one(14);
        let before = count(&backend);
        assert!(
            before > MAX_SEGMENTS,
            "every write added a segment: {before}"
        );
        let found = results(&backend);

        let mut steps = 0;
        while backend.merge_index_step().expect("merge step") == MergeProgress::More {
            steps += 1;
            assert!(steps < 1_000, "the merge ends");
        }
        assert_eq!(count(&backend), 1);
        let merged = results(&backend);
        assert_eq!(merged.len(), found.len());
        for (merged, found) in merged.iter().zip(&found) {
            assert!(!found.is_empty());
            let ids = |hits: &[SearchHit]| hits.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
            assert_eq!(ids(merged), ids(found));
            for (m, f) in merged.iter().zip(found) {
                assert!((m.score - f.score).abs() < 1e-9, "{} {}", m.score, f.score);
            }
        }
        backend.verify().expect("the merged index is sound");
    }

    #[test]
    fn a_few_segments_are_left_alone() {
        let backend = written_one_by_one(usize::try_from(MAX_SEGMENTS).unwrap());
        let before = count(&backend);
        assert_eq!(before, MAX_SEGMENTS);
        assert_eq!(backend.merge_index_step().unwrap(), MergeProgress::Done);
        assert_eq!(count(&backend), before);
    }

    #[test]
    fn two_processes_merging_at_once_leave_one_sound_segment() {
        // Servers in several windows go quiet together and both find too many segments.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pkb.db");
        let options = crate::store::sqlite::SqliteOptions {
            seed: false,
            ..crate::store::sqlite::SqliteOptions::default()
        };
        let first = SqliteBackend::open(&path, &options).unwrap();
        let second = SqliteBackend::open(&path, &options).unwrap();
        for i in 0..14 {
            first
                .put(
                    note(i),
                    PutMode::CreateOnly,
                    &crate::store::Provenance::write("test"),
                )
                .unwrap();
        }
        assert!(count(&second) > MAX_SEGMENTS);
        let (mut first_more, mut second_more) = (true, true);
        let mut steps = 0;
        while first_more || second_more {
            if first_more {
                first_more = first.merge_index_step().unwrap() == MergeProgress::More;
            }
            if second_more {
                second_more = second.merge_index_step().unwrap() == MergeProgress::More;
            }
            steps += 1;
            assert!(steps < 1_000, "the merges end");
        }
        assert_eq!(count(&first), 1);
        first.verify().expect("sound after both merged");
        assert_eq!(second.search("number 13", &[], 1).unwrap()[0].id, "note-13");
    }

    #[test]
    fn writes_between_steps_are_kept_and_found() {
        let backend = written_one_by_one(14);
        assert_eq!(backend.merge_index_step().unwrap(), MergeProgress::More);
        backend
            .put(
                note(100),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .expect("a write between two steps");
        while backend.merge_index_step().unwrap() == MergeProgress::More {}
        backend.verify().expect("sound after the merge");
        let hits = backend.search("number 100", &[], 10).unwrap();
        assert_eq!(hits.first().map(|h| h.id.as_str()), Some("note-100"));
        assert_eq!(backend.count().unwrap(), 15);
    }
}
