//! What changed between two versions, as the page shows it: a line diff (similar) with the
//! changed words of each changed line marked. Readable without colour: each line is signed
//! `+` or `−` and named for screen readers, and changed words are `<ins>` and `<del>`.

use std::time::Duration;

use maud::{Markup, html};
use similar::{ChangeTag, TextDiff};

/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;

/// The longest a diff may take to be exact: past it, similar gives a coarser (still correct)
/// diff, so that no body makes the page slow.
const DIFF_TIMEOUT: Duration = Duration::from_millis(50);

/// The lines of `old` and `new` that differ, with a few around them; `None` when equal.
pub fn lines(old: &str, new: &str) -> Option<Markup> {
    if old == new {
        return None;
    }
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let groups = diff.grouped_ops(CONTEXT_LINES);
    Some(html! {
        div.diff {
            @for (n, group) in groups.iter().enumerate() {
                @if n > 0 {
                    div.gap aria-hidden="true" { "⋯" }
                }
                @for op in group {
                    @for change in diff.iter_inline_changes(op) {
                        @let (class, sign, said) = match change.tag() {
                            ChangeTag::Delete => ("line del", "−", "Removed: "),
                            ChangeTag::Insert => ("line ins", "+", "Added: "),
                            ChangeTag::Equal => ("line", " ", ""),
                        };
                        div class=(class) {
                            span.sign aria-hidden="true" { (sign) }
                            span.text {
                                @if !said.is_empty() { span.hidden { (said) } }
                                @for (marked, part) in change.iter_strings_lossy() {
                                    @let part = part.strip_suffix('\n').unwrap_or(&part).to_owned();
                                    @if marked && change.tag() == ChangeTag::Delete {
                                        del { (part) }
                                    } @else if marked && change.tag() == ChangeTag::Insert {
                                        ins { (part) }
                                    } @else {
                                        (part)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// The tags of `old` and `new`: kept ones plain, removed ones `<del>`, added ones `<ins>`.
pub fn tags(old: &[String], new: &[String]) -> Markup {
    html! {
        ul.tags {
            @for tag in old {
                @if new.contains(tag) {
                    li { (tag) }
                } @else {
                    li { del { span.hidden { "Removed: " } (tag) } }
                }
            }
            @for tag in new.iter().filter(|t| !old.contains(t)) {
                li { ins { span.hidden { "Added: " } (tag) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_signed_and_changed_words_marked() {
        let out = lines("one\nthe quick fox\nthree\n", "one\nthe slow fox\nthree\n")
            .unwrap()
            .into_string();
        assert!(out.contains("<del>quick</del>"), "{out}");
        assert!(out.contains("<ins>slow</ins>"), "{out}");
        assert!(
            out.contains("Removed: ") && out.contains("Added: "),
            "{out}"
        );
        assert!(out.contains("−") && out.contains('+'), "{out}");
        assert!(lines("same", "same").is_none());
    }

    #[test]
    fn text_in_a_diff_is_escaped_once() {
        let out = lines("<b>&amp;</b>\n", "<i>\n").unwrap().into_string();
        assert!(out.contains("&lt;b&gt;&amp;amp;&lt;/b&gt;"), "{out}");
        assert!(!out.contains("<b>") && !out.contains("<i>"), "{out}");
    }
}
