//! Text PostgreSQL can hold: its `text` has no U+0000, which a note's body or tags may
//! carry. NUL is stored as U+E000 `0` and U+E000 itself doubled, so every string comes back
//! exactly; text without either character (nearly all) is stored as it is.

use std::borrow::Cow;

/// The escape character, from Unicode's private use area.
const ESCAPE: char = '\u{E000}';

/// `text` as it is stored.
pub(super) fn encode(text: &str) -> Cow<'_, str> {
    if !text.contains(['\0', ESCAPE]) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESCAPE);
                out.push('0');
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Stored text as it was given.
pub(super) fn decode(stored: String) -> String {
    if !stored.contains(ESCAPE) {
        return stored;
    }
    let mut out = String::with_capacity(stored.len());
    let mut chars = stored.chars();
    while let Some(c) = chars.next() {
        if c != ESCAPE {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('\0'),
            Some(ESCAPE) => out.push(ESCAPE),
            // Not written by encode (someone else's row): kept as found.
            Some(other) => {
                out.push(ESCAPE);
                out.push(other);
            }
            None => out.push(ESCAPE),
        }
    }
    out
}

/// Each of `tags` as it is stored.
pub(super) fn encode_all(tags: &[String]) -> Vec<String> {
    tags.iter().map(|t| encode(t).into_owned()).collect()
}

/// Each of the stored `tags` as it was given.
pub(super) fn decode_all(tags: Vec<String>) -> Vec<String> {
    tags.into_iter().map(decode).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_comes_back() {
        for text in [
            "",
            "plain",
            "\0",
            "a\0b",
            "\u{E000}",
            "\u{E000}0",
            "\0\u{E000}\0\u{E000}\u{E000}0",
        ] {
            let stored = encode(text);
            assert!(!stored.contains('\0'), "{text:?}");
            assert_eq!(decode(stored.into_owned()), text);
        }
    }

    #[test]
    fn plain_text_is_stored_as_it_is() {
        assert!(matches!(encode("Café ☕"), Cow::Borrowed("Café ☕")));
    }
}
