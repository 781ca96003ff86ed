//! The note: its shape, its limits, and the rules that turn titles and tags into their stored form.
//!
//! The limits here are the contract's (see "The note"); the tool layer puts them in its input
//! schemas, and the store refuses anything outside them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fold::{Folded, fold_chars};

/// Longest id, in characters.
pub const ID_MAX_CHARS: usize = 100;
/// Longest id that [`derive_id`] produces, leaving room for suffixes such as `-summary`.
pub const DERIVED_ID_MAX_CHARS: usize = 80;
/// Longest title, in characters, after trimming.
pub const TITLE_MAX_CHARS: usize = 120;
/// Longest tag, in characters, after trimming.
pub const TAG_MAX_CHARS: usize = 40;
/// Most tags on one note.
pub const TAGS_MAX: usize = 20;
/// Longest body, in characters (not bytes).
pub const BODY_MAX_CHARS: usize = 10_000;

/// A stored note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Note {
    /// Stable unique id: 1 to 100 characters of `a-z`, `0-9` and `-`.
    pub id: String,
    /// One-line title, 1 to 120 characters.
    pub title: String,
    /// Lowercase tags, without duplicates, in the order given.
    pub tags: Vec<String>,
    /// Free text, up to 10,000 characters.
    pub body: String,
    /// When the note was first saved (RFC 3339, UTC).
    pub created_at: String,
    /// When the note was last saved (RFC 3339, UTC).
    pub updated_at: String,
    /// 1 when the note was made, one more at every change of it.
    pub version: u64,
}

/// Derives a note id from a title.
///
/// Transliterates to ASCII, lowercases, turns each run of other characters into one `-`,
/// trims `-`, and cuts at a `-` boundary to at most [`DERIVED_ID_MAX_CHARS`]. A title that
/// leaves nothing gets `note-` and the first 8 hex characters of the title's SHA-256.
///
/// The title is folded as search folds text ([`crate::fold`]), so look-alike titles give one
/// id. Emoji and other pictographs count as separators: deunicode would spell them out (`🚀`
/// as "rocket"), and a decorated title such as "🚀 Launch" should give `launch`.
///
/// ```
/// assert_eq!(pkb_core::note::derive_id("Deploy checklist"), "deploy-checklist");
/// ```
pub fn derive_id(title: &str) -> String {
    let mut slug = String::with_capacity(title.len());
    let mut gap = false;
    let mut one = [0; 4];
    for piece in fold_chars(title) {
        // Characters without a transliteration separate words, as deunicode's "[?]" would;
        // those that transliterate to nothing join their neighbours.
        let ascii = match piece {
            Folded::Ascii(c) => &*c.encode_utf8(&mut one),
            Folded::Transliterated(ascii) => ascii,
            Folded::Apart(_) => {
                gap = true;
                ""
            }
        };
        for a in ascii.chars().map(|a| a.to_ascii_lowercase()) {
            if a.is_ascii_lowercase() || a.is_ascii_digit() {
                if gap && !slug.is_empty() {
                    slug.push('-');
                }
                gap = false;
                slug.push(a);
            } else {
                gap = true;
            }
        }
    }
    let slug = cut_at_dash(&slug, DERIVED_ID_MAX_CHARS);
    if slug.is_empty() {
        let digest = Sha256::digest(title.as_bytes());
        let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
        format!("note-{hex}")
    } else {
        slug.to_owned()
    }
}

/// Cuts an ASCII slug to at most `max` bytes, preferring the last whole word.
fn cut_at_dash(slug: &str, max: usize) -> &str {
    if slug.len() <= max {
        return slug;
    }
    // A '-' right after the limit means the first `max` bytes already end on a whole word.
    let head = match slug.as_bytes().get(max) {
        Some(b'-') => &slug[..max],
        _ => match slug[..max].rfind('-') {
            Some(dash) => &slug[..dash],
            None => &slug[..max],
        },
    };
    head.trim_matches('-')
}

/// A tag, or the start of one, as tags are stored: trimmed and lowercased.
pub fn normalize_tag(tag: &str) -> String {
    tag.trim().to_lowercase()
}

