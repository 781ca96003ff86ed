//! The durable note store.
//!
//! [`Store`] is a cheap-to-clone async handle over a [`NoteEngine`], the one interface every
//! engine implements, in terms of notes. It checks and normalises what it is given, so
//! engines see only valid notes. The engines are [`sqlite`] (one file, the default) and
//! `postgres` (behind its feature), each in its own folder with its runtime, constructors and
//! options; nothing here knows either.

mod engine;
mod history;
pub mod per_user;
#[cfg(feature = "postgres")]
pub mod postgres;
mod query_words;
mod seed;
pub mod sqlite;
mod stemming;

pub use engine::NoteEngine;
pub use history::{
    ChangeEntry, ChangeFilter, ChangeKind, MAX_BY_CHARS, NoteVersion, Provenance, Purged,
    RecentChange, UNKNOWN_CLIENT, VersionLookup, VersionSummary,
};
pub use seed::{SEED_NOTES, SEEDED_BY};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::links::{Backlink, Link, LinkedNote, NoteWithLinks, TargetKeys, link_targets, links_of};
use crate::note::{
    BODY_MAX_CHARS, Note, TAG_MAX_CHARS, TAGS_MAX, TITLE_MAX_CHARS, canonical_timestamp, derive_id,
    is_valid_id, normalize_tag, normalize_tags,
};
use crate::note_edit::{EditRefusal, NoteEdit};

/// A boxed error from the backend, kept as the `source` of a [`StoreError`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file exists but is not a PKB store; it was not modified.
    #[error("{} is not a PKB database ({reason}); it was left untouched", .path.display())]
    NotPkb {
        /// The file that was refused.
        path: PathBuf,
        /// What was found instead.
        reason: String,
    },
    /// The file is a damaged or truncated store; it was not modified.
    #[error(
        "{} is damaged ({reason}); it was left untouched: restore it from a backup or move it aside",
        .path.display()
    )]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What the check found.
        reason: String,
    },
    /// The file was written by a newer PKB whose schema this build cannot read.
    #[error(
        "{} was written by a newer PKB (schema version {found}, this build reads up to {supported})",
        .path.display()
    )]
    TooNew {
        /// The refused file.
        path: PathBuf,
        /// Schema version found in the file.
        found: i64,
        /// Newest schema version this build reads.
        supported: i64,
    },
    /// The file or its folder could not be opened or created.
    #[error("cannot open {}: {source}", .path.display())]
    Open {
        /// The file that could not be opened.
        path: PathBuf,
        /// The underlying failure.
        source: BoxError,
    },
    /// No default location: neither `XDG_DATA_HOME` (absolute) nor `HOME` is set.
    #[error(
        "cannot find a data directory: set XDG_DATA_HOME to an absolute path or set HOME, or give the database path"
    )]
    NoDataDir,
    /// The note breaks the contract's limits; nothing was stored.
    #[error("invalid note: {0}")]
    Invalid(String),
    /// A read or write failed on an open store.
    #[error("{context}: {source}")]
    Backend {
        /// What was being done, and on which file.
        context: String,
        /// The underlying failure.
        source: BoxError,
    },
    /// What the store holds disagrees with itself (a search index out of step with the
    /// notes); `reindex` mends it.
    #[error(
        "{store} is out of step: {reason}; run `pkb-server reindex` to rebuild what is derived from the notes"
    )]
    OutOfStep {
        /// The store, as its location is shown.
        store: String,
        /// What disagrees.
        reason: String,
    },
    /// The worker running the operation stopped before answering.
    #[error("note store task failed: {0}")]
    Unavailable(String),
    /// Search by meaning could not be done (the encoder failed, or the store keeps no
    /// vectors); word search is unaffected.
    #[error("{0}")]
    Meaning(String),
    /// Another connection held the store's write lock for longer than the wait allows (a
    /// long write or a `reindex` in another process): a busy store, not a damaged one.
    #[error(
        "{store} is busy: another process held its write lock for more than 5 s (a long write or a reindex), so it could not {action}; nothing was changed: try again"
    )]
    Busy {
        /// The store, as its location is shown.
        store: String,
        /// What could not be done.
        action: String,
    },
}

