//! Turning user text into FTS5 queries that cannot be misread as query syntax.

use crate::store::query_words::folded_words;

/// The FTS5 MATCH expression for a user query: each of its folded words as a quoted
/// string with a prefix `*` (FTS5 reads several tokens in one as a phrase), joined by spaces
/// (implicit AND). `None` when no word is left.
///
/// Quoting makes `AND`, `OR`, `NOT` and `NEAR` plain words; doubling `"` is defensive, as the
/// separators already removed it.
pub(super) fn match_expression(query: &str) -> Option<String> {
    let words: Vec<String> = folded_words(query)
        .map(|word| prefix_phrase(&word))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// [`match_expression`] with each word's inflected forms beyond its prefix (`forms`, exact
/// terms: [`super::terms::query_forms`]) ORed beside it, the words ANDed: every word must
/// match, as a prefix or as one of its forms. `None` when no word is left.
pub(super) fn stemmed_match_expression<E>(
    query: &str,
    mut forms: impl FnMut(&str) -> Result<Vec<String>, E>,
) -> Result<Option<String>, E> {
    let mut words = Vec::new();
    for word in folded_words(query) {
        let forms = forms(&word)?;
        words.push(if forms.is_empty() {
            prefix_phrase(&word)
        } else {
            format!("({})", with_forms(&word, &forms).join(" OR "))
        });
    }
    // FTS5 takes no implicit AND after a parenthesised group.
    Ok((!words.is_empty()).then(|| words.join(" AND ")))
}

/// A folded word as an FTS5 prefix phrase: quoted, with a `*`.
fn prefix_phrase(word: &str) -> String {
    format!("\"{}\"*", word.replace('"', "\"\""))
}

/// The word's prefix phrase, then each of its `forms` as an exact term.
fn with_forms(word: &str, forms: &[String]) -> Vec<String> {
    std::iter::once(prefix_phrase(word))
        .chain(
            forms
                .iter()
                .map(|form| format!("\"{}\"", form.replace('"', "\"\""))),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflected_forms_are_ored_beside_their_word() {
        let forms = |word: &str| {
            Ok::<_, ()>(match word {
                "running" => vec!["run".to_owned(), "runs".to_owned()],
                _ => Vec::new(),
            })
        };
        assert_eq!(
            stemmed_match_expression("running shoes", forms)
                .unwrap()
                .as_deref(),
            Some(r#"("running"* OR "run" OR "runs") AND "shoes"*"#)
        );
        assert_eq!(
            stemmed_match_expression("shoes", forms).unwrap().as_deref(),
            Some(r#""shoes"*"#)
        );
        assert_eq!(stemmed_match_expression(" ** ", forms).unwrap(), None);
    }

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