/// Normalises tags as [`normalize_tag`] does each, drops empty ones and later duplicates, keeps the order.
pub fn normalize_tags<I, S>(tags: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let tag = normalize_tag(tag.as_ref());
        if !tag.is_empty() && !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

/// Whether `id` is a well-formed note id: 1 to [`ID_MAX_CHARS`] characters of `a-z`, `0-9`, `-`.
pub fn is_valid_id(id: &str) -> bool {
    (1..=ID_MAX_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

use crate::timestamp::format_rfc3339;
pub use crate::timestamp::now_rfc3339;

/// A date and time as a store keeps it (RFC 3339, UTC, milliseconds), from what a person or
/// another tool wrote: RFC 3339 with any offset, `YYYY-MM-DD HH:MM[:SS]` or
/// `YYYY-MM-DDTHH:MM[:SS]` with no offset (taken as UTC), or a date alone (midnight UTC).
/// `None` when the text is none of these.
///
/// ```
/// use pkb_core::note::canonical_timestamp;
/// assert_eq!(canonical_timestamp("2024-03-01T10:00:00+01:00").as_deref(), Some("2024-03-01T09:00:00.000Z"));
/// assert_eq!(canonical_timestamp("2024-03-01T09:30:00").as_deref(), Some("2024-03-01T09:30:00.000Z"));
/// assert_eq!(canonical_timestamp("2024-03-01 09:30").as_deref(), Some("2024-03-01T09:30:00.000Z"));
/// assert_eq!(canonical_timestamp("2024-03-01").as_deref(), Some("2024-03-01T00:00:00.000Z"));
/// assert_eq!(canonical_timestamp("yesterday"), None);
/// ```
pub fn canonical_timestamp(text: &str) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    use time::macros::format_description;
    let text = text.trim();
    if let Ok(t) = time::OffsetDateTime::parse(text, &Rfc3339) {
        return Some(format_rfc3339(t.to_offset(time::UtcOffset::UTC)));
    }
    let forms = [
        format_description!("[year]-[month]-[day] [hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day] [hour]:[minute]"),
        // As editors' templates write a local time: RFC 3339 without its offset.
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
        format_description!("[year]-[month]-[day]T[hour]:[minute]"),
    ];
    for form in forms {
        if let Ok(t) = time::PrimitiveDateTime::parse(text, form) {
            return Some(format_rfc3339(t.assume_utc()));
        }
    }
    time::Date::parse(text, format_description!("[year]-[month]-[day]"))
        .ok()
        .map(|date| format_rfc3339(date.midnight().assume_utc()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_simple_ids() {
        assert_eq!(derive_id("Deploy checklist"), "deploy-checklist");
        assert_eq!(derive_id("  Hello,   World!! "), "hello-world");
        assert_eq!(derive_id("--a--b--"), "a-b");
        assert_eq!(derive_id("Café crème"), "cafe-creme");
        assert_eq!(derive_id("Release 2.0 (final)"), "release-2-0-final");
        assert_eq!(derive_id("ÄÖÜ straße"), "aou-strasse");
        assert_eq!(derive_id("Cafe\u{301}s"), "cafes", "combining marks join");
        for look_alike in [
            "Ｃａｆé",
            "𝐂𝐚𝐟𝐞",
            "c\u{430}f\u{435}",
            "caf\u{AD}e",
            "ca\u{200D}fé",
            "ca\u{200B}fe",
        ] {
            assert_eq!(derive_id(look_alike), "cafe", "{look_alike:?} is one word");
        }
    }

    #[test]
    fn derives_ids_from_non_latin_titles() {
        // Transliteration keeps these readable rather than hashing them.
        assert_eq!(derive_id("Привет мир"), "privet-mir");
        assert_eq!(derive_id("東京"), "dong-jing");
        assert_eq!(derive_id("Ελληνικά"), "ellenika");
    }

    fn hashed(title: &str) -> String {
        let digest = Sha256::digest(title.as_bytes());
        format!(
            "note-{:02x}{:02x}{:02x}{:02x}",
            digest[0], digest[1], digest[2], digest[3]
        )
    }

    #[test]
    fn titles_without_ascii_letters_get_a_hash_id() {
        for title in ["!!!", "...", "-", " ", "", "«»", "—", "\u{0301}", "☐"] {
            let id = derive_id(title);
            assert_eq!(id, hashed(title), "{title:?}");
            assert!(is_valid_id(&id));
            assert_eq!(id.len(), 13);
        }
        assert_ne!(derive_id("!!!"), derive_id("???"));
    }

    #[test]
    fn emoji_only_titles_get_a_hash_id() {
        for title in [
            "🚀",
            "🚀🚀🚀",
            "😀 🎉",
            "\u{1F9FF}",
            "👍🏽",
            "👨‍👩‍👧",
            "🇫🇷",
            "❤️",
            "✅ ⭐ ⌚",
        ] {
            assert_eq!(derive_id(title), hashed(title), "{title:?}");
        }
        assert_eq!(derive_id("🚀 Launch day 🎉"), "launch-day");
        assert_eq!(derive_id("Notes📝2026"), "notes-2026");
        // Private-use and unassigned characters have no transliteration.
        assert_eq!(derive_id("\u{E000}"), hashed("\u{E000}"));
    }

    #[test]
    fn cuts_long_ids_at_a_word_boundary() {
        let word = "abcdefghi"; // 9 chars; "word-" repeated puts dashes at 9, 19, 29, ...
        let title = [word; 20].join(" ");
        let id = derive_id(&title);
        assert!(id.len() <= DERIVED_ID_MAX_CHARS);
        assert_eq!(id, [word; 8].join("-")); // 8*9 + 7 = 79 chars
        assert!(!id.ends_with('-'));

        // A dash exactly at position 80 keeps the first 80 characters whole.
        let exact = format!("{} {}", "a".repeat(80), "tail");
        assert_eq!(derive_id(&exact), "a".repeat(80));
        let exact = format!("{} {} b", "a".repeat(39), "c".repeat(40));
        assert_eq!(
            derive_id(&exact),
            format!("{}-{}", "a".repeat(39), "c".repeat(40))
        );
        let over = format!("{} {} b", "a".repeat(39), "c".repeat(41));
        assert_eq!(derive_id(&over), "a".repeat(39));
    }

    #[test]
    fn hard_cuts_a_single_long_word() {
        let id = derive_id(&"x".repeat(200));
        assert_eq!(id, "x".repeat(80));
        let id = derive_id(&format!("{} more", "y".repeat(90)));
        assert_eq!(id, "y".repeat(80));
    }

    #[test]
    fn derived_ids_are_always_valid() {
        let titles = [
            "a",
            "A B C",
            "東京タワー",
            "Ελληνικά",
            "עברית",
            "العربية",
            "हिन्दी",
            "\u{0}\u{1}\u{7f}",
            "x\u{200b}y",
        ];
        for title in titles {
            let id = derive_id(title);
            assert!(is_valid_id(&id), "{title:?} -> {id:?}");
            assert!(id.len() <= DERIVED_ID_MAX_CHARS);
        }
    }

    #[test]
    fn normalizes_tags() {
        assert_eq!(
            normalize_tags([" Deploy", "release ", "DEPLOY", "", "  ", "Ops"]),
            vec!["deploy", "release", "ops"]
        );
        assert_eq!(normalize_tags(Vec::<String>::new()), Vec::<String>::new());
        assert_eq!(normalize_tags(["ÉTÉ", "été"]), vec!["été"]);
        assert_eq!(
            normalize_tags(vec!["b".to_owned(), "a".to_owned()]),
            vec!["b", "a"]
        );
    }

    #[test]
    fn validates_ids() {
        assert!(is_valid_id("a"));
        assert!(is_valid_id("deploy-checklist"));
        assert!(is_valid_id("note-0a1b2c3d"));
        assert!(is_valid_id(&"x".repeat(ID_MAX_CHARS)));
        assert!(!is_valid_id(&"x".repeat(ID_MAX_CHARS + 1)));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("Deploy"));
        assert!(!is_valid_id("a b"));
        assert!(!is_valid_id("a_b"));
        assert!(!is_valid_id("é"));
        assert!(!is_valid_id("a/b"));
    }

    #[test]
    fn formats_rfc3339_timestamps() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_795_890_843_120_456_789)
            .expect("in range");
        assert_eq!(format_rfc3339(t), "2026-11-28T18:34:03.120Z");
        let now = now_rfc3339();
        assert_eq!(now.len(), 24);
        assert!(now.ends_with('Z'));
        let parsed =
            time::OffsetDateTime::parse(&now, &time::format_description::well_known::Rfc3339);
        assert!(parsed.is_ok(), "{now}");
    }
}
