//! The search vocabulary and each note's term counts, kept next to the FTS5 index.
//!
//! FTS5 answers "which notes hold these exact terms, newest first" in well under a
//! millisecond, stopping after the rows asked for. Two things it does slowly at 100,000 notes:
//! a prefix query (`"gro"*`) merges the full doclist of every term with that prefix before the
//! first row, and `bm25()` walks each term's full doclist to count the notes that hold it.
//! This module keeps what lets the store do without both: every term with the number of notes
//! holding it (`search_terms`), so a prefix becomes a list of exact terms, and each note's
//! weighted term counts (`note_terms`), so BM25 is computed for the candidate notes only.
//!
//! The terms come from FTS5's own tokenizer ([`super::fts5_tokenizer`]), so they are exactly
//! the index's terms.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension, params};

use super::fts5_tokenizer::for_each_term;
use crate::store::stemming::{stem, stem_if_other};

/// Column weights of the ranking: title, tags, body.
pub(super) const WEIGHTS: [u32; 3] = [10, 4, 1];

/// One note's terms as stored in `note_terms.terms`: the note's length in tokens, then for
/// each term (ascending id) its id and its count weighted by [`WEIGHTS`].
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct NoteTerms {
    /// Tokens in title, tags and body together.
    pub(super) length: u32,
    /// `(term id, weighted count)`, by ascending id.
    pub(super) terms: Vec<(u32, u16)>,
}

impl NoteTerms {
    /// The blob: `length` as 4 bytes, then 6 bytes per term (id, count), little-endian.
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 6 * self.terms.len());
        out.extend_from_slice(&self.length.to_le_bytes());
        for (id, count) in &self.terms {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&count.to_le_bytes());
        }
        out
    }

    /// Reads a blob written by `encode`; a malformed one reads as far as it is whole.
    #[cfg(test)]
    pub(super) fn decode(blob: &[u8]) -> NoteTerms {
        let (length, terms) = NoteTerms::read(blob);
        NoteTerms {
            length,
            terms: terms.collect(),
        }
    }

    /// The length and the `(term id, weighted count)` pairs of a blob, without copying them.
    pub(super) fn read(blob: &[u8]) -> (u32, impl Iterator<Item = (u32, u16)> + '_) {
        let (length, rest) = match blob.split_first_chunk::<4>() {
            Some((length, rest)) => (u32::from_le_bytes(*length), rest),
            None => (0, &[][..]),
        };
        let terms = rest.chunks_exact(6).map(|c| {
            let id = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            (id, u16::from_le_bytes([c[4], c[5]]))
        });
        (length, terms)
    }
}

/// The vocabulary's changes by a transaction's writes (one group of writes, an import batch, a
/// reindex), applied once at its end by [`Self::apply`]: a term in many of its notes is looked
/// up once and counted once, not once per note, which was half of an import's time.
///
/// Until then a term new to the store is in `search_terms` with no notes, and a term whose
/// last note went is still there, so every id stays valid through the transaction.
#[derive(Clone, Default)]
pub(super) struct VocabularyChanges {
    /// Ids known to be current when the transaction began (see [`KnownTermIds`]); shared, as
    /// a write run alone copies the changes before it runs.
    known: Arc<HashMap<String, i64>>,
    /// The `data_version` at which `known` was good.
    data_version: Option<i64>,
    /// The id of every other term the transaction has added to a note.
    ids: HashMap<String, i64>,
    /// The change in each term's number of notes, by id.
    notes_per_term: HashMap<i64, i64>,
    /// The change in the number of notes indexed.
    notes: i64,
    /// The change in the number of tokens indexed.
    tokens: i64,
}

/// What a transaction's [`VocabularyChanges::apply`] tells the next about term ids, once it
/// has committed: see [`KnownTermIds::learn`].
pub(super) struct LearnedTermIds {
    known: Arc<HashMap<String, i64>>,
    data_version: Option<i64>,
    found: HashMap<String, i64>,
    /// Ids of terms no note holds any more, deleted from the vocabulary.
    dropped: Vec<i64>,
}

