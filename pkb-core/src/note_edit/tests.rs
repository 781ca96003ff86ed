use super::*;

fn note(body: &str) -> Note {
    Note {
        id: "n".to_owned(),
        title: "N".to_owned(),
        tags: vec!["a".to_owned(), "b".to_owned()],
        body: body.to_owned(),
        created_at: "2026-01-01T00:00:00.000Z".to_owned(),
        updated_at: "2026-01-01T00:00:00.000Z".to_owned(),
        version: 1,
    }
}

fn body_after(body: &str, change: BodyChange) -> Result<String, EditRefusal> {
    let edit = NoteEdit {
        body: Some(change),
        ..NoteEdit::default()
    };
    edit.apply_to(&note(body)).map(|draft| draft.body)
}

fn section(heading: &str, content: &str) -> BodyChange {
    BodyChange::Section {
        heading: heading.to_owned(),
        content: content.to_owned(),
    }
}

fn replace(old: &str, new: &str, all: bool) -> BodyChange {
    BodyChange::Replace {
        old: old.to_owned(),
        new: new.to_owned(),
        all,
    }
}

#[test]
fn append_and_prepend_join_with_one_line_end_at_the_seam() {
    let append = |body: &str, text: &str| body_after(body, BodyChange::Append(text.into()));
    assert_eq!(append("one", "two").unwrap(), "one\ntwo");
    assert_eq!(append("one\n", "two").unwrap(), "one\ntwo");
    assert_eq!(append("one", "\ntwo").unwrap(), "one\ntwo");
    assert_eq!(append("", "two").unwrap(), "two");
    assert_eq!(
        append("one\r\n", "two\nthree").unwrap(),
        "one\r\ntwo\r\nthree"
    );
    assert_eq!(
        append("one\r\ntwo", "three").unwrap(),
        "one\r\ntwo\r\nthree"
    );
    let prepend = |body: &str, text: &str| body_after(body, BodyChange::Prepend(text.into()));
    assert_eq!(prepend("two", "one").unwrap(), "one\ntwo");
    assert_eq!(prepend("two", "one\n").unwrap(), "one\ntwo");
    assert_eq!(prepend("", "one").unwrap(), "one");
    assert_eq!(prepend("two\r\n", "one").unwrap(), "one\r\ntwo\r\n");
}

#[test]
fn replace_needs_exactly_one_occurrence_unless_all() {
    let body = "deploy, then deploy again";
    assert_eq!(
        body_after(body, replace("then", "and", false)).unwrap(),
        "deploy, and deploy again"
    );
    assert_eq!(
        body_after(body, replace("deploy", "ship", false)),
        Err(EditRefusal::TextOccurs(2))
    );
    assert_eq!(
        body_after(body, replace("deploy", "ship", true)).unwrap(),
        "ship, then ship again"
    );
    assert_eq!(
        body_after(body, replace("Deploy", "ship", true)),
        Err(EditRefusal::TextNotFound),
        "case-sensitive"
    );
    assert_eq!(
        body_after("a\r\nb\r\n", replace("a\nb", "c\nd", false)).unwrap(),
        "c\r\nd\r\n",
        "lines sent with \\n match a CRLF body"
    );
}

#[test]
fn the_body_limit_counts_characters_not_bytes() {
    let body = "é".repeat(9_990);
    assert!(body_after(&body, replace("é", "ü", true)).is_ok());
    let grown = body_after(&body, BodyChange::Append("ö".repeat(11)));
    assert_eq!(grown, Err(EditRefusal::BodyTooLong(10_002)));
    assert_eq!(
        grown.unwrap_err().message("n"),
        "the edit would make the body of n 10002 characters; the limit is 10000"
    );
    let body = "ab".repeat(5_000);
    assert_eq!(
        body_after(&body, replace("a", "ab", true)),
        Err(EditRefusal::BodyTooLong(15_000))
    );
    assert!(body_after(&body, replace("ab", "é", true)).is_ok());
}

