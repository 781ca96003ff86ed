//! A note's body as HTML: CommonMark read by pulldown-cmark (with the wikilinks `links` reads),
//! where raw HTML is shown as text (escaped, never dropped, never run), a link between notes
//! goes to the linked note's page, and only `http`, `https` and `mailto` links leave PKB.
//! Images are not loaded (the page loads nothing from elsewhere): each becomes a link to it.

use std::collections::HashMap;

use maud::{Markup, PreEscaped};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::paths;
use crate::links::{LinkedNote, target_of};

/// `body` as HTML, its links to notes pointing at the notes they resolve to now, as
/// [`crate::store::Store::resolve_links`] finds them.
pub fn render(body: &str, resolved: &[(String, Option<LinkedNote>)]) -> Markup {
    let resolved: HashMap<&str, &str> = resolved
        .iter()
        .filter_map(|(target, note)| Some((target.as_str(), note.as_ref()?.id.as_str())))
        .collect();
    let options = Options::ENABLE_WIKILINKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(body, options).map(|event| match event {
        // Raw HTML shows as what it is: text in a block of its own, or inline text.
        Event::Start(Tag::HtmlBlock) => Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)),
        Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::CodeBlock),
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        // An image becomes a link to it: the page loads nothing from elsewhere.
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => Event::Start(Tag::Link {
            dest_url: destination(link_type, &dest_url, &resolved),
            link_type,
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut html = String::with_capacity(body.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    PreEscaped(html)
}

/// Where a link of a note goes on the page.
fn destination<'a>(
    link_type: LinkType,
    destination: &str,
    resolved: &HashMap<&str, &str>,
) -> CowStr<'a> {
    if let Some(target) = target_of(link_type, destination) {
        return match resolved.get(target) {
            Some(id) => paths::note(id).into(),
            // A note not made yet (or deleted): look for it.
            None => format!(
                "{}?q={}",
                paths::SEARCH,
                form_urlencoded::byte_serialize(target.as_bytes()).collect::<String>()
            )
            .into(),
        };
    }
    if matches!(link_type, LinkType::WikiLink { .. }) {
        // `[[#heading]]`, a heading of the note itself: not a link between notes.
        return "#".into();
    }
    if leaves_safely(destination) {
        destination.to_owned().into()
    } else {
        "#".into()
    }
}

/// Whether a link may stay as written: a relative one, or one to `http`, `https` or `mailto`.
/// `javascript:`, `data:` and every other scheme are dropped, whatever their case or spaces.
fn leaves_safely(destination: &str) -> bool {
    let trimmed = destination.trim_start();
    let scheme_end = trimmed.find([':', '/', '?', '#']);
    match scheme_end {
        Some(end) if trimmed[end..].starts_with(':') => {
            let scheme = trimmed[..end].to_ascii_lowercase();
            matches!(scheme.as_str(), "http" | "https" | "mailto")
        }
        _ => !trimmed.chars().any(char::is_control),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(body: &str, links: &[(String, Option<LinkedNote>)]) -> String {
        render(body, links).into_string()
    }

    #[test]
    fn raw_html_is_shown_as_text_never_run_or_dropped() {
        let out = html(
            "<script>alert(1)</script>\n\nHi <b onclick=\"x()\">there</b>",
            &[],
        );
        assert!(
            out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{out}"
        );
        assert!(
            out.contains("&lt;b onclick=\"x()\"&gt;there&lt;/b&gt;"),
            "{out}"
        );
        assert!(!out.contains("<script") && !out.contains("<b "), "{out}");
    }

    #[test]
    fn links_between_notes_go_to_their_pages() {
        let deploy = LinkedNote {
            id: "deploy-checklist".into(),
            title: "Deploy checklist".into(),
        };
        let links = [
            ("Deploy checklist".to_owned(), Some(deploy.clone())),
            ("deploy-checklist".to_owned(), Some(deploy)),
            ("missing".to_owned(), None),
        ];
        let out = html(
            "See [[Deploy checklist#Steps|the list]], [it](pkb://notes/deploy-checklist) and [[missing]].",
            &links,
        );
        assert!(
            out.contains("<a href=\"/notes/deploy-checklist\">the list</a>"),
            "{out}"
        );
        assert!(
            out.contains("<a href=\"/notes/deploy-checklist\">it</a>"),
            "{out}"
        );
        assert!(
            out.contains("<a href=\"/search?q=missing\">missing</a>"),
            "{out}"
        );
    }

    #[test]
    fn only_safe_schemes_leave_and_images_are_not_loaded() {
        let out = html(
            "[a](javascript:alert(1)) [b](JaVaScRiPt:x) [c](https://example.com/x) [d](data:text/html,x) ![pic](https://example.com/p.png)",
            &[],
        );
        assert!(!out.to_ascii_lowercase().contains("javascript:"), "{out}");
        assert!(!out.contains("data:"), "{out}");
        assert!(out.contains("href=\"https://example.com/x\""), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert!(
            out.contains("<a href=\"https://example.com/p.png\">pic</a>"),
            "{out}"
        );
    }
}