/// Term ids the writer found or added in earlier transactions, so that a group of writes
/// looks up in the vocabulary only the terms it is the first to meet: in a burst of writes
/// those lookups had been a tenth of the server's time.
///
/// An id stays good while its term is in `search_terms`. This connection's own transactions
/// report the terms they drop ([`Self::learn`]); a commit by any other connection (another
/// process on the file) makes all of them unknown, as `PRAGMA data_version` tells; and
/// whoever writes the vocabulary outside [`VocabularyChanges`] (a rebuild) calls
/// [`Self::forget`].
#[derive(Default)]
pub(super) struct KnownTermIds {
    ids: Arc<HashMap<String, i64>>,
    /// The connection's `data_version` when `ids` were last known good.
    data_version: Option<i64>,
}

impl KnownTermIds {
    /// Most ids kept: a note's terms are mostly a store's common words, and this bounds the
    /// memory (about a megabyte) a store with a vast vocabulary would otherwise fill.
    const MAX: usize = 16_384;

    /// The changes for a transaction that `conn` holds the write lock in, starting from the ids
    /// still known.
    pub(super) fn changes(&mut self, conn: &Connection) -> rusqlite::Result<VocabularyChanges> {
        let version = conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get::<_, i64>(0))?;
        if self.data_version != Some(version) {
            self.ids = Arc::default();
            self.data_version = Some(version);
        }
        Ok(VocabularyChanges {
            known: Arc::clone(&self.ids),
            data_version: self.data_version,
            ..VocabularyChanges::default()
        })
    }

    /// Keeps what a transaction that committed found, and forgets the terms it dropped:
    /// those known before and those it found itself (a term added and left by the same group).
    pub(super) fn learn(&mut self, learned: LearnedTermIds) {
        drop(std::mem::take(&mut self.ids));
        let mut ids = learned.known;
        let known = Arc::make_mut(&mut ids);
        let dropped: HashSet<i64> = learned.dropped.into_iter().collect();
        if !dropped.is_empty() {
            known.retain(|_, id| !dropped.contains(id));
        }
        let room = Self::MAX.saturating_sub(known.len());
        let found = learned.found.into_iter();
        known.extend(found.filter(|(_, id)| !dropped.contains(id)).take(room));
        self.ids = ids;
        self.data_version = learned.data_version;
    }

    /// Forgets every id: the vocabulary was written by other means, a transaction failed, or
    /// one is committing (until [`Self::learn`] hears it did).
    pub(super) fn forget(&mut self) {
        self.ids = Arc::default();
        self.data_version = None;
    }
}

impl VocabularyChanges {
    /// Writes the counts out; a term no note holds any more is dropped. What it returns
    /// matters only once the transaction has committed.
    pub(super) fn apply(self, conn: &Connection) -> rusqlite::Result<LearnedTermIds> {
        let mut dropped = Vec::new();
        if !self.notes_per_term.is_empty() || self.notes != 0 || self.tokens != 0 {
            // Only single-row statements without RETURNING or upserts: either would open a
            // statement savepoint, at which FTS5 writes its pending index data out as a tiny
            // segment (see the schema's note on savepoints).
            let mut count =
                conn.prepare_cached("UPDATE search_terms SET notes = notes + ?2 WHERE id = ?1")?;
            let mut drop_unheld =
                conn.prepare_cached("DELETE FROM search_terms WHERE id = ?1 AND notes <= 0")?;
            for (id, change) in self.notes_per_term {
                if change != 0 {
                    count.execute([id, change])?;
                }
                if change <= 0 && drop_unheld.execute([id])? > 0 {
                    dropped.push(id);
                }
            }
            if self.notes != 0 || self.tokens != 0 {
                conn.prepare_cached(
                    "UPDATE search_stats SET notes = max(notes + ?1, 0), tokens = max(tokens + ?2, 0) \
                     WHERE id = 1",
                )?
                .execute([self.notes, self.tokens])?;
            }
        }
        Ok(LearnedTermIds {
            known: self.known,
            data_version: self.data_version,
            found: self.ids,
            dropped,
        })
    }

