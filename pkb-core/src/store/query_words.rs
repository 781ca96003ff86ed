//! A search query's words, as every engine reads them: split where query syntax could hide,
//! and folded as the engines index text.

use std::borrow::Cow;

use crate::fold::fold_for_search;

/// Whether `c` ends a word of a search query.
///
/// Whitespace and ASCII punctuation split words here, so that query syntax (FTS5's operators
/// `"`, `*`, `:`, `-`, `^`, `+`, parentheses) never reaches an engine. Other characters stay
/// in the word and FTS5's own tokenizer splits them inside the quoted string, which keeps the
/// query's notion of a token
/// identical to the index's (for instance for combining marks).
fn is_separator(c: char) -> bool {
    c.is_whitespace() || (c.is_ascii() && !c.is_ascii_alphanumeric())
}

/// The query's words: the pieces between separators that hold at least one letter or digit.
pub(crate) fn words(query: &str) -> impl Iterator<Item = &str> {
    query
        .split(is_separator)
        .filter(|w| w.chars().any(char::is_alphanumeric))
}

/// The query's words as the index holds text: each folded on its own
/// ([`crate::fold::fold_for_search`]), so that a word the fold spells as several (`東京` as
/// `Dong Jing`) stays one word of the query, a phrase of them, rather than an AND of prefixes
/// that "dongle" and "jingle" would match.
pub(crate) fn folded_words(query: &str) -> impl Iterator<Item = Cow<'_, str>> {
    words(query)
        .map(fold_for_search)
        .filter(|word| !word.trim().is_empty())
}
