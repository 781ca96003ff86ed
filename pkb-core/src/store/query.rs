//! Turning user text into FTS5 queries that cannot be misread as query syntax.

use std::borrow::Cow;

use crate::fold::fold_for_search;

/// Whether `c` ends a word of a search query.
///
/// Whitespace and ASCII punctuation split words here, so that FTS5 operators (`"`, `*`, `:`,
/// `-`, `^`, `+`, parentheses) never reach it. Other characters stay in the word and FTS5's own
/// tokenizer splits them inside the quoted string, which keeps the query's notion of a token
/// identical to the index's (for instance for combining marks).
fn is_separator(c: char) -> bool {
    c.is_whitespace() || (c.is_ascii() && !c.is_ascii_alphanumeric())
}

/// The query's words: the pieces between separators that hold at least one letter or digit.
pub(super) fn words(query: &str) -> impl Iterator<Item = &str> {
    query
        .split(is_separator)
        .filter(|w| w.chars().any(char::is_alphanumeric))
}

/// The query's words as the index holds text: each folded on its own
/// ([`crate::fold::fold_for_search`]), so that a word the fold spells as several (`東京` as
/// `Dong Jing`) stays one word of the query, a phrase of them, rather than an AND of prefixes
/// that "dongle" and "jingle" would match.
pub(super) fn folded_words(query: &str) -> impl Iterator<Item = Cow<'_, str>> {
    words(query)
        .map(fold_for_search)
        .filter(|word| !word.trim().is_empty())
}

/// The FTS5 MATCH expression for a user query: each of its [`folded_words`] as a quoted
/// string with a prefix `*` (FTS5 reads several tokens in one as a phrase), joined by spaces
/// (implicit AND). `None` when no word is left.
///
/// Quoting makes `AND`, `OR`, `NOT` and `NEAR` plain words; doubling `"` is defensive, as the
/// separators already removed it.
pub(super) fn match_expression(query: &str) -> Option<String> {
    let mut expr = String::new();
    for word in folded_words(query) {
        if !expr.is_empty() {
            expr.push(' ');
        }
        expr.push('"');
        expr.push_str(&word.replace('"', "\"\""));
        expr.push_str("\"*");
    }
    (!expr.is_empty()).then_some(expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_each_word_with_a_prefix_star() {
        assert_eq!(
            match_expression("deploy checklist").as_deref(),
            Some(r#""deploy"* "checklist"*"#)
        );
        assert_eq!(match_expression("  dep  ").as_deref(), Some(r#""dep"*"#));
    }

    #[test]
    fn syntax_characters_become_separators() {
        assert_eq!(
            match_expression(r#"title:"a*b" -c ^d (e OR f) NEAR(g, 2)"#).as_deref(),
            Some(r#""title"* "a"* "b"* "c"* "d"* "e"* "OR"* "f"* "NEAR"* "g"* "2"*"#)
        );
        assert_eq!(
            match_expression("AND").as_deref(),
            Some(r#""AND"*"#),
            "operators are plain words"
        );
    }

    #[test]
    fn no_words_means_no_query() {
        for q in [
            "", "   ", "\"", "***", "()", ":-^", "\"\"", "—", "«»", "\u{0}",
        ] {
            assert_eq!(match_expression(q), None, "{q:?}");
        }
    }

    #[test]
    fn folds_each_word_and_keeps_it_whole() {
        assert_eq!(match_expression("café").as_deref(), Some(r#""cafe"*"#));
        assert_eq!(match_expression("Ｃａｆé").as_deref(), Some(r#""Cafe"*"#));
        // Spelled as several syllables, a word is searched as their phrase.
        assert_eq!(
            match_expression("東京 café").as_deref(),
            Some(r#""Dong Jing "* "cafe"*"#)
        );
        assert_eq!(match_expression("a—b").as_deref(), Some(r#""a--b"*"#));
    }
}