    /// The id of `term`, added to the vocabulary (with no notes yet) if it is new.
    fn id(&mut self, conn: &Connection, term: String) -> rusqlite::Result<i64> {
        if let Some(id) = self.known.get(&term).or_else(|| self.ids.get(&term)) {
            return Ok(*id);
        }
        let found = conn
            .prepare_cached("SELECT id FROM search_terms WHERE term = ?1")?
            .query_row([&term], |r| r.get::<_, i64>(0))
            .optional()?;
        let id = match found {
            Some(id) => id,
            None => {
                let stem = stem_if_other(&term);
                conn.prepare_cached(
                    "INSERT INTO search_terms (term, notes, stem) VALUES (?1, 0, ?2)",
                )?
                .execute(params![term, stem])?;
                conn.last_insert_rowid()
            }
        };
        self.ids.insert(term, id);
        Ok(id)
    }
}

/// Records the terms of note `seq`, counting it in each term's number of notes in `changes`.
pub(super) fn index_terms(
    conn: &Connection,
    changes: &mut VocabularyChanges,
    seq: i64,
    title: &str,
    tags_json: &str,
    body: &str,
) -> rusqlite::Result<()> {
    // Counts an older build left behind when it deleted the note that had this number
    // before: they would block the new ones, and they still count in the vocabulary.
    unindex_terms(conn, changes, seq)?;
    let mut note = NoteTerms::default();
    for (term, weighted, tokens) in tokenize(conn, title, tags_json, body)? {
        let id = changes.id(conn, term)?;
        *changes.notes_per_term.entry(id).or_default() += 1;
        note.length = note.length.saturating_add(tokens);
        note.terms.push((
            u32::try_from(id).unwrap_or(u32::MAX),
            u16::try_from(weighted).unwrap_or(u16::MAX),
        ));
    }
    note.terms.sort_unstable();
    conn.prepare_cached("INSERT INTO note_terms (note, terms) VALUES (?1, ?2)")?
        .execute(params![seq, note.encode()])?;
    changes.notes += 1;
    changes.tokens += i64::from(note.length);
    Ok(())
}

/// Undoes [`index_terms`] for note `seq`, in `changes`.
pub(super) fn unindex_terms(
    conn: &Connection,
    changes: &mut VocabularyChanges,
    seq: i64,
) -> rusqlite::Result<()> {
    let Some(blob) = conn
        .prepare_cached("SELECT terms FROM note_terms WHERE note = ?1")?
        .query_row([seq], |r| r.get::<_, Vec<u8>>(0))
        .optional()?
    else {
        return Ok(());
    };
    conn.prepare_cached("DELETE FROM note_terms WHERE note = ?1")?
        .execute([seq])?;
    let (length, terms) = NoteTerms::read(&blob);
    for (id, _) in terms {
        *changes.notes_per_term.entry(i64::from(id)).or_default() -= 1;
    }
    changes.notes -= 1;
    changes.tokens -= i64::from(length);
    Ok(())
}

