//! What `single_line` text may hold: one line a person can read as it is shown.
//!
//! Control characters are not enough to forbid. U+2028 and U+2029 (line and paragraph
//! separators) break a line as `\n` does, so a title would render a second heading line;
//! the bidirectional overrides and isolates make `"\u{202e}gpj.exe"` display as `exe.jpg`;
//! and a value of only zero-width or format characters (U+200B, U+FEFF) looks empty. Marks
//! such as U+200F (right-to-left mark) stay allowed: right-to-left text needs them.

use unicode_general_category::{GeneralCategory, get_general_category};

/// Why `text` is not one visible line, or `None` when it is. Checked on every `single_line`
/// argument (and each item of a list), and on a note's title in the store.
pub fn single_line_problem(text: &str) -> Option<&'static str> {
    if text
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
    {
        return Some("must be one line without control characters");
    }
    if text.chars().any(is_bidi_override) {
        return Some(
            "must not hold bidirectional overrides or isolates (U+202A to U+202E, U+2066 to U+2069)",
        );
    }
    if !text.is_empty() && !text.chars().any(is_visible) {
        return Some("must hold a visible character");
    }
    None
}

/// The embeddings, overrides and isolates of the Unicode bidirectional algorithm.
fn is_bidi_override(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A character that shows: not white space, not a format character, not a mark alone.
fn is_visible(c: char) -> bool {
    !c.is_whitespace()
        && !matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::NonspacingMark
                | GeneralCategory::EnclosingMark
                | GeneralCategory::SpaceSeparator
                | GeneralCategory::Unassigned
                | GeneralCategory::PrivateUse
        )
        && c != '\u{3164}'
        && c != '\u{115F}'
        && c != '\u{1160}'
}

#[cfg(test)]
mod tests {
    use super::single_line_problem;

    #[test]
    fn line_breaks_of_every_kind_are_refused() {
        for text in ["a\nb", "a\u{0}b", "a\u{2028}b", "a\u{2029}b", "a\u{85}b"] {
            assert!(
                single_line_problem(text).unwrap().contains("one line"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn bidi_overrides_are_refused_and_marks_allowed() {
        for text in ["\u{202e}gpj.exe", "a\u{202A}b", "\u{2066}x\u{2069}"] {
            assert!(
                single_line_problem(text).unwrap().contains("bidirectional"),
                "{text:?}"
            );
        }
        assert_eq!(single_line_problem("\u{200F}שלום"), None);
        assert_eq!(single_line_problem("\u{200E}abc"), None);
    }

    #[test]
    fn a_value_must_show_something() {
        for text in [
            "\u{200B}",
            "\u{FEFF}\u{200B}",
            "\u{3164}",
            "\u{0301}",
            "\u{2060}",
        ] {
            assert_eq!(
                single_line_problem(text),
                Some("must hold a visible character"),
                "{text:?}"
            );
        }
        for text in ["a", "é", "𝄞", "日本", "a\u{200B}", "", "-"] {
            assert_eq!(single_line_problem(text), None, "{text:?}");
        }
    }
}
