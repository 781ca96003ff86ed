//! Summaries of notes: through the client's model (sampling) when it offers one, else the
//! note's first sentences.

// Sampling's types are deprecated by the stateless 2026-07-28 revision, which asks for the
// same request through a second round (see `Context::sample`).
#![allow(deprecated)]

use rmcp::model::{CreateMessageRequestParams, SamplingMessage};

use crate::Context;
use crate::note::Note;

/// The most tokens a summary may ask the client's model for.
pub const SAMPLING_MAX_TOKENS: u32 = 400;
/// The most characters of an extractive summary.
pub const EXTRACTIVE_MAX_CHARS: usize = 400;

/// Where a summary came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SummarySource {
    /// The client's model wrote it.
    Sampling,
    /// The note's first sentences.
    Extractive,
}

/// Summarizes `note`: by sampling when the client declared it, else extractively. A sampling
/// request that fails gives an error text (the caller prefixes `summarize failed: `).
pub async fn summarize(ctx: &Context, note: &Note) -> Result<(String, SummarySource), String> {
    if !ctx.client_supports_sampling() {
        log_summary(ctx, note, SummarySource::Extractive).await;
        return Ok((extractive(note), SummarySource::Extractive));
    }
    let prompt = format!(
        "Summarize the following note in two or three sentences. Answer with the summary only.\n\n# {}\n\n{}",
        note.title, note.body
    );
    let mut params = CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(prompt)],
        SAMPLING_MAX_TOKENS,
    );
    params.system_prompt = Some("You write short, faithful summaries of personal notes.".into());
    let result = ctx
        .sample(params, ctx.sampling_timeout())
        .await
        .map_err(|error| error.to_string())?;
    let text = result
        .message
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    if text.is_empty() {
        return Err("the client's model returned no text".into());
    }
    log_summary(ctx, note, SummarySource::Sampling).await;
    Ok((text.to_string(), SummarySource::Sampling))
}

/// Tells a client that asked for info-level logs how a note was summarized.
async fn log_summary(ctx: &Context, note: &Note, source: SummarySource) {
    let data = serde_json::json!({ "summarized": note.id, "source": source });
    ctx.log(rmcp::model::LoggingLevel::Info, data).await;
}

/// The first sentences of the body, whole, up to [`EXTRACTIVE_MAX_CHARS`]; a first sentence
/// longer than that is cut at a word. An empty body is summarized by its title.
pub fn extractive(note: &Note) -> String {
    let body = note.body.split_whitespace().collect::<Vec<_>>().join(" ");
    if body.is_empty() {
        return note.title.clone();
    }
    let mut summary = String::new();
    for sentence in sentences(&body) {
        let candidate_len =
            summary.chars().count() + usize::from(!summary.is_empty()) + sentence.chars().count();
        if candidate_len > EXTRACTIVE_MAX_CHARS {
            break;
        }
        if !summary.is_empty() {
            summary.push(' ');
        }
        summary.push_str(sentence);
    }
    if summary.is_empty() {
        summary = cut_at_word(&body, EXTRACTIVE_MAX_CHARS - 1);
        summary.push('…');
    }
    summary
}

/// Sentences end at `.`, `!` or `?` followed by a space (or the end).
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .find(|&(i, c)| {
                matches!(c, '.' | '!' | '?') && rest[i + c.len_utf8()..].starts_with(' ')
            })
            .map(|(i, c)| i + c.len_utf8())
            .unwrap_or(rest.len());
        let sentence = &rest[..end];
        rest = rest[end..].trim_start();
        Some(sentence)
    })
}

/// At most `max` characters of `text`, ending at a word boundary when there is one.
pub fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    match cut.rfind(' ') {
        Some(space) if space > 0 => cut[..space].trim_end().to_string(),
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(body: &str) -> Note {
        Note {
            id: "n".into(),
            title: "Title".into(),
            tags: vec![],
            body: body.into(),
            created_at: String::new(),
            updated_at: String::new(),
            version: 1,
        }
    }

    #[test]
    fn extractive_keeps_whole_sentences_within_the_limit() {
        let sentence = "This sentence has exactly some words in it. ";
        let body = sentence.repeat(20);
        let summary = extractive(&note(&body));
        assert!(summary.chars().count() <= EXTRACTIVE_MAX_CHARS);
        assert!(summary.ends_with('.'));
        assert!(summary.starts_with("This sentence"));
    }

    #[test]
    fn extractive_cuts_one_long_sentence_at_a_word() {
        let body = "word ".repeat(200);
        let summary = extractive(&note(&body));
        assert!(summary.chars().count() <= EXTRACTIVE_MAX_CHARS);
        assert!(summary.ends_with("word…"));
    }

    #[test]
    fn extractive_of_an_empty_body_is_the_title() {
        assert_eq!(extractive(&note("  ")), "Title");
    }

    #[test]
    fn short_body_is_kept_whole() {
        assert_eq!(
            extractive(&note("Run tests.  Then ship!")),
            "Run tests. Then ship!"
        );
    }
}