impl StoreError {
    /// The error as a client may be told it: the server's paths, which the log keeps, are
    /// left out (on a server of many users they would name the data directory and the user's
    /// storage key).
    pub fn told_to_clients(&self) -> String {
        match self {
            StoreError::NotPkb { reason, .. } => {
                format!("the note store is not a PKB database ({reason})")
            }
            StoreError::Corrupt { reason, .. } => {
                format!("the note store is damaged ({reason}); it was left untouched")
            }
            StoreError::TooNew {
                found, supported, ..
            } => format!(
                "the note store was written by a newer PKB (schema version {found}, this build reads up to {supported})"
            ),
            StoreError::Open { source, .. } => {
                format!("the note store cannot be opened: {source}")
            }
            StoreError::Backend { source, .. } => format!("the note store failed: {source}"),
            StoreError::OutOfStep { reason, .. } => format!(
                "the note store is out of step: {reason}; `pkb-server reindex` rebuilds what is derived from the notes"
            ),
            StoreError::Busy { action, .. } => format!(
                "the note store is busy: another process held its write lock for more than 5 s, so it could not {action}; nothing was changed: try again"
            ),
            other => other.to_string(),
        }
    }
}

/// A note to save: the caller's fields, without timestamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteDraft {
    /// The id to save under; see [`is_valid_id`].
    pub id: String,
    /// The title; trimmed before it is stored.
    pub title: String,
    /// The tags; normalised with [`normalize_tags`] before they are stored.
    pub tags: Vec<String>,
    /// The body, stored as given.
    pub body: String,
}

impl NoteDraft {
    /// A draft whose id is derived from the title with [`derive_id`].
    pub fn from_title(
        title: impl Into<String>,
        tags: Vec<String>,
        body: impl Into<String>,
    ) -> Self {
        let title = title.into();
        NoteDraft {
            id: derive_id(title.trim()),
            title,
            tags,
            body: body.into(),
        }
    }
}

/// The dates a note brings with it, as an import does; see [`Store::put_dated`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoteDates {
    /// `created_at` to store (RFC 3339); `None` keeps a replaced note's, and gives a new note
    /// its `updated_at`.
    pub created_at: Option<String>,
    /// `updated_at` to store (RFC 3339); `None` means now.
    pub updated_at: Option<String>,
}

/// What [`Store::put`] does when the id already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMode {
    /// Leave the existing note alone and answer [`PutOutcome::Exists`].
    CreateOnly,
    /// Replace title, tags and body; keep `created_at`.
    Replace,
    /// Replace as [`PutMode::Replace`] a note carrying this tag; leave any other alone and
    /// answer [`PutOutcome::Exists`]. Decided in the write's own transaction, so a note written
    /// meanwhile under the same id is never replaced by mistake.
    ReplaceTagged(&'static str),
    /// Replace as [`PutMode::Replace`] only the note at this version: another version
    /// answers [`PutOutcome::Stale`], a missing note [`PutOutcome::Missing`]. Decided in the
    /// write's own transaction, so no change made meanwhile is lost.
    ReplaceAtVersion(u64),
}

/// The result of [`Store::put`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutOutcome {
    /// A new note was stored.
    Created(Note),
    /// An existing note was replaced.
    Replaced(Note),
    /// The id exists and the mode left it alone; nothing changed.
    Exists,
    /// [`PutMode::ReplaceAtVersion`] found the note at another version; nothing changed.
    Stale {
        /// The version the note is at.
        current: u64,
    },
    /// [`PutMode::ReplaceAtVersion`] found no note; nothing changed.
    Missing,
}

/// The result of [`Store::edit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditOutcome {
    /// The note as the edit left it.
    Edited {
        /// The note, at its new version.
        note: Note,
        /// Whether its title changed (the list of notes shows titles).
        title_changed: bool,
    },
    /// No note has this id.
    NotFound,
    /// The note is at another version than the one expected.
    Stale {
        /// The version it is at.
        current: u64,
    },
    /// The edit cannot be made to this note; nothing changed.
    Refused(EditRefusal),
}

