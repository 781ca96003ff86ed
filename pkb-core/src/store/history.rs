//! What the store keeps of every change: each version of a note, what made it, when and by
//! whom, as every engine records it in the same transaction as the change itself.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use crate::note::Note;

/// What made a version, as `history` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// The note was made.
    Created,
    /// The note was written whole again (`write` with `overwrite`).
    Replaced,
    /// Part of the note was changed (`edit`).
    Edited,
    /// The note was deleted; the version holds it as it was.
    Deleted,
    /// An earlier version was made the current one again.
    Restored,
    /// The note came from a Markdown file through `pkb-server import`.
    Imported,
    /// The note's file in a vault was changed outside PKB.
    File,
}

impl ChangeKind {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Replaced => "replaced",
            ChangeKind::Edited => "edited",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Restored => "restored",
            ChangeKind::Imported => "imported",
            ChangeKind::File => "file",
        }
    }

    /// The kind a stored word names; an unknown word (from a newer PKB) reads as an edit.
    pub fn parse(word: &str) -> ChangeKind {
        match word {
            "created" => ChangeKind::Created,
            "replaced" => ChangeKind::Replaced,
            "deleted" => ChangeKind::Deleted,
            "restored" => ChangeKind::Restored,
            "imported" => ChangeKind::Imported,
            "file" => ChangeKind::File,
            _ => ChangeKind::Edited,
        }
    }
}

/// Who is recorded as making a change when a client gave no name.
pub const UNKNOWN_CLIENT: &str = "unknown client";

/// Most characters of a change's `by` kept. A client names itself (`clientInfo`), and what it
/// names is stored with every version and sent in every `history` answer: unbounded, 20 edits
/// by a client named with 3 MB made each answer 120 MB.
pub const MAX_BY_CHARS: usize = 200;

/// `by` cut to its first [`MAX_BY_CHARS`] characters, on a character boundary.
pub fn bounded_by(by: &str) -> &str {
    match by.char_indices().nth(MAX_BY_CHARS) {
        Some((end, _)) => &by[..end],
        None => by,
    }
}

/// How a write is recorded: by whom, and as what kind of change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// The client (`<name> <version>`), `pkb-server import`, or `file`.
    pub by: Arc<str>,
    /// The kind recorded; `None` records [`ChangeKind::Created`] for a new note and
    /// [`ChangeKind::Replaced`] for a replaced one.
    pub kind: Option<ChangeKind>,
}

impl Provenance {
    /// A plain write by `by`.
    pub fn write(by: impl Into<Arc<str>>) -> Provenance {
        Provenance {
            by: by.into(),
            kind: None,
        }
    }

    /// A write by `by` recorded as `kind`.
    pub fn recorded_as(by: impl Into<Arc<str>>, kind: ChangeKind) -> Provenance {
        Provenance {
            by: by.into(),
            kind: Some(kind),
        }
    }

    /// The kind recorded for a note that `created` (or else replaced).
    pub fn kind_for(&self, created: bool) -> ChangeKind {
        self.kind.unwrap_or(if created {
            ChangeKind::Created
        } else {
            ChangeKind::Replaced
        })
    }
}

/// One version of a note, as `history(id)` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct VersionSummary {
    /// The version's number: 1 for the first, one more at every change.
    pub version: u64,
    /// What made it.
    pub change: ChangeKind,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// Who: the client's name and version, `pkb-server import`, or `file`.
    pub by: String,
    /// The note's title after the change.
    pub title: String,
    /// How many characters its body held after the change.
    pub chars: u64,
}

/// One change of some note, as `history()` lists the latest across notes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RecentChange {
    /// The note's id.
    pub id: String,
    /// The version the change made.
    pub version: u64,
    /// What it was.
    pub change: ChangeKind,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// Who.
    pub by: String,
    /// The note's title after it.
    pub title: String,
}

/// Which of the latest changes to list, and from where: a page of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeFilter {
    /// Only changes older than the one at this [`ChangeEntry::position`]: the next page.
    pub before: Option<u64>,
    /// Only changes of the note with this id.
    pub id: Option<String>,
    /// Only changes made by this client (its `by`, exactly).
    pub by: Option<String>,
    /// Only changes of this kind.
    pub change: Option<ChangeKind>,
    /// Only changes that made their note's newest version: with [`ChangeKind::Deleted`],
    /// the notes still deleted (not restored or made again since).
    pub newest: bool,
    /// The most changes to list.
    pub limit: usize,
}

/// One change, with its place in the store's order of changes, for paging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeEntry {
    /// Where the change stands among all changes: later changes stand higher. Pass it as
    /// [`ChangeFilter::before`] for the changes older than this one.
    pub position: u64,
    /// The change.
    pub change: RecentChange,
}

/// A version of a note, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVersion {
    /// The note as that version left it; `updated_at` is when the version was made and
    /// `version` its number.
    pub note: Note,
    /// What made it.
    pub change: ChangeKind,
    /// Who.
    pub by: String,
}

/// What looking up one version of a note found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionLookup {
    /// That version.
    Found(Box<NoteVersion>),
    /// The note has versions, but not this one (never had it, or it was pruned).
    NoSuchVersion,
    /// No note has ever had this id (or it was purged).
    NoSuchNote,
}

/// What `purge` removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Purged {
    /// Whether the note existed (was not deleted).
    pub note: bool,
    /// How many versions were erased.
    pub versions: u64,
}
