//! Two changes made to one note from the same starting point, merged so that neither is lost:
//! a person's editor saved the file while a model's edit of the note was being written.
//! Lines either side changed are taken from that side; where both sides changed the same
//! lines differently, both sides' lines are kept, PKB's first (git's `union` merge): a note
//! holding both is better than a note missing one.

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// One side's change of the base: the base lines `start..end` become `lines`.
struct Hunk<'a> {
    start: usize,
    end: usize,
    lines: Vec<&'a str>,
}

/// The hunks that turn `base` into `side`, in order.
fn hunks<'a>(base: &[&'a str], side: &[&'a str]) -> Vec<Hunk<'a>> {
    capture_diff_slices(Algorithm::Myers, base, side)
        .into_iter()
        .filter_map(|op| {
            let (start, end, new) = match op {
                DiffOp::Equal { .. } => return None,
                DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                } => (old_index, old_index + old_len, new_index..new_index),
                DiffOp::Insert {
                    old_index,
                    new_index,
                    new_len,
                } => (old_index, old_index, new_index..new_index + new_len),
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => (
                    old_index,
                    old_index + old_len,
                    new_index..new_index + new_len,
                ),
            };
            Some(Hunk {
                start,
                end,
                lines: side[new].to_vec(),
            })
        })
        .collect()
}

/// The base lines `start..end` with the side's `hunks` (all within that range) applied.
fn apply<'a>(base: &[&'a str], start: usize, end: usize, hunks: &[Hunk<'a>]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut at = start;
    for hunk in hunks {
        out.extend_from_slice(&base[at..hunk.start]);
        out.extend_from_slice(&hunk.lines);
        at = hunk.end;
    }
    out.extend_from_slice(&base[at..end]);
    out
}

/// Whether a hunk starting at `start` and ending at `end` conflicts with the region
/// `from..to`: it overlaps it, or both are insertions at one place. An insertion beside a
/// change is no conflict: it goes before it.
fn touches(start: usize, end: usize, from: usize, to: usize) -> bool {
    start < to || (start == to && start == end && from == to)
}

/// The order hunks are taken in: by where they start, an insertion before a change there.
fn order(hunk: &Hunk<'_>) -> (usize, bool) {
    (hunk.start, hunk.end > hunk.start)
}

/// Which of `candidates` (versions and their texts, newest first) a person's save `theirs`
/// most likely started from: the one it shares the most lines with, the newest of equals. A
/// save made on a version PKB has since changed shares more lines with that version than with
/// PKB's change, whatever the file's time says.
pub fn closest_base(theirs: &str, candidates: &[(u64, &str)]) -> Option<u64> {
    // Lines without their ends: a body's last line has none, and the same line with one
    // added below it is still the same line.
    let theirs: Vec<&str> = theirs.lines().collect();
    let mut best: Option<(usize, u64)> = None;
    for (version, text) in candidates {
        let lines: Vec<&str> = text.lines().collect();
        let shared: usize = capture_diff_slices(Algorithm::Myers, &lines, &theirs)
            .iter()
            .map(|op| match op {
                DiffOp::Equal { len, .. } => *len,
                _ => 0,
            })
            .sum();
        if best.is_none_or(|(most, _)| shared > most) {
            best = Some((shared, *version));
        }
    }
    best.map(|(_, version)| version)
}

/// `ours` and `theirs`, two texts made from `base`, merged line by line.
pub fn merge_lines(base: &str, ours: &str, theirs: &str) -> String {
    if ours == theirs || theirs == base {
        return ours.to_owned();
    }
    if ours == base {
        return theirs.to_owned();
    }
    // Each line keeps its line end, so that a last line without one stays so.
    let base: Vec<&str> = base.split_inclusive('\n').collect();
    let ours_lines: Vec<&str> = ours.split_inclusive('\n').collect();
    let theirs_lines: Vec<&str> = theirs.split_inclusive('\n').collect();
    let ours = hunks(&base, &ours_lines);
    let theirs = hunks(&base, &theirs_lines);
    let (mut a, mut b) = (0, 0);
    let mut at = 0;
    let mut out: Vec<&str> = Vec::new();
    while a < ours.len() || b < theirs.len() {
        let first_ours =
            b >= theirs.len() || (a < ours.len() && order(&ours[a]) <= order(&theirs[b]));
        let (a_from, b_from) = (a, b);
        let (start, mut end) = if first_ours {
            a += 1;
            (ours[a_from].start, ours[a_from].end)
        } else {
            b += 1;
            (theirs[b_from].start, theirs[b_from].end)
        };
        // The region grows while a hunk of either side conflicts with it.
        loop {
            if a < ours.len() && touches(ours[a].start, ours[a].end, start, end) {
                end = end.max(ours[a].end);
                a += 1;
            } else if b < theirs.len() && touches(theirs[b].start, theirs[b].end, start, end) {
                end = end.max(theirs[b].end);
                b += 1;
            } else {
                break;
            }
        }
        out.extend_from_slice(&base[at..start]);
        let mine = &ours[a_from..a];
        let yours = &theirs[b_from..b];
        match (mine.is_empty(), yours.is_empty()) {
            (false, true) => out.extend(apply(&base, start, end, mine)),
            (true, false) => out.extend(apply(&base, start, end, yours)),
            _ => {
                let mine = apply(&base, start, end, mine);
                let yours = apply(&base, start, end, yours);
                // What both made alike at either end of the region is written once.
                let same_start = mine.iter().zip(&yours).take_while(|(a, b)| a == b).count();
                let same_end = mine[same_start..]
                    .iter()
                    .rev()
                    .zip(yours[same_start..].iter().rev())
                    .take_while(|(a, b)| a == b)
                    .count();
                out.extend_from_slice(&mine[..same_start]);
                let ours_only = mine[same_start..mine.len() - same_end].to_vec();
                if !ours_only.is_empty() {
                    out.extend(with_line_end(ours_only));
                }
                out.extend_from_slice(&yours[same_start..]);
            }
        }
        at = end;
    }
    out.extend_from_slice(&base[at..]);
    out.concat()
}

