//! Inflected forms: a word and its forms share a stem, so that `deploying`, `deployed`,
//! `deploys` and `deployment` find "deploy" and `deploy` finds "deploying".
//!
//! The stemmer is Snowball's English one (Porter2, from the `rust-stemmers` crate), applied to
//! terms as the index holds them: folded and lowercase. SQLite's store keeps each term's stem
//! in its vocabulary and expands a query word to the terms of the same stem. PostgreSQL's
//! store computes the same stems in SQL with its own Snowball English dictionary, which gives
//! the same stems as this one (a test compares them on every word of PKB's documentation).

use std::borrow::Cow;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Longest term stemmed, in bytes: a longer one is a hash, an address or a run of letters
/// that no English suffix rule is meant for, and is its own stem.
const MAX_STEMMED_BYTES: usize = 64;

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The stem of `term` (folded and lowercase, as the index holds it).
pub(crate) fn stem(term: &str) -> Cow<'_, str> {
    if term.len() > MAX_STEMMED_BYTES {
        return Cow::Borrowed(term);
    }
    ENGLISH.stem(term)
}

/// The stem of `term` when it differs from the term itself; `None` when the term is its own
/// stem (most short words), which is how the vocabulary stores it.
pub(crate) fn stem_if_other(term: &str) -> Option<String> {
    match stem(term) {
        Cow::Owned(stem) if stem != term => Some(stem),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflected_forms_share_the_stem_of_their_word() {
        for form in ["deploy", "deploying", "deployed", "deploys", "deployment"] {
            assert_eq!(stem(form), "deploy", "{form}");
        }
        for form in ["run", "running", "runs"] {
            assert_eq!(stem(form), "run", "{form}");
        }
        assert_eq!(
            stem("runway"),
            "runway",
            "a word starting with another is not its form"
        );
        assert_eq!(stem("dying"), "die");
    }

    /// The stems the stores were indexed with. A dependency update that changes any of them
    /// changes what existing stores hold: it needs a schema version that stems the
    /// vocabulary again (SQLite) and the search vectors (PostgreSQL, whose stemmer is its own).
    #[test]
    fn the_stemmer_gives_the_stems_stores_hold() {
        let pinned = [
            ("generously", "generous"),
            ("happiness", "happi"),
            ("universities", "univers"),
            ("organization", "organ"),
            ("skies", "sky"),
            ("news", "news"),
            ("cafe", "cafe"),
            ("strasse", "strass"),
            ("x100", "x100"),
        ];
        for (word, stemmed) in pinned {
            assert_eq!(stem(word), stemmed, "{word}");
        }
        assert_eq!(stem_if_other("deploy"), None);
        assert_eq!(stem_if_other("deploys").as_deref(), Some("deploy"));
        let long = "a".repeat(MAX_STEMMED_BYTES + 1) + "ing";
        assert_eq!(stem(&long), long);
    }
}
