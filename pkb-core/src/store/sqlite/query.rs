//! Turning user text into FTS5 queries that cannot be misread as query syntax.

use crate::store::query_words::{Share, folded_words, kept_any_words};

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

/// The FTS5 MATCH expression in which any one of the query's words (each also as a prefix,
/// or as one of its inflected forms) is enough: [`match_expression`]'s words and their forms
/// joined by `OR`, the words that [`kept_any_words`] keeps from their `share` of the notes.
/// `look_up` gives a folded word's share and its forms beyond its prefix. `None` when no word
/// is left.
pub(super) fn any_word_expression<E>(
    query: &str,
    mut look_up: impl FnMut(&str) -> Result<(Share, Vec<String>), E>,
) -> Result<Option<String>, E> {
    let mut words = Vec::new();
    for word in folded_words(query) {
        let (share, forms) = look_up(&word)?;
        words.push((with_forms(&word, &forms).join(" OR "), share));
    }
    let kept = kept_any_words(words);
    Ok((!kept.is_empty()).then(|| kept.join(" OR ")))
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
    fn any_word_is_enough_and_operators_stay_words() {
        let held = |_: &str| Ok::<_, ()>((Share::Some, Vec::new()));
        assert_eq!(
            any_word_expression("ship a release OR", held)
                .unwrap()
                .as_deref(),
            Some(r#""ship"* OR "a"* OR "release"* OR "OR"*"#)
        );
        assert_eq!(any_word_expression(" ** ", held).unwrap(), None);
    }

    #[test]
    fn words_in_half_the_notes_are_left_out_while_another_matches() {
        let mut asked = Vec::new();
        let share = |word: &str| {
            asked.push(word.to_owned());
            let share = match word {
                "the" | "of" => Share::Half,
                "zebra" => Share::None,
                _ => Share::Some,
            };
            Ok::<_, ()>((share, Vec::new()))
        };
        assert_eq!(
            any_word_expression("the cost of zebra shipping", share)
                .unwrap()
                .as_deref(),
            Some(r#""cost"* OR "zebra"* OR "shipping"*"#)
        );
        assert_eq!(asked, ["the", "cost", "of", "zebra", "shipping"]);
        let share = |word: &str| {
            let share = match word {
                "the" => Share::Half,
                _ => Share::None,
            };
            Ok::<_, ()>((share, Vec::new()))
        };
        assert_eq!(
            any_word_expression("the zebra", share).unwrap().as_deref(),
            Some(r#""the"* OR "zebra"*"#),
            "no other word would match: all are kept"
        );
    }

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
        let look_up = |word: &str| forms(word).map(|forms| (Share::Some, forms));
        assert_eq!(
            any_word_expression("running shoes", look_up)
                .unwrap()
                .as_deref(),
            Some(r#""running"* OR "run" OR "runs" OR "shoes"*"#)
        );
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
