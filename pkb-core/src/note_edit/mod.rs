//! Changing part of a note: its title, its tags, and one change of its body (append,
//! prepend, replace a text, or replace the section under a heading), as `edit` asks.
//! Applying an edit is pure: the store decides, in a transaction, whether the note it was
//! applied to is still the current one.

mod sections;

use crate::note::{BODY_MAX_CHARS, Note, TAGS_MAX, normalize_tag, normalize_tags};
use crate::store::NoteDraft;

/// What `edit` changes; what it leaves `None` (or [`TagChange::Keep`]) stays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NoteEdit {
    /// A new title (the id stays).
    pub title: Option<String>,
    /// A change of the tags.
    pub tags: TagChange,
    /// At most one change of the body.
    pub body: Option<BodyChange>,
}

/// A change of a note's tags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TagChange {
    /// The tags stay.
    #[default]
    Keep,
    /// These become the tags.
    Set(Vec<String>),
    /// These are added (a tag there already stays once) and removed (a tag not there is no
    /// error); added tags go at the end.
    AddRemove {
        /// Tags to add.
        add: Vec<String>,
        /// Tags to remove.
        remove: Vec<String>,
    },
}

/// One change of a note's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyChange {
    /// Text added at the end.
    Append(String),
    /// Text added at the start.
    Prepend(String),
    /// The exact text `old` becomes `new`: where it occurs once, or everywhere with `all`.
    Replace {
        /// The text to find (case-sensitive).
        old: String,
        /// What it becomes.
        new: String,
        /// Replace every occurrence rather than requiring exactly one.
        all: bool,
    },
    /// The lines under the heading whose text is `heading` become `content`.
    Section {
        /// The heading's text, without its `#`s.
        heading: String,
        /// The section's new lines.
        content: String,
    },
}

/// Why an edit cannot be made to a note; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditRefusal {
    /// The text to replace is not in the body.
    TextNotFound,
    /// The text to replace occurs this many times, and `all` was not given.
    TextOccurs(usize),
    /// No heading has this text.
    NoHeading(String),
    /// This many headings have this text.
    HeadingOccurs(String, usize),
    /// The body would be this many characters long.
    BodyTooLong(usize),
    /// The note would have this many tags.
    TooManyTags(usize),
}

impl EditRefusal {
    /// The contract's text for the refusal of an edit of note `id`.
    pub fn message(&self, id: &str) -> String {
        match self {
            EditRefusal::TextNotFound => format!("text to replace not found in {id}"),
            EditRefusal::TextOccurs(times) => format!(
                "text to replace occurs {times} times in {id}; include more of the text around it, or pass all=true"
            ),
            EditRefusal::NoHeading(heading) => format!("no heading \"{heading}\" in {id}"),
            EditRefusal::HeadingOccurs(heading, times) => {
                format!("heading \"{heading}\" occurs {times} times in {id}")
            }
            EditRefusal::BodyTooLong(chars) => format!(
                "the edit would make the body of {id} {chars} characters; the limit is {BODY_MAX_CHARS}"
            ),
            EditRefusal::TooManyTags(count) => {
                format!("the edit would give {id} {count} tags; the limit is {TAGS_MAX}")
            }
        }
    }
}

impl NoteEdit {
    /// The note as this edit leaves it, as a draft under the note's id.
    pub fn apply_to(&self, note: &Note) -> Result<NoteDraft, EditRefusal> {
        let body = match &self.body {
            None => note.body.clone(),
            Some(change) => change.apply_to(&note.body)?,
        };
        let chars = body.chars().count();
        if chars > BODY_MAX_CHARS {
            return Err(EditRefusal::BodyTooLong(chars));
        }
        let tags = match &self.tags {
            TagChange::Keep => note.tags.clone(),
            TagChange::Set(tags) => normalize_tags(tags),
            TagChange::AddRemove { add, remove } => {
                let remove: Vec<String> = remove.iter().map(|t| normalize_tag(t)).collect();
                let kept = note.tags.iter().chain(add).cloned().collect::<Vec<_>>();
                normalize_tags(&kept)
                    .into_iter()
                    .filter(|tag| !remove.contains(tag))
                    .collect()
            }
        };
        if tags.len() > TAGS_MAX {
            return Err(EditRefusal::TooManyTags(tags.len()));
        }
        Ok(NoteDraft {
            id: note.id.clone(),
            title: self.title.clone().unwrap_or_else(|| note.title.clone()),
            tags,
            body,
        })
    }
}

