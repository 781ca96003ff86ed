//! What changed between two versions, as the page shows it: a line diff (similar) with the
//! changed words of each changed line marked. Readable without colour: each line is signed
//! `+` or `−` and named for screen readers, and changed words are `<ins>` and `<del>`.

use std::time::{Duration, Instant};

use maud::{Markup, html};
use similar::{ChangeTag, DiffOp, TextDiff};

/// Unchanged lines shown around each change.
const CONTEXT_LINES: usize = 3;

/// The longest a diff may take to be exact, its lines and the words marked in them together:
/// past it, similar gives a coarser (still correct) line diff, and the lines left are shown
/// without their changed words marked, so that no body makes the page slow.
const DIFF_TIMEOUT: Duration = Duration::from_millis(50);

/// The lines of `old` and `new` that differ, with a few around them; `None` when equal.
pub fn lines(old: &str, new: &str) -> Option<Markup> {
    lines_until(old, new, Instant::now() + DIFF_TIMEOUT)
}

/// [`lines`], exact until `deadline`.
fn lines_until(old: &str, new: &str, deadline: Instant) -> Option<Markup> {
    if old == new {
        return None;
    }
    let diff = TextDiff::configure()
        .deadline(deadline)
        .diff_lines(old, new);
    let groups = diff.grouped_ops(CONTEXT_LINES);
    Some(html! {
        div.diff {
            @for (n, group) in groups.iter().enumerate() {
                @if n > 0 {
                    div.gap aria-hidden="true" { "⋯" }
                }
                @for op in group {
                    @for (tag, parts) in changes(&diff, op, deadline) {
                        @let (class, sign, said) = match tag {
                            ChangeTag::Delete => ("line del", "−", "Removed: "),
                            ChangeTag::Insert => ("line ins", "+", "Added: "),
                            ChangeTag::Equal => ("line", " ", ""),
                        };
                        div class=(class) {
                            span.sign aria-hidden="true" { (sign) }
                            span.text {
                                @if !said.is_empty() { span.hidden { (said) } }
                                @for (marked, part) in parts {
                                    @let part = part.strip_suffix('\n').unwrap_or(&part).to_owned();
                                    @if marked && tag == ChangeTag::Delete {
                                        del { (part) }
                                    } @else if marked && tag == ChangeTag::Insert {
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

/// The lines `op` stands for, each with its parts and whether each is a changed word. The
/// words are compared only until `deadline` (similar's own bound is 500 ms for each op); the
/// lines of the ops past it are shown whole.
fn changes<'a>(
    diff: &'a TextDiff<'a, 'a, 'a, str>,
    op: &DiffOp,
    deadline: Instant,
) -> Vec<(ChangeTag, Vec<(bool, String)>)> {
    if Instant::now() < deadline {
        diff.iter_inline_changes_deadline(op, Some(deadline))
            .map(|change| {
                let parts = change.iter_strings_lossy();
                (
                    change.tag(),
                    parts
                        .map(|(marked, part)| (marked, part.into_owned()))
                        .collect(),
                )
            })
            .collect()
    } else {
        diff.iter_changes(op)
            .map(|change| (change.tag(), vec![(false, change.value().to_owned())]))
            .collect()
    }
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

    /// Past the deadline the changed lines are still shown, signed, but their words are not
    /// compared: the time a diff takes is bounded by one deadline, words included.
    #[test]
    fn past_the_deadline_lines_are_shown_whole() {
        let out = lines_until(
            "one\nthe quick fox\nthree\n",
            "one\nthe slow fox\nthree\n",
            Instant::now(),
        )
        .unwrap()
        .into_string();
        assert!(
            out.contains("the quick fox") && out.contains("the slow fox"),
            "{out}"
        );
        assert!(!out.contains("<del>") && !out.contains("<ins>"), "{out}");
        assert!(
            out.contains("Removed: ") && out.contains("Added: "),
            "{out}"
        );
    }

    #[test]
    fn text_in_a_diff_is_escaped_once() {
        let out = lines("<b>&amp;</b>\n", "<i>\n").unwrap().into_string();
        assert!(out.contains("&lt;b&gt;&amp;amp;&lt;/b&gt;"), "{out}");
        assert!(!out.contains("<b>") && !out.contains("<i>"), "{out}");
    }
}
