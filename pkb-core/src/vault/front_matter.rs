//! YAML front matter: the `---` block that opens a Markdown note, split off, read and written.

use serde::{Deserialize, Serialize};
use serde_norway::Value;

/// A Markdown file cut into its front matter (the YAML between the `---` lines) and the rest.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML text, when the file opens with a front matter block.
    pub yaml: Option<&'a str>,
    /// Everything after the block (the whole text when there is none).
    pub rest: &'a str,
}

/// Splits `text` (a byte order mark already removed). Line ends may be `\n` or `\r\n`. A block
/// that opens but never closes is an error rather than body text: the note would otherwise
/// keep its fields as prose.
pub fn split(text: &str) -> Result<Split<'_>, &'static str> {
    let Some(after_open) = strip_delimiter_line(text, "---") else {
        return Ok(Split {
            yaml: None,
            rest: text,
        });
    };
    let mut offset = 0;
    while offset <= after_open.len() {
        let line_start = &after_open[offset..];
        if let Some(rest) = strip_delimiter_line(line_start, "---")
            .or_else(|| strip_delimiter_line(line_start, "..."))
        {
            return Ok(Split {
                yaml: Some(&after_open[..offset]),
                rest,
            });
        }
        match line_start.find('\n') {
            Some(end) => offset += end + 1,
            None => break,
        }
    }
    Err("front matter: the `---` block is never closed")
}

/// The text after `delimiter` when `text` opens with a line holding only it (trailing spaces
/// allowed), or `None`.
fn strip_delimiter_line<'a>(text: &'a str, delimiter: &str) -> Option<&'a str> {
    let after = text.strip_prefix(delimiter)?;
    let (line, rest) = match after.find('\n') {
        Some(end) => (&after[..end], &after[end + 1..]),
        None => (after, ""),
    };
    line.trim_end_matches([' ', '\t', '\r'])
        .is_empty()
        .then_some(rest)
}

/// The fields PKB reads from front matter; anything else (aliases, cssclass, ...) is ignored.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Fields {
    /// `id`.
    pub id: Option<String>,
    /// `title`.
    pub title: Option<String>,
    /// `tags`: a list, or one string of comma- or space-separated tags.
    pub tags: Option<Vec<String>>,
    /// `created`.
    pub created: Option<String>,
    /// `updated`.
    pub updated: Option<String>,
}

/// Reads the fields from a front matter block. An empty block has no fields.
///
/// Each value is taken as it is written: YAML would make `title: 1.10` the number 1.1 and
/// `0x1F` 31, where the person typed a title. The block is read twice, once as YAML values to
/// check each field's shape, then each field as the text it is written as.
pub fn fields(yaml: &str) -> Result<Fields, String> {
    let not_yaml = |error: serde_norway::Error| format!("front matter is not valid YAML ({error})");
    let map = match serde_norway::from_str::<Value>(yaml).map_err(not_yaml)? {
        Value::Null => return Ok(Fields::default()),
        Value::Mapping(map) => map,
        _ => return Err("front matter must be a mapping of fields (`title: ...`)".to_owned()),
    };
    for name in ["id", "title", "created", "updated"] {
        if map.get(name).is_some_and(|value| !is_scalar(value)) {
            return Err(format!("{name}: must be text"));
        }
    }
    let tags = match map.get("tags") {
        None => None,
        Some(Value::Sequence(items)) if items.iter().all(is_scalar) => {
            let written: Written<Vec<Option<Text>>> =
                serde_norway::from_str(yaml).map_err(not_yaml)?;
            let tags = written.tags.unwrap_or_default().into_iter().flatten();
            Some(tags.map(|tag| tag.0).collect())
        }
        Some(Value::Sequence(_)) => return Err("tags: each tag must be text".to_owned()),
        Some(value) if is_scalar(value) => {
            let written: Written<Text> = serde_norway::from_str(yaml).map_err(not_yaml)?;
            Some(
                written
                    .tags
                    .map(|tags| split_tags(&tags.0))
                    .unwrap_or_default(),
            )
        }
        Some(_) => return Err("tags: must be a list or a comma-separated string".to_owned()),
    };
    let written: Written<serde::de::IgnoredAny> = serde_norway::from_str(yaml).map_err(not_yaml)?;
    let text = |field: Option<Text>| field.map(|text| text.0);
    Ok(Fields {
        id: text(written.id),
        title: text(written.title),
        tags,
        created: text(written.created),
        updated: text(written.updated),
    })
}

/// Tags typed as one string, Obsidian's `#tag` style included: the `#` marks a tag there and
/// is not part of its name. (Items of a list are taken as written: a quoted `'#tag'` is that
/// tag, as an export writes it.)
fn split_tags(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace())
        .map(|tag| tag.trim_start_matches('#').to_owned())
        .filter(|tag| !tag.is_empty())
        .collect()
}

