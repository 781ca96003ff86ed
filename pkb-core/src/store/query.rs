//! Turning user text into FTS5 queries that cannot be misread as query syntax.

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

/// The FTS5 MATCH expression for a user query: each word as a quoted string with a prefix
/// `*`, joined by spaces (implicit AND). `None` when no word is left.
///
/// Quoting makes `AND`, `OR`, `NOT` and `NEAR` plain words; doubling `"` is defensive, as the
/// separators already removed it.
pub(super) fn match_expression(query: &str) -> Option<String> {
    let mut expr = String::new();
    for word in words(query) {
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
    fn keeps_non_ascii_words_whole() {
        assert_eq!(match_expression("café").as_deref(), Some(r#""café"*"#));
        assert_eq!(
            match_expression("東京 タワー").as_deref(),
            Some(r#""東京"* "タワー"*"#)
        );
        assert_eq!(match_expression("a—b").as_deref(), Some(r#""a—b"*"#));
    }
}