impl BodyChange {
    /// `body` with this change made.
    fn apply_to(&self, body: &str) -> Result<String, EditRefusal> {
        let ends = LineEnds::of(body);
        match self {
            BodyChange::Append(text) => Ok(joined(body, &ends.applied(text), ends)),
            BodyChange::Prepend(text) => Ok(joined(&ends.applied(text), body, ends)),
            BodyChange::Replace { old, new, all } => replace(body, old, new, *all, ends),
            BodyChange::Section { heading, content } => {
                replace_section(body, heading.trim(), &ends.applied(content), ends)
            }
        }
    }
}

/// The line end a body uses: text added to a body written with CRLF gets CRLF too, so that
/// an editor on Windows finds its file as it wrote it.
#[derive(Debug, Clone, Copy)]
struct LineEnds {
    crlf: bool,
}

impl LineEnds {
    fn of(body: &str) -> LineEnds {
        LineEnds {
            crlf: body.contains("\r\n"),
        }
    }

    fn text(self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }

    /// `text` with each lone `\n` made this line end.
    fn applied(self, text: &str) -> String {
        if !self.crlf || !text.contains('\n') {
            return text.to_owned();
        }
        with_crlf(text)
    }
}

/// `text` with each lone `\n` made `\r\n`.
pub(crate) fn with_crlf(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 32 + 16);
    let mut previous = '\0';
    for c in text.chars() {
        if c == '\n' && previous != '\r' {
            out.push('\r');
        }
        out.push(c);
        previous = c;
    }
    out
}

/// `first` then `second`, with one line end between them where neither has one at the seam.
fn joined(first: &str, second: &str, ends: LineEnds) -> String {
    let seam = !first.is_empty()
        && !second.is_empty()
        && !first.ends_with('\n')
        && !second.starts_with(['\n', '\r']);
    let mut out = String::with_capacity(first.len() + second.len() + 2);
    out.push_str(first);
    if seam {
        out.push_str(ends.text());
    }
    out.push_str(second);
    out
}

fn replace(
    body: &str,
    old: &str,
    new: &str,
    all: bool,
    ends: LineEnds,
) -> Result<String, EditRefusal> {
    let mut found = body.matches(old).count();
    let (mut old, mut new) = (old.to_owned(), new.to_owned());
    // A model that read a CRLF body sends its lines with `\n`.
    if found == 0 && ends.crlf && old.contains('\n') {
        old = ends.applied(&old);
        new = ends.applied(&new);
        found = body.matches(old.as_str()).count();
    }
    if found > 1 && !all {
        return Err(EditRefusal::TextOccurs(found));
    }
    if found == 0 {
        return Err(EditRefusal::TextNotFound);
    }
    // Refused before it is built: a short text replaced everywhere by a long one would
    // otherwise make a body of hundreds of megabytes, only to refuse it.
    let chars = (body.chars().count() - found * old.chars().count())
        .saturating_add(found.saturating_mul(new.chars().count()));
    if chars > BODY_MAX_CHARS {
        return Err(EditRefusal::BodyTooLong(chars));
    }
    Ok(body.replace(old.as_str(), &new))
}

fn replace_section(
    body: &str,
    heading: &str,
    content: &str,
    ends: LineEnds,
) -> Result<String, EditRefusal> {
    let headings = sections::headings(body);
    let mut matching = headings
        .iter()
        .enumerate()
        .filter(|(_, h)| h.text == heading)
        .map(|(index, _)| index);
    let (Some(index), None) = (matching.next(), matching.next()) else {
        let times = headings.iter().filter(|h| h.text == heading).count();
        return Err(match times {
            0 => EditRefusal::NoHeading(heading.to_owned()),
            times => EditRefusal::HeadingOccurs(heading.to_owned(), times),
        });
    };
    let section = sections::section_of(body, &headings, index);
    let mut out = String::with_capacity(body.len() + content.len() + 4);
    out.push_str(&body[..section.start]);
    // A heading on the body's last line has no line end yet.
    if !content.is_empty() && !out.ends_with('\n') {
        out.push_str(ends.text());
    }
    out.push_str(content);
    let rest = &body[section.end..];
    if !rest.is_empty() && !out.ends_with('\n') {
        out.push_str(ends.text());
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
