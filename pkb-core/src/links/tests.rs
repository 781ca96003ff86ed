use super::*;

#[test]
fn every_form_of_link_gives_its_target_once_in_order() {
    let body = "See [[Deploy checklist]], [[todo|my list]], [[Meeting notes#Actions]] and \
                [[Meeting notes#Decisions|the decisions]]; also [the plan](pkb://notes/plan-2026), \
                <pkb://notes/auto-linked> and [ref][r].\n\n[r]: pkb://notes/by-reference\n";
    assert_eq!(
        link_targets(body),
        [
            "Deploy checklist",
            "todo",
            "Meeting notes",
            "plan-2026",
            "auto-linked",
            "by-reference"
        ]
    );
}

#[test]
fn nothing_in_code_is_a_link() {
    let body = "`[[inline]]` and\n\n```\n[[fenced]]\n[x](pkb://notes/fenced)\n```\n\n    [[indented]]\n\n~~~\n[[tilde]]\n~~~\n\n[[real]]";
    assert_eq!(link_targets(body), ["real"]);
}

#[test]
fn what_is_no_link_to_a_note_is_left_out() {
    let body = "[[#a heading here]] ![[embedded.png]] [[ ]] [[a\nb]] [web](https://example.com) \
                [other](pkb://notes) [deep](pkb://notes/x/history) [bad](pkb://notes/Not_An_Id) \\[[escaped]]";
    assert_eq!(link_targets(body), Vec::<String>::new());
}

#[test]
fn targets_are_trimmed_and_kept_as_written() {
    assert_eq!(
        link_targets("[[  Spaced  Out ]] [[Spaced  Out]] [[spaced  out]]"),
        ["Spaced  Out", "spaced  out"]
    );
    assert_eq!(
        link_targets("[x](pkb://notes/todo#section) [y](pkb://notes/todo?v=2)"),
        ["todo"]
    );
}

#[test]
fn a_body_full_of_links_is_read_whole() {
    let body: String = (0..1_000)
        .map(|n| format!("[[n{n}]]"))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(body.chars().count() <= 10_000);
    let targets = link_targets(&body);
    assert_eq!(targets.len(), 1_000);
    assert_eq!(targets[999], "n999");
}

#[test]
fn keys_follow_the_resolution_order() {
    let keys = TargetKeys::of("Deploy Checklist");
    assert_eq!(keys.derived, "deploy-checklist");
    assert_eq!(keys.folded, "deploy checklist");
    assert_eq!(title_key(" Ünïcode TITLE "), "ünïcode title");
}
