//! How text is compared: note ids and search fold it alike, so that what reads alike is one
//! word. `Ｃａｆé` (full-width), `𝐂𝐚𝐟𝐞` (mathematical), `cаfе` (Cyrillic а and е),
//! `caf\u{AD}e`
//! (a soft hyphen) and `ca\u{200D}fe` (a zero-width joiner) all read `cafe`; `Straße`
//! reads `strasse` and `ﬁle` reads `file`.
//!
//! Compatibility forms are folded first (NFKC), then the characters that join a word without
//! showing are dropped, then each character is transliterated to ASCII (deunicode). Emoji and
//! other pictographs stay apart: they separate words.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

/// One character of text, folded.
pub(crate) enum Folded {
    /// An ASCII character, unchanged.
    Ascii(char),
    /// The ASCII text a character is transliterated to (`ß` is `ss`, `中` is `Zhong `).
    Transliterated(&'static str),
    /// A pictograph, or a character with no transliteration: it separates words.
    Apart(char),
}

/// The characters of `text`, folded.
pub(crate) fn fold_chars(text: &str) -> impl Iterator<Item = Folded> + '_ {
    text.nfkc().filter(|&c| !joins_unseen(c)).map(|c| match c {
        _ if c.is_ascii() => Folded::Ascii(c),
        _ if is_pictograph(c) => Folded::Apart(c),
        _ => deunicode::deunicode_char(c).map_or(Folded::Apart(c), Folded::Transliterated),
    })
}

/// `text` as the search index holds it and queries look for it: folded, with what stays
/// apart kept as it is (the index's tokenizer separates words at it).
///
/// Notes are mostly ASCII with a few other letters, so only the pieces around those go
/// through the fold (a twentieth of a write's time when the whole note did). Text may be cut
/// before any ASCII character: it is a starter that no normalization composes with what
/// precedes it or reorders around. So each piece starts at the ASCII character before the
/// other letters (which may compose with it, `e` and `\u{301}`) and ends at the next ASCII one.
pub fn fold_for_search(text: &str) -> Cow<'_, str> {
    if text.is_ascii() {
        return Cow::Borrowed(text);
    }
    let mut folded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(other) = rest.find(|c: char| !c.is_ascii()) {
        // The ASCII before the first other character, but its last, which starts the piece.
        let start = other.saturating_sub(1);
        folded.push_str(&rest[..start]);
        let end = rest[other..]
            .find(|c: char| c.is_ascii())
            .map_or(rest.len(), |n| other + n);
        fold_piece(&rest[start..end], &mut folded);
        rest = &rest[end..];
    }
    folded.push_str(rest);
    Cow::Owned(folded)
}

/// Appends `text` folded to `folded`.
fn fold_piece(text: &str, folded: &mut String) {
    for piece in fold_chars(text) {
        match piece {
            Folded::Ascii(c) | Folded::Apart(c) => folded.push(c),
            Folded::Transliterated(ascii) => folded.push_str(ascii),
        }
    }
}

/// Characters that show nothing and join the letters around them: inside a word they must
/// not split it, or a look-alike of the word could exist beside it.
fn joins_unseen(c: char) -> bool {
    matches!(
        c,
        '\u{AD}'       // soft hyphen
        | '\u{200B}'   // zero width space
        | '\u{200C}'   // zero width non-joiner
        | '\u{200D}'   // zero width joiner
        | '\u{2060}'   // word joiner
        | '\u{FEFF}' // zero width no-break space (byte order mark)
    )
}

/// Emoji, dingbats and pictographic symbols, with the selectors that build emoji sequences.
fn is_pictograph(c: char) -> bool {
    matches!(
        u32::from(c),
        0x20E3                  // combining enclosing keycap
        | 0x2300..=0x23FF       // miscellaneous technical (⌚, ⏰)
        | 0x25A0..=0x27BF       // geometric shapes, miscellaneous symbols, dingbats
        | 0x2B00..=0x2BFF       // miscellaneous symbols and arrows (⭐)
        | 0xFE00..=0xFE0F       // variation selectors
        | 0x1F000..=0x1FBFF     // mahjong to legacy computing: every emoji block
        | 0xE0000..=0xE007F // tag characters (subdivision flags)
    )
}

#[cfg(test)]
mod tests {
    use super::fold_for_search;

    #[test]
    fn look_alikes_fold_to_one_word() {
        for text in [
            "Ｃａｆé",
            "𝐂𝐚𝐟𝐞",
            "c\u{430}f\u{435}",
            "caf\u{AD}e",
            "ca\u{200D}fé",
            "Cafe\u{301}",
        ] {
            assert_eq!(fold_for_search(text).to_lowercase(), "cafe", "{text:?}");
        }
        assert_eq!(fold_for_search("Straße"), "Strasse");
        assert_eq!(fold_for_search("ﬁle"), "file");
    }

    /// Every store's search index holds text folded as now: a fold that changes, by a
    /// dependency update as much as by an edit, needs a schema migration that makes the index
    /// again (see the SQLite schema's V4 and PostgreSQL's V3), or FTS5 cannot delete the old
    /// entries. This fingerprint of every character's fold says when that is.
    #[test]
    fn the_fold_of_every_character_is_the_one_the_indexes_were_made_with() {
        use sha2::{Digest, Sha256};
        let mut digest = Sha256::new();
        let mut one = [0; 4];
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            digest.update(fold_for_search(c.encode_utf8(&mut one)).as_bytes());
            digest.update([0]);
        }
        let hex: String = digest
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex, "2310d5d23c1b7c3b92add59dce360a8d257bbd09a60c80dd5fc79efa9f94e181",
            "the fold changed: add a schema migration that makes the search index again, then update this fingerprint"
        );
    }

    /// Text folded piece by piece, as [`fold_for_search`] does, is text folded whole: mixed
    /// texts drawn from characters that compose, decompose, reorder, join or stay apart.
    #[test]
    fn folding_around_the_other_letters_only_is_folding_it_all() {
        let alphabet: Vec<char> = "ae oO<=\u{338}.-1\n\u{301}\u{308}\u{327}\u{323}\u{345}éÅﬁßＣ𝐂\u{AD}\u{200D}\u{FEFF}🚀\u{FE0F}가\u{1100}\u{1161}\u{11A8}ǅ½ｶﾞ\u{3099}東"
            .chars()
            .collect();
        let whole = |text: &str| {
            let mut folded = String::new();
            super::fold_piece(text, &mut folded);
            folded
        };
        let mut state = 0x2026_1204_u64;
        for _ in 0..20_000 {
            let len = 1 + (state % 12) as usize;
            let text: String = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    alphabet[(state >> 33) as usize % alphabet.len()]
                })
                .collect();
            assert_eq!(fold_for_search(&text), whole(&text), "{text:?}");
        }
    }

    #[test]
    fn ascii_is_unchanged_and_pictographs_stay_apart() {
        assert!(matches!(
            fold_for_search("plain text"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(fold_for_search("🚀 launch"), "🚀 launch");
    }
}
