//! The executors of the routes that rank here: candidates read newest first (from FTS5, the
//! tag index, or every note's counts), each note's counts looked up one at a time or read in
//! ranges, and the window of the best scored so far.

use super::scoring::Scorer;
use super::*;

/// The notes matching `?1` older than note `?2`, newest first.
pub(super) const CANDIDATES_SQL: &str =
    "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ?1 AND rowid < ?2 ORDER BY rowid DESC";

/// Every note's counts, newest first.
pub(super) const SCAN_SQL: &str = "SELECT note, terms FROM note_terms ORDER BY note DESC";

/// The notes carrying tag `?1`, newest first.
pub(super) const TAGGED_SQL: &str = "SELECT note FROM note_tags WHERE tag = ?1 ORDER BY note DESC";

/// The notes carrying all `?2` tags of the JSON array `?1`, newest first.
pub(super) const ALL_TAGGED_SQL: &str = "
SELECT note FROM note_tags WHERE tag IN (SELECT value FROM json_each(?1))
GROUP BY note HAVING count(*) = ?2
ORDER BY note DESC";

/// Scores notes newest first from their counts until the window is full, or `budget` notes
/// have been read: `None` when the scan is done, or the oldest note it read.
pub(super) fn scan_newest(
    conn: &Connection,
    budget: i64,
    ranking: &mut Ranking,
) -> rusqlite::Result<Option<i64>> {
    let mut scan = conn.prepare_cached(SCAN_SQL)?;
    let mut rows = scan.query([])?;
    let mut oldest = i64::MAX;
    for _ in 0..budget {
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        oldest = row.get(0)?;
        let blob = match row.get_ref(1)? {
            rusqlite::types::ValueRef::Blob(blob) => blob,
            _ => &[],
        };
        ranking.offer(oldest, blob);
        if ranking.full() {
            return Ok(None);
        }
    }
    Ok(Some(oldest))
}

/// Scores sparse candidates (note numbers, newest first), looking them up a batch at a time in
/// ascending order, where neighbouring lookups share pages. A batch is what the window still
/// needs at `matching`, the share of candidates expected to match.
pub(super) fn look_up_in_batches(
    candidates: &mut rusqlite::Rows<'_>,
    counts: &mut CountLookup<'_>,
    ranking: &mut Ranking,
    matching: f64,
) -> rusqlite::Result<()> {
    let mut batch = Vec::new();
    // Words that go together less than independent words would need more candidates than
    // estimated; ones that go together more, fewer. Start from at most a few windows and
    // grow, so that a wrong estimate costs a few batches rather than a huge one.
    let mut most = ranking.window.saturating_mul(4);
    loop {
        let needed = ranking.window.saturating_sub(ranking.scored.len()) as f64;
        let size = ((needed / matching.clamp(1e-3, 1.0) * 1.1) as usize + 16).min(most);
        most = most.saturating_mul(2);
        batch.clear();
        while batch.len() < size {
            match candidates.next()? {
                Some(row) => batch.push(row.get::<_, i64>(0)?),
                None => break,
            }
        }
        let exhausted = batch.len() < size;
        batch.sort_unstable();
        for &seq in &batch {
            if let Some(blob) = counts.look_up(seq)? {
                ranking.offer(seq, blob);
            }
        }
        if ranking.full() || exhausted {
            return Ok(());
        }
    }
}

/// The window's matches scored so far.
pub(super) struct Ranking {
    scorer: Scorer,
    /// `(score, note)`.
    scored: Vec<(f64, i64)>,
    window: usize,
}

impl Ranking {
    /// An empty window of `window` notes, scored by `scorer`.
    pub(super) fn new(scorer: Scorer, window: usize) -> Self {
        Self {
            scorer,
            scored: Vec::new(),
            window,
        }
    }

    /// Scores note `seq` from its counts if it matches.
    pub(super) fn offer(&mut self, seq: i64, blob: &[u8]) {
        if let Some(score) = self.scorer.score(blob) {
            self.scored.push((score, seq));
        }
    }