/// The note's distinct terms as FTS5 tokenizes them, in the order they first appear:
/// `(term, weighted count, tokens)`. Found through a hash map: a sorted map's comparisons at
/// every token were most of the time a note's terms took. The order is the note's own, so
/// new terms' ids come out the same however often the vocabulary is counted.
fn tokenize(
    conn: &Connection,
    title: &str,
    tags_json: &str,
    body: &str,
) -> rusqlite::Result<Vec<(String, u32, u32)>> {
    // Each term's place in the note, then its counts.
    let mut counts: HashMap<Vec<u8>, (usize, u32, u32)> = HashMap::new();
    for (text, weight) in [title, tags_json, body].into_iter().zip(WEIGHTS) {
        for_each_term(conn, text, |term| {
            let (_, weighted, tokens) = match counts.get_mut(term) {
                Some(counted) => counted,
                None => {
                    let place = counts.len();
                    counts.entry(term.to_vec()).or_insert((place, 0, 0))
                }
            };
            *weighted += weight;
            *tokens += 1;
        })?;
    }
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_unstable_by_key(|(_, (place, ..))| *place);
    // A term is whole UTF-8 unless FTS5 cut it at its longest, which may split a character.
    let mut cut = false;
    let terms = counts
        .into_iter()
        .map(|(term, (_, weighted, tokens))| {
            let term = String::from_utf8(term).unwrap_or_else(|split| {
                cut = true;
                String::from_utf8_lossy(split.as_bytes()).into_owned()
            });
            (term, weighted, tokens)
        })
        .collect();
    Ok(if cut { merge_repeated(terms) } else { terms })
}

/// `terms` with each term once, its counts summed: two terms cut in different characters
/// can read alike once the split character is replaced.
fn merge_repeated(terms: Vec<(String, u32, u32)>) -> Vec<(String, u32, u32)> {
    let mut places: HashMap<String, usize> = HashMap::new();
    let mut merged: Vec<(String, u32, u32)> = Vec::with_capacity(terms.len());
    for (term, weighted, tokens) in terms {
        match places.get(&term) {
            Some(&place) => {
                merged[place].1 += weighted;
                merged[place].2 += tokens;
            }
            None => {
                places.insert(term.clone(), merged.len());
                merged.push((term, weighted, tokens));
            }
        }
    }
    merged
}

/// The one term FTS5 makes of a (folded) query word, or `None` when it makes several or none.
pub(super) fn query_term(conn: &Connection, word: &str) -> rusqlite::Result<Option<String>> {
    // FTS5 only lowercases ASCII letters and digits; anything else goes through its
    // tokenizer, which folds case and diacritics its own way.
    if word.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(Some(word.to_ascii_lowercase()));
    }
    let mut terms = tokenize(conn, "", "", word)?;
    Ok(match terms.pop() {
        Some((term, _, 1)) if terms.is_empty() => Some(term),
        _ => None,
    })
}

/// A term of the vocabulary: its id, the term, and how many notes hold it.
pub(super) type VocabularyTerm = (i64, String, i64);

