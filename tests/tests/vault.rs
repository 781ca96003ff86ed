//! `pkb-server import` and `export`: Markdown vaults in, Markdown out, nothing lost between.

mod support;

use pkb_core::store::sqlite;
use std::fs;
use std::path::Path;

use pkb_core::note::Note;
use support::run_command;

/// Every note of the store at `db` (a file, or the local user's notes in a PostgreSQL
/// database), sorted by id.
fn notes_in(db: &str) -> Vec<Note> {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let store = if pkb_core::store::postgres::is_url(db) {
        let database = runtime
            .block_on(pkb_core::store::postgres::PgDatabase::connect_existing(db))
            .expect("open the database");
        database.store_for(pkb_core::User::local().storage_key())
    } else {
        sqlite::open(Path::new(db), false).expect("open the store")
    };
    let mut notes: Vec<Note> = Vec::new();
    loop {
        let after = notes.last().map(|n| n.id.clone());
        let page = runtime
            .block_on(store.list_with_bodies(after.as_deref(), 1_000))
            .expect("list");
        if page.is_empty() {
            return notes;
        }
        notes.extend(page);
    }
}

fn note<'a>(notes: &'a [Note], id: &str) -> &'a Note {
    notes
        .iter()
        .find(|n| n.id == id)
        .unwrap_or_else(|| panic!("no note {id} among {:?}", ids(notes)))
}