/// The result of [`Store::restore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// The version is the note's current state again.
    Restored {
        /// The note, at its new version.
        note: Note,
        /// The version it was restored from.
        from: u64,
        /// Whether the note had been deleted (it is back in the list).
        created: bool,
    },
    /// The note never had that version, or it was pruned.
    NoSuchVersion,
    /// No note ever had the id.
    NoSuchNote,
}

/// A note without its body, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NoteSummary {
    /// The note id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The tags.
    pub tags: Vec<String>,
    /// When the note was last saved (RFC 3339, UTC).
    pub updated_at: String,
}

/// One search result, without the body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The note id.
    pub id: String,
    /// The title.
    pub title: String,
    /// The tags.
    pub tags: Vec<String>,
    /// Relevance; higher is better. Comparable only within one result list.
    pub score: f64,
}

/// An async handle on the note store. Clones share one engine.
///
/// Every change made through a handle is kept as a version recorded as made by the handle's
/// client ([`Store::changed_by`]; [`UNKNOWN_CLIENT`] until one is named).
#[derive(Clone)]
pub struct Store {
    engine: Arc<dyn NoteEngine>,
    by: Arc<str>,
    /// The background work that keeps the notes' vectors, shared by every clone.
    vectors: Arc<crate::meaning::indexer::VectorIndexer>,
}

/// Bounds the work one call can ask for, whatever the caller passes.
const MAX_LIMIT: usize = 10_000;

/// Most matches a search ranks, in every backend. A query matching more notes than this (a
/// very common word, a one- or two-letter prefix) ranks only its most recently created
/// matches: ranking costs about a microsecond per row, so ranking 100,000 matches would take
/// over 100 ms.
const RANK_WINDOW: i64 = 1_000;

