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

/// How many of a store's notes hold a query word, as a prefix. SQLite's store knows it of
/// every note, term by term (half: one term the word starts is in half the notes);
/// PostgreSQL's counts the user's newest notes (half: half of them hold a term it starts),
/// and looks further only to tell some from none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Share {
    /// No note holds a term it starts. Only PostgreSQL's counts tell of it: SQLite's store
    /// leaves such a word out before.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    None,
    /// Some notes do, fewer than half.
    Some,
    /// About half the notes or more: BM25 gives such a word no weight.
    Half,
}

/// The words an any-word search keeps of a query's `words`, each with its [`Share`]: a word
/// half the notes hold is left out while another word, held by some notes, is kept. BM25
/// gives it no weight, and every note holding it would be a match to rank. Every word when no
/// other would match.
pub(crate) fn kept_any_words<W>(words: impl IntoIterator<Item = (W, Share)>) -> Vec<W> {
    let words: Vec<(W, Share)> = words.into_iter().collect();
    let some_held = words.iter().any(|(_, share)| *share == Share::Some);
    words
        .into_iter()
        .filter(|(_, share)| !some_held || *share != Share::Half)
        .map(|(word, _)| word)
        .collect()
}

/// How many of an any-word search's newest matches are ranked, given its words' [`Share`]s:
/// every one (`None`), but when no word is held by fewer than half the notes, the newest
/// [`RANK_WINDOW`](super::RANK_WINDOW) as `words` ranks them. BM25 gives such words almost no
/// weight, and nearly every note may match: ranking all 16,000 notes of a store for three such
/// words took 50 ms, three times the search by meaning it is fused with.
pub(crate) fn any_words_window(shares: impl IntoIterator<Item = Share>) -> Option<i64> {
    let mut shares = shares.into_iter().peekable();
    let some_word = shares.peek().is_some();
    let all_common = shares.all(|share| share != Share::Some);
    (some_word && all_common).then_some(super::RANK_WINDOW)
}

/// The IDF of a word `holding` of `notes` hold, as FTS5's `bm25()` computes it: both engines
/// weigh an any-word search's words so.
pub(crate) fn idf(holding: i64, notes: i64) -> f64 {
    let total = notes.max(1) as f64;
    // A prefix's notes are summed over its terms, which counts a note holding two of them
    // twice; FTS5 counts the union. Capped at the number of notes.
    let holding = holding.min(notes).max(0) as f64;
    let idf = ((total - holding + 0.5) / (holding + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}