fn ids(notes: &[Note]) -> Vec<&str> {
    notes.iter().map(|n| n.id.as_str()).collect()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_vault_comes_in_by_the_rules_of_write() {
    let vault = tempfile::tempdir().unwrap();
    let v = vault.path();
    write(v, "front.md", b"---\ntitle: Front matter\ntags: [Deploy, ' ops ', deploy]\ncreated: 2024-03-01T10:00:00+01:00\nupdated: 2024-03-02\naliases: [x]\n---\nThe body.\n");
    write(
        v,
        "Heading only.md",
        b"\n# From the heading\n\nFirst line.\n# Second heading stays\n",
    );
    write(v, "no title anywhere.md", b"just text\n");
    write(
        v,
        "untitled front.md",
        b"---\ntags: a, b c\n---\n# Heading under front matter\nbody\n",
    );
    write(
        v,
        "windows.md",
        b"---\r\ntitle: Windows note\r\n---\r\nline one\r\nline two\r\n",
    );
    write(
        v,
        "bom.md",
        b"\xef\xbb\xbf---\ntitle: With a BOM\n---\nbody\n",
    );
    write(v, "nested/deeper/inner.md", b"# Inner note\n");
    write(v, ".obsidian/workspace.md", b"# Hidden\n");
    write(v, ".hidden.md", b"# Hidden file\n");
    write(v, "not-markdown.txt", b"# Not a note\n");
    let long_body = "x".repeat(10_001);
    write(
        v,
        "too long.md",
        format!("# Too long\n{long_body}\n").as_bytes(),
    );
    write(v, "latin1.md", b"# Caf\xe9\n");
    write(v, "unclosed.md", b"---\ntitle: Never closed\nbody\n");
    write(
        v,
        "bad date.md",
        b"---\ntitle: Bad date\ncreated: last tuesday\n---\n",
    );
    write(
        v,
        "backwards.md",
        b"---\ntitle: Backwards\ncreated: 2024-02-01\nupdated: 2024-01-01\n---\n",
    );
    write(v, "bad yaml.md", b"---\ntitle: [unclosed\n---\n");
    write(v, "twin.md", b"# Front matter\n");
    write(v, "control.md", b"---\ntitle: \"Bell\\a\"\n---\n");
    // 21 characters, 42 once lower-cased (`i` and a combining dot each): past the limit of 40.
    let long_tag = "İ".repeat(21);
    write(
        v,
        "long tag.md",
        format!("---\ntitle: Long tag\ntags: [{long_tag}]\n---\n").as_bytes(),
    );
    // Another tool's `id` (a Zettelkasten number) is not PKB's: the id comes from the title.
    // Its date, as editors' templates write one, has no offset: UTC.
    write(
        v,
        "zettel.md",
        b"---\nid: 202301011230\ntitle: Zettel note\ncreated: 2023-01-01T12:30:00\n---\nz\n",
    );
    // A blank title is none, and so is an empty heading: the next one is the title.
    write(
        v,
        "blank title.md",
        b"---\ntitle: ''\n---\n# \n\n# Blank title falls through\nbody\n",
    );
    // Scalars are taken as written, not as the numbers YAML would make of them.
    write(v, "numbers.md", b"---\ntitle: 1.10\ntags: [0x1F]\n---\n");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("..", v.join("nested/loop")).unwrap();
        // A note linked into a second folder is one note, imported once; a hard link is a
        // file of its own, and its name the title.
        std::os::unix::fs::symlink("../../front.md", v.join("nested/deeper/linked.md")).unwrap();
        fs::hard_link(v.join("no title anywhere.md"), v.join("hard link.md")).unwrap();
        // Broken links that are no notes: an editor's lock file, an image.
        std::os::unix::fs::symlink("/nowhere/x", v.join(".#inner.md")).unwrap();
        std::os::unix::fs::symlink("/nowhere/y", v.join("nested/picture.png")).unwrap();
    }

    let (_store_dir, db) = support::temp_store();
    let (status, stdout, stderr) = run_command(&["--db", &db, "import", v.to_str().unwrap()]);
    assert_eq!(
        status.code(),
        Some(1),
        "refusals make the exit non-zero: {stdout}{stderr}"
    );

    let refused = |name: &str, rule: &str| {
        let path = v.join(name);
        let line = format!("refused {}: {rule}", path.display());
        assert!(stderr.contains(&line), "`{line}` in:\n{stderr}");
    };
    refused("too long.md", "body: must be at most 10000 characters");
    refused("latin1.md", "is not UTF-8 text");
    refused(
        "unclosed.md",
        "front matter: the `---` block is never closed",
    );
    refused("bad date.md", "created: must be a date");
    refused("backwards.md", "updated: must not be before created");
    refused("bad yaml.md", "front matter is not valid YAML");
    refused("twin.md", "its id `front-matter` is also the id of");
    refused(
        "control.md",
        "title: must be one line without control characters",
    );
    refused(
        "long tag.md",
        "invalid note: each tag must be at most 40 characters",
    );
    #[cfg(unix)]
    refused("nested/loop", "a symbolic link loop back to");
    #[cfg(unix)]
    assert!(
        !stderr.contains(".#inner.md") && !stderr.contains("picture.png"),
        "{stderr}"
    );
    assert!(
        stdout.contains("imported 11, replaced 0, skipped 0, refused 10 of 21 files"),
        "{stdout}"
    );

    let notes = notes_in(&db);
    assert_eq!(
        ids(&notes),
        [
            "1-10",
            "blank-title-falls-through",
            "from-the-heading",
            "front-matter",
            "hard-link",
            "heading-under-front-matter",
            "inner-note",
            "no-title-anywhere",
            "windows-note",
            "with-a-bom",
            "zettel-note"
        ],
        "no seed notes in a store an import made, and no refused or hidden file"
    );
    let front = note(&notes, "front-matter");
    assert_eq!(front.tags, ["deploy", "ops"]);
    assert_eq!(front.body, "The body.");
    assert_eq!(front.created_at, "2024-03-01T09:00:00.000Z");
    assert_eq!(front.updated_at, "2024-03-02T00:00:00.000Z");
    let heading = note(&notes, "from-the-heading");
    assert_eq!(heading.title, "From the heading");
    assert_eq!(heading.body, "First line.\n# Second heading stays");
    assert_eq!(note(&notes, "no-title-anywhere").title, "no title anywhere");
    let untitled = note(&notes, "heading-under-front-matter");
    assert_eq!(untitled.tags, ["a", "b", "c"]);
    assert_eq!(
        untitled.body, "body",
        "front matter without a title: the heading is it"
    );
    assert_eq!(note(&notes, "windows-note").body, "line one\r\nline two");
    assert_eq!(note(&notes, "with-a-bom").title, "With a BOM");
    assert_eq!(note(&notes, "inner-note").body, "");
    let blank = note(&notes, "blank-title-falls-through");
    assert_eq!(blank.body, "# \n\nbody");
    let numbers = note(&notes, "1-10");
    assert_eq!(
        (&numbers.title[..], &numbers.tags[..]),
        ("1.10", &["0x1f".to_owned()][..])
    );
    let zettel = note(&notes, "zettel-note");
    assert_eq!(
        (&zettel.created_at[..], &zettel.updated_at[..]),
        ("2023-01-01T12:30:00.000Z", "2023-01-01T12:30:00.000Z")
    );
}

