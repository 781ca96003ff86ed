//! The notes every new store starts with, whatever its backend.

/// The contract's seed notes: id, title, tags, body.
pub const SEED_NOTES: &[(&str, &str, &[&str], &str)] = &[
    (
        "deploy-checklist",
        "Deploy checklist",
        &["deploy", "release"],
        "Run tests, build the app, then verify the health check.",
    ),
    (
        "todo",
        "Todo",
        &["todo"],
        "Things to do, one per line. Delete a line when it is done.",
    ),
    (
        "meeting-notes",
        "Meeting notes",
        &["meetings"],
        "Date, attendees, decisions and follow-ups.",
    ),
];

/// Who the seed notes' first versions are recorded as made by.
pub const SEEDED_BY: &str = "pkb-server";