/// Every term of the vocabulary with the same stem as `term` (its inflected forms,
/// [`crate::store::stemming`]), `term` itself among them when the vocabulary holds it. A term
/// that is its own stem is stored without one, so the stem itself is looked up as a term too.
pub(super) fn forms(conn: &Connection, term: &str) -> rusqlite::Result<Vec<VocabularyTerm>> {
    let stem = stem(term);
    let mut forms = conn.prepare_cached(
        "SELECT id, term, notes FROM search_terms WHERE stem = ?1
         UNION ALL
         SELECT id, term, notes FROM search_terms WHERE term = ?1 AND stem IS NULL
         ORDER BY term",
    )?;
    forms
        .query_map([&*stem], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect()
}

/// The [`forms`] of `term` that do not start with it: those a query word matches besides the
/// terms it starts.
pub(super) fn forms_beyond_prefix(
    conn: &Connection,
    term: &str,
) -> rusqlite::Result<Vec<VocabularyTerm>> {
    let mut forms = forms(conn, term)?;
    forms.retain(|(_, form, _)| !form.starts_with(term));
    Ok(forms)
}

/// The query word's inflected forms beyond its prefix ([`forms_beyond_prefix`]), as terms;
/// none for a word FTS5 makes several terms of, which is searched as their phrase.
pub(super) fn query_forms(conn: &Connection, word: &str) -> rusqlite::Result<Vec<String>> {
    Ok(match query_term(conn, word)? {
        Some(term) => forms_beyond_prefix(conn, &term)?
            .into_iter()
            .map(|(_, form, _)| form)
            .collect(),
        None => Vec::new(),
    })
}

/// Stems every term of the vocabulary again: for a store from before stems were kept.
pub(super) fn fill_stems(conn: &Connection) -> rusqlite::Result<()> {
    let terms: Vec<(i64, String)> = conn
        .prepare("SELECT id, term FROM search_terms")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut update = conn.prepare("UPDATE search_terms SET stem = ?2 WHERE id = ?1")?;
    for (id, term) in terms {
        update.execute(params![id, stem_if_other(&term)])?;
    }
    Ok(())
}

/// How many terms of the vocabulary hold another stem than the stemmer gives them now.
pub(super) fn stale_stems(conn: &Connection) -> rusqlite::Result<i64> {
    let mut terms = conn.prepare("SELECT term, stem FROM search_terms")?;
    let mut rows = terms.query([])?;
    let mut stale = 0;
    while let Some(row) = rows.next()? {
        let (term, stem): (String, Option<String>) = (row.get(0)?, row.get(1)?);
        if stem_if_other(&term) != stem {
            stale += 1;
        }
    }
    Ok(stale)
}

/// Fills `search_terms`, `note_terms` and `search_stats` for the notes already stored, when
/// a store from before them is upgraded or its indexes are rebuilt: from the notes folded, as
/// the index holds them.
pub(super) fn backfill(conn: &Connection) -> rusqlite::Result<()> {
    let mut notes = conn.prepare("SELECT seq, title, tags, body FROM notes_folded ORDER BY seq")?;
    let mut rows = notes.query([])?;
    let mut changes = VocabularyChanges::default();
    while let Some(row) = rows.next()? {
        index_terms(
            conn,
            &mut changes,
            row.get(0)?,
            &row.get::<_, String>(1)?,
            &row.get::<_, String>(2)?,
            &row.get::<_, String>(3)?,
        )?;
    }
    changes.apply(conn).map(drop)
}

#[cfg(test)]
mod tests {
    use super::super::SqliteBackend;
    use super::super::group_commit::{WriteQueue, aborted, commit_group};
    use super::*;
    use crate::locks::lock;
    use crate::store::sqlite::NoteBackend;
    use crate::store::{NoteDraft, PutMode};

    /// Each term with its number of notes, each note's terms with their weighted counts, and
    /// the totals: by term, not by id, so that a vocabulary counted again compares equal.
    type Vocabulary = (
        Vec<(String, i64)>,
        Vec<(i64, Vec<(String, u16)>)>,
        (i64, i64),
    );

    fn vocabulary(conn: &Connection) -> Vocabulary {
        let mut terms = conn
            .prepare("SELECT id, term, notes FROM search_terms ORDER BY term")
            .unwrap();
        let rows: Vec<(i64, String, i64)> = terms
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let name: HashMap<i64, String> = rows.iter().map(|(id, t, _)| (*id, t.clone())).collect();
        let mut notes = conn
            .prepare("SELECT note, terms FROM note_terms ORDER BY note")
            .unwrap();
        let notes = notes
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?)))
            .unwrap()
            .map(|row| {
                let (note, blob) = row.unwrap();
                let mut terms: Vec<(String, u16)> = NoteTerms::decode(&blob)
                    .terms
                    .into_iter()
                    .map(|(id, count)| (name[&i64::from(id)].clone(), count))
                    .collect();
                terms.sort();
                (note, terms)
            })
            .collect();
        let stats = conn
            .query_row("SELECT notes, tokens FROM search_stats", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let terms = rows.into_iter().map(|(_, t, n)| (t, n)).collect();
        (terms, notes, stats)
    }

    fn draft(id: &str, body: &str) -> NoteDraft {
        NoteDraft {
            id: id.to_owned(),
            title: format!("Title {id}"),
            tags: vec!["shared".to_owned()],
            body: body.to_owned(),
        }
    }

    #[test]
    fn counts_kept_write_by_write_equal_counts_made_from_scratch() {
        let backend = SqliteBackend::open_in_memory(true).unwrap();
        let first: Vec<NoteDraft> = (0..40)
            .map(|i| {
                draft(
                    &format!("n{i}"),
                    &format!("common word{} only{i} common", i % 5),
                )
            })
            .collect();
        backend
            .put_many(
                first,
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        // Replacing drops the replaced notes' own words and adds new ones, some twice in the
        // same batch, one only to drop it again within the batch.
        let replaced: Vec<NoteDraft> = (0..15)
            .map(|i| draft(&format!("n{i}"), &format!("fresh{} common", i % 3)))
            .chain([draft("n20", "fleeting"), draft("n20", "settled")])
            .collect();
        backend
            .put_many(
                replaced,
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        for i in 25..35 {
            assert!(backend.delete(&format!("n{i}"), "test").unwrap());
        }
        backend
            .put(
                draft("single", "common lonely"),
                PutMode::CreateOnly,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let kept = backend.read_for_tests(|conn| Ok(vocabulary(conn)));
        assert!(kept.0.iter().all(|(_, notes)| *notes > 0), "no unheld term");
        for gone in ["only3", "only10", "only30", "fleeting"] {
            assert!(kept.0.iter().all(|(t, _)| t != gone), "{gone} is gone");
        }
        assert!(kept.0.contains(&("common".to_owned(), 30)));
        backend.rebuild_indexes().unwrap();
        let recounted = backend.read_for_tests(|conn| Ok(vocabulary(conn)));
        assert_eq!(kept, recounted);
    }

    fn term_id(backend: &SqliteBackend, term: &str) -> Option<i64> {
        backend.read_for_tests(|conn| {
            conn.query_row("SELECT id FROM search_terms WHERE term = ?1", [term], |r| {
                r.get(0)
            })
            .optional()
        })
    }

    /// Whether the vocabulary is what counting it again from the notes gives.
    fn assert_counts_true(backend: &SqliteBackend) {
        let kept = backend.read_for_tests(|conn| Ok(vocabulary(conn)));
        backend.rebuild_indexes().unwrap();
        assert_eq!(kept, backend.read_for_tests(|conn| Ok(vocabulary(conn))));
    }

    #[test]
    fn a_term_id_kept_from_an_earlier_group_is_not_used_once_its_term_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pkb.db");
        let options = crate::store::sqlite::SqliteOptions {
            seed: false,
            ..Default::default()
        };
        let this = SqliteBackend::open(&path, &options).unwrap();
        let other = SqliteBackend::open(&path, &options).unwrap();
        let put = |backend: &SqliteBackend, id: &str, body: &str| {
            backend
                .put(
                    draft(id, body),
                    PutMode::Replace,
                    &crate::store::Provenance::write("test"),
                )
                .unwrap();
        };

        // Dropped by this writer: its id goes to the next new term, and the dropped term,
        // written again, must be given an id of its own.
        put(&this, "a", "zebra");
        let zebra = term_id(&this, "zebra").unwrap();
        assert!(this.delete("a", "test").unwrap());
        put(&this, "b", "yak");
        assert_eq!(term_id(&this, "yak"), Some(zebra), "the id is taken again");
        put(&this, "c", "zebra");
        assert_ne!(term_id(&this, "zebra"), Some(zebra));

        // Dropped by another connection, which this writer learns only from the file.
        put(&this, "d", "okapi");
        let okapi = term_id(&this, "okapi").unwrap();
        assert!(other.delete("d", "test").unwrap());
        put(&other, "e", "quagga");
        assert_eq!(
            term_id(&this, "quagga"),
            Some(okapi),
            "the id is taken again"
        );
        put(&this, "f", "okapi");
        assert_ne!(term_id(&this, "okapi"), Some(okapi));
        assert_counts_true(&this);

        // Numbered again by a rebuild on this connection, which counts from the notes left.
        assert!(this.delete("b", "test").unwrap());
        let okapi = term_id(&this, "okapi");
        this.rebuild_indexes().unwrap();
        assert_ne!(term_id(&this, "okapi"), okapi, "the ids move");
        put(&this, "g", "zebra okapi walrus");
        assert_counts_true(&this);
    }

    #[test]
    fn a_term_added_and_dropped_within_one_group_is_not_kept() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        // One group: `fleeting` gets an id, then loses its only note, and is dropped.
        let batch = vec![draft("x", "fleeting"), draft("x", "settled")];
        backend
            .put_many(
                batch,
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        assert_eq!(term_id(&backend, "fleeting"), None);
        // A later group must add it again rather than count it under the dropped id.
        backend
            .put(
                draft("y", "fleeting"),
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let found = backend.search("fleeting", &[], 10).unwrap();
        assert_eq!(
            found.iter().map(|hit| &hit.id[..]).collect::<Vec<_>>(),
            ["y"]
        );
        assert!(term_id(&backend, "fleeting").is_some());
        assert_counts_true(&backend);
    }

    #[test]
    fn a_commit_that_unwinds_before_its_ids_are_learned_leaves_none_kept() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        backend
            .put(
                draft("a", "zebra"),
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let queue = WriteQueue::default();
        queue.push(super::super::writes::delete_write(
            "a".to_owned(),
            "test".to_owned(),
        ));
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut held = lock(&backend.writer);
            let writer = &mut *held;
            let after_commit = || -> rusqlite::Result<()> { panic!("after the commit") };
            let _ = commit_group(
                &mut writer.conn,
                &mut writer.known_terms,
                queue.take_group(),
                |_| Ok(()),
                after_commit,
            );
        }));
        assert!(unwound.is_err());
        // The delete committed, and `zebra` went with it: a later note must add it again.
        assert_eq!(term_id(&backend, "zebra"), None);
        backend
            .put(
                draft("b", "zebra"),
                PutMode::Replace,
                &crate::store::Provenance::write("test"),
            )
            .unwrap();
        let found = backend.search("zebra", &[], 10).unwrap();
        assert_eq!(
            found.iter().map(|hit| &hit.id[..]).collect::<Vec<_>>(),
            ["b"]
        );
        assert_counts_true(&backend);
    }

    #[test]
    fn a_write_undone_alone_takes_its_vocabulary_changes_along() {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let queue = WriteQueue::default();
        let note = |seq: i64, body: &'static str, fails: bool| {
            move |tx: &rusqlite::Transaction<'_>, changes: &mut VocabularyChanges| {
                index_terms(tx, changes, seq, "", "[]", body)?;
                if fails {
                    return Err(aborted("this write fails after indexing"));
                }
                Ok(())
            }
        };
        let first = queue.push(note(1, "alpha beta", false));
        // Adds `gamma` to the vocabulary, then is undone: the last write must add it again.
        let failing = queue.push(note(2, "beta gamma", true));
        let last = queue.push(note(3, "gamma delta", false));
        let mut held = lock(&backend.writer);
        let writer = &mut *held;
        commit_group(
            &mut writer.conn,
            &mut writer.known_terms,
            queue.take_group(),
            |_| Ok(()),
            || Ok(()),
        )
        .unwrap();
        drop(held);
        assert!(first.take().unwrap().is_ok() && last.take().unwrap().is_ok());
        assert!(failing.take().unwrap().is_err());
        let (terms, notes, stats) = backend.read_for_tests(|conn| Ok(vocabulary(conn)));
        let one = |t: &str| (t.to_owned(), 1);
        assert_eq!(
            terms,
            [one("alpha"), one("beta"), one("delta"), one("gamma")]
        );
        let held = |t: &[&str]| t.iter().map(|t| (t.to_string(), 1)).collect::<Vec<_>>();
        assert_eq!(
            notes,
            [
                (1, held(&["alpha", "beta"])),
                (3, held(&["delta", "gamma"]))
            ]
        );
        assert_eq!(stats, (2, 4));
    }

    #[test]
    fn note_terms_survive_encoding() {
        let note = NoteTerms {
            length: 123,
            terms: vec![(1, 10), (7, 1), (70_000, u16::MAX)],
        };
        assert_eq!(NoteTerms::decode(&note.encode()), note);
        assert_eq!(NoteTerms::decode(&[1, 2]), NoteTerms::default());
    }

    #[test]
    fn words_cut_alike_at_the_longest_term_are_one_term() {
        let conn = Connection::open_in_memory().unwrap();
        // Both are cut at 32,768 bytes, inside their last character, whose first two bytes
        // differ (東 is E6 9D B1, 枀 E6 9E 80): two terms to FTS5, one once replaced.
        let start = "東".repeat(10_922);
        let body = format!("{start}東 {start}枀");
        let terms = tokenize(&conn, "", "", &body).unwrap();
        assert_eq!(
            terms.len(),
            1,
            "{:?}",
            terms.iter().map(|t| (t.1, t.2)).collect::<Vec<_>>()
        );
        assert_eq!((terms[0].1, terms[0].2), (2, 2));
        assert!(terms[0].0.ends_with('\u{FFFD}'));
    }

    #[test]
    fn makes_the_terms_an_fts5_table_of_the_schema_makes() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5 (
                 title, tags, body, tokenize = 'unicode61 remove_diacritics 2'
             );
             CREATE VIRTUAL TABLE v USING fts5vocab('t', 'col');",
        )
        .unwrap();
        // 36,000 bytes: FTS5 keeps the first 32,768, which splits a character.
        let long_word = "東".repeat(12_000);
        let body =
            format!("Ünïcödé 東京 ﬁne x² ǅemal straße ΣΟΦΙΑ don't e-mail 2026-12-03 {long_word}");
        let (title, tags) = ("Crème brûlée, twice: brûlée", r#"["a/b","ça"]"#);
        conn.execute("INSERT INTO t VALUES (?1, ?2, ?3)", [title, tags, &body])
            .unwrap();
        let mut from_index: Vec<(String, u32, u32)> = Vec::new();
        let mut rows = conn
            .prepare("SELECT CAST(term AS BLOB), col, cnt FROM v ORDER BY term")
            .unwrap();
        for row in rows
            .query_map([], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, u32>(2)?,
                ))
            })
            .unwrap()
        {
            let (term, column, count) = row.unwrap();
            let term = String::from_utf8_lossy(&term).into_owned();
            let weight = WEIGHTS[["title", "tags", "body"]
                .iter()
                .position(|c| *c == column)
                .unwrap()];
            match from_index.last_mut() {
                Some((last, weighted, tokens)) if *last == term => {
                    *weighted += weight * count;
                    *tokens += count;
                }
                _ => from_index.push((term, weight * count, count)),
            }
        }
        assert!(from_index.iter().any(|(term, ..)| term.len() >= 32_766));
        let mut terms = tokenize(&conn, title, tags, &body).unwrap();
        terms.sort();
        assert_eq!(terms, from_index);
    }

    #[test]
    fn tokenizes_like_the_index_and_weights_columns() {
        let conn = Connection::open_in_memory().unwrap();
        let terms = tokenize(&conn, "Café Deploy", r#"["deploy"]"#, "deploy the CAFÉ now").unwrap();
        assert_eq!(
            terms,
            vec![
                ("cafe".to_owned(), 10 + 1, 2),
                ("deploy".to_owned(), 10 + 4 + 1, 3),
                ("the".to_owned(), 1, 1),
                ("now".to_owned(), 1, 1),
            ],
            "in the order they first appear"
        );
        let again = tokenize(&conn, "x", "[]", "").unwrap();
        assert_eq!(again, vec![("x".to_owned(), 10, 1)]);
    }
}