    /// Whether the window holds as many matches as it ranks.
    pub(super) fn full(&self) -> bool {
        self.scored.len() >= self.window
    }

    /// The best `limit` hits of the newest `window` matches, best first; ties go to the newer
    /// note, as with FTS5's ranking.
    pub(super) fn hits(mut self, conn: &Connection, limit: usize) -> rusqlite::Result<Plan> {
        // A batch looked up out of order may have overfilled the window.
        if self.scored.len() > self.window {
            self.scored
                .sort_unstable_by_key(|&(_, seq)| std::cmp::Reverse(seq));
            self.scored.truncate(self.window);
        }
        self.scored
            .sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        let mut note = conn.prepare_cached("SELECT id, title, tags FROM notes WHERE seq = ?1")?;
        let mut hits = Vec::with_capacity(limit.min(self.scored.len()));
        for (score, seq) in self.scored {
            if hits.len() == limit {
                break;
            }
            let hit = note
                .query_row([seq], |r| {
                    Ok(SearchHit {
                        id: r.get(0)?,
                        title: r.get(1)?,
                        tags: super::super::rows::tags_from_json(r, 2)?,
                        score,
                    })
                })
                .optional()?;
            match hit {
                Some(hit) => hits.push(hit),
                // Counts left behind by a build from before the vocabulary, which deleted
                // the note without them: the note is gone, so is the hit.
                None => tracing::warn!(seq, "search counts for a note that no longer exists"),
            }
        }
        Ok(Plan::Ranked(hits))
    }
}

/// Reads notes' stored counts ([`NoteTerms`] blobs) for dense candidates, asked for newest
/// first: a chunk of neighbouring notes at a time.
pub(super) struct RangeCounts<'conn> {
    /// The next notes at or below a number.
    range: rusqlite::CachedStatement<'conn>,
    chunk: Vec<(i64, Vec<u8>)>,
    at: usize,
}

/// Notes read per range read.
pub(super) const RANGE_CHUNK: i64 = 256;

impl<'conn> RangeCounts<'conn> {
    pub(super) fn new(conn: &'conn Connection) -> rusqlite::Result<Self> {
        Ok(RangeCounts {
            range: conn.prepare_cached(
                "SELECT note, terms FROM note_terms WHERE note <= ?1 ORDER BY note DESC LIMIT ?2",
            )?,
            chunk: Vec::new(),
            at: 0,
        })
    }

    /// The counts of note `seq`, which is older than any asked for before.
    pub(super) fn read(&mut self, seq: i64) -> rusqlite::Result<Option<&[u8]>> {
        while self.chunk.get(self.at).is_some_and(|(note, _)| *note > seq) {
            self.at += 1;
        }
        if self.at >= self.chunk.len() {
            self.chunk = self
                .range
                .query_map(params![seq, RANGE_CHUNK], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            self.at = 0;
        }
        Ok(match self.chunk.get(self.at) {
            Some((note, blob)) if *note == seq => Some(blob.as_slice()),
            _ => None,
        })
    }
}

/// Looks notes' stored counts up one note at a time, in any order.
pub(super) struct CountLookup<'conn> {
    lookup: rusqlite::CachedStatement<'conn>,
    /// The last note's counts.
    one: Vec<u8>,
}

impl<'conn> CountLookup<'conn> {
    pub(super) fn new(conn: &'conn Connection) -> rusqlite::Result<Self> {
        Ok(CountLookup {
            lookup: conn.prepare_cached("SELECT terms FROM note_terms WHERE note = ?1")?,
            one: Vec::new(),
        })
    }

    /// The counts of note `seq`.
    pub(super) fn look_up(&mut self, seq: i64) -> rusqlite::Result<Option<&[u8]>> {
        let mut rows = self.lookup.query([seq])?;
        let Some(row) = rows.next()? else {
            return Ok(None);
        };
        self.one.clear();
        if let rusqlite::types::ValueRef::Blob(blob) = row.get_ref(0)? {
            self.one.extend_from_slice(blob);
        }
        Ok(Some(&self.one))
    }
}