/// How deep each ranking hybrid search fuses is: on BEIR SciFact, with each word a unit of the
/// terms of its stem, rankings of 50 fused to nDCG@10 0.724 and of 10 to 0.715 (docs/search.md).
const HYBRID_DEPTH: usize = 50;

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// A store over an async engine, such as [`postgres`]'s.
    pub fn from_engine(engine: Arc<dyn NoteEngine>) -> Store {
        Store {
            engine,
            by: Arc::from(UNKNOWN_CLIENT),
            vectors: Arc::default(),
        }
    }

    /// A handle on the same store whose changes are recorded as made by `by`: a client's
    /// `<name> <version>`, or `pkb-server import`. Only its first [`MAX_BY_CHARS`] characters
    /// are kept.
    pub fn changed_by(&self, by: impl Into<Arc<str>>) -> Store {
        let by: Arc<str> = by.into();
        let kept = history::bounded_by(&by);
        let by = if kept.len() == by.len() {
            by
        } else {
            Arc::from(kept)
        };
        Store {
            engine: Arc::clone(&self.engine),
            by,
            vectors: Arc::clone(&self.vectors),
        }
    }

    /// Who this handle's changes are recorded as made by.
    pub fn changes_by(&self) -> &str {
        &self.by
    }

    /// The engine under this handle.
    pub(crate) fn engine(&self) -> &Arc<dyn NoteEngine> {
        &self.engine
    }

    /// The default file: `$XDG_DATA_HOME/pkb/pkb.db`, else `$HOME/.local/share/pkb/pkb.db`.
    ///
    /// A relative `XDG_DATA_HOME` is ignored, as the XDG base directory spec requires.
    pub fn default_path() -> Result<PathBuf, StoreError> {
        Ok(Store::default_data_dir()?.join("pkb.db"))
    }

    /// The default data directory: `$XDG_DATA_HOME/pkb`, else `$HOME/.local/share/pkb`.
    /// It holds the default store, the tokens and the users' stores.
    pub fn default_data_dir() -> Result<PathBuf, StoreError> {
        default_data_dir_from(std::env::var_os("XDG_DATA_HOME"), std::env::var_os("HOME"))
    }

    /// The note with exactly this id.
    ///
    /// A note read since the last commit (by any process) is answered from memory, without
    /// the hop to a read thread.
    pub async fn get(&self, id: &str) -> Result<Option<Note>, StoreError> {
        self.engine.get(id).await
    }

    /// Saves a note atomically.
    ///
    /// The title is trimmed and the tags normalised; a draft outside the contract's limits is
    /// refused with [`StoreError::Invalid`]. On replace, `created_at` is kept and `updated_at`
    /// set to now. An answered put is on disk.
    pub async fn put(&self, draft: NoteDraft, mode: PutMode) -> Result<PutOutcome, StoreError> {
        let draft = validate(draft)?;
        let put = self
            .engine
            .put(draft, mode, &Provenance::write(Arc::clone(&self.by)))
            .await;
        self.vectors.wake();
        put
    }

    /// Saves several notes in one transaction: all or none. Outcomes follow the drafts' order.
    ///
    /// One fsync for the whole batch, which makes imports much faster than repeated
    /// [`Store::put`]. A draft whose id appears earlier in the batch sees that earlier note.
    pub async fn put_many(
        &self,
        drafts: Vec<NoteDraft>,
        mode: PutMode,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        let drafts = drafts
            .into_iter()
            .map(validate)
            .collect::<Result<Vec<_>, _>>()?;
        let undated = drafts.into_iter().map(|d| (d, NoteDates::default()));
        let put = self
            .engine
            .put_dated(
                undated.collect(),
                mode,
                &Provenance::write(Arc::clone(&self.by)),
            )
            .await;
        self.vectors.wake();
        put
    }

    /// Saves several notes, each with the dates it brings, in one transaction: all or none.
    /// What an import uses, so that an exported store comes back with its dates; each version
    /// is recorded as `imported`.
    ///
    /// Dates are read with [`canonical_timestamp`] and stored in its form; a date it cannot
    /// read, or an `updated_at` before the `created_at`, is refused with
    /// [`StoreError::Invalid`], as a draft outside the limits is.
    pub async fn put_dated(
        &self,
        notes: Vec<(NoteDraft, NoteDates)>,
        mode: PutMode,
    ) -> Result<Vec<PutOutcome>, StoreError> {
        let notes = notes
            .into_iter()
            .map(|(draft, dates)| Ok((validate(draft)?, validate_dates(dates)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        let imported = Provenance::recorded_as(Arc::clone(&self.by), ChangeKind::Imported);
        let put = self.engine.put_dated(notes, mode, &imported).await;
        self.vectors.wake();
        put
    }

    /// Deletes a note, keeping it in its history as a `deleted` version; whether it existed.
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        self.engine.delete(id, &self.by).await
    }

    /// Changes part of a note (see [`NoteEdit`]) as one new version, `edited`.
    ///
    /// With `expect_version`, only a note at that version is changed. Without, an edit that
    /// meets a change made meanwhile is applied again to the newer note, so neither change is
    /// lost. Nothing changes on any refusal.
    pub async fn edit(
        &self,
        id: &str,
        edit: &NoteEdit,
        expect_version: Option<u64>,
    ) -> Result<EditOutcome, StoreError> {
        let edited = Provenance::recorded_as(Arc::clone(&self.by), ChangeKind::Edited);
        // Each try loses only to a change committed meanwhile; a note changed faster than this
        // for so long is left as it is.
        const TRIES: usize = 64;
        for _ in 0..TRIES {
            let Some(note) = self.get(id).await? else {
                return Ok(EditOutcome::NotFound);
            };
            if let Some(expected) = expect_version
                && expected != note.version
            {
                return Ok(EditOutcome::Stale {
                    current: note.version,
                });
            }
            let draft = match edit.apply_to(&note) {
                Ok(draft) => validate(draft)?,
                Err(refusal) => return Ok(EditOutcome::Refused(refusal)),
            };
            let title_changed = draft.title != note.title;
            match self
                .engine
                .put(draft, PutMode::ReplaceAtVersion(note.version), &edited)
                .await?
            {
                PutOutcome::Replaced(note) => {
                    self.vectors.wake();
                    return Ok(EditOutcome::Edited {
                        note,
                        title_changed,
                    });
                }
                PutOutcome::Missing => return Ok(EditOutcome::NotFound),
                PutOutcome::Stale { current } if expect_version.is_some() => {
                    return Ok(EditOutcome::Stale { current });
                }
                _ => continue,
            }
        }
        Err(StoreError::Backend {
            context: format!("cannot edit {id}"),
            source: format!("other clients changed it {TRIES} times while the edit was made; nothing was changed: try again").into(),
        })
    }

    /// The note with this exact id, with its links resolved now and the notes that link to it.
    pub async fn get_with_links(&self, id: &str) -> Result<Option<NoteWithLinks>, StoreError> {
        self.engine.get_with_links(id).await
    }

    /// The links of `note` (a version of it, say) as they resolve now.
    pub async fn links_now(&self, note: &Note) -> Result<Vec<Link>, StoreError> {
        let targets = link_targets(&note.body);
        let keys: Vec<TargetKeys> = targets.iter().map(|t| TargetKeys::of(t)).collect();
        let resolved = self.engine.resolve_targets(&keys).await?;
        Ok(links_of(targets, resolved))
    }

    /// Every target `body` links to, in order, with the note it resolves to now (if any):
    /// also a target that resolves to the same note as an earlier one, which
    /// [`Store::links_now`] lists once. What a page needs to make each link a link.
    pub async fn resolve_links(
        &self,
        body: &str,
    ) -> Result<Vec<(String, Option<LinkedNote>)>, StoreError> {
        let targets = link_targets(body);
        let keys: Vec<TargetKeys> = targets.iter().map(|t| TargetKeys::of(t)).collect();
        let resolved = self.engine.resolve_targets(&keys).await?;
        Ok(targets.into_iter().zip(resolved).collect())
    }

    /// The notes that link to the note with this id, sorted by id.
    pub async fn backlinks(&self, id: &str) -> Result<Vec<Backlink>, StoreError> {
        self.engine.backlinks(id).await
    }

    /// The versions of a note, newest first, at most `limit`; also of a deleted note. `None`
    /// when no note ever had this id.
    pub async fn history(
        &self,
        id: &str,
        limit: usize,
    ) -> Result<Option<Vec<VersionSummary>>, StoreError> {
        self.engine.history(id, limit).await
    }

    /// The latest changes across every note, newest first, at most `limit`.
    pub async fn recent_changes(&self, limit: usize) -> Result<Vec<RecentChange>, StoreError> {
        let filter = ChangeFilter {
            limit,
            ..ChangeFilter::default()
        };
        let changes = self.changes(&filter).await?;
        Ok(changes.into_iter().map(|entry| entry.change).collect())
    }

    /// The latest changes `filter` lets through, newest first: a page of them, the next
    /// page being those before the last one's [`ChangeEntry::position`]. At most
    /// [`MAX_LIMIT`] whatever `filter.limit` says.
    pub async fn changes(&self, filter: &ChangeFilter) -> Result<Vec<ChangeEntry>, StoreError> {
        if filter.limit > MAX_LIMIT {
            let bounded = ChangeFilter {
                limit: MAX_LIMIT,
                ..filter.clone()
            };
            return self.engine.changes(&bounded).await;
        }
        self.engine.changes(filter).await
    }

    /// One version of a note, whole; also of a deleted note.
    pub async fn version(&self, id: &str, version: u64) -> Result<VersionLookup, StoreError> {
        self.engine.version(id, version).await
    }

    /// Makes a version's title, tags and body the note's current state again, as a new
    /// version (`restored`); a deleted note comes back, with the date it was first made.
    pub async fn restore(&self, id: &str, version: u64) -> Result<RestoreOutcome, StoreError> {
        let old = match self.engine.version(id, version).await? {
            VersionLookup::Found(old) => old.note,
            VersionLookup::NoSuchVersion => return Ok(RestoreOutcome::NoSuchVersion),
            VersionLookup::NoSuchNote => return Ok(RestoreOutcome::NoSuchNote),
        };
        let draft = validate(NoteDraft {
            id: old.id,
            title: old.title,
            tags: old.tags,
            body: old.body,
        })?;
        let dates = NoteDates {
            created_at: Some(old.created_at),
            updated_at: None,
        };
        let restored = Provenance::recorded_as(Arc::clone(&self.by), ChangeKind::Restored);
        let outcome = self
            .engine
            .put_dated(vec![(draft, dates)], PutMode::Replace, &restored)
            .await?;
        self.vectors.wake();
        match outcome.into_iter().next() {
            Some(PutOutcome::Created(note)) => Ok(RestoreOutcome::Restored {
                note,
                from: version,
                created: true,
            }),
            Some(PutOutcome::Replaced(note)) => Ok(RestoreOutcome::Restored {
                note,
                from: version,
                created: false,
            }),
            _ => Err(StoreError::Unavailable(
                "the store answered a restore with no note".to_owned(),
            )),
        }
    }

    /// Drops the versions made more than `older_than` ago, except each note's newest (its
    /// current state, or a deleted note's last); how many were dropped. For the terminal.
    pub async fn prune_versions(&self, older_than: Duration) -> Result<u64, StoreError> {
        let cutoff = time::OffsetDateTime::now_utc()
            - time::Duration::try_from(older_than).unwrap_or(time::Duration::MAX);
        let before = crate::timestamp::format_rfc3339(cutoff.max(time::OffsetDateTime::UNIX_EPOCH));
        self.engine.prune_versions(&before).await
    }

    /// Erases a note and every version of it for good: the only way to. For the terminal.
    pub async fn purge(&self, id: &str) -> Result<Purged, StoreError> {
        self.engine.purge(id).await
    }

    /// Up to `limit` notes with ids greater than `after`, sorted by id (keyset paging: pass the
    /// last id of one page as `after` for the next).
    pub async fn list(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<NoteSummary>, StoreError> {
        self.engine.list(after, limit).await
    }

    /// Up to `limit` whole notes with ids greater than `after`, sorted by id: [`Store::list`]
    /// with bodies and both dates, for an export.
    pub async fn list_with_bodies(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Note>, StoreError> {
        self.engine.list_with_bodies(after, limit).await
    }

    /// How many notes there are.
    pub async fn count(&self) -> Result<u64, StoreError> {
        self.engine.count().await
    }

    /// Full-text search over title, tags and body, best first.
    ///
    /// Every word of `query` must match, each also as a prefix, ignoring case and diacritics.
    /// Ranked by BM25 with the title weighted above the tags, and the tags above the body.
    /// Search syntax in `query` is plain text, so no query fails; a query with no words finds
    /// nothing. A note must carry every tag in `tags` (normalised like stored tags).
    ///
    /// To bound the cost of a word found in most notes, only the 1,000 most recently created
    /// matches are ranked; a query matching fewer notes ranks them all.
    pub async fn search(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let tags = normalize_tags(tags);
        self.engine.search(query, &tags, limit).await
    }

    /// The notes nearest in meaning to `query`, best first (cosine similarity of the note's
    /// best passage), carrying every tag of `tags`. The first call starts keeping the notes'
    /// vectors in the background (and loads the encoder), and waits up to 3 s for them; notes
    /// not yet read by it are not found until they are.
    pub async fn search_by_meaning(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let tags = normalize_tags(tags);
        // The encoding and the scan each take a turn (`meaning::take_turn`); the wait for a
        // first store's vectors does not.
        let query = {
            let _turn = crate::meaning::take_turn().await;
            embed_query(query).await?
        };
        self.vectors.start(self);
        // A store's first search waits a little for its notes' vectors, which a small store
        // has in that time; a large one answers with what is ready and goes on in the background.
        self.vectors
            .first_catch_up(std::time::Duration::from_secs(3))
            .await;
        let _turn = crate::meaning::take_turn().await;
        self.engine
            .nearest(crate::meaning::model_id(), &query, &tags, limit)
            .await
    }

    /// Word search and search by meaning fused (reciprocal rank fusion, k = 60), best first:
    /// a note may match only some of the query's words here. Each ranking is [`HYBRID_DEPTH`]
    /// deep, or as deep as the results asked for.
    pub async fn search_hybrid(
        &self,
        query: &str,
        tags: &[String],
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let depth = limit.max(HYBRID_DEPTH);
        let normalized = normalize_tags(tags);
        let (words, meaning) = futures::future::try_join(
            self.engine.search_any_words(query, &normalized, depth),
            self.search_by_meaning(query, tags, depth),
        )
        .await?;
        Ok(crate::meaning::fusion::fuse(words, meaning, limit))
    }

    /// What tells this store's vector indexer that notes changed behind the handle's back (a
    /// vault's files changed by other programs).
    pub(crate) fn vectors_waker(&self) -> impl Fn() + Send + Sync + 'static {
        let vectors = Arc::clone(&self.vectors);
        move || vectors.wake()
    }

    /// Starts keeping the notes' vectors now, rather than at the first search by meaning; for
    /// a store known to be searched so.
    pub fn keep_vectors(&self) {
        self.vectors.start(self);
    }

    /// Sorted ids that start with `prefix`; every character of `prefix` is literal.
    pub async fn ids_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = prefix.to_lowercase();
        self.engine.ids_with_prefix(&prefix, limit).await
    }

    /// Sorted distinct tags that start with `prefix`, normalised as tags are (trimmed and
    /// lowercased); every character left is literal.
    pub async fn tags_with_prefix(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let prefix = normalize_tag(prefix);
        self.engine.tags_with_prefix(&prefix, limit).await
    }

    /// Checks the whole store, search index included, for damage. Reads everything: slow on
    /// large stores.
    pub async fn verify(&self) -> Result<(), StoreError> {
        self.engine.verify().await
    }

    /// Merges the search index's pieces into one when there are more than a few (every
    /// write transaction adds one, and a search looks in each); returns when done. The
    /// merge goes in steps of about 30 ms, each a transaction of its own, so writes from
    /// other handles and processes go on meanwhile. For the end of an import; a server
    /// leaves it to [`Store::spawn_index_merge`].
    pub async fn merge_index(&self) -> Result<(), StoreError> {
        self.engine.merge_index().await
    }

    /// Starts merging the search index, as [`Store::merge_index`] does, once this store has had
    /// no request for `quiet` after the start, and again after each write. A write that comes
    /// during a merge waits for one step at most, and the merge waits for the next quiet
    /// spell. Needs a tokio runtime with timers.
    /// An engine with no index merge of its own (PostgreSQL keeps its indexes itself) starts nothing.
    pub fn spawn_index_merge(&self, quiet: Duration) -> Option<tokio::task::JoinHandle<()>> {
        self.engine.spawn_index_merge(quiet)
    }

    /// Rebuilds the search index, the search vocabulary and the tag index from the notes, in
    /// one transaction; returns how many notes were indexed. For a store [`Store::verify`]
    /// finds out of step, such as one an older PKB wrote to after a newer one migrated it.
    /// Takes about 35 s per 100,000 notes in one transaction: other processes' writes give up
    /// after the 5 s busy timeout meanwhile.
    pub async fn rebuild_indexes(&self) -> Result<u64, StoreError> {
        self.engine.rebuild_indexes().await
    }

    /// Waits for the background [`DamageCheck`] of the file's pages to end; `Err` with
    /// [`StoreError::Corrupt`] when it found damage, after which every call is refused.
    pub async fn damage_checked(&self) -> Result<(), StoreError> {
        self.engine.damage_checked().await
    }
}

fn default_data_dir_from(
    xdg_data_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Result<PathBuf, StoreError> {
    let data_dir = match xdg_data_home.map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => match home.map(PathBuf::from) {
            Some(home) if !home.as_os_str().is_empty() => home.join(".local").join("share"),
            _ => return Err(StoreError::NoDataDir),
        },
    };
    Ok(data_dir.join("pkb"))
}

/// Trims and normalises a draft, refusing anything outside the contract.
pub(crate) fn validate(draft: NoteDraft) -> Result<NoteDraft, StoreError> {
    if !is_valid_id(&draft.id) {
        return Err(StoreError::Invalid(
            "id must be 1 to 100 characters of a-z, 0-9 and -".to_owned(),
        ));
    }
    let title = draft.title.trim();
    let title_chars = title.chars().count();
    if title_chars == 0 || title_chars > TITLE_MAX_CHARS {
        return Err(StoreError::Invalid(format!(
            "title must be 1 to {TITLE_MAX_CHARS} characters after trimming"
        )));
    }
    if let Some(problem) = crate::text::single_line_problem(title) {
        return Err(StoreError::Invalid(format!("title {problem}")));
    }
    let tags = normalize_tags(&draft.tags);
    if tags.len() > TAGS_MAX {
        return Err(StoreError::Invalid(format!(
            "at most {TAGS_MAX} tags are allowed"
        )));
    }
    if tags.iter().any(|t| t.chars().count() > TAG_MAX_CHARS) {
        return Err(StoreError::Invalid(format!(
            "each tag must be at most {TAG_MAX_CHARS} characters"
        )));
    }
    if draft.body.chars().count() > BODY_MAX_CHARS {
        return Err(StoreError::Invalid(format!(
            "body must be at most {BODY_MAX_CHARS} characters"
        )));
    }
    Ok(NoteDraft {
        id: draft.id,
        title: title.to_owned(),
        tags,
        body: draft.body,
    })
}

/// Puts both dates in the store's form, refusing what is not a date or runs backwards.
fn validate_dates(dates: NoteDates) -> Result<NoteDates, StoreError> {
    let canonical = |field: &str, value: Option<String>| {
        value
            .map(|text| {
                canonical_timestamp(&text).ok_or_else(|| {
                    StoreError::Invalid(format!("{field} must be an RFC 3339 date and time"))
                })
            })
            .transpose()
    };
    let created_at = canonical("created_at", dates.created_at)?;
    let updated_at = canonical("updated_at", dates.updated_at)?;
    if let (Some(created), Some(updated)) = (&created_at, &updated_at) {
        // One fixed shape, so text order is time order.
        if updated < created {
            return Err(StoreError::Invalid(
                "updated_at must not be before created_at".to_owned(),
            ));
        }
    }
    Ok(NoteDates {
        created_at,
        updated_at,
    })
}

/// The unit vector of a query.
async fn embed_query(query: &str) -> Result<Vec<f32>, StoreError> {
    let text = query.trim().to_owned();
    if text.is_empty() {
        return Err(StoreError::Meaning("the query has no text".into()));
    }
    crate::meaning::embed_now(text)
        .await
        .map_err(|e| StoreError::Meaning(e.to_string()))
}

#[cfg(test)]
mod told_to_clients {
    use super::StoreError;

    #[test]
    fn what_clients_are_told_names_no_server_path() {
        let path = std::path::PathBuf::from("/srv/pkb/users/0123456789abcdef0123456789abcdef.db");
        let errors = [
            StoreError::Open {
                path: path.clone(),
                source: Box::new(std::io::Error::from_raw_os_error(24)),
            },
            StoreError::Corrupt {
                path: path.clone(),
                reason: "a page is unreadable".into(),
            },
            StoreError::NotPkb {
                path: path.clone(),
                reason: "it is not an SQLite database".into(),
            },
            StoreError::Busy {
                store: path.display().to_string(),
                action: "save a note".into(),
            },
        ];
        for error in &errors {
            let told = error.told_to_clients();
            assert!(error.to_string().contains("/srv/pkb"), "the log keeps it");
            assert!(
                !told.contains("/srv/pkb") && !told.contains("0123456789"),
                "{told}"
            );
        }
        assert!(errors[0].told_to_clients().contains("(os error 24)"));
    }
}

// Each test runs on SQLite and on PostgreSQL.
#[cfg(all(test, feature = "postgres"))]
mod tests;
