//! Markdown headings as CommonMark reads them (pulldown-cmark), so that a `#` line inside a
//! fenced or indented code block is no heading, and the section under each.

use std::ops::Range;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// One heading of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Heading {
    /// 1 for `#`, 6 for `######`.
    pub level: u8,
    /// Its text as written, trimmed, without the `#`s that open or close it.
    pub text: String,
    /// Where the heading's line begins (before any indentation or container marker).
    pub line_start: usize,
    /// Where its lines end, past their line end (or the body's end).
    pub end: usize,
}

/// Every heading of `body`, in order.
pub(super) fn headings(body: &str) -> Vec<Heading> {
    let mut found = Vec::new();
    let mut open: Option<(u8, Range<usize>, Option<Range<usize>>)> = None;
    for (event, range) in Parser::new(body).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) => open = Some((level as u8, range, None)),
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, whole, inline)) = open.take() {
                    let text = inline.map_or("", |inline| &body[inline]).trim().to_owned();
                    found.push(Heading {
                        level,
                        text,
                        line_start: line_start(body, whole.start),
                        end: whole.end,
                    });
                }
            }
            // The inline content's source, markup and all, is the heading's text.
            _ => {
                if let Some((_, _, inline)) = &mut open {
                    *inline = Some(match inline.take() {
                        None => range,
                        Some(seen) => seen.start.min(range.start)..seen.end.max(range.end),
                    });
                }
            }
        }
    }
    found
}

/// The start of the line holding byte `at`.
fn line_start(body: &str, at: usize) -> usize {
    body[..at].rfind('\n').map_or(0, |newline| newline + 1)
}

/// The bytes of the section under `headings[index]`: from the end of its line to the line of
/// the next heading of the same or a higher level, or the end of the body.
pub(super) fn section_of(body: &str, headings: &[Heading], index: usize) -> Range<usize> {
    let heading = &headings[index];
    let end = headings[index + 1..]
        .iter()
        .find(|next| next.level <= heading.level)
        .map_or(body.len(), |next| next.line_start);
    heading.end..end.max(heading.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(body: &str) -> Vec<(u8, String)> {
        headings(body)
            .into_iter()
            .map(|h| (h.level, h.text))
            .collect()
    }

    #[test]
    fn headings_of_every_level_with_closing_marks_and_none_in_code() {
        let body = "# One\n## Two ##\n### Three\n#### Four\n##### Five\n###### Six\n####### Seven\n\
                    ```\n# In a fence\n```\n    # Indented code\n~~~md\n## Tilde fence\n~~~\n#Tight\n";
        assert_eq!(
            texts(body),
            [
                (1, "One".to_owned()),
                (2, "Two".to_owned()),
                (3, "Three".to_owned()),
                (4, "Four".to_owned()),
                (5, "Five".to_owned()),
                (6, "Six".to_owned()),
            ]
        );
    }

    #[test]
    fn a_heading_keeps_its_markup_as_text_and_setext_headings_count() {
        assert_eq!(
            texts("## Deploy *now*\nUnder\n===\n"),
            [(2, "Deploy *now*".to_owned()), (1, "Under".to_owned())]
        );
    }

    #[test]
    fn a_section_runs_to_the_next_heading_of_its_level_or_higher() {
        let body = "# A\na\n## B\nb\n# C\nc";
        let found = headings(body);
        assert_eq!(&body[section_of(body, &found, 0)], "a\n## B\nb\n");
        assert_eq!(&body[section_of(body, &found, 1)], "b\n");
        assert_eq!(&body[section_of(body, &found, 2)], "c");
        let crlf = "# A\r\none\r\n# B\r\n";
        let found = headings(crlf);
        assert_eq!(&crlf[section_of(crlf, &found, 0)], "one\r\n");
        assert_eq!(&crlf[section_of(crlf, &found, 1)], "");
    }
}