/// Whether a value is one scalar (or empty), not a list or a mapping.
fn is_scalar(value: &Value) -> bool {
    match value {
        Value::Null | Value::String(_) | Value::Number(_) | Value::Bool(_) => true,
        Value::Tagged(tagged) => is_scalar(&tagged.value),
        Value::Sequence(_) | Value::Mapping(_) => false,
    }
}

/// The fields read as written; `Tags` is how `tags` is read.
#[derive(Deserialize)]
struct Written<Tags> {
    id: Option<Text>,
    title: Option<Text>,
    tags: Option<Tags>,
    created: Option<Text>,
    updated: Option<Text>,
}

/// A scalar's text as written, whatever type YAML would give it.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AsWritten;
        impl serde::de::Visitor<'_> for AsWritten {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("text")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Text, E> {
                Ok(Text(text.to_owned()))
            }
        }
        deserializer.deserialize_str(AsWritten)
    }
}

/// What an export writes at the top of each note.
#[derive(Serialize)]
pub struct ExportedFields<'a> {
    /// The note's id.
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its tags.
    pub tags: &'a [String],
    /// When it was created.
    pub created: &'a str,
    /// When it was last saved.
    pub updated: &'a str,
}

/// The front matter block for `fields`, delimiters and final line end included.
pub fn render(fields: &ExportedFields<'_>) -> Result<String, serde_norway::Error> {
    Ok(format!("---\n{}---\n", serde_norway::to_string(fields)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_front_matter_with_either_line_end() {
        let lf = split("---\ntitle: A\n---\nbody\n").unwrap();
        assert_eq!(lf.yaml, Some("title: A\n"));
        assert_eq!(lf.rest, "body\n");
        let crlf = split("---\r\ntitle: A\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(crlf.yaml, Some("title: A\r\n"));
        assert_eq!(crlf.rest, "body\r\n");
        let dots = split("---\ntitle: A\n...\nbody").unwrap();
        assert_eq!(dots.rest, "body");
        let empty = split("---\n---\n").unwrap();
        assert_eq!(empty.yaml, Some(""));
        assert_eq!(empty.rest, "");
    }

    #[test]
    fn text_without_a_block_is_all_body() {
        for text in ["# Title\nbody", "", "----\nnot a block", "--- x\n---\n"] {
            assert_eq!(
                split(text).unwrap(),
                Split {
                    yaml: None,
                    rest: text
                }
            );
        }
    }

    #[test]
    fn an_unclosed_block_is_refused() {
        assert!(split("---\ntitle: A\nbody").is_err());
    }

    #[test]
    fn reads_tags_as_a_list_or_a_string() {
        let list = fields("tags: [a, '#b', 3]").unwrap();
        assert_eq!(list.tags, Some(vec!["a".into(), "#b".into(), "3".into()]));
        let string = fields("tags: 'a, #b c'").unwrap();
        assert_eq!(string.tags, Some(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(fields("tags:").unwrap().tags, Some(Vec::new()));
        assert!(fields("tags: {a: 1}").is_err());
    }

    #[test]
    fn reads_scalars_as_written() {
        let read = fields("title: 2024\ncreated: 2024-01-05\nother: [1]").unwrap();
        assert_eq!(read.title.as_deref(), Some("2024"));
        for written in ["1.10", "0x1F", "1e3", "+5", "-0", "yes", "True", ".inf"] {
            let read = fields(&format!("title: {written}\ntags: [{written}]")).unwrap();
            assert_eq!(read.title.as_deref(), Some(written));
            assert_eq!(read.tags, Some(vec![written.to_owned()]));
            let listed = fields(&format!("tags: {written}, b")).unwrap();
            assert_eq!(listed.tags, Some(vec![written.to_owned(), "b".to_owned()]));
        }
        assert_eq!(fields("title: ~\ntags: [a, ~]").unwrap().title, None);
        assert_eq!(
            fields("title: ~\ntags: [a, ~]").unwrap().tags,
            Some(vec!["a".to_owned()])
        );
        assert_eq!(read.created.as_deref(), Some("2024-01-05"));
        assert!(fields("title: [a]").unwrap_err().starts_with("title:"));
        assert!(fields("- a\n- b").is_err());
        assert!(fields("title: 'unclosed").is_err());
    }

    #[test]
    fn rendered_fields_read_back() {
        let tags = vec!["a: b".to_owned(), "yes".to_owned()];
        let fields_out = ExportedFields {
            id: "x",
            title: "true",
            tags: &tags,
            created: "2024-01-05T00:00:00.000Z",
            updated: "2024-01-06T00:00:00.000Z",
        };
        let text = render(&fields_out).unwrap();
        let block = split(&text).unwrap();
        assert_eq!(block.rest, "");
        let back = fields(block.yaml.unwrap()).unwrap();
        assert_eq!(back.title.as_deref(), Some("true"));
        assert_eq!(back.tags, Some(tags));
        assert_eq!(back.updated.as_deref(), Some("2024-01-06T00:00:00.000Z"));
    }
}
