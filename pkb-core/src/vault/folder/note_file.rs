//! A note as the text of its file: a new file in the export's form, or a person's file changed
//! only where the note changed, keeping the front matter fields PKB does not know, their
//! order and values, the way the title is given, and the file's line ends.

use serde_norway::Value;

use super::super::export::note_text;
use super::super::front_matter;
use super::super::import::{crlf_file, take_heading};
use crate::note::Note;
use crate::note_edit::with_crlf;

/// The text of a new file for `note`: what `export` writes.
pub fn new_file_text(note: &Note) -> Result<String, String> {
    note_text(note).map_err(|error| format!("cannot write the front matter ({error})"))
}

/// The text of the file that held `old` (its text as on disk) once it holds `note`. `stem` is
/// the file's name without `.md`, the title of last resort.
pub fn changed_file_text(old: &str, note: &Note, stem: &str) -> Result<String, String> {
    let had_bom = old.starts_with('\u{feff}');
    let old = old.strip_prefix('\u{feff}').unwrap_or(old);
    let crlf = crlf_file(old);
    let split = front_matter::split(old).map_err(str::to_owned)?;
    let yaml = split.yaml.unwrap_or("");
    let fields = front_matter::fields(yaml)?;
    let mut yaml = yaml.replace("\r\n", "\n");
    let mut heading = None;
    let title_in_front_matter = fields
        .title
        .as_deref()
        .is_some_and(|title| !title.trim().is_empty());
    if title_in_front_matter {
        if fields.title.as_deref().map(str::trim) != Some(note.title.as_str()) {
            yaml = set_field(&yaml, "title", Value::String(note.title.clone()))?;
        }
    } else if take_heading(split.rest).is_some() {
        heading = Some(format!("# {}\n\n", note.title));
    } else if stem != note.title {
        yaml = set_field(&yaml, "title", Value::String(note.title.clone()))?;
    }
    let old_tags = crate::note::normalize_tags(fields.tags.clone().unwrap_or_default());
    if old_tags != note.tags {
        let tags = note.tags.iter().cloned().map(Value::String).collect();
        yaml = set_field(&yaml, "tags", Value::Sequence(tags))?;
    }
    // A note whose title no longer gives its id (renamed by `edit`) keeps it in the file, in
    // the export's form (an id beside both dates), so that `.pkb/` rebuilt finds it again.
    let keeps_id = fields.id.as_deref() == Some(note.id.as_str())
        && fields.created.is_some()
        && fields.updated.is_some();
    let id_to_keep = !keeps_id && crate::note::derive_id(&note.title) != note.id;
    if id_to_keep {
        yaml = set_field(&yaml, "id", Value::String(note.id.clone()))?;
        if fields.created.is_none() {
            yaml = set_field(&yaml, "created", Value::String(note.created_at.clone()))?;
        }
    }
    if fields.updated.is_some() || id_to_keep {
        yaml = set_field(&yaml, "updated", Value::String(note.updated_at.clone()))?;
    }
    let mut text = String::with_capacity(old.len() + note.body.len());
    if had_bom {
        text.push('\u{feff}');
    }
    if split.yaml.is_some() || !yaml.is_empty() {
        text.push_str("---\n");
        text.push_str(&yaml);
        if !yaml.is_empty() && !yaml.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("---\n");
    }
    if let Some(heading) = heading {
        text.push_str(&heading);
    }
    text.push_str(&note.body);
    text.push('\n');
    Ok(if crlf { with_crlf(&text) } else { text })
}

/// `yaml` (a front matter block's text, `\n` line ends) with the top-level field `key` set to
/// `value`: its lines replaced where it is, or added at the end. Every other line is kept as
/// written, comments included.
fn set_field(yaml: &str, key: &str, value: Value) -> Result<String, String> {
    let mut one = serde_norway::Mapping::new();
    one.insert(Value::String(key.to_owned()), value);
    let rendered = serde_norway::to_string(&one)
        .map_err(|error| format!("cannot write the front matter ({error})"))?;
    let lines: Vec<&str> = yaml.split_inclusive('\n').collect();
    let Some(start) = lines.iter().position(|line| field_name(line) == Some(key)) else {
        let mut out = yaml.to_owned();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&rendered);
        return Ok(out);
    };
    // A field's value goes on over the lines indented under it, and over a list written at
    // the field's own indentation (`tags:` then `- a`).
    let end = lines[start + 1..]
        .iter()
        .position(|line| {
            let content = line.trim_end_matches(['\n', '\r']);
            !(content.is_empty() || content.starts_with([' ', '\t']) || content.starts_with('-'))
        })
        .map_or(lines.len(), |offset| start + 1 + offset);
    let mut out = String::with_capacity(yaml.len() + rendered.len());
    lines[..start].iter().for_each(|line| out.push_str(line));
    out.push_str(&rendered);
    lines[end..].iter().for_each(|line| out.push_str(line));
    Ok(out)
}

