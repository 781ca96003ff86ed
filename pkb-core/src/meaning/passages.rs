//! A note as the passages its vectors are made of: the encoder reads 128 tokens at most, so a
//! long body is cut into passages of whole words, each read with the note's title, and the
//! note's score is its best passage's.

use crate::note::Note;

/// Words in one passage: with the title, about what the encoder's 128 tokens hold of English
/// (a token is about three quarters of a word); more would be cut off unread.
const PASSAGE_WORDS: usize = 90;
/// Passages of one note at most (a 10,000-character body is about 1,700 words).
const MAX_PASSAGES: usize = 24;

/// The texts whose vectors stand for `note`: the title and tags with the body's first words,
/// then the title with each further run of words.
pub fn passages(note: &Note) -> Vec<String> {
    let heading = if note.tags.is_empty() {
        note.title.clone()
    } else {
        format!("{} ({})", note.title, note.tags.join(", "))
    };
    let words: Vec<&str> = note.body.split_whitespace().collect();
    if words.is_empty() {
        return vec![heading];
    }
    words
        .chunks(PASSAGE_WORDS)
        .take(MAX_PASSAGES)
        .enumerate()
        .map(|(i, chunk)| {
            let title = if i == 0 { &heading } else { &note.title };
            format!("{title}. {}", chunk.join(" "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(body: &str) -> Note {
        Note {
            id: "n".into(),
            title: "Deploy checklist".into(),
            tags: vec!["deploy".into()],
            body: body.into(),
            created_at: String::new(),
            updated_at: String::new(),
            version: 1,
        }
    }

    #[test]
    fn a_short_note_is_one_passage_with_its_title_and_tags() {
        assert_eq!(
            passages(&note("Run tests, then ship.")),
            ["Deploy checklist (deploy). Run tests, then ship."]
        );
        assert_eq!(passages(&note("  ")), ["Deploy checklist (deploy)"]);
    }

    #[test]
    fn a_long_body_is_cut_at_words_each_passage_titled() {
        let body = (0..200)
            .map(|n| format!("w{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        let cut = passages(&note(&body));
        assert_eq!(cut.len(), 3);
        assert!(cut[1].starts_with("Deploy checklist. w90 "), "{}", cut[1]);
        assert!(cut[2].ends_with("w199"));
        let huge = "word ".repeat(5_000);
        assert_eq!(passages(&note(&huge)).len(), MAX_PASSAGES);
    }
}