#[test]
fn a_section_is_replaced_up_to_the_next_heading_of_its_level() {
    let body = "# Plan\nintro\n## Tasks\n- old\n### Detail\nd\n## Done\nx\n";
    assert_eq!(
        body_after(body, section("Tasks", "- new")).unwrap(),
        "# Plan\nintro\n## Tasks\n- new\n## Done\nx\n"
    );
    assert_eq!(
        body_after(body, section("Detail", "e\n")).unwrap(),
        "# Plan\nintro\n## Tasks\n- old\n### Detail\ne\n## Done\nx\n"
    );
    assert_eq!(
        body_after(body, section("Done", "y")).unwrap(),
        "# Plan\nintro\n## Tasks\n- old\n### Detail\nd\n## Done\ny",
        "the last section runs to the end"
    );
    assert_eq!(
        body_after("# End", section("End", "tail")).unwrap(),
        "# End\ntail",
        "a heading on the last line"
    );
    assert_eq!(
        body_after("# A\nx\n# B\n", section("A", "")).unwrap(),
        "# A\n# B\n"
    );
}

#[test]
fn headings_in_fenced_code_do_not_count_and_every_level_does() {
    let body = "## Steps\n```sh\n## Steps\necho\n```\nold\n#### Deep ####\nd\n";
    assert_eq!(
        body_after(body, section("Steps", "new")).unwrap(),
        "## Steps\nnew",
        "the fenced heading and all below it were the section's"
    );
    assert_eq!(
        body_after(body, section("Deep", "e")).unwrap(),
        "## Steps\n```sh\n## Steps\necho\n```\nold\n#### Deep ####\ne"
    );
    for level in 1..=6 {
        let marks = "#".repeat(level);
        let body = format!("{marks} H\nold\n");
        assert_eq!(
            body_after(&body, section("H", "new")).unwrap(),
            format!("{marks} H\nnew"),
            "level {level}"
        );
    }
}

#[test]
fn a_missing_or_repeated_heading_is_refused() {
    let body = "# A\n## Notes\n1\n## Notes\n2\n";
    let twice = body_after(body, section("Notes", "x")).unwrap_err();
    assert_eq!(twice, EditRefusal::HeadingOccurs("Notes".to_owned(), 2));
    assert_eq!(twice.message("n"), "heading \"Notes\" occurs 2 times in n");
    let none = body_after(body, section("Nope", "x")).unwrap_err();
    assert_eq!(none.message("n"), "no heading \"Nope\" in n");
}

#[test]
fn a_crlf_section_keeps_crlf() {
    let body = "# A\r\nold\r\n# B\r\nb\r\n";
    assert_eq!(
        body_after(body, section("A", "one\ntwo")).unwrap(),
        "# A\r\none\r\ntwo\r\n# B\r\nb\r\n"
    );
}

#[test]
fn tags_are_set_or_added_and_removed_within_the_limit() {
    let edit = |tags: TagChange| {
        NoteEdit {
            tags,
            ..NoteEdit::default()
        }
        .apply_to(&note(""))
    };
    let added = edit(TagChange::AddRemove {
        add: vec!["C".to_owned(), "a".to_owned()],
        remove: vec!["B".to_owned(), "zz".to_owned()],
    })
    .unwrap();
    assert_eq!(added.tags, ["a", "c"]);
    let set = edit(TagChange::Set(vec![" X ".to_owned()])).unwrap();
    assert_eq!(set.tags, ["x"]);
    let many = (0..19).map(|n| format!("t{n}")).collect();
    let refused = edit(TagChange::AddRemove {
        add: many,
        remove: Vec::new(),
    })
    .unwrap_err();
    assert_eq!(refused, EditRefusal::TooManyTags(21));
    assert_eq!(
        refused.message("n"),
        "the edit would give n 21 tags; the limit is 20"
    );
}

#[test]
fn the_title_changes_and_the_id_stays() {
    let draft = NoteEdit {
        title: Some("New title".to_owned()),
        ..NoteEdit::default()
    }
    .apply_to(&note("body"))
    .unwrap();
    assert_eq!(
        (draft.id.as_str(), draft.title.as_str()),
        ("n", "New title")
    );
    assert_eq!(draft.body, "body");
}
