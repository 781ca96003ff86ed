//! Links between notes: the targets a body links to, as CommonMark reads it (pulldown-cmark,
//! with wikilinks), and what a fetch answers of them. Targets are kept as written and resolved
//! to notes when read (`store`), so a link to a note made later resolves from then on.

use schemars::JsonSchema;
use serde::Serialize;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use crate::note::is_valid_id;
use crate::resources::NOTES_URI;

/// A link of a note, as `fetch` answers it: the target as written, and the note it resolves
/// to now (`id` and `title` null when none does).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Link {
    /// The target as the body wrote it: `Deploy checklist` for `[[Deploy checklist#Steps|the
    /// list]]`, the id for a link to `pkb://notes/<id>`.
    pub target: String,
    /// The id of the note it resolves to.
    pub id: Option<String>,
    /// That note's title.
    pub title: Option<String>,
}

/// A note that links to another, as `fetch` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Backlink {
    /// The linking note's id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// A note as `fetch` answers it: with its links resolved now, and the notes linking to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteWithLinks {
    /// The note.
    pub note: crate::note::Note,
    /// Its links, in order of first appearance, one per note or unresolved target.
    pub links: Vec<Link>,
    /// The notes that link to it, sorted by id.
    pub backlinks: Vec<Backlink>,
}

/// `targets` with the notes they resolve to (`resolved`, in the same order), one entry per
/// note and per unresolved target, in order of first appearance.
pub fn links_of(targets: Vec<String>, resolved: Vec<Option<LinkedNote>>) -> Vec<Link> {
    let mut links: Vec<Link> = Vec::with_capacity(targets.len());
    for (target, note) in targets.into_iter().zip(resolved) {
        let seen = match &note {
            Some(note) => links.iter().any(|l| l.id.as_deref() == Some(&note.id)),
            None => links.iter().any(|l| l.id.is_none() && l.target == target),
        };
        if !seen {
            let (id, title) = note.map(|n| (n.id, n.title)).unzip();
            links.push(Link { target, id, title });
        }
    }
    links
}

/// The note a target resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedNote {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// What a target is looked up by, in the contract's order: the id it is, the id it derives
/// (as `write` derives one from a title), and a title equal to it ignoring case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetKeys {
    /// The target as written.
    pub target: String,
    /// The id `write` would derive from it.
    pub derived: String,
    /// The target with its case folded, as titles are compared.
    pub folded: String,
}

impl TargetKeys {
    /// The keys of `target`.
    pub fn of(target: &str) -> TargetKeys {
        TargetKeys {
            target: target.to_owned(),
            derived: crate::note::derive_id(target),
            folded: title_key(target),
        }
    }
}

/// A title (or target) as titles are compared: case folded, surrounding space trimmed.
pub fn title_key(title: &str) -> String {
    title.trim().to_lowercase()
}

/// The targets `body` links to, each once, in order of first appearance: `[[target]]`,
/// `[[target|label]]`, `[[target#heading]]` and `[[target#heading|label]]`, and Markdown links
/// to `pkb://notes/<id>` (inline, reference or autolink). Nothing in code (fenced, indented
/// or inline) is a link; neither is an embed (`![[...]]`), a link to a heading of the note
/// itself (`[[#heading]]`), nor a target spanning lines.
pub fn link_targets(body: &str) -> Vec<String> {
    let mut targets: Vec<String> = Vec::new();
    for event in Parser::new_ext(body, Options::ENABLE_WIKILINKS) {
        let Event::Start(Tag::Link {
            link_type,
            dest_url,
            ..
        }) = event
        else {
            continue;
        };
        let target = target_of(link_type, &dest_url);
        if let Some(target) = target
            && !targets.iter().any(|seen| seen == target)
        {
            targets.push(target.to_owned());
        }
    }
    targets
}

/// The target a link names, as [`link_targets`] reads it: a wikilink's note, or the id of a
/// Markdown link to `pkb://notes/<id>`; `None` for any other link.
pub fn target_of(link_type: LinkType, destination: &str) -> Option<&str> {
    match link_type {
        LinkType::WikiLink { .. } => wikilink_target(destination),
        _ => note_uri_target(destination),
    }
}

/// The note a wikilink's destination names: before any `#heading`, trimmed.
fn wikilink_target(destination: &str) -> Option<&str> {
    let target = destination.split('#').next().unwrap_or_default().trim();
    (!target.is_empty() && !target.contains(['\n', '\r'])).then_some(target)
}

/// The id a Markdown link to `pkb://notes/<id>` names (a `#fragment` or `?query` aside).
fn note_uri_target(destination: &str) -> Option<&str> {
    let rest = destination.strip_prefix(NOTES_URI)?.strip_prefix('/')?;
    let id = rest.split(['#', '?']).next().unwrap_or_default();
    is_valid_id(id).then_some(id)
}

#[cfg(test)]
mod tests;