/// The name of the top-level field a front matter line opens, if it opens one.
fn field_name(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let (name, _) = line.split_once(':')?;
    let name = name.trim_end();
    let name = name
        .strip_prefix('"')
        .and_then(|n| n.strip_suffix('"'))
        .or_else(|| name.strip_prefix('\'').and_then(|n| n.strip_suffix('\'')))
        .unwrap_or(name);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(title: &str, tags: &[&str], body: &str) -> Note {
        Note {
            id: crate::note::derive_id(title),
            title: title.into(),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            body: body.into(),
            created_at: "2024-01-01T00:00:00.000Z".into(),
            updated_at: "2024-02-01T00:00:00.000Z".into(),
            version: 2,
        }
    }

    #[test]
    fn unknown_fields_keep_their_order_values_and_comments() {
        let old = "---\naliases: [One, Two]\ntitle: Old\n# a comment\ncssclasses:\n  - wide\nextra:\n  nested: {a: 1}\ntags:\n- a\n- b\n---\nold body\n";
        let new = changed_file_text(old, &note("New", &["a", "c"], "new body"), "x").unwrap();
        assert_eq!(
            new,
            "---\naliases: [One, Two]\ntitle: New\n# a comment\ncssclasses:\n  - wide\nextra:\n  nested: {a: 1}\ntags:\n- a\n- c\n---\nnew body\n"
        );
    }

    #[test]
    fn an_unchanged_title_and_tags_leave_the_front_matter_as_written() {
        let old = "---\ntitle:   'Kept'   \ntags: a, b\n---\nbody\n";
        let new = changed_file_text(old, &note("Kept", &["a", "b"], "other"), "x").unwrap();
        assert_eq!(new, "---\ntitle:   'Kept'   \ntags: a, b\n---\nother\n");
    }

    #[test]
    fn a_heading_title_stays_a_heading() {
        let old = "# Old\n\nbody\n";
        let new = changed_file_text(old, &note("New", &[], "body 2"), "x").unwrap();
        assert_eq!(new, "# New\n\nbody 2\n");
    }

    #[test]
    fn a_file_name_title_gets_front_matter_only_when_it_changes() {
        let same = changed_file_text("body\n", &note("name", &[], "body 2"), "name").unwrap();
        assert_eq!(same, "body 2\n");
        let other = changed_file_text("body\n", &note("Other", &["t"], "b"), "name").unwrap();
        assert_eq!(other, "---\ntitle: Other\ntags:\n- t\n---\nb\n");
    }

    #[test]
    fn windows_line_ends_are_kept() {
        let old = "---\r\ntitle: A\r\n---\r\nline 1\r\nline 2\r\n";
        let new = changed_file_text(old, &note("B", &[], "line 1\nline 3"), "x").unwrap();
        assert_eq!(new, "---\r\ntitle: B\r\n---\r\nline 1\r\nline 3\r\n");
    }

    #[test]
    fn a_new_file_reads_back_as_the_note() {
        let text = new_file_text(&note("T", &["x"], "b")).unwrap();
        assert!(text.starts_with("---\nid: t\ntitle: T\n"), "{text}");
        assert!(text.ends_with("---\nb\n"));
    }

    #[test]
    fn a_note_renamed_keeps_its_id_in_the_file() {
        let old = "---\ntitle: Quarterly planning\nsource: meeting\n---\nbody\n";
        let mut renamed = note("Q3 plans", &[], "body");
        renamed.id = "quarterly-planning".into();
        let new = changed_file_text(old, &renamed, "x").unwrap();
        assert_eq!(
            new,
            "---\ntitle: Q3 plans\nsource: meeting\nid: quarterly-planning\ncreated: 2024-01-01T00:00:00.000Z\nupdated: 2024-02-01T00:00:00.000Z\n---\nbody\n"
        );
        // Written once, the id stays as it is at later changes.
        renamed.body = "body 2".into();
        let again = changed_file_text(&new, &renamed, "x").unwrap();
        assert_eq!(again, new.replace("body\n", "body 2\n"));
    }
}