/// A shared vault may hold links that lead out of it (`key.md -> ~/.ssh/id_ed25519`), or to a
/// file that says it is empty and never ends: neither becomes a note unasked, and neither is
/// read past the size limit.
#[cfg(unix)]
#[test]
fn links_out_of_the_folder_are_refused_unless_asked_for_and_no_file_is_read_past_the_limit() {
    let outside = tempfile::tempdir().unwrap();
    write(
        outside.path(),
        "id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----
secretkeymaterial
",
    );
    write(
        outside.path(),
        "shared.md",
        b"# Shared
A note kept elsewhere.
",
    );
    let vault = tempfile::tempdir().unwrap();
    let v = vault.path();
    write(
        v,
        "own.md",
        b"# Own
A note of the vault.
",
    );
    std::os::unix::fs::symlink(outside.path().join("id_ed25519"), v.join("key.md")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("shared.md"), v.join("shared.md")).unwrap();
    // Inside the folder, a link is followed as before.
    std::os::unix::fs::symlink(v.join("own.md"), v.join("again.md")).unwrap();

    let (_store_dir, db) = support::temp_store();
    let (status, stdout, stderr) = run_command(&["--db", &db, "import", v.to_str().unwrap()]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    for name in ["key.md", "shared.md"] {
        let line = format!("refused {}: is a link to", v.join(name).display());
        assert!(stderr.contains(&line), "`{line}` in:\n{stderr}");
    }
    assert!(
        stderr.contains("outside the folder; pass --links-outside"),
        "{stderr}"
    );
    assert_eq!(ids(&notes_in(&db)), ["own"], "nothing from outside came in");

    let (status, stdout, stderr) = run_command(&[
        "--db",
        &db,
        "import",
        v.to_str().unwrap(),
        "--links-outside",
    ]);
    assert!(status.success(), "{stdout}{stderr}");
    let notes = notes_in(&db);
    assert_eq!(ids(&notes), ["key", "own", "shared"]);

    // A file that reports a size of 0 and never ends is read to the limit and one byte more.
    let endless = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/proc/self/pagemap", endless.path().join("endless.md")).unwrap();
    let (_store_dir, db) = support::temp_store();
    let (status, stdout, stderr) = run_command(&[
        "--db",
        &db,
        "import",
        endless.path().to_str().unwrap(),
        "--links-outside",
    ]);
    assert_eq!(status.code(), Some(1), "{stdout}{stderr}");
    let line = format!(
        "refused {}: is larger than 1 MiB (more bytes than it said it holds)",
        endless.path().join("endless.md").display()
    );
    assert!(stderr.contains(&line), "`{line}` in:\n{stderr}");
}

#[test]
fn an_existing_id_is_skipped_unless_overwrite() {
    let vault = tempfile::tempdir().unwrap();
    write(
        vault.path(),
        "todo.md",
        b"---\ntitle: Todo\ntags: [mine]\n---\nMy list\n",
    );
    let (_store_dir, db) = support::temp_store();
    // A store made by a server (seeded), which holds `todo` already.
    let (status, _, stderr) = run_command(&["--db", &db, "call", "echo", r#"{"text": "x"}"#]);
    assert!(status.success(), "{stderr}");
    let dir = vault.path().to_str().unwrap();

    let (status, stdout, stderr) = run_command(&["--db", &db, "import", dir]);
    assert!(status.success(), "a skip is not a failure: {stderr}");
    assert!(stdout.contains("skipped"), "{stdout}");
    assert!(
        stdout.contains("note todo exists; pass --overwrite"),
        "{stdout}"
    );
    assert!(
        stdout.contains("imported 0, replaced 0, skipped 1, refused 0 of 1 files"),
        "{stdout}"
    );
    let seeded = note(&notes_in(&db), "todo").clone();
    assert_eq!(seeded.tags, ["todo"], "the seed note is unchanged");

    let (status, stdout, stderr) = run_command(&["--db", &db, "import", "--overwrite", dir]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("replaced todo from"), "{stdout}");
    let replaced = note(&notes_in(&db), "todo").clone();
    assert_eq!(replaced.tags, ["mine"]);
    assert_eq!(replaced.body, "My list");
    assert_eq!(
        replaced.created_at, seeded.created_at,
        "no date given: created is kept"
    );
    assert!(replaced.updated_at > seeded.updated_at);
    assert_eq!(replaced.version, 2);
    let (status, stdout, stderr) =
        run_command(&["--db", &db, "call", "history", r#"{"id": "todo"}"#]);
    assert!(status.success(), "{stderr}");
    let history: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let versions: Vec<(&str, &str)> = history["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["change"].as_str().unwrap(), v["by"].as_str().unwrap()))
        .collect();
    assert_eq!(
        versions,
        [("imported", "pkb-server import"), ("created", "pkb-server")],
        "the seed note's first version is kept, and the import recorded as the terminal's"
    );
}

#[test]
fn export_then_import_gives_back_every_note_exactly() {
    let (_first_dir, first) = support::temp_store();
    let (_second_dir, second) = support::temp_store();
    round_trip(&first, &second);
}

#[test]
fn export_then_import_gives_back_every_note_exactly_on_postgresql() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some(first) = runtime.block_on(support::postgres_database()) else {
        return;
    };
    let second = runtime.block_on(support::postgres_database()).unwrap();
    round_trip(&first, &second);
}

/// Imports a generated vault into `first`, exports it, imports that into `second` (each
/// store new), and finds every note as it was.
fn round_trip(first: &str, second: &str) {
    // A generated vault of 10,000 notes with every kind of field, and hand-made notes whose
    // titles and bodies YAML or Markdown could misread.
    let vault = tempfile::tempdir().unwrap();
    for n in 0..10_000 {
        let tags = match n % 3 {
            0 => format!("tags: [t{}, shared]", n % 17),
            1 => format!("tags: t{}, other", n % 5),
            _ => String::new(),
        };
        let text = format!(
            "---\ntitle: \"Note {n}: a title\"\n{tags}\ncreated: 2023-0{}-1{}T08:00:00Z\n---\nBody of note {n}.\n\nSecond paragraph {}.\n",
            1 + n % 9,
            n % 10,
            n * 7
        );
        write(
            vault.path(),
            &format!("folder{}/note {n}.md", n % 10),
            text.as_bytes(),
        );
    }
    let (status, stdout, stderr) =
        run_command(&["--db", first, "import", vault.path().to_str().unwrap()]);
    assert!(status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("imported 10000,"), "{stdout}");
    assert!(
        stderr.contains("import: 10000 of 10000 files"),
        "plain progress lines: {stderr}"
    );
    // Notes only `write` can make, with text that YAML and Markdown treat specially.
    for (title, body) in [
        ("true", "# Not a title\nbody"),
        ("key: value # not a comment", "ends with a line end\n"),
        ("'quoted' \"twice\"", "---\nlooks like front matter\n---"),
        ("Ünïcödé ☃ 東京", ""),
        ("- a list?", "\r\ncrlf\r\n"),
        ("null", "   leading spaces"),
        ("ends in a carriage return", "line\r"),
    ] {
        let arguments = serde_json::json!({"title": title, "body": body, "tags": ["x: y", "#z"]});
        let (status, _, stderr) =
            run_command(&["--db", first, "call", "write", &arguments.to_string()]);
        assert!(status.success(), "{title}: {stderr}");
    }
    let before = notes_in(first);
    assert_eq!(before.len(), 10_007);

    let exported = tempfile::tempdir().unwrap();
    let out = exported.path().join("vault");
    let (status, stdout, stderr) = run_command(&["--db", first, "export", out.to_str().unwrap()]);
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("exported 10007 notes"), "{stdout}");
    assert_eq!(
        fs::read_dir(&out).unwrap().count(),
        10_007,
        "one file per note, no leftovers"
    );
    let sample = fs::read_to_string(out.join("note-7-a-title.md")).unwrap();
    assert!(
        sample.starts_with("---\nid: note-7-a-title\ntitle: 'Note 7: a title'\n"),
        "{sample}"
    );

    let (status, stdout, stderr) = run_command(&["--db", second, "import", out.to_str().unwrap()]);
    assert!(status.success(), "{stdout}{stderr}");
    let after = notes_in(second);
    assert_eq!(after.len(), before.len());
    for (back, was) in after.iter().zip(&before) {
        assert_eq!(back, was, "every id, title, tag, body and date");
    }
}

#[cfg(unix)]
#[test]
fn export_replaces_links_planted_at_its_names_without_following_them() {
    let (_store_dir, db) = support::temp_store();
    let (status, _, stderr) = run_command(&["--db", &db, "call", "echo", r#"{"text": "x"}"#]);
    assert!(status.success(), "{stderr}");
    let out = tempfile::tempdir().unwrap();
    let victim = out.path().join("victim.txt");
    fs::write(&victim, "untouched").unwrap();
    for name in [".todo.md.partial", "todo.md"] {
        std::os::unix::fs::symlink(&victim, out.path().join(name)).unwrap();
    }
    let (status, _, stderr) = run_command(&["--db", &db, "export", out.path().to_str().unwrap()]);
    assert!(status.success(), "{stderr}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
    let todo = out.path().join("todo.md");
    assert!(
        !fs::symlink_metadata(&todo)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::read_to_string(&todo)
            .unwrap()
            .starts_with("---\nid: todo\n")
    );
}

#[test]
fn an_export_that_cannot_write_a_note_stops_and_leaves_no_temporary_file() {
    let (_store_dir, db) = support::temp_store();
    let (status, _, stderr) = run_command(&["--db", &db, "call", "echo", r#"{"text": "x"}"#]);
    assert!(status.success(), "{stderr}");
    let out = tempfile::tempdir().unwrap();
    // A folder where the note's file goes: the rename into place fails.
    fs::create_dir(out.path().join("todo.md")).unwrap();
    let (status, _, stderr) = run_command(&["--db", &db, "export", out.path().to_str().unwrap()]);
    assert!(!status.success());
    assert!(stderr.contains("todo.md"), "{stderr}");
    let left: Vec<_> = fs::read_dir(out.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_import_that_cannot_start_leaves_no_store_behind() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    let not_a_folder = dir.path().join("notes.md");
    fs::write(&not_a_folder, "# A note").unwrap();
    for source in [dir.path().join("missing"), not_a_folder] {
        let (status, _, stderr) = run_command(&[
            "--db",
            db.to_str().unwrap(),
            "import",
            source.to_str().unwrap(),
        ]);
        assert!(!status.success());
        assert!(stderr.contains("not a folder"), "{stderr}");
        assert!(
            !db.exists(),
            "no store made for an import that did not start"
        );
    }
}

#[test]
fn export_needs_an_existing_store() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let (status, _, stderr) = run_command(&[
        "--db",
        missing.to_str().unwrap(),
        "export",
        dir.path().join("out").to_str().unwrap(),
    ]);
    assert!(!status.success());
    assert!(stderr.contains("no store at"), "{stderr}");
    assert!(!missing.exists(), "export made no store");
}

#[test]
fn import_and_export_reach_one_user_of_a_data_directory() {
    let data = tempfile::tempdir().unwrap();
    let vault = tempfile::tempdir().unwrap();
    write(vault.path(), "a.md", b"# Alice's note\nfor alice only\n");
    let data_dir = data.path().to_str().unwrap();
    let import = |user: &str| {
        run_command(&[
            "--data-dir",
            data_dir,
            "--user",
            user,
            "import",
            vault.path().to_str().unwrap(),
        ])
    };
    let (status, _, stderr) = import("alice");
    assert!(status.success(), "{stderr}");

    let out = tempfile::tempdir().unwrap();
    let export = |user: &str, to: &Path| {
        run_command(&[
            "--data-dir",
            data_dir,
            "--user",
            user,
            "export",
            to.to_str().unwrap(),
        ])
    };
    let (status, stdout, stderr) = export("alice", &out.path().join("alice"));
    assert!(status.success(), "{stderr}");
    assert!(stdout.contains("exported 1 notes"), "{stdout}");
    assert!(out.path().join("alice/alice-s-note.md").exists());

    let (status, _, stderr) = export("bob", &out.path().join("bob"));
    assert!(!status.success(), "bob has no store yet");
    assert!(stderr.contains("no store at"), "{stderr}");
}