/// `lines`, whose last line gets a line end where it has none, since lines follow it.
fn with_line_end(mut lines: Vec<&str>) -> Vec<&str> {
    if lines.last().is_some_and(|line| !line.ends_with('\n')) {
        lines.push("\n");
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::{closest_base, merge_lines};

    #[test]
    fn one_sided_changes_are_taken_as_made() {
        assert_eq!(merge_lines("a\nb\n", "a\nb\n", "a\nB\n"), "a\nB\n");
        assert_eq!(merge_lines("a\nb\n", "A\nb\n", "a\nb\n"), "A\nb\n");
        // A line the person removed stays removed.
        assert_eq!(merge_lines("a\nb\nc", "a\nb\nc", "a\nc"), "a\nc");
    }

    #[test]
    fn changes_to_different_lines_are_both_kept() {
        let base = "one\ntwo\nthree\nfour\n";
        let ours = "ONE\ntwo\nthree\nfour\n";
        let theirs = "one\ntwo\nthree\nFOUR\n";
        assert_eq!(merge_lines(base, ours, theirs), "ONE\ntwo\nthree\nFOUR\n");
    }

    #[test]
    fn lines_both_sides_added_at_one_place_are_all_kept_ours_first() {
        let base = "title line\nfirst";
        let ours = "title line\nfirst\nfrom the model";
        let theirs = "title line\nfirst\nfrom the editor";
        assert_eq!(
            merge_lines(base, ours, theirs),
            "title line\nfirst\nfrom the model\nfrom the editor"
        );
    }

    #[test]
    fn a_line_both_changed_differently_keeps_both_versions() {
        let merged = merge_lines("x\nshared\ny\n", "x\nmodel's\ny\n", "x\nperson's\ny\n");
        assert_eq!(merged, "x\nmodel's\nperson's\ny\n");
    }

    #[test]
    fn the_same_change_on_both_sides_is_made_once() {
        assert_eq!(merge_lines("a\n", "a\nb\n", "a\nb\n"), "a\nb\n");
        let merged = merge_lines("a\nz\n", "a\nb\nz\nm\n", "a\nb\nz\n");
        assert_eq!(merged, "a\nb\nz\nm\n");
    }

    #[test]
    fn a_line_added_before_a_changed_line_goes_before_it() {
        let merged = merge_lines("a\nb\n", "a\nnew\nb\n", "a\nB\n");
        assert_eq!(merged, "a\nnew\nB\n");
        let merged = merge_lines("a\nb\n", "a\nB\n", "a\nnew\nb\n");
        assert_eq!(merged, "a\nnew\nB\n");
    }

    #[test]
    fn a_save_started_from_an_older_version_is_merged_from_it() {
        let v3 = "plan\nmodel line 3\neditor 1\n";
        let v4 = "plan\nmodel line 4\neditor 1\n";
        // Read before PKB wrote v4, saved after.
        let stale = "plan\nmodel line 3\neditor 1\neditor 2\n";
        assert_eq!(closest_base(stale, &[(4, v4), (3, v3)]), Some(3));
        assert_eq!(
            merge_lines(v3, v4, stale),
            "plan\nmodel line 4\neditor 1\neditor 2\n"
        );
        // Read after: started from v4, nothing to merge.
        let fresh = "plan\nmodel line 4\neditor 1\neditor 2\n";
        assert_eq!(closest_base(fresh, &[(4, v4), (3, v3)]), Some(4));
        // The body's last line has no line end until a line is added below it.
        assert_eq!(
            closest_base(
                "model line 5\neditor 1",
                &[(7, "model line 6"), (6, "model line 5")]
            ),
            Some(6)
        );
        // Alike: the newest.
        assert_eq!(closest_base("other\n", &[(4, v4), (3, v3)]), Some(4));
        assert_eq!(closest_base("x", &[]), None);
    }

    #[test]
    fn an_empty_base_keeps_both_texts() {
        assert_eq!(merge_lines("", "mine", "yours"), "mine\nyours");
    }
}
