//! The word ranking of hybrid search, where any of the query's words is enough: each word is
//! one unit, the terms of its stem (`deploying` is `deploy`, `deploys`, `deployment`...), with
//! one count and one IDF, scored by `pkb_rank` as `words` scores its words.
//!
//! Each form as a phrase of its own, scored by `bm25()`, counted a note holding `cells` under
//! both `"cell"*` and `"cells"`, each with its own IDF: on BEIR SciFact that ranking scored
//! nDCG@10 0.618 alone, the stem units 0.691 (docs/search.md).

use rusqlite::Connection;

use super::scoring::average_length;
use super::{Fts5Terms, StoreSize};
use crate::store::query_words::{Share, any_words_window, folded_words, idf, kept_any_words};
use crate::store::sqlite::terms;

/// One query word: its FTS5 phrases, and how many notes hold one of them (summed over them).
struct Unit {
    phrases: Vec<String>,
    notes: i64,
}

/// The FTS5 query of `query`'s words ORed, and `pkb_rank`'s arguments to score its matches;
/// `None` when no note holds any word. The words half the notes hold are left out while
/// another word is held by fewer ([`kept_any_words`]).
///
/// With it, how many of the newest matches to rank ([`any_words_window`]).
pub(in crate::store::sqlite) fn any_word_terms(
    conn: &Connection,
    query: &str,
    StoreSize { notes, tokens }: StoreSize,
) -> rusqlite::Result<Option<(Fts5Terms, i64)>> {
    let mut units = Vec::new();
    for word in folded_words(query) {
        if let Some(unit) = unit(conn, &word)? {
            let share = if unit.notes.saturating_mul(2) >= notes {
                Share::Half
            } else {
                Share::Some
            };
            units.push((unit, share));
        }
    }
    let window = any_words_window(units.iter().map(|(_, share)| *share)).unwrap_or(i64::MAX);
    // `pkb_rank` numbers the words with a byte.
    let units: Vec<Unit> = kept_any_words(units)
        .into_iter()
        .take(usize::from(u8::MAX))
        .collect();
    if units.is_empty() {
        return Ok(None);
    }
    let terms = Fts5Terms {
        expr: units
            .iter()
            .flat_map(|unit| &unit.phrases)
            .cloned()
            .collect::<Vec<_>>()
            .join(" OR "),
        words: units
            .iter()
            .enumerate()
            .flat_map(|(i, unit)| std::iter::repeat_n(i as u8, unit.phrases.len()))
            .collect(),
        idfs: units
            .iter()
            .flat_map(|unit| idf(unit.notes, notes).to_le_bytes())
            .collect(),
        average_length: average_length(notes, tokens),
    };
    Ok(Some((terms, window)))
}

/// A folded query word as a unit: the terms of its stem; with none in the vocabulary (a word
/// typed in part), the terms it starts, as a prefix; a word FTS5 makes several terms of, as
/// their phrase. `None` when no note holds it.
fn unit(conn: &Connection, word: &str) -> rusqlite::Result<Option<Unit>> {
    let Some(term) = terms::query_term(conn, word)? else {
        let phrase = quoted(word);
        let notes: i64 = conn
            .prepare_cached("SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?1")?
            .query_row([&phrase], |r| r.get(0))?;
        return Ok((notes > 0).then(|| Unit {
            phrases: vec![phrase],
            notes,
        }));
    };
    let forms = terms::forms(conn, &term)?;
    if !forms.is_empty() {
        return Ok(Some(Unit {
            notes: forms.iter().map(|(_, _, notes)| *notes).sum(),
            phrases: forms.iter().map(|(_, form, _)| quoted(form)).collect(),
        }));
    }
    // Every term starting with `term` sorts at or after it and before it followed by the
    // greatest character.
    let end = format!("{term}{}", char::MAX);
    let notes: Option<i64> = conn
        .prepare_cached("SELECT sum(notes) FROM search_terms WHERE term >= ?1 AND term < ?2")?
        .query_row(rusqlite::params![term, end], |r| r.get(0))?;
    Ok(notes.filter(|notes| *notes > 0).map(|notes| Unit {
        phrases: vec![format!("{}*", quoted(&term))],
        notes,
    }))
}

/// `text` as an FTS5 string: quoted, `"` doubled.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use crate::store::sqlite::{NoteBackend, SqliteBackend};
    use crate::store::{NoteDraft, Provenance, PutMode};

    fn store(notes: &[(&str, &str)]) -> SqliteBackend {
        let backend = SqliteBackend::open_in_memory(false).unwrap();
        let filler = (0..20).map(|k| (format!("filler{k}"), format!("unrelated words {k}")));
        let notes = notes
            .iter()
            .map(|(id, body)| ((*id).to_owned(), (*body).to_owned()))
            .chain(filler);
        for (id, body) in notes {
            let draft = NoteDraft {
                id: id.clone(),
                title: format!("Entry {id}"),
                tags: Vec::new(),
                body,
            };
            let by = Provenance::write("test");
            backend.put(draft, PutMode::CreateOnly, &by).unwrap();
        }
        backend
    }

    fn found(backend: &SqliteBackend, query: &str) -> Vec<String> {
        let hits = backend.search_any_words(query, &[], 10).unwrap();
        hits.into_iter().map(|hit| hit.id).collect()
    }

    #[test]
    fn a_words_forms_count_once_so_both_words_beat_one_word_thrice() {
        // Each form a phrase of its own gave `forms` three words' weight.
        let backend = store(&[("forms", "run runs running"), ("both", "running shoes")]);
        assert_eq!(found(&backend, "running shoes"), ["both", "forms"]);
        assert_eq!(
            found(&backend, "runs"),
            ["forms", "both"],
            "a form finds the others"
        );
    }

    #[test]
    fn a_word_typed_in_part_is_a_prefix_and_a_word_nowhere_is_left_out() {
        let backend = store(&[("deploy", "deployment checklist")]);
        assert_eq!(found(&backend, "deplo zebra"), ["deploy"]);
        assert!(found(&backend, "zebra").is_empty());
    }

    #[test]
    fn only_the_newest_matches_are_ranked_when_every_word_is_common() {
        let mut notes = vec![("old".to_owned(), "common common common rare".to_owned())];
        notes.extend((0..1_005).map(|k| (format!("new{k}"), "common filler".to_owned())));
        let notes: Vec<(&str, &str)> = notes
            .iter()
            .map(|(i, b)| (i.as_str(), b.as_str()))
            .collect();
        let backend = store(&notes);
        assert!(
            !found(&backend, "common").contains(&"old".to_owned()),
            "past the newest 1,000 matches"
        );
        assert_eq!(
            found(&backend, "common rare")[0],
            "old",
            "a rarer word ranks every match"
        );
    }
}
